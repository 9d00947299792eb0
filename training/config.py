"""Typed training configuration: our dataclasses plus TRL's ``GRPOConfig``, loaded from YAML.

One config file drives every trainer (``envwright train selfplay|solver|distill``)::

    model:      ModelConfig       what to load (hub id, folder or GGUF), dtype, LoRA, chat template
    generation: GenerationConfig  the engine that samples (transformers generate, its fast path, or vLLM)
    rollout:    RolloutConfig     episodes over ToolEnv: budgets, reward mode, sampling, the simulated user
    solver:     SolverConfig      G rollouts per task; which environments the solver trainer uses
    selfplay:   SelfPlayConfig    rounds, corpus, the dual stream (envgen's RoundConfig and
                                  ControllerConfig, nested as they are), the proposer's sampling,
                                  the acceptance probe (``selfplay.probe``) and the format-recovery
                                  step (``selfplay.recovery``)
    distill:    DistillConfig     recovery-step self-distillation: teacher, iterations
    proposer_sft: ProposerSFTConfig  the proposer warm start: SFT on the AST writer's blueprints
    run:        RunConfig         output folder, seed, report_to, resume
    grpo:       {...}             keyword arguments of ``trl.GRPOConfig`` (learning rate, beta,
                                  epsilon, loss_type, batch sizes, ...), validated by TRL itself
                                  (:func:`training.trl_config.to_grpo_config`)

Each field is documented once, in its section's class (the self-play sections are in
:mod:`training.config_selfplay`, the field types every section shares in :mod:`training.config_fields`),
or in TRL for ``grpo``. Fields that several
components share live in our sections and are *derived* into ``GRPOConfig``
(:data:`DERIVED_GRPO_FIELDS`); setting one of them under ``grpo`` is an error
that names the key to use instead.

:func:`load_config` reads a YAML file and applies dotted overrides
(``--set solver.num_generations=4``, values parsed as YAML). The sections are pydantic
dataclasses: pydantic checks every value against its annotation (gently: ``4.0`` is an
integer, ``"1e-5"`` a number; YAML's ``true`` is neither, and a flag takes only ``true`` or
``false``: :data:`Int`, :data:`Float`, :data:`Bool`), then each section's ``__post_init__``
checks what the types cannot say. Every problem raises :class:`~training.errors.ConfigError`
naming the key (:func:`config_from_dict` writes pydantic's errors so), with a close-match
suggestion for a misspelt one and the fix for a bad value.

The device, the dtype and TRL's ``GRPOConfig`` that follow from a config are in
:mod:`training.trl_config`.
"""

from __future__ import annotations

import dataclasses
import re
import typing
import warnings
from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import TypeAdapter, ValidationError, field_validator
from pydantic.dataclasses import dataclass

from corpora.errors import did_you_mean
from gym_envs.engine import OBSERVATION_CHARS
from training.config_fields import CONFIG, Bool, Float, Int, Section
from training.config_selfplay import ProbeConfig, ProposerConfig, RecoveryConfig, SelfPlayConfig
from training.errors import ConfigError

__all__ = [
    "DERIVED_GRPO_FIELDS",
    "Bool",
    "DistillConfig",
    "Float",
    "GenerationConfig",
    "Int",
    "ModelConfig",
    "ProbeConfig",
    "ProposerConfig",
    "ProposerSFTConfig",
    "RecoveryConfig",
    "RolloutConfig",
    "RunConfig",
    "Section",
    "SelfPlayConfig",
    "SolverConfig",
    "TrainConfig",
    "apply_overrides",
    "config_from_dict",
    "config_to_dict",
    "load_config",
    "value_problem",
    "yaml_number",
]

