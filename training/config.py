"""Typed training configuration: our dataclasses plus TRL's ``GRPOConfig``, loaded from YAML.

One config file drives every trainer (``envwright train selfplay|solver|distill``)::

    model:      ModelConfig       what to load (hub id, folder or GGUF), dtype, LoRA, chat template
    generation: GenerationConfig  the engine that samples (HF generate, its fast path, or vLLM)
    rollout:    RolloutConfig     episodes over ToolEnv: budgets, reward mode, sampling
    solver:     SolverConfig      G rollouts per task; which environments the solver trainer uses
    selfplay:   SelfPlayConfig    rounds, corpus, the dual stream (envgen's RoundConfig and
                                  ControllerConfig, nested as they are), the proposer's sampling
    distill:    DistillConfig     recovery-step self-distillation: teacher, iterations
    proposer_sft: ProposerSFTConfig  the proposer warm start: SFT on the AST writer's blueprints
    run:        RunConfig         output folder, seed, report_to, resume
    grpo:       {...}             keyword arguments of ``trl.GRPOConfig`` (learning rate, beta,
                                  epsilon, loss_type, batch sizes, ...), validated by TRL itself

Each field is documented once, here (or in TRL for ``grpo``). Fields that several
components share live in our sections and are *derived* into ``GRPOConfig``
(:data:`DERIVED_GRPO_FIELDS`); setting one of them under ``grpo`` is an error
that names the key to use instead.

:func:`load_config` reads a YAML file and applies dotted overrides
(``--set solver.num_generations=4``, values parsed as YAML). Every problem
raises :class:`~training.errors.ConfigError` naming the key, with a close-match
suggestion for a misspelt one and the fix for a bad value.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Union

import yaml

from envgen.skills.controller import ControllerConfig
from envgen.skills.round import RoundConfig
from gym_envs.errors import did_you_mean
from training.errors import ConfigError

__all__ = [
    "DERIVED_GRPO_FIELDS",
    "DistillConfig",
    "GenerationConfig",
    "ModelConfig",
    "ProposerConfig",
    "ProposerSFTConfig",
    "RolloutConfig",
    "RunConfig",
    "SelfPlayConfig",
    "SolverConfig",
    "TrainConfig",
    "apply_overrides",
    "config_from_dict",
    "config_to_dict",
    "load_config",
    "to_grpo_config",
]


@dataclass
class ModelConfig:
    """The policy model (the one model that proposes and solves)."""

    name_or_path: str = ""  #: hub id, local folder, or a ``.gguf`` file
    gguf_file: str | None = None  #: GGUF file inside ``name_or_path`` (de-quantised by transformers)
    #: ``auto`` (bf16 on CUDA, fp32 on CPU), ``bf16``, ``bf16-mixed``, ``fp16``, ``fp32``: the dtype of
    #: the trained weights. ``bf16`` halves their memory but drops optimizer steps smaller than its
    #: resolution (about 1/256 of a weight), which stalled small-model runs at lr 1e-5; with LoRA, peft
    #: keeps the adapters fp32, so a bf16 base is fine. ``bf16-mixed`` keeps fp32 weights and runs the
    #: training forward passes under bf16 autocast (TRL's ``bf16=True`` does so on an fp32 model); HF
    #: generation then runs in fp32 (vLLM keeps its own bf16 copy). On CPU it is plain fp32.
    dtype: str = "auto"
    device: str = "auto"  #: ``auto``, ``cpu`` or ``cuda`` (single-process trainers; TRL uses accelerate)
    chat_template: str | None = None  #: None keeps the tokenizer's; ``trl:NAME`` (TRL's bundled NAME.jinja) or a path
    lora_r: int = 0  #: LoRA rank; 0 trains every weight
    lora_alpha: int = 32
    lora_dropout: float = 0.0
    lora_target_modules: list[str] | str = "all-linear"
    gradient_checkpointing: bool = False
    attn_implementation: str | None = None  #: e.g. ``sdpa``, ``flash_attention_2``
    trust_remote_code: bool = False

    def __post_init__(self) -> None:
        if self.dtype not in ("auto", "bf16", "bfloat16", "bf16-mixed", "fp16", "float16", "fp32", "float32"):
            raise ValueError(f"dtype must be auto, bf16, bf16-mixed, fp16 or fp32, got {self.dtype!r}")
        if self.device not in ("auto", "cpu", "cuda") and not self.device.startswith("cuda:"):
            raise ValueError(f"device must be auto, cpu or cuda, got {self.device!r}")
        if self.lora_r < 0:
            raise ValueError("lora_r must be >= 0 (0 trains every weight)")


@dataclass
class GenerationConfig:
    """The engine that samples completions for both roles."""

    engine: Literal["auto", "hf", "vllm"] = "auto"  #: ``auto``: vLLM when installed and on CUDA, else HF
    vllm_mode: Literal["colocate", "server"] = "colocate"
    vllm_gpu_memory_utilization: float = 0.3  #: colocate: share of GPU memory for vLLM
    vllm_server_base_url: str | None = None  #: server: e.g. ``http://localhost:8000``
    vllm_max_model_length: int | None = None
    batch_size: int | None = None  #: HF: rows per ``generate`` call (None: all at once)
    sort_by_length: bool = True  #: HF: batch rows of similar length together (less padding)
    static_cache: bool = False  #: HF: static KV cache (the fast path)
    compile: bool = False  #: HF: torch.compile the decoding step (needs ``static_cache``)

    def __post_init__(self) -> None:
        if self.compile and not self.static_cache:
            raise ValueError("compile needs static_cache: set generation.static_cache=true (a dynamic cache "
                             "recompiles at every length)")
        if self.batch_size is not None and self.batch_size < 1:
            raise ValueError("batch_size must be >= 1 or null (all rows in one call)")
        if not 0.0 < self.vllm_gpu_memory_utilization <= 1.0:
            raise ValueError("vllm_gpu_memory_utilization must be in (0, 1]")


@dataclass
class RolloutConfig:
    """Solver episodes over :class:`~gym_envs.env.ToolEnv`."""

    max_steps: int = 16  #: env actions per episode (ToolEnv ``max_steps``)
    max_turn_tokens: int = 512  #: new tokens per model action
    max_completion_tokens: int = 4096  #: model + environment tokens after the prompt, per episode
    reward_mode: Literal["episode", "turns", "checks"] = "episode"
    executor: Literal["worker", "inprocess"] = "worker"  #: sandbox of tool code (``inprocess``: trusted specs)
    pass_tools: bool = False  #: also pass ``tools=`` to the chat template (the system prompt lists them anyway)
    max_observation_chars: int = 4000  #: tool results are cut to this length
    temperature: float = 1.0
    top_p: float = 1.0
    parse_error_penalty: float = 0.0  #: subtracted from the reward once per unparsable tool call

    def __post_init__(self) -> None:
        for name in ("max_steps", "max_turn_tokens", "max_completion_tokens", "max_observation_chars"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        if self.max_turn_tokens > self.max_completion_tokens:
            raise ValueError("max_turn_tokens must be <= max_completion_tokens (one action must fit the episode)")
        if self.temperature < 0:
            raise ValueError("temperature must be >= 0 (0 is greedy)")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError("top_p must be in (0, 1]")
        if self.parse_error_penalty < 0:
            raise ValueError("parse_error_penalty must be >= 0 (it is subtracted)")


@dataclass
class SolverConfig:
    """The solver role: G rollouts per task, and the task set of ``envwright train solver``."""

    num_generations: int = 8  #: G: rollouts per task (the GRPO group; solve rates in self-play)
    envs: list[str] = field(default_factory=lambda: ["examples"])
    """Environment sources: ``examples`` (every shipped example), ``examples:NAME``, a library folder,
    a spec file or a folder of spec files."""
    tasks_per_env: int | None = None  #: first N tasks of each environment (None: all)
    holdout_tasks: int = 0  #: last N tasks of each environment are held out of training
    holdout_envs: int = 0  #: the last N environments (in ``envs`` order) are held out entirely
    loop: Literal["envwright", "trl"] = "envwright"
    """``envwright``: our multi-turn rollout function (every turn and check; environment tokens masked);
    ``trl``: TRL's own ``environment_factory`` tool loop over the same environments
    (:mod:`training.trl_env`; single-turn tasks only, tool rounds capped by ``rollout.max_steps``)."""

    def __post_init__(self) -> None:
        if self.num_generations < 1:
            raise ValueError("num_generations must be >= 1 (2 or more for a GRPO baseline)")
        if not self.envs:
            raise ValueError("envs must name at least one source, e.g. ['examples']")
        if self.tasks_per_env is not None and self.tasks_per_env < 1:
            raise ValueError("tasks_per_env must be >= 1 or null")
        if self.holdout_tasks < 0:
            raise ValueError("holdout_tasks must be >= 0")
        if self.holdout_envs < 0:
            raise ValueError("holdout_envs must be >= 0")


@dataclass
class ProposerConfig:
    """The proposer role's sampling and prompt (options of envgen's ``llm`` proposer)."""

    #: what the proposer writes: ``blueprint`` (a short typed proposal the one compiler turns into a spec; the
    #: stream a small model can write) or ``spec`` (a whole spec)
    structure: Literal["blueprint", "spec"] = "blueprint"
    #: the exploration stream's structure (None: ``structure``; ``spec``: free exploration by strong models)
    explore_structure: Literal["blueprint", "spec"] | None = None
    constrained: bool = True  #: decode under the structure's JSON Schema (every completion parses)
    max_new_tokens: int = 4096
    temperature: float = 0.7
    top_p: float = 0.95
    excerpt_tokens: int = 1500  #: token budget of the document excerpt
    n_examples: int = 1  #: example specs shown in the prompt
    example_tokens: int | None = 3500
    skill_level: Literal["name", "summary", "rules", "full"] = "rules"  #: how much of a routed skill is shown
    system_prompt: str | None = None  #: replaces envgen's proposer system prompt (small models, smoke runs)

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise ValueError("max_new_tokens must be >= 1")
        if self.temperature < 0:
            raise ValueError("temperature must be >= 0")


@dataclass
class SelfPlayConfig:
    """Self-play rounds: the same model proposes environments and solves them."""

    rounds: int = 10
    corpus: str = "stdlib"  #: ``stdlib``, a PATH (tree, .jsonl, .parquet) or ``hf:NAME``
    docs: int = 200  #: documents in the pool the rounds draw from
    min_stateful: float | None = 0.0  #: stateful-score filter of documents (None: no filter)
    skills: str | None = None  #: skill library to start from (None: the built-in skills)
    library: str | None = None  #: environment library folder (None: RUN/library)
    round: RoundConfig = field(default_factory=RoundConfig)  #: envgen's dual-stream round (n, alpha, ...)
    controller: ControllerConfig = field(default_factory=ControllerConfig)  #: envgen's skill controller
    proposer: ProposerConfig = field(default_factory=ProposerConfig)
    #: tasks of each valid proposed environment the solver plays (a seeded draw), ``solver.num_generations``
    #: (k) times each; None: every task
    tasks_per_env: int | None = 4
    #: p̂, the solve rate the proposer reward is computed from: ``passed`` (the share of an environment's
    #: episodes that passed every check) or ``reward`` (their mean reward in ``rollout.reward_mode``)
    solve_rate: Literal["passed", "reward"] = "passed"
    train_proposer: bool = True
    train_solver: bool = True
    proposer_weight: float = 1.0  #: loss weight of proposer-role samples
    solver_weight: float = 1.0  #: loss weight of solver-role samples
    #: optimizer steps a round: ``joint`` (one step on both roles' samples) or ``sequential`` (a proposer step,
    #: then a solver step); the distillation phase, when on, is one more step after them
    schedule: Literal["joint", "sequential"] = "joint"
    write_skills: bool = True  #: the policy writes refinements and new skills (probed before they are kept)
    distill: bool = False  #: a recovery-step distillation phase each round (teacher: ``distill.teacher``)
    distill_episodes: int = 16  #: the round's failed solver episodes the distillation phase learns from (at most)
    #: held-out environments the solver is scored on every ``eval_every`` rounds and after the last one
    #: (sources as in ``solver.envs``; never trained on); their episodes share the round's rollout batch
    eval_envs: list[str] = field(default_factory=list)
    eval_every: int = 1
    eval_attempts: int = 2  #: episodes per held-out task (sampled at ``rollout.temperature``)
    eval_tasks_per_env: int | None = None  #: first N tasks of each held-out environment (None: all)
    checkpoint_every: int = 1  #: rounds between checkpoints
    keep_checkpoints: int | None = None  #: keep only the newest N (None: all)
    histogram_bins: int = 5  #: bins of the per-round solve-rate histogram

    def __post_init__(self) -> None:
        if self.rounds < 1:
            raise ValueError("rounds must be >= 1")
        if self.docs < 1:
            raise ValueError("docs must be >= 1")
        if self.tasks_per_env is not None and self.tasks_per_env < 1:
            raise ValueError("tasks_per_env must be >= 1 or null (every task)")
        if not (self.train_proposer or self.train_solver):
            raise ValueError("train_proposer and train_solver are both false: nothing would be trained")
        if self.train_proposer and self.round.group_size < 2:
            raise ValueError("round.group_size is 1: a proposal alone in its group has no GRPO baseline, so the "
                             "proposer would never learn; set selfplay.round.group_size=4 (G proposals per prompt) "
                             "or selfplay.train_proposer=false")
        if self.proposer_weight < 0 or self.solver_weight < 0:
            raise ValueError("proposer_weight and solver_weight must be >= 0")
        if self.checkpoint_every < 1:
            raise ValueError("checkpoint_every must be >= 1")
        if self.keep_checkpoints is not None and self.keep_checkpoints < 1:
            raise ValueError("keep_checkpoints must be >= 1 or null")
        if self.histogram_bins < 1:
            raise ValueError("histogram_bins must be >= 1")
        if self.distill_episodes < 1 or self.eval_every < 1 or self.eval_attempts < 1:
            raise ValueError("distill_episodes, eval_every and eval_attempts must be >= 1")
        if self.eval_tasks_per_env is not None and self.eval_tasks_per_env < 1:
            raise ValueError("eval_tasks_per_env must be >= 1 or null (every task)")


@dataclass
class DistillConfig:
    """Recovery-step self-distillation (see :mod:`training.distill`)."""

    iterations: int = 10
    teacher: str = "reference"  #: ``reference`` (the spec's reference trajectory) or a backend name
    teacher_model: str | None = None  #: model of a backend teacher
    teacher_options: dict[str, Any] = field(default_factory=dict)  #: keyword options of the backend
    teacher_max_new_tokens: int = 512
    episodes_per_iteration: int = 16  #: student rollouts per iteration (tasks drawn from solver.envs)
    max_recovery_steps: int = 8  #: teacher actions after the divergence
    include_correction: bool = True  #: also train the teacher's action at the divergence state
    require_success: bool = True  #: keep a recovery only if the turn's checks pass after it
    epochs: int = 1  #: passes over each iteration's samples

    def __post_init__(self) -> None:
        if self.iterations < 1 or self.episodes_per_iteration < 1 or self.epochs < 1:
            raise ValueError("iterations, episodes_per_iteration and epochs must be >= 1")
        if self.max_recovery_steps < 1:
            raise ValueError("max_recovery_steps must be >= 1")
        if self.teacher != "reference" and not self.teacher_model and self.teacher != "scripted":
            raise ValueError(f"teacher {self.teacher!r} needs distill.teacher_model (or use teacher: reference)")


@dataclass
class ProposerSFTConfig:
    """The proposer warm start (``envwright train proposer``): SFT on the AST writer's blueprints."""

    corpus: str = "stdlib"  #: documents to learn from: ``stdlib``, a PATH or ``hf:NAME``
    docs: int = 400  #: documents drawn from the corpus (seeded), before the split
    holdout: float = 0.2  #: share of documents held out (never trained on; ``holdout.json`` lists them)
    epochs: int = 2
    learning_rate: float = 5.0e-5
    batch_size: int = 8  #: pairs per optimizer step
    micro_batch_size: int = 4
    max_length: int = 3072  #: pairs longer than this (prompt + blueprint, in tokens) are skipped
    excerpt_tokens: int = 900  #: the document excerpt's budget in the prompt (as the proposer sends it)

    def __post_init__(self) -> None:
        if self.docs < 1 or self.epochs < 1 or self.batch_size < 1 or self.micro_batch_size < 1:
            raise ValueError("docs, epochs, batch_size and micro_batch_size must be >= 1")
        if not 0.0 <= self.holdout < 1.0:
            raise ValueError(f"holdout is a share of documents in [0, 1), got {self.holdout}")
        if self.learning_rate <= 0:
            raise ValueError("learning_rate must be > 0")
        if self.max_length < 256:
            raise ValueError("max_length must be >= 256 tokens (a blueprint alone is a few hundred)")


