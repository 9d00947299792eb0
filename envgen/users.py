"""Model-backed users and judges over the backend registry: what evaluation and training plug into the engine.

Role: :func:`make_user` builds a :class:`~gym_envs.users.ModelUser` (a model plays a scenario task's user, as
τ²-bench's user simulator does; gym_envs/ENVSPEC.md, "The model-backed user") over any backend of
:data:`envgen.backends.BACKENDS` (``transformers``, ``vllm``, ``openai``); :func:`make_judge` builds a
:class:`Judge`, which decides ``judged`` checks (an assertion about the conversation, reported apart from the score).
Both take typed options (:class:`ModelRoleOptions`, built through :func:`~corpora.registry.build_config`: an unknown
option is refused with the closest names) and sample one batch per call, every call's seed derived from the role's.

A failure is data: a request that gives no completion ends that message's turn (the user) or leaves the assertion
undecided (the judge), and is counted in the object's ``failures``; a batch where every request failed raises
:class:`~envgen.errors.BackendError`, so a server that is down is reported, not taken for silence.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from corpora.registry import build_config
from envgen.backends import Backend, make_backend
from envgen.errors import BackendError
from gym_envs.checks.judged import judge_prompt, judge_verdict
from gym_envs.errors import exception_text
from gym_envs.seeding import stable_seed
from gym_envs.users import ModelUser

__all__ = ["BatchGenerator", "Judge", "ModelRoleOptions", "make_judge", "make_user"]


@dataclass(kw_only=True)
class ModelRoleOptions:
    """Options of a model-backed user or judge (beside the backend's own, in ``backend_options``)."""

    max_new_tokens: int = 256  #: tokens of one reply
    temperature: float = 0.0  #: sampling temperature (0 is greedy)
    seed: int = 0  #: every call's seed derives from it
    backend_options: dict[str, Any] = field(default_factory=dict)  #: the backend's options (its Options class)

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise ValueError("max_new_tokens must be >= 1")
        if self.temperature < 0:
            raise ValueError("temperature must be >= 0 (0 is greedy)")


class BatchGenerator:
    """One backend sampling chats in batches: ``generate(chats) -> texts`` (None for a chat that got no completion),
    with the counts of requests and failures."""

    def __init__(self, backend: Backend, options: ModelRoleOptions, role: str):
        self.backend = backend
        self.options = options
        self.role = role
        self.requests = 0
        self.failures = 0
        self._calls = itertools.count()

    def __call__(self, chats: list[list[dict[str, str]]]) -> list[str | None]:
        if not chats:
            return []
        o = self.options
        self.requests += len(chats)
        try:
            completions = self.backend.generate(chats, max_new_tokens=o.max_new_tokens, temperature=o.temperature,
                                                seed=stable_seed(o.seed, self.role, next(self._calls)))
        except Exception as e:  # the boundary: the whole batch got no completion
            self.failures += len(chats)
            raise BackendError(f"the {self.role} model ({self.backend.model_id}) failed: {exception_text(e)}") from e
        texts = [c.text if c.ok else None for c in completions]
        failed = sum(t is None for t in texts)
        self.failures += failed
        if failed == len(texts):
            raise BackendError(f"the {self.role} model ({self.backend.model_id}) gave no completion: "
                               f"{completions[0].error or 'no text'}")
        return texts

    def close(self) -> None:
        self.backend.close()


def _generator(backend: str | Backend, model: str | None, options: dict[str, Any], role: str) -> BatchGenerator:
    opts: ModelRoleOptions = build_config(ModelRoleOptions, options=options, owner=f"the {role} model")
    if not isinstance(backend, Backend) and backend != "scripted" and not model:
        raise ValueError(f"the {role} model needs a model id or path (--{role}-model)")
    return BatchGenerator(make_backend(backend, model=model, **opts.backend_options), opts, role)


def make_user(backend: str | Backend, model: str | None = None, **options: Any) -> ModelUser:
    """A :class:`~gym_envs.users.ModelUser` playing scenario users with ``model`` on ``backend`` (options:
    :class:`ModelRoleOptions`). Its ``generate`` is a :class:`BatchGenerator` (``user.generate.failures``)."""
    gen = _generator(backend, model, options, "user")
    return ModelUser(gen, label=f"{gen.backend.name}:{gen.backend.model_id}")


class Judge:
    """Decides ``judged`` assertions on conversations with a model (module docstring)."""

    def __init__(self, generate: BatchGenerator):
        self.generate = generate
        self.label = f"{generate.backend.name}:{generate.backend.model_id}"

    def decide(self, items: Sequence[tuple[str, Sequence[tuple[str, str]]]]) -> list[tuple[bool | None, str]]:
        """``(verdict, the judge's text)`` for each ``(assertion, transcript)``: True or False, None when the judge
        gave no completion or answered neither yes nor no first."""
        if not items:
            return []
        texts = self.generate([judge_prompt(a, t) for a, t in items])
        return [(judge_verdict(t) if t is not None else None, (t or "").strip()[:300]) for t in texts]

    def close(self) -> None:
        self.generate.close()


def make_judge(backend: str | Backend, model: str | None = None, **options: Any) -> Judge:
    """A :class:`Judge` with ``model`` on ``backend`` (options: :class:`ModelRoleOptions`)."""
    return Judge(_generator(backend, model, options, "judge"))