@dataclass(config=CONFIG)
class ModelConfig:
    """The policy model (the one model that proposes and solves)."""

    name_or_path: str = ""  #: hub id, local folder, or a ``.gguf`` file
    gguf_file: str | None = None  #: GGUF file inside ``name_or_path`` (de-quantised by transformers)
    #: ``auto`` (bf16 on CUDA, fp32 on CPU), ``bf16``, ``bf16-mixed``, ``fp16``, ``fp32``: the dtype of
    #: the trained weights. ``bf16`` halves their memory but rounds away optimizer steps smaller than its
    #: resolution (about 1/256 of a weight), so small learning rates may not move the weights at all; with
    #: LoRA, peft keeps the adapters fp32, so a bf16 base is fine. ``bf16-mixed`` keeps fp32 weights and runs the
    #: training forward passes under bf16 autocast (TRL's ``bf16=True`` does so on an fp32 model); HF
    #: generation then runs in fp32 (vLLM keeps its own bf16 copy). On CPU it is plain fp32.
    dtype: str = "auto"
    device: str = "auto"  #: ``auto``, ``cpu`` or ``cuda`` (single-process trainers; TRL uses accelerate)
    chat_template: str | None = None  #: None keeps the tokenizer's; ``trl:NAME`` (TRL's bundled NAME.jinja) or a path
    lora_r: Int = 0  #: LoRA rank; 0 trains every weight
    lora_alpha: Int = 32
    lora_dropout: Float = 0.0
    lora_target_modules: list[str] | str = "all-linear"
    gradient_checkpointing: Bool = False
    #: our own updates (self-play, distillation, the SFT warm starts, the sampler gap): at most this many tokens,
    #: padding included, in one forward/backward micro-batch; longer samples go in smaller ones (the loss and
    #: gradients are the same sums). None: ``per_device_train_batch_size`` rows whatever their length
    micro_batch_tokens: Int | None = None
    attn_implementation: str | None = None  #: e.g. ``sdpa``, ``flash_attention_2``
    trust_remote_code: Bool = False

    def __post_init__(self) -> None:
        if self.micro_batch_tokens is not None and self.micro_batch_tokens < 1:
            raise ValueError(f"model.micro_batch_tokens must be >= 1 (or null), got {self.micro_batch_tokens}")
        if self.dtype not in ("auto", "bf16", "bfloat16", "bf16-mixed", "fp16", "float16", "fp32", "float32"):
            raise ValueError(f"dtype must be auto, bf16, bf16-mixed, fp16 or fp32, got {self.dtype!r}")
        if self.device not in ("auto", "cpu", "cuda") and not self.device.startswith("cuda:"):
            raise ValueError(f"device must be auto, cpu or cuda, got {self.device!r}")
        if self.lora_r < 0:
            raise ValueError("lora_r must be >= 0 (0 trains every weight)")