@dataclass
class RunConfig:
    """Where a run writes, how it is seeded and reported."""

    output_dir: str = "runs/envwright"
    seed: int = 0
    report_to: list[str] = field(default_factory=lambda: ["tensorboard"])  #: ``tensorboard``, ``wandb``, or []
    run_name: str | None = None
    resume: str | None = None  #: a checkpoint folder, or ``latest`` (the newest under output_dir)

    def __post_init__(self) -> None:
        if isinstance(self.report_to, str):
            self.report_to = [] if self.report_to in ("none", "") else [self.report_to]
        bad = [r for r in self.report_to if r not in ("tensorboard", "wandb", "none")]
        if bad:
            raise ValueError(f"report_to entries must be tensorboard or wandb, got {bad}")
        self.report_to = [r for r in self.report_to if r != "none"]


@dataclass
class TrainConfig:
    """The whole configuration (see the module docstring)."""

    model: ModelConfig = field(default_factory=ModelConfig)
    generation: GenerationConfig = field(default_factory=GenerationConfig)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    solver: SolverConfig = field(default_factory=SolverConfig)
    selfplay: SelfPlayConfig = field(default_factory=SelfPlayConfig)
    distill: DistillConfig = field(default_factory=DistillConfig)
    proposer_sft: ProposerSFTConfig = field(default_factory=ProposerSFTConfig)
    run: RunConfig = field(default_factory=RunConfig)
    grpo: dict[str, Any] = field(default_factory=dict)  #: keyword arguments of ``trl.GRPOConfig``

    def __post_init__(self) -> None:
        for key in self.grpo:
            if key in DERIVED_GRPO_FIELDS:
                raise ValueError(f"grpo.{key} is derived from {DERIVED_GRPO_FIELDS[key]}; set that instead "
                                 f"(e.g. --set {DERIVED_GRPO_FIELDS[key].split(' ')[0]}=...)")

    def require_model(self) -> None:
        """Raise unless ``model.name_or_path`` is set."""
        if not self.model.name_or_path:
            raise ConfigError("model.name_or_path is empty: set it to a hub id, a local model folder or a .gguf "
                              "file (e.g. --set model.name_or_path=Qwen/Qwen3-4B)")


