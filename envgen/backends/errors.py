"""Errors of the model backends.

A backend raises only these (configuration problems, a missing optional
dependency, a scripted backend used past its script). A request that fails at
generation time (a server error, a timeout) is *data*: it comes back as a
:class:`~envgen.backends.base.Completion` with ``finish_reason == "error"`` and
``error`` set, so one bad request never crashes a batch.
"""

from __future__ import annotations

__all__ = ["BackendError", "BackendNotInstalledError"]


class BackendError(RuntimeError):
    """A backend cannot be built or used as asked; the message says how to fix it."""


class BackendNotInstalledError(BackendError, ImportError):
    """An optional dependency of a backend is missing; the message names the install command."""

    def __init__(self, backend: str, package: str, extra: str | None = None):
        self.backend = backend
        self.package = package
        hint = f"pip install 'envwright[{extra}]'" if extra else f"pip install {package}"
        super().__init__(f"the {backend!r} backend needs the {package!r} package, which is not installed: "
                         f"{hint}")
