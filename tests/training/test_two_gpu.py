"""The two-GPU layouts on CPU: their bundled configs, the server-mode client arguments, the world check, each
process's sandbox workers and the seeds of a GRPO group that TRL splits over two processes.

The GPU runs themselves (trl vllm-serve on one H200, accelerate on two) are not here: these pin what the
launch depends on -- the TRL arguments and vLLM client the configs build, and the per-process code paths
the transformers engine and a scripted generator run through.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest

from gym_envs.sandbox import WorkerExecutor, default_executor
from gym_envs.spec import save_spec
from tests.training.conftest import solver_plan
from training.config import config_from_dict, load_config
from training.errors import ConfigError
from training.generation import Generated, ScriptedGenerator
from training.parallel import check_world, launched_world, rank_share, rollout_executor
from training.solver import TaskPool, _expand, make_rollout_func
from training.trl_config import to_grpo_config

SERVER = {"engine": "vllm", "vllm_mode": "server", "vllm_server_host": "localhost"}


def _grpo(cfg: Any) -> Any:
    return to_grpo_config(cfg, "/tmp/two-gpu/trainer")


# -- the bundled configs ----------------------------------------------------------------------------


def test_server_config_builds_trls_server_mode_arguments() -> None:
    cfg = load_config("smollm2-2gpu-server")
    args = _grpo(cfg)
    assert args.use_vllm and args.vllm_mode == "server"
    assert (args.vllm_server_host, args.vllm_server_port, args.vllm_group_port) == ("localhost", 8000, 51216)
    assert args.vllm_server_base_url is None and args.vllm_server_timeout == 600
    assert cfg.run.num_processes == 1 and cfg.rollout.sandbox_workers == 32
    assert check_world(cfg, "selfplay", {}) == (0, 1) and check_world(cfg, "solver", {}) == (0, 1)
    moved = load_config("smollm2-2gpu-server", ["generation.vllm_server_port=9000", "generation.vllm_group_port=9001"])
    assert (_grpo(moved).vllm_server_port, _grpo(moved).vllm_group_port) == (9000, 9001)


def test_ddp_config_is_two_processes_with_colocated_vllm() -> None:
    cfg = load_config("smollm2-2gpu-ddp")
    args = _grpo(cfg)
    assert args.use_vllm and args.vllm_mode == "colocate" and args.vllm_gpu_memory_utilization == 0.3
    assert cfg.run.num_processes == 2
    assert check_world(cfg, "solver", {"RANK": "1", "WORLD_SIZE": "2"}) == (1, 2)
    with pytest.raises(ConfigError, match="accelerate launch --num_processes 2"):
        check_world(cfg, "solver", {})  # a plain command: a world of 1
    with pytest.raises(ConfigError, match=r"runs in one process.*server mode.*the smollm2-2gpu-server config"):
        check_world(cfg, "selfplay", {"RANK": "0", "WORLD_SIZE": "2"})
    # a GRPO group of the DDP config never straddles two processes: each process's batch holds whole groups
    per_process = cfg.grpo["per_device_train_batch_size"] * cfg.grpo["steps_per_generation"]
    assert per_process % cfg.solver.num_generations == 0


def test_a_base_url_is_the_other_way_to_give_the_address() -> None:
    cfg = config_from_dict({"generation": {"engine": "vllm", "vllm_mode": "server",
                                           "vllm_server_base_url": "http://10.0.0.2:8001"},
                            "run": {"report_to": []}})
    args = _grpo(cfg)
    assert args.vllm_server_base_url == "http://10.0.0.2:8001" and args.vllm_group_port == 51216


@pytest.mark.parametrize(("generation", "run", "message"), [
    ({"engine": "vllm", "vllm_mode": "server"}, {}, "needs the address of the trl vllm-serve"),
    ({**SERVER, "engine": "transformers"}, {}, "needs generation.engine=vllm"),
    ({**SERVER, "engine": "auto"}, {}, "needs generation.engine=vllm"),
    ({**SERVER, "vllm_server_base_url": "http://localhost:8000"}, {}, "give the vLLM server's address once"),
    ({**SERVER, "vllm_group_port": 8000}, {}, "is the server's HTTP port"),
    ({"engine": "vllm", "vllm_mode": "server", "vllm_server_base_url": "http://h:51216"}, {},
     "is the server's HTTP port"),
    ({"engine": "vllm", "vllm_mode": "server", "vllm_server_base_url": "localhost:8000"}, {}, "http://HOST:PORT"),
    ({**SERVER, "vllm_server_port": 70000}, {}, "vllm_server_port must be a TCP port"),
    ({**SERVER, "vllm_server_timeout": 0}, {}, "vllm_server_timeout must be > 0"),
    ({}, {"num_processes": 0}, "num_processes must be >= 1"),
])
def test_layout_mistakes_say_what_to_set(generation: dict[str, Any], run: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config_from_dict({"generation": generation, "run": run})


def test_sandbox_workers_must_cover_every_process() -> None:
    with pytest.raises(ConfigError, match=r"sandbox_workers \(1\) is fewer than run.num_processes \(2\)"):
        config_from_dict({"rollout": {"sandbox_workers": 1}, "run": {"num_processes": 2}})
    with pytest.raises(ConfigError, match="sandbox_workers must be >= 1"):
        config_from_dict({"rollout": {"sandbox_workers": 0}})


def test_the_world_check() -> None:
    anywhere = config_from_dict({})
    assert check_world(anywhere, "solver", {"RANK": "3", "WORLD_SIZE": "4"}) == (3, 4)  # num_processes None: any
    assert check_world(anywhere, "selfplay", {}) == (0, 1)
    with pytest.raises(ConfigError, match="runs in one process"):
        check_world(anywhere, "selfplay", {"RANK": "0", "WORLD_SIZE": "2"})
    one = config_from_dict({"run": {"num_processes": 1}})
    with pytest.raises(ConfigError, match=r"has 2 process\(es\).*no launcher"):
        check_world(one, "solver", {"RANK": "0", "WORLD_SIZE": "2"})
    with pytest.raises(ConfigError, match="RANK=2 is not a process of WORLD_SIZE=2"):
        launched_world({"RANK": "2", "WORLD_SIZE": "2"})
    with pytest.raises(ConfigError, match="whole numbers"):
        launched_world({"RANK": "zero"})


# -- each process's sandbox workers ---------------------------------------------------------------------


@pytest.mark.parametrize(("total", "world"), [(32, 2), (33, 2), (7, 3), (2, 2), (16, 1)])
def test_rank_share_splits_the_workers_evenly(total: int, world: int) -> None:
    shares = [rank_share(total, world, r) for r in range(world)]
    assert sum(shares) == total and max(shares) - min(shares) <= 1 and min(shares) >= 1


def test_rank_share_refuses_a_world_it_cannot_cover() -> None:
    with pytest.raises(ValueError, match="cannot give each of 4 processes one"):
        rank_share(3, 4, 0)
    with pytest.raises(ValueError, match="rank 2 is not a process"):
        rank_share(8, 2, 2)


def test_each_process_gets_an_executor_of_its_share() -> None:
    cfg = config_from_dict({"rollout": {"sandbox_workers": 33}, "run": {"num_processes": 2}}).rollout
    first, second = rollout_executor(cfg, rank=0, world=2), rollout_executor(cfg, rank=1, world=2)
    assert isinstance(first, WorkerExecutor) and isinstance(second, WorkerExecutor)
    assert (len(first.workers), len(second.workers)) == (17, 16)
    assert rollout_executor(cfg, rank=0, world=2) is first  # made once per process
    plain = config_from_dict({}).rollout
    assert rollout_executor(plain) is default_executor("worker")
    trusted = config_from_dict({"rollout": {"sandbox_workers": 4, "executor": "inprocess"}}).rollout
    assert rollout_executor(trusted) is default_executor("inprocess")


# -- server mode: the client the generator builds --------------------------------------------------------


def test_server_mode_generator_connects_where_the_config_says(monkeypatch: pytest.MonkeyPatch) -> None:
    """make_generator hands TRL's VLLMGeneration the server's host, port, weight-group port and timeout."""
    vg = pytest.importorskip("trl.generation.vllm_generation")
    import training.vllm_generator as vgen
    from training.model import make_generator

    built: list[dict[str, Any]] = []

    class Recording:
        def __init__(self, **kwargs: Any):
            built.append(kwargs)
            self.mode, self.enable_sleep_mode = kwargs["mode"], kwargs["enable_sleep_mode"]

    monkeypatch.setattr(vgen, "vllm_available", lambda: True)
    monkeypatch.setattr(vg, "VLLMGeneration", Recording)
    cfg = load_config("smollm2-2gpu-server", ["generation.vllm_group_port=51300"])
    model = SimpleNamespace(generation_config=SimpleNamespace(eos_token_id=[2, 7]))
    gen = make_generator(cfg, model, SimpleNamespace(eos_token_id=2), accelerator=object())
    assert isinstance(gen, vgen.VLLMGenerator) and gen.mode == "server" and not gen.sleep_mode
    (kwargs,) = built
    assert kwargs["mode"] == "server" and kwargs["server_base_url"] is None
    assert (kwargs["server_host"], kwargs["server_port"], kwargs["group_port"]) == ("localhost", 8000, 51300)
    assert kwargs["server_timeout"] == 600 and kwargs["enable_sleep_mode"] is False
    assert gen.eos_ids == [2, 7]


def test_the_client_arguments_are_trls() -> None:
    """The keyword names the generator passes exist on the installed TRL's VLLMGeneration and GRPOConfig."""
    import inspect

    vg = pytest.importorskip("trl.generation.vllm_generation")
    from trl import GRPOConfig

    init = inspect.signature(vg.VLLMGeneration.__init__).parameters
    for name in ("server_base_url", "server_host", "server_port", "group_port", "server_timeout"):
        assert name in init, name
    fields = set(GRPOConfig.__dataclass_fields__)
    for name in ("vllm_server_host", "vllm_server_port", "vllm_group_port", "vllm_server_timeout"):
        assert name in fields, name