@dataclass(config=CONFIG)
class GenerationConfig:
    """The engine that samples completions for both roles."""

    #: ``transformers`` or ``vllm`` (the names of envgen's backends; ``--engine`` on the command line sets it);
    #: ``auto``: vLLM when installed and on CUDA, else ``transformers``
    engine: Literal["auto", "transformers", "vllm"] = "auto"
    vllm_mode: Literal["colocate", "server"] = "colocate"
    vllm_gpu_memory_utilization: Float = 0.3  #: colocate: share of GPU memory for vLLM
    #: server: the ``trl vllm-serve`` address as one URL (e.g. ``http://localhost:8000``), or give
    #: ``vllm_server_host`` and ``vllm_server_port`` instead (one of the two ways, never both)
    vllm_server_base_url: str | None = None
    vllm_server_host: str | None = None  #: server: the host ``trl vllm-serve`` listens on (e.g. ``localhost``)
    vllm_server_port: Int = 8000  #: server: its HTTP port (``trl vllm-serve --port``)
    #: server: the port of the NCCL group that carries the trainer's weights to the server after each update
    #: (TRL's ``vllm_group_port``); another run on the same host needs another
    vllm_group_port: Int = 51216
    vllm_server_timeout: Float = 240.0  #: server: seconds to wait for the server to answer at start
    vllm_max_model_length: Int | None = None
    #: colocate: vLLM's sleep mode, its weights and KV cache released while the trainer updates (less memory, a
    #: weight push and a wake-up a step); TRL's ``vllm_enable_sleep_mode`` for ``train solver``
    vllm_sleep: Bool = False
    #: colocate: build the engine with envwright's prefix-grammar logits processor (:mod:`training.vllm_prefix`),
    #: so that the format recovery goes on under the grammar on vLLM; false: it runs on a transformers copy of the
    #: policy instead (slower), for a vLLM that refuses custom logits processors
    vllm_prefix_grammar: Bool = True
    #: fail when the sampler's and the trainer's log-probabilities of the sampled tokens differ by more than this
    #: on average (nats), measured every step right after a weight sync: the weights did not reach the engine
    #: (:mod:`training.weight_sync`); null: report the gap, never fail
    max_logprob_gap: Float | None = 0.5
    #: self-play, vLLM colocated: after each round's generation, time the engine on the round's own rows (every
    #: proposal's prompt and every action's context, each to the length it generated, EOS ignored, one call): the
    #: round's ``throughput.raw`` and ``of_raw``, the in-loop rate against the raw one at the same shape; and the
    #: round's own calls replayed one by one (``raw_by_call``, ``of_raw_by_call``)
    measure_raw: Bool = False
    #: rows decoded at once: transformers, rows per ``generate`` call (None: all at once); vLLM, its
    #: ``max_num_seqs`` (None: vLLM's default)
    batch_size: Int | None = None
    sort_by_length: Bool = True  #: transformers: batch rows of similar length together (less padding)
    #: transformers: static KV cache (the fast path for calls of one size). Transformers sizes it to the longest call
    #: seen so far, and each new batch size is a new shape to compile, so a workload that mixes long calls with many
    #: short ones of changing size (self-play: blueprint prompts, then rollout steps) does not suit it: with
    #: ``compile`` it was much slower than the dynamic cache there (see training/results/h200.md)
    static_cache: Bool = False
    compile: Bool = False  #: transformers: torch.compile the decoding step (needs ``static_cache``)

    @field_validator("engine", mode="before")
    @classmethod
    def _engine_name(cls, value: Any) -> Any:
        """``hf``, the name runs written before the engines were named like the backends used, still loads."""
        if value == "hf":
            warnings.warn("generation.engine: 'hf' is now called 'transformers' (the backend's name); this config "
                          "still loads, write engine: transformers", DeprecationWarning, stacklevel=2)
            return "transformers"
        return value

    def __post_init__(self) -> None:
        if self.compile and not self.static_cache:
            raise ValueError("compile needs static_cache: set generation.static_cache=true (a dynamic cache "
                             "recompiles at every length)")
        if self.batch_size is not None and self.batch_size < 1:
            raise ValueError("batch_size must be >= 1 or null (all rows in one call)")
        if not 0.0 < self.vllm_gpu_memory_utilization <= 1.0:
            raise ValueError("vllm_gpu_memory_utilization must be in (0, 1]")
        if self.max_logprob_gap is not None and self.max_logprob_gap <= 0:
            raise ValueError("max_logprob_gap must be > 0 (nats), or null to report the gap without a limit")
        if self.vllm_sleep and self.vllm_mode != "colocate":
            raise ValueError("vllm_sleep needs vllm_mode=colocate (a vLLM server manages its own memory)")
        self._check_server()

    def _check_server(self) -> None:
        for name in ("vllm_server_port", "vllm_group_port"):
            if not 1 <= getattr(self, name) <= 65535:
                raise ValueError(f"{name} must be a TCP port in 1..65535, got {getattr(self, name)}")
        if self.vllm_server_timeout <= 0:
            raise ValueError("vllm_server_timeout must be > 0 (seconds)")
        url = self.vllm_server_base_url
        if url is not None and not re.fullmatch(r"https?://[^/\s:]+(:\d+)?/?", url):
            raise ValueError(f"vllm_server_base_url must look like http://HOST:PORT (trl vllm-serve's address), "
                             f"got {url!r}")
        if url is not None and self.vllm_server_host is not None:
            raise ValueError("give the vLLM server's address once: vllm_server_base_url, or vllm_server_host and "
                             "vllm_server_port")
        if self.vllm_mode != "server":
            return
        if url is None and not self.vllm_server_host:
            raise ValueError("vllm_mode=server needs the address of the trl vllm-serve process: set "
                             "generation.vllm_server_host (and vllm_server_port, default 8000), or "
                             "generation.vllm_server_base_url=http://HOST:PORT")
        if self.engine != "vllm":
            raise ValueError(f"vllm_mode=server generates on a vLLM server, which needs generation.engine=vllm "
                             f"(got {self.engine!r}: it would leave the server unused)")
        server_port = int(url.rstrip("/").rsplit(":", 1)[1]) if url and url.count(":") == 2 else (
            self.vllm_server_port if url is None else None)
        if server_port == self.vllm_group_port:
            raise ValueError(f"vllm_group_port ({self.vllm_group_port}) is the server's HTTP port: the weight "
                             "group needs a port of its own")


