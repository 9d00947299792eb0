"""Config loading, overrides, validation messages, and the bundled example configs."""

from __future__ import annotations

from pathlib import Path

import pytest

from training.config import TrainConfig, config_from_dict, config_to_dict, load_config
from training.errors import ConfigError
from training.trl_config import to_grpo_config

BUNDLED = sorted(p.name for p in (Path(__file__).parents[2] / "training" / "configs").glob("*.yaml"))


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_configs_load(name: str) -> None:
    cfg = load_config(name)
    assert cfg.model.name_or_path
    assert config_from_dict(config_to_dict(cfg)) == cfg  # round trip


def test_overrides_are_typed_yaml() -> None:
    cfg = load_config("smoke-cpu.yaml", ["solver.num_generations=4", "grpo.learning_rate=1e-5",
                                         "run.report_to=[]", "selfplay.round.alpha=0.25", "model.lora_r=8"])
    assert cfg.solver.num_generations == 4
    assert cfg.grpo["learning_rate"] == pytest.approx(1e-5)
    assert cfg.run.report_to == []
    assert cfg.selfplay.round.alpha == 0.25
    assert cfg.model.lora_r == 8


@pytest.mark.parametrize(("data", "message"), [
    ({"solver": {"num_generatons": 4}}, "did you mean 'solver.num_generations'"),
    ({"rollout": {"reward_mode": "episodes"}}, "did you mean 'episode'"),
    ({"rollout": {"max_turn_tokens": "many"}}, "rollout.max_turn_tokens: expected an integer"),
    ({"rollout": {"max_turn_tokens": 900, "max_completion_tokens": 100}}, "max_turn_tokens must be <="),
    ({"selfplay": {"round": {"alpha": 2}}}, "selfplay.round: alpha must be in [0, 1]"),
    ({"selfplay": {"train_proposer": False, "train_solver": False}}, "nothing would be trained"),
    ({"selfplay": {"round": {"group_size": 1}}}, "set selfplay.round.group_size=4"),
    ({"selfplay": {"round": {"group_size": 0}}}, "group_size must be >= 1"),
    ({"selfplay": {"schedule": "alternate"}}, "selfplay.schedule: must be one of"),
    ({"selfplay": {"proposer": {"structure": "blueprints"}}}, "did you mean 'blueprint'"),
    ({"selfplay": {"controller": {"probes": -1}}}, "max_induced and probes must be >= 0"),
    ({"grpo": {"num_generations": 4}}, "set that instead (e.g. --set solver.num_generations"),
    ({"generation": {"compile": True}}, "set generation.static_cache=true"),
    ({"distill": {"teacher": "transformers"}}, "needs distill.teacher_model"),
    ({"run": {"report_to": ["mlflow"]}}, "tensorboard or wandb"),
    ({"model": "Qwen/Qwen3-4B"}, "model: expected a mapping of ModelConfig fields"),
    ({"model": {"lora_r": True}}, "model.lora_r: expected an integer, got True"),
    ({"model": {"lora_r": 4.5}}, "model.lora_r: expected an integer, got 4.5"),
    ({"rollout": {"pass_tools": 1}}, "rollout.pass_tools: expected true or false, got 1"),
    ({"rollout": {"temperature": "hot"}}, "rollout.temperature: expected a number, got 'hot'"),
    ({"solver": {"envs": "examples"}}, "solver.envs: expected a list, got 'examples' (YAML: [a, b])"),
    ({"solver": {"envs": ["examples", 3]}}, "solver.envs[1]: expected a string, got 3"),
    ({"solver": {"tasks_per_env": "all"}}, "solver.tasks_per_env: expected an integer, got 'all'"),
    ({"selfplay": {"round": {"alpha": "x"}}}, "selfplay.round.alpha: expected a number"),
    ({"selfplay": {"round": {"nn": 3}}}, "selfplay.round.nn: unknown key; did you mean 'selfplay.round.n'?"),
    ({"solver": {"num_generatons": 4}}, "(keys of solver: num_generations, envs,"),
    ({"modle": {}}, "modle: unknown key; did you mean 'model'? (keys of the config: model,"),
])
def test_config_errors_say_the_fix(data: dict, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        config_from_dict(data)
    assert message in str(e.value)


def test_gentle_values_and_empty_sections() -> None:
    """YAML 1.1's ``1e-3`` (a string) is a number, ``4.0`` an integer; an empty section has its defaults."""
    cfg = config_from_dict({"rollout": {"temperature": "1e-3", "max_steps": 4.0}, "selfplay": None,
                            "run": {"report_to": "none"}})
    assert cfg.rollout.temperature == pytest.approx(1e-3) and cfg.rollout.max_steps == 4
    assert cfg.selfplay == TrainConfig().selfplay and cfg.run.report_to == []


def test_bad_override_syntax() -> None:
    with pytest.raises(ConfigError, match=r"section\.key=value"):
        load_config(None, ["solver.num_generations"])
    with pytest.raises(ConfigError, match="no config file"):
        load_config("nope.yaml")


def test_require_model() -> None:
    with pytest.raises(ConfigError, match=r"model\.name_or_path is empty"):
        TrainConfig().require_model()


def test_grpo_config_derived_and_checked(tmp_path: Path) -> None:
    cfg = load_config("smoke-cpu.yaml", ["solver.num_generations=2", f"run.output_dir={tmp_path}"])
    args = to_grpo_config(cfg)
    assert args.num_generations == 2 and args.max_completion_length == cfg.rollout.max_completion_tokens
    assert args.use_cpu and not args.bf16
    bad = load_config("smoke-cpu.yaml", ["grpo.learnin_rate=1e-4"])
    with pytest.raises(ConfigError, match=r"did you mean grpo\.learning_rate"):
        to_grpo_config(bad)
    odd = load_config("smoke-cpu.yaml", ["solver.num_generations=3"])
    with pytest.raises(ConfigError, match="divisible by num_generations"):
        to_grpo_config(odd)
    assert to_grpo_config(odd, for_trl=False).learning_rate == odd.grpo["learning_rate"]


def test_grpo_values_are_checked_against_trl_types() -> None:
    """TRL's dataclass checks no types: a wrong value is a ConfigError naming the key, not a TypeError in the
    optimizer; a number written as text is read as a number."""
    bad = load_config("smoke-cpu.yaml", ["grpo.learning_rate=fast"])
    with pytest.raises(ConfigError, match=r"grpo\.learning_rate: expected a number, got 'fast'$"):
        to_grpo_config(bad, for_trl=False)
    listed = load_config("smoke-cpu.yaml", ["grpo.max_grad_norm=[1]"])
    with pytest.raises(ConfigError, match=r"grpo\.max_grad_norm: expected a number, got \[1\]$"):
        to_grpo_config(listed, for_trl=False)
    ok = load_config("smoke-cpu.yaml", ["grpo.learning_rate=3e-6", "grpo.loss_type=dapo"])
    args = to_grpo_config(ok, for_trl=False)
    assert args.learning_rate == 3e-6 and args.loss_type == "dapo"


def test_bf16_mixed_keeps_fp32_weights_and_asks_for_autocast() -> None:
    from training.model import _TORCH_DTYPES
    from training.selfplay import update_config
    from training.trl_config import resolve_dtype_name

    cfg = load_config("smoke-cpu.yaml", ["model.dtype=bf16-mixed"])
    assert resolve_dtype_name(cfg, "cuda") == "bf16-mixed" and _TORCH_DTYPES["bf16-mixed"] == "float32"
    assert resolve_dtype_name(cfg, "cpu") == "fp32"  # no autocast on CPU: plain fp32
    args = to_grpo_config(cfg, for_trl=False)
    assert not args.bf16 and not update_config(args, 1.0).autocast_bf16
    args.bf16 = True  # what to_grpo_config sets on CUDA; the self-play and distillation updates follow it
    assert update_config(args, 1.0).autocast_bf16
    with pytest.raises(ConfigError, match="bf16-mixed"):
        load_config("smoke-cpu.yaml", ["model.dtype=bf16mixed"])


def test_the_engine_is_called_by_its_backend_name_and_old_configs_still_load() -> None:
    """``transformers``, as the backend is named everywhere; a config written with ``hf`` loads with a
    deprecation warning, and nothing writes ``hf`` again."""
    assert config_from_dict({"generation": {"engine": "transformers"}}).generation.engine == "transformers"
    with pytest.warns(DeprecationWarning, match="'hf' is now called 'transformers'"):
        cfg = config_from_dict({"generation": {"engine": "hf"}})
    assert cfg.generation.engine == "transformers" and config_to_dict(cfg)["generation"]["engine"] == "transformers"
    with pytest.raises(ConfigError, match="engine"):
        config_from_dict({"generation": {"engine": "hg"}})