# -- data parallel: a GRPO group split over two processes -------------------------------------------------


def test_a_group_split_over_two_processes_is_played_once_per_prompt() -> None:
    """TRL cuts the generation batch into contiguous per-process slices: with 2 processes, batches of 2 and G=4,
    each process holds half of a group. Each prompt is one episode (TRL expects one completion a prompt)."""
    assert _expand(["a", "a"], 4, rank=0, world=2) == (["a", "a"], True)
    assert _expand(["a", "a"], 4, rank=1, world=2) == (["a", "a"], True)
    assert _expand(["a", "a", "a", "a", "b", "b"], 4, rank=0, world=2) == (["a", "a", "a", "a", "b", "b"], True)
    assert _expand(["a", "a", "b", "b", "b", "b"], 4, rank=1, world=2) == (["a", "a", "b", "b", "b", "b"], True)
    assert _expand(["a", "b"], 2, rank=1, world=2) == (["a", "a", "b", "b"], False)  # unrepeated: still expanded
    assert _expand(["a", "a", "b", "b"], 2) == (["a", "a", "b", "b"], True)


class SeedRecorder(ScriptedGenerator):
    """A scripted generator that records the seed of every call."""

    def __init__(self, tokenizer: Any, script: Any):
        super().__init__(tokenizer, script)
        self.seeds: list[int] = []

    def generate(self, contexts: list[list[int]], *, max_new_tokens: int | Sequence[int], temperature: float = 1.0,
                 top_p: float = 1.0, seed: int = 0, json_schemas: Any = None,
                 grammar_prefixes: Any = None) -> list[Generated]:
        self.seeds.append(seed)
        return super().generate(contexts, max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p,
                                seed=seed, json_schemas=json_schemas, grammar_prefixes=grammar_prefixes)