@dataclass(config=CONFIG)
class RolloutConfig:
    """Solver episodes over :class:`~gym_envs.env.ToolEnv`."""

    #: env actions per episode (ToolEnv ``max_steps``); a task whose reference needs more (one action per
    #: call, a reply per turn) gets what it needs and a margin (:func:`training.rollout.step_budget`), so no
    #: task is unsolvable by its step limit
    max_steps: Int = 16
    max_turn_tokens: Int = 512  #: new tokens per model action
    max_completion_tokens: Int = 4096  #: model + environment tokens after the prompt, per episode
    reward_mode: Literal["episode", "turns", "checks", "progress"] = "episode"
    executor: Literal["worker", "inprocess"] = "worker"  #: sandbox of tool code (``inprocess``: trusted specs)
    pass_tools: Bool = False  #: also pass ``tools=`` to the chat template (the system prompt lists them anyway)
    max_observation_chars: Int = OBSERVATION_CHARS  #: tool results are cut to this length (as in evaluation)
    temperature: Float = 1.0
    top_p: Float = 1.0
    parse_error_penalty: Float = 0.0  #: subtracted from the reward once per unparsable tool call
    #: a model plays the simulated user of scenario tasks (``transformers``, ``vllm``, ``openai``); None: each task's
    #: scripted user (gym_envs/ENVSPEC.md, "Conversations with a simulated user")
    user_backend: str | None = None
    user_model: str | None = None  #: the user model's id or path
    #: options of the user model (:class:`envgen.users.ModelRoleOptions`: ``max_new_tokens``, ``temperature``,
    #: ``seed``, ``backend_options``)
    user_options: dict[str, Any] = field(default_factory=dict)
    #: sandbox worker processes of the whole run (``executor: worker``), shared out over the training processes
    #: (:func:`training.parallel.rank_share`); scale it with the host's CPU cores (32 on a 2-GPU host); None: one
    #: worker a process
    sandbox_workers: Int | None = None

    def __post_init__(self) -> None:
        if self.sandbox_workers is not None and self.sandbox_workers < 1:
            raise ValueError("sandbox_workers must be >= 1 (worker processes of the run), or null (one a process)")
        if self.user_backend is None and (self.user_model or self.user_options):
            raise ValueError("rollout.user_model and rollout.user_options need rollout.user_backend (transformers, "
                             "vllm or openai)")
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