#: GRPOConfig fields that our sections own, and where to set them.
DERIVED_GRPO_FIELDS: dict[str, str] = {
    "output_dir": "run.output_dir",
    "seed": "run.seed",
    "report_to": "run.report_to",
    "run_name": "run.run_name",
    "num_generations": "solver.num_generations",
    "max_completion_length": "rollout.max_completion_tokens",
    "temperature": "rollout.temperature",
    "top_p": "rollout.top_p",
    "use_vllm": "generation.engine (vllm)",
    "vllm_mode": "generation.vllm_mode",
    "vllm_gpu_memory_utilization": "generation.vllm_gpu_memory_utilization",
    "vllm_server_base_url": "generation.vllm_server_base_url",
    "use_cpu": "model.device (cpu)",
    "bf16": "model.dtype (bf16 or bf16-mixed)",
    "fp16": "model.dtype (fp16)",
    "gradient_checkpointing": "model.gradient_checkpointing",
}


# -- dict <-> dataclasses ---------------------------------------------------------------------------


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _coerce_union(value: Any, args: tuple[Any, ...], where: str) -> Any:
    if value is None and type(None) in args:
        return None
    errors = []
    for a in args:
        if a is type(None):
            continue
        try:
            return _coerce(value, a, where)
        except ConfigError as e:
            errors.append(str(e))
    raise ConfigError(errors[0] if len(errors) == 1 else
                      f"{where}: expected {' or '.join(_type_name(a) for a in args)}, got {value!r}")