def test_the_two_halves_of_a_group_play_one_task_instance_with_different_sampling_seeds(
        tmp_path: Any, chat: Any, tokenizer: Any, spec: Any) -> None:
    save_spec(spec, tmp_path / "envs" / "library-demo.json")
    cfg = config_from_dict({
        "rollout": {"max_turn_tokens": 48, "max_completion_tokens": 512, "max_steps": 8, "executor": "inprocess"},
        "solver": {"num_generations": 4, "envs": [str(tmp_path / "envs")]},
        "run": {"output_dir": str(tmp_path / "run"), "report_to": [], "num_processes": 2}})
    pool = TaskPool.from_config(cfg)
    key = pool.keys()[0]
    seeds, episodes = {}, {}
    for rank in (0, 1):
        gen = SeedRecorder(tokenizer, solver_plan())
        trainer = SimpleNamespace(model=SimpleNamespace(training=True), num_generations=4, num_generations_eval=4,
                                  state=SimpleNamespace(global_step=3),
                                  accelerator=SimpleNamespace(process_index=rank, num_processes=2, device="cpu",
                                                              gather=lambda t: t),  # the other half is done
                                  use_vllm=False)
        out = make_rollout_func(pool, chat, cfg, generator=gen,
                                on_episodes=lambda eps, r=rank: episodes.__setitem__(r, eps))([key, key], trainer)
        assert len(out["completion_ids"]) == 2  # one episode a prompt: half a group here
        seeds[rank] = gen.seeds
    assert {ep.seed for r in (0, 1) for ep in episodes[r]} == {episodes[0][0].seed}  # one task instance
    assert all(ep.passed for r in (0, 1) for ep in episodes[r])  # the scripted plan solved it on both
    assert not set(seeds[0]) & set(seeds[1])  # no sampling seed is shared by the two processes