@dataclass(config=CONFIG)
class SolverConfig:
    """The solver role: G rollouts per task, and the task set of ``envwright train solver``."""

    num_generations: Int = 8  #: G: rollouts per task (the GRPO group; solve rates in self-play)
    envs: list[str] = field(default_factory=lambda: ["examples"])
    """Environment sources: ``examples`` (every shipped example), ``examples:NAME``, a library folder,
    a spec file or a folder of spec files."""
    tasks_per_env: Int | None = None  #: first N tasks of each environment (None: all)
    holdout_tasks: Int = 0  #: last N tasks of each environment are held out of training
    holdout_envs: Int = 0  #: the last N environments (in ``envs`` order) are held out entirely
    loop: Literal["envwright", "trl"] = "envwright"
    """``envwright``: our multi-turn rollout function (every turn and check; environment tokens masked);
    ``trl``: TRL's own ``environment_factory`` tool loop over the same environments
    (:mod:`training.trl_env`; later turns come through a turn-ending tool, tool rounds capped by
    ``rollout.max_steps``)."""

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


@dataclass(config=CONFIG)
class DistillConfig:
    """Recovery-step self-distillation (see :mod:`training.distill`)."""

    iterations: Int = 10
    teacher: str = "reference"  #: ``reference`` (the spec's reference trajectory) or a backend name
    teacher_model: str | None = None  #: model of a backend teacher
    teacher_options: dict[str, Any] = field(default_factory=dict)  #: keyword options of the backend
    teacher_max_new_tokens: Int = 512
    episodes_per_iteration: Int = 16  #: student rollouts per iteration (tasks drawn from solver.envs)
    max_recovery_steps: Int = 8  #: teacher actions after the divergence
    include_correction: Bool = True  #: also train the teacher's action at the divergence state
    require_success: Bool = True  #: keep a recovery only if the turn's checks pass after it
    epochs: Int = 1  #: passes over each iteration's samples

    def __post_init__(self) -> None:
        if self.iterations < 1 or self.episodes_per_iteration < 1 or self.epochs < 1:
            raise ValueError("iterations, episodes_per_iteration and epochs must be >= 1")
        if self.max_recovery_steps < 1:
            raise ValueError("max_recovery_steps must be >= 1")
        if self.teacher != "reference" and not self.teacher_model and self.teacher != "scripted":
            raise ValueError(f"teacher {self.teacher!r} needs distill.teacher_model (or use teacher: reference)")


@dataclass(config=CONFIG)
class ProposerSFTConfig:
    """The proposer warm start (``envwright train proposer``): SFT on an AST writer's blueprints."""

    #: what the model learns to write: ``blueprint`` (v1, the template AST writer's) or ``world`` (world
    #: blueprints, the AST world writer's; prompts and targets are several times longer: raise max_length)
    structure: Literal["blueprint", "world"] = "blueprint"
    corpus: str = "stdlib"  #: documents to learn from: ``stdlib``, a PATH or ``hf:NAME``
    docs: Int = 400  #: documents drawn from the corpus (seeded), before the split
    holdout: Float = 0.2  #: share of documents held out (never trained on; ``holdout.json`` lists them)
    epochs: Int = 2
    learning_rate: Float = 5.0e-5
    batch_size: Int = 8  #: pairs per optimizer step
    micro_batch_size: Int = 4
    max_length: Int = 3072  #: pairs longer than this (prompt + blueprint, in tokens) are skipped
    excerpt_tokens: Int = 900  #: the document excerpt's budget in the prompt (as the proposer sends it)

    def __post_init__(self) -> None:
        if self.docs < 1 or self.epochs < 1 or self.batch_size < 1 or self.micro_batch_size < 1:
            raise ValueError("docs, epochs, batch_size and micro_batch_size must be >= 1")
        if not 0.0 <= self.holdout < 1.0:
            raise ValueError(f"holdout is a share of documents in [0, 1), got {self.holdout}")
        if self.learning_rate <= 0:
            raise ValueError("learning_rate must be > 0")
        if self.max_length < 256:
            raise ValueError("max_length must be >= 256 tokens (a blueprint alone is a few hundred)")