def _field_path(where: str) -> Callable[[str], str]:
    """How a config key is shown in a suggestion: quoted, with its section (``'solver.num_generations'``)."""
    return lambda key: repr(f"{where}.{key}" if where else key)


def _coerce_literal(value: Any, args: tuple[Any, ...], where: str) -> Any:
    if value not in args:
        raise ConfigError(f"{where}: must be one of {list(args)}, got {value!r}{did_you_mean(value, args, n=1)}")
    return value


def _coerce_number(value: Any, tp: type, where: str) -> Any:
    if tp is int:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected an integer, got {value!r}")
        return value
    if isinstance(value, str):
        try:
            return float(value)  # YAML 1.1 reads 1e-6 (no dot) as a string
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{where}: expected a number, got {value!r}")
    return float(value)


def _coerce(value: Any, tp: Any, where: str) -> Any:
    """Check (and gently convert) one leaf value against its annotation."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (Union, types.UnionType):
        return _coerce_union(value, args, where)
    if origin is Literal:
        return _coerce_literal(value, args, where)
    if origin is list:
        value = list(value) if isinstance(value, tuple) else value
        if not isinstance(value, list):
            raise ConfigError(f"{where}: expected a list, got {value!r} (YAML: [a, b])")
        return [_coerce(v, args[0], f"{where}[{i}]") for i, v in enumerate(value)] if args else value
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {value!r}")
        return dict(value)
    if dataclasses.is_dataclass(tp):
        return _build(tp, value, where)  # type: ignore[arg-type]
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {value!r}")
        return value
    if tp in (int, float):
        return _coerce_number(value, tp, where)
    if tp is str:
        if isinstance(value, Path):
            return str(value)
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string, got {value!r}")
    return value


def _build(cls: type, data: Any, where: str) -> Any:
    """Build dataclass ``cls`` from a mapping, naming every problem by its dotted key."""
    if isinstance(data, cls):
        return data
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{where or 'config'}: expected a mapping of {cls.__name__} fields, got {data!r}")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls) if f.init]
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{where}.{key}" if where else str(key)
        if key not in names:
            hint = did_you_mean(key, names, n=1, show=_field_path(where))
            raise ConfigError(f"{path}: unknown key{hint} (keys of {where or 'the config'}: {', '.join(names)})")
        kwargs[key] = _coerce(value, hints[key], path)
    try:
        return cls(**kwargs)
    except ConfigError:
        raise
    except (ValueError, TypeError) as e:
        raise ConfigError(f"{where or 'config'}: {e}") from None


def config_from_dict(data: dict[str, Any] | None) -> TrainConfig:
    """Build and validate a :class:`TrainConfig` from nested dicts (as read from YAML)."""
    return _build(TrainConfig, data or {}, "")


def config_to_dict(cfg: Any) -> dict[str, Any]:
    """The config as plain nested dicts (round-trips through :func:`config_from_dict`)."""
    return dataclasses.asdict(cfg)


def _numeric(value: Any) -> Any:
    """YAML 1.1 reads ``1e-5`` (no dot) as a string; read it as the number it is."""
    if isinstance(value, str) and re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+", value.strip()):
        return float(value)
    return value


def apply_overrides(data: dict[str, Any], overrides: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """Apply ``key.sub=value`` overrides (values parsed as YAML) to nested dicts, in place."""
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"override {item!r} must look like section.key=value (e.g. solver.num_generations=4)")
        key, raw = item.split("=", 1)
        key = key.strip()
        if not key or any(not part for part in key.split(".")):
            raise ConfigError(f"override {item!r}: the key {key!r} is not a dotted path like solver.num_generations")
        try:
            value = _numeric(yaml.safe_load(raw)) if raw.strip() else ""
        except yaml.YAMLError as e:
            raise ConfigError(f"override {item!r}: the value is not valid YAML ({e})") from None
        node = data
        parts = key.split(".")
        for part in parts[:-1]:
            nxt = node.setdefault(part, {})
            if not isinstance(nxt, dict):
                raise ConfigError(f"override {item!r}: {part!r} is a value, not a section")
            node = nxt
        node[parts[-1]] = value
    return data


def load_config(path: str | Path | None = None, overrides: list[str] | tuple[str, ...] = ()) -> TrainConfig:
    """Read a YAML config (``None``: the defaults), apply overrides, validate."""
    data: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        if not p.is_file():
            root = Path(__file__).parent / "configs"
            bundled = [root / p.name, root / f"{p.name}.yaml"]  # a bundled config by name, with or without .yaml
            found = [b for b in bundled if b.is_file()]
            if p.parent == Path(".") and found:
                p = found[0]
            else:
                names = sorted(x.stem for x in root.glob("*.yaml"))
                raise ConfigError(f"no config file at {p}; bundled configs (by name): {', '.join(names)}")
        try:
            loaded = yaml.safe_load(p.read_text(encoding="utf-8"))
        except yaml.YAMLError as e:
            raise ConfigError(f"{p}: not valid YAML: {e}") from None
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"{p}: the top level must be a mapping of sections (model, rollout, ...)")
        data = loaded or {}
    apply_overrides(data, list(overrides))
    return config_from_dict(data)


# -- TRL's GRPOConfig ------------------------------------------------------------------------------


def resolve_device(cfg: TrainConfig) -> str:
    """``cpu`` or ``cuda[:N]`` for ``model.device``."""
    import torch

    if cfg.model.device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if cfg.model.device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError("model.device is cuda but no CUDA device is visible; set --set model.device=cpu")
    return cfg.model.device


def resolve_dtype_name(cfg: TrainConfig, device: str) -> str:
    """``bf16``, ``bf16-mixed`` (fp32 weights, bf16 autocast; CUDA only), ``fp16`` or ``fp32``."""
    d = cfg.model.dtype
    if d == "auto":
        return "bf16" if device.startswith("cuda") else "fp32"
    if d == "bf16-mixed":
        return d if device.startswith("cuda") else "fp32"
    return {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}.get(d, d)


def generation_autocast(cfg: TrainConfig) -> bool:
    """Whether HF generation runs under bf16 autocast: ``model.dtype: bf16-mixed`` on CUDA."""
    return resolve_dtype_name(cfg, resolve_device(cfg)) == "bf16-mixed"


def to_grpo_config(cfg: TrainConfig, output_dir: str | Path | None = None, *, for_trl: bool = True,
                   **extra: Any) -> Any:
    """``trl.GRPOConfig`` from ``cfg.grpo`` plus the fields our sections own.

    ``for_trl=False`` (the self-play and distillation updates read only the optimizer and loss knobs)
    neutralises GRPOTrainer's batch-shape rules, which do not apply to them.
    """
    from trl import GRPOConfig

    device = resolve_device(cfg)
    dtype = resolve_dtype_name(cfg, device)
    kwargs = {k: _numeric(v) for k, v in cfg.grpo.items()}
    kwargs.update(
        output_dir=str(output_dir or cfg.run.output_dir), seed=cfg.run.seed,
        report_to=list(cfg.run.report_to) or "none", run_name=cfg.run.run_name,
        num_generations=cfg.solver.num_generations, max_completion_length=cfg.rollout.max_completion_tokens,
        temperature=max(cfg.rollout.temperature, 1e-5), top_p=cfg.rollout.top_p,
        use_cpu=device == "cpu", bf16=dtype in ("bf16", "bf16-mixed") and device != "cpu",
        fp16=dtype == "fp16" and device != "cpu",
    )
    if cfg.model.gradient_checkpointing:
        kwargs["gradient_checkpointing"] = True
    if cfg.generation.engine == "vllm":
        kwargs.update(use_vllm=True, vllm_mode=cfg.generation.vllm_mode,
                      vllm_gpu_memory_utilization=cfg.generation.vllm_gpu_memory_utilization)
        if cfg.generation.vllm_server_base_url:
            kwargs["vllm_server_base_url"] = cfg.generation.vllm_server_base_url
    if not for_trl:
        bs = int(kwargs.get("per_device_train_batch_size", 8))
        kwargs.pop("steps_per_generation", None)
        kwargs.update(num_generations=2, generation_batch_size=2 * bs)
    kwargs.update(extra)
    names = {f.name for f in dataclasses.fields(GRPOConfig)}
    unknown = [k for k in kwargs if k not in names]
    if unknown:
        hint = did_you_mean(unknown[0], names, n=1, show=lambda c: f"grpo.{c}")
        raise ConfigError(f"grpo.{unknown[0]} is not a field of trl.GRPOConfig{hint}")
    try:
        return GRPOConfig(**kwargs)
    except (ValueError, TypeError) as e:
        raise ConfigError(f"grpo: trl.GRPOConfig rejected the settings: {e}") from None