@dataclass(config=CONFIG)
class RunConfig:
    """Where a run writes, how it is seeded and reported."""

    output_dir: str = "runs/envwright"
    seed: Int = 0
    report_to: list[str] = field(default_factory=lambda: ["tensorboard"])  #: ``tensorboard``, ``wandb``, or []
    run_name: str | None = None
    resume: str | None = None  #: a checkpoint folder, or ``latest`` (the newest under output_dir)
    #: training processes the config is written for (``accelerate launch --num_processes N``; 1: a plain
    #: command); a trainer refuses to start in another world (:func:`training.parallel.check_world`); None: any
    num_processes: Int | None = None

    @field_validator("report_to", mode="before")
    @classmethod
    def _one_reporter(cls, value: Any) -> Any:
        """A single name stands for a list of it (``none`` or empty: report nowhere)."""
        if isinstance(value, str):
            return [] if value in ("none", "") else [value]
        return value

    def __post_init__(self) -> None:
        if self.num_processes is not None and self.num_processes < 1:
            raise ValueError("num_processes must be >= 1 (training processes; 1: no launcher), or null (any)")
        bad = [r for r in self.report_to if r not in ("tensorboard", "wandb", "none")]
        if bad:
            raise ValueError(f"report_to entries must be tensorboard or wandb, got {bad}")
        self.report_to = [r for r in self.report_to if r != "none"]


@dataclass(config=CONFIG)
class TrainConfig:
    """The whole configuration (see the module docstring)."""

    model: Section[ModelConfig] = field(default_factory=ModelConfig)
    generation: Section[GenerationConfig] = field(default_factory=GenerationConfig)
    rollout: Section[RolloutConfig] = field(default_factory=RolloutConfig)
    solver: Section[SolverConfig] = field(default_factory=SolverConfig)
    selfplay: Section[SelfPlayConfig] = field(default_factory=SelfPlayConfig)
    distill: Section[DistillConfig] = field(default_factory=DistillConfig)
    proposer_sft: Section[ProposerSFTConfig] = field(default_factory=ProposerSFTConfig)
    run: Section[RunConfig] = field(default_factory=RunConfig)
    grpo: dict[str, Any] = field(default_factory=dict)  #: keyword arguments of ``trl.GRPOConfig``

    def __post_init__(self) -> None:
        for key in self.grpo:
            if key in DERIVED_GRPO_FIELDS:
                raise ValueError(f"grpo.{key} is derived from {DERIVED_GRPO_FIELDS[key]}; set that instead "
                                 f"(e.g. --set {DERIVED_GRPO_FIELDS[key].split(' ')[0]}=...)")
        workers = self.rollout.sandbox_workers
        if workers is not None and workers < (self.run.num_processes or 1):
            raise ValueError(f"rollout.sandbox_workers ({workers}) is fewer than run.num_processes "
                             f"({self.run.num_processes}): every training process needs a worker of its own")

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
    "vllm_server_host": "generation.vllm_server_host",
    "vllm_server_port": "generation.vllm_server_port",
    "vllm_group_port": "generation.vllm_group_port",
    "vllm_server_timeout": "generation.vllm_server_timeout",
    "vllm_enable_sleep_mode": "generation.vllm_sleep",
    "vllm_max_model_length": "generation.vllm_max_model_length",
    "use_cpu": "model.device (cpu)",
    "bf16": "model.dtype (bf16 or bf16-mixed)",
    "fp16": "model.dtype (fp16)",
    "gradient_checkpointing": "model.gradient_checkpointing",
}


# -- dict <-> dataclasses: pydantic validates, ConfigError says what to change ------------------------

_ADAPTER = TypeAdapter(TrainConfig)
_EXPECTED = {"int_type": "an integer", "int_parsing": "an integer", "int_from_float": "an integer",
             "float_type": "a number", "float_parsing": "a number", "bool_type": "true or false",
             "bool_parsing": "true or false", "string_type": "a string", "list_type": "a list",
             "dict_type": "a mapping"}
_UNKNOWN_KEY = ("unexpected_keyword_argument", "extra_forbidden")


def _walk(loc: tuple[int | str, ...]) -> tuple[str, Any, Any]:
    """Where an error is: its dotted key (``solver.envs[0]``), the section holding the last field, its type.

    The walk stops at a part that is no field (an unknown key, or the tag pydantic gives a union's member).
    """
    key, section = "", None
    tp: Any = TrainConfig
    for part in loc:
        if isinstance(part, int):
            key += f"[{part}]"
            tp = next(iter(typing.get_args(tp)), Any)
            continue
        if not dataclasses.is_dataclass(tp) or part not in (hints := typing.get_type_hints(tp)):
            break
        key, section, tp = f"{key}.{part}" if key else part, tp, hints[part]
    return key, section, tp


def _choices(tp: Any) -> tuple[Any, ...]:
    """The values a ``Literal`` annotation (possibly ``| None``) allows."""
    if typing.get_origin(tp) is Literal:
        return typing.get_args(tp)
    return tuple(c for a in typing.get_args(tp) for c in _choices(a))


def _field_path(where: str) -> Callable[[str], str]:
    """How a config key is shown in a suggestion: quoted, with its section (``'solver.num_generations'``)."""
    return lambda key: repr(f"{where}.{key}" if where else key)


def _problem(errors: list[Any]) -> str:
    """The first problem of a :class:`pydantic.ValidationError` (its ``errors()``), as the fix to make."""
    first = errors[0]
    kind, loc, value = first["type"], tuple(first["loc"]), first.get("input")
    if kind in _UNKNOWN_KEY:
        where, _, holder = _walk(loc[:-1])
        names = [f.name for f in dataclasses.fields(holder) if f.init]
        hint = did_you_mean(loc[-1], names, n=1, show=_field_path(where))
        path = f"{where}.{loc[-1]}" if where else str(loc[-1])
        return f"{path}: unknown key{hint} (keys of {where or 'the config'}: {', '.join(names)})"
    key, _, tp = _walk(loc)
    where = key or "config"
    if kind in ("dataclass_type", "dataclass_exact_type", "model_type"):
        name = getattr(tp, "__name__", None) or (first.get("ctx") or {}).get("class_name", "section")
        return f"{where}: expected a mapping of {name} fields, got {value!r}"
    if kind in ("value_error", "assertion_error"):
        return f"{where}: {(first.get('ctx') or {}).get('error', first['msg'])}"
    if kind == "literal_error":
        choices = _choices(tp)
        return f"{where}: must be one of {list(choices)}, got {value!r}{did_you_mean(value, choices, n=1)}"
    same = [e for e in errors if _walk(tuple(e["loc"]))[0] == key and e["type"] in _EXPECTED]
    return value_problem(where, value, same or [first])


def value_problem(key: str, value: Any, errors: list[Any]) -> str:
    """``KEY: expected a number, got 'fast'`` from pydantic's errors about one value (a union's members each
    say what they expected), in the words of every config error; else pydantic's own message."""
    expected = " or ".join(dict.fromkeys(_EXPECTED[e["type"]] for e in errors if e["type"] in _EXPECTED))
    if expected:
        return f"{key}: expected {expected}, got {value!r}" + (" (YAML: [a, b])" if "a list" in expected else "")
    return f"{key}: {errors[0]['msg']}, got {value!r}"


def config_from_dict(data: dict[str, Any] | None) -> TrainConfig:
    """Build and validate a :class:`TrainConfig` from nested dicts (as read from YAML)."""
    try:
        return _ADAPTER.validate_python(data or {})
    except ValidationError as e:
        raise ConfigError(_problem(e.errors())) from None


def config_to_dict(cfg: Any) -> dict[str, Any]:
    """The config as plain nested dicts (round-trips through :func:`config_from_dict`)."""
    return dataclasses.asdict(cfg)


def yaml_number(value: Any) -> Any:
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
            value = yaml_number(yaml.safe_load(raw)) if raw.strip() else ""
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
