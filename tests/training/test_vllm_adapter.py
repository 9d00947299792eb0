"""The vLLM generator against stand-ins for TRL 1.16's ``VLLMGeneration`` and vLLM's ``LLM`` (CPU).

vLLM itself cannot be installed on the CI machine (it needs another torch), so these tests pin the contract we
rely on: what TRL's ``VLLMGeneration`` offers (checked against the installed TRL), one ``LLM.generate`` per batch
with one ``SamplingParams`` per row (budget, seed, structured outputs only on the grammar rows), the server
path's grouping, sleeping between updates and waking with a weight push, and the choice of engine. The real
engine runs in tests/training/test_vllm_gpu.py (marked ``gpu``).
"""

from __future__ import annotations

import inspect
from types import SimpleNamespace
from typing import Any

import pytest

from envgen.backends.vllm_offline import compact_json_grammar
from gym_envs.seeding import stable_seed
from training.config import config_from_dict
from training.errors import ConfigError
from training.generation import TransformersGenerator, vllm_available
from training.solver import trainer_generator
from training.trl_config import resolve_engine, to_grpo_config
from training.vllm_generator import VLLMGenerator

EOS = 2
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


def _logprob(v: float) -> Any:
    return SimpleNamespace(logprob=v, rank=1)  # a vLLM ``Logprob``


class FakeLLM:
    """``LLM.generate`` / ``sleep`` / ``wake_up``: row ``i`` writes ``completions[i]``, cut at its ``max_tokens``;
    every call and state change is recorded in ``events``."""

    def __init__(self, completions: list[list[int]], fail: bool = False):
        self.completions, self.fail = completions, fail
        self.calls: list[list[Any]] = []
        self.events: list[str] = []

    def generate(self, prompts: list[dict[str, Any]], sampling_params: list[Any], use_tqdm: bool) -> list[Any]:
        self.events.append("generate")
        self.calls.append(list(sampling_params))
        if self.fail:
            raise RuntimeError("CUDA out of memory")
        outs = []
        for i, (p, sp) in enumerate(zip(prompts, sampling_params, strict=True)):
            ids = self.completions[i % len(self.completions)][:sp.max_tokens]
            lps = [{t: _logprob(-0.5 - k)} for k, t in enumerate(ids)]
            outs.append(SimpleNamespace(prompt_token_ids=p["prompt_token_ids"],
                                        outputs=[SimpleNamespace(token_ids=ids, logprobs=lps)]))
        return outs

    def sleep(self, level: int) -> None:
        self.events.append(f"sleep:{level}")

    def wake_up(self, tags: list[str]) -> None:
        self.events.append("wake:" + ",".join(tags))


class FakeEngine:
    """TRL's ``VLLMGeneration`` as the generator uses it: ``mode``, ``llm``, ``sync_weights`` (which, with TRL's
    sleep mode on, wakes the weights first) and TRL's sleep bookkeeping."""

    def __init__(self, llm: FakeLLM, *, mode: str = "colocate", sleep: bool = False):
        self.llm, self.mode = llm, mode
        self.enable_sleep_mode = sleep
        self._llm_weights_sleeping = sleep  # TRL puts a sleep-mode engine to sleep when it builds it
        self.flags_at_sync: list[bool] = []

    def sync_weights(self) -> None:
        self.flags_at_sync.append(self.enable_sleep_mode)
        if self.mode == "colocate" and self.enable_sleep_mode:
            self.llm.wake_up(tags=["weights"])
            self._llm_weights_sleeping = False
        self.llm.events.append("push")


def test_the_stand_ins_match_trl() -> None:
    vg = pytest.importorskip("trl.generation.vllm_generation")
    assert list(inspect.signature(vg.VLLMGeneration.generate).parameters) == ["self", "prompts", "images",
                                                                              "num_generations", "profiler"]
    init = inspect.signature(vg.VLLMGeneration.__init__).parameters
    for name in ("mode", "gpu_memory_utilization", "max_model_length", "max_num_seqs", "enable_sleep_mode",
                 "server_base_url"):  # what VLLMGenerator builds it with
        assert name in init
    src = inspect.getsource(vg.VLLMGeneration)
    for attr in ("self.llm = LLM(", "self.enable_sleep_mode", "self._llm_weights_sleeping", "self.llm.sleep(level=2)",
                 'self.llm.wake_up(tags=["weights"])', "logprobs_mode=\"processed_logprobs\"",
                 "self.max_completion_length", "self.temperature", "self.top_p", "self.generation_kwargs"):
        assert attr in src, attr
    assert callable(vg.extract_logprobs)


def test_one_call_per_batch_each_row_with_its_own_params(fake_vllm: None) -> None:
    llm = FakeLLM([[5, 6, EOS], [7, 8, 9, 10, 11]])
    gen = VLLMGenerator(eos_ids=[EOS], engine=FakeEngine(llm))
    out = gen.generate([[1, 2], [3], [4]], max_new_tokens=[3, 4, 2], temperature=0.7, top_p=0.9, seed=11,
                       json_schemas=[SCHEMA, None, SCHEMA])
    assert len(llm.calls) == 1  # grammar and free rows, three budgets: one call
    params = llm.calls[0]
    assert [p.max_tokens for p in params] == [3, 4, 2]
    assert [p.seed for p in params] == [stable_seed(11, i) for i in range(3)]
    assert all(p.temperature == 0.7 and p.top_p == 0.9 and p.logprobs == 0 and p.stop_token_ids == [EOS]
               for p in params)
    assert params[0].structured_outputs.kw == {"grammar": compact_json_grammar(SCHEMA)}  # the grammar itself
    assert not hasattr(params[1], "structured_outputs")  # the free row carries no grammar
    assert [g.ids for g in out] == [[5, 6, EOS], [7, 8, 9, 10], [5, 6]]
    assert [g.finish for g in out] == ["stop", "length", "length"]
    assert out[1].logprobs == [-0.5, -1.5, -2.5, -3.5]
    greedy = gen.generate([[1]], max_new_tokens=2, temperature=0.0, top_p=0.5)
    assert llm.calls[-1][0].temperature == 0.0 and llm.calls[-1][0].top_p == 1.0 and greedy[0].finish == "length"


def test_engine_failure_is_data(fake_vllm: None) -> None:
    gen = VLLMGenerator(eos_ids=[EOS], engine=FakeEngine(FakeLLM([], fail=True)))
    out = gen.generate([[1], [2]], max_new_tokens=4)
    assert [g.finish for g in out] == ["error", "error"] and "out of memory" in (out[0].error or "")


class ServerEngine:
    """TRL's ``VLLMGeneration.generate`` in server mode (one set of sampling params per call)."""

    mode = "server"

    def __init__(self) -> None:
        self.generation_kwargs: dict[str, Any] = {"seed": 1}
        self.calls: list[tuple[int, int, Any]] = []
        self.temperature, self.top_p, self.max_completion_length = 1.0, 1.0, 16

    def generate(self, *, prompts: list[list[int]], images: Any, num_generations: int) -> Any:
        self.calls.append((len(prompts), self.max_completion_length, self.generation_kwargs.get("structured_outputs")))
        return None, [[7, EOS] for _ in prompts], [[[-0.5], [-0.1]] for _ in prompts], None


def test_server_mode_sends_one_request_per_schema_and_budget() -> None:
    eng = ServerEngine()
    gen = VLLMGenerator(eos_ids=[EOS], engine=eng)
    outs = gen.generate([[1], [1], [1], [1]], max_new_tokens=[8, 8, 8, 4], json_schemas=[SCHEMA, None, SCHEMA, None])
    grammar = {"grammar": compact_json_grammar(SCHEMA)}
    assert sorted(eng.calls, key=str) == sorted([(2, 8, grammar), (1, 8, None), (1, 4, None)], key=str)
    assert eng.generation_kwargs == {"seed": 1}  # restored after each call
    assert [o.finish for o in outs] == ["stop"] * 4 and outs[0].logprobs == [-0.5, -0.1]


def test_a_sleeping_engine_wakes_with_the_trainers_weights_and_sleeps_between_updates(fake_vllm: None) -> None:
    """TRL built the engine asleep (level 2: no weights). The first batch wakes the weights, pushes the trainer's
    (TRL's ``sync_weights``, sleep mode on) and wakes the KV cache; later calls of the round neither wake nor
    push; ``sleep`` releases both; a sync while asleep pushes nothing (waking does); a sync while awake pushes
    with TRL's own per-call sleeping held off."""
    llm = FakeLLM([[5, EOS]])
    eng = FakeEngine(llm, sleep=True)
    gen = VLLMGenerator(eos_ids=[EOS], engine=eng)
    assert gen.sleep_mode
    gen.generate([[1]], max_new_tokens=4)
    gen.generate([[1]], max_new_tokens=4)  # a second turn of the same round
    assert llm.events == ["wake:weights", "push", "wake:kv_cache", "generate", "generate"]
    gen.sleep()
    gen.sync()  # after the update: the weights were discarded, waking pushes them
    assert llm.events[-1] == "sleep:2" and eng._llm_weights_sleeping
    gen.generate([[1]], max_new_tokens=4)
    assert llm.events[-4:] == ["wake:weights", "push", "wake:kv_cache", "generate"]
    gen.sync()  # awake: a plain push, TRL's sleep mode held off so it does not wake mapped memory again
    assert llm.events[-1] == "push" and eng.flags_at_sync[-1] is False and eng.enable_sleep_mode is True


def test_an_engine_without_sleep_mode_gets_the_trainers_weights_once_before_its_first_batch(
        fake_vllm: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh engine loaded the checkpoint from disk: it is synced before its first batch; a trainer's engine
    (borrowed) was synced by its trainer."""
    built: list[dict[str, Any]] = []

    def build(**kw: Any) -> FakeEngine:
        built.append(kw)
        return FakeEngine(FakeLLM([[5, EOS]]), sleep=kw["enable_sleep_mode"])

    monkeypatch.setattr("trl.generation.vllm_generation.VLLMGeneration", build)
    monkeypatch.setattr("training.vllm_generator.vllm_available", lambda: True)
    gen = VLLMGenerator(eos_ids=[EOS], model="m", tokenizer="t", accelerator="a", gpu_memory_utilization=0.25,
                        max_model_length=2048, max_num_seqs=16)
    assert built[0]["max_num_seqs"] == 16 and built[0]["gpu_memory_utilization"] == 0.25
    assert built[0]["enable_sleep_mode"] is False and not gen.sleep_mode
    gen.generate([[1]], max_new_tokens=2)
    gen.generate([[1]], max_new_tokens=2)
    assert gen.engine.llm.events == ["push", "generate", "generate"] and gen.weights.syncs == 1
    borrowed = VLLMGenerator(eos_ids=[EOS], engine=FakeEngine(FakeLLM([[5, EOS]])))
    borrowed.generate([[1]], max_new_tokens=2)
    assert borrowed.engine.llm.events == ["generate"]


def test_vllm_refuses_to_generate_after_an_unsynced_optimizer_step(fake_vllm: None) -> None:
    import torch

    from training.errors import StaleWeightsError

    layer = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(layer.parameters(), lr=0.1)
    gen = VLLMGenerator(eos_ids=[EOS], engine=FakeEngine(FakeLLM([[5, EOS]])))
    gen.track(opt)
    layer(torch.ones(1, 2)).sum().backward()
    opt.step()
    with pytest.raises(StaleWeightsError, match="1 optimizer step"):
        gen.generate([[1]], max_new_tokens=2)
    gen.sync()
    assert gen.generate([[1]], max_new_tokens=2)[0].ids == [5, EOS]


def test_missing_vllm_says_how_to_fix() -> None:
    if vllm_available():
        pytest.skip("vLLM is installed here")
    with pytest.raises(ConfigError, match="pip install 'envwright\\[vllm\\]'"):
        VLLMGenerator(eos_ids=[EOS])


def test_trainer_generator_picks_the_engine() -> None:
    cfg = config_from_dict({"model": {"name_or_path": "x"}, "generation": {"engine": "transformers"}})
    engine = FakeEngine(FakeLLM([[EOS]]))
    with_vllm = SimpleNamespace(use_vllm=True, vllm_generation=engine)
    gen = trainer_generator(with_vllm, cfg, [EOS], 0)
    assert isinstance(gen, VLLMGenerator) and gen.engine is engine
    without = SimpleNamespace(use_vllm=False, model=object(), model_wrapped=object(), accelerator=None,
                              args=SimpleNamespace(ds3_gather_for_generation=True,
                                                   gradient_checkpointing_kwargs=None))
    assert isinstance(trainer_generator(without, cfg, [EOS], 0), TransformersGenerator)


def test_grpo_config_for_vllm() -> None:
    cfg = config_from_dict({"model": {"name_or_path": "x"},
                            "generation": {"engine": "vllm", "vllm_mode": "server",
                                           "vllm_server_base_url": "http://localhost:8000"},
                            "run": {"output_dir": "/tmp/x", "report_to": []}})
    args = to_grpo_config(cfg, "/tmp/x/trainer")
    assert args.use_vllm and args.vllm_mode == "server" and args.vllm_server_base_url == "http://localhost:8000"
    cfg = config_from_dict({"model": {"name_or_path": "x"},
                            "generation": {"engine": "vllm", "vllm_sleep": True, "vllm_max_model_length": 4096},
                            "run": {"output_dir": "/tmp/x", "report_to": []}})
    args = to_grpo_config(cfg, "/tmp/x/trainer")
    assert args.vllm_enable_sleep_mode and args.vllm_max_model_length == 4096
    with pytest.raises(ConfigError, match=r"generation\.vllm_sleep"):
        config_from_dict({"grpo": {"vllm_enable_sleep_mode": True}})
    with pytest.raises(ConfigError, match="vllm_sleep needs vllm_mode=colocate"):
        config_from_dict({"generation": {"vllm_sleep": True, "vllm_mode": "server"}})


def test_auto_is_the_same_engine_for_every_trainer() -> None:
    """``auto`` resolves once (vLLM when installed and on CUDA): TRL's use_vllm follows it too."""
    cfg = config_from_dict({"model": {"name_or_path": "x", "device": "cpu"}, "generation": {"engine": "auto"},
                            "run": {"output_dir": "/tmp/x", "report_to": []}})
    assert resolve_engine(cfg) == "transformers"
    assert not to_grpo_config(cfg, "/tmp/x/trainer").use_vllm


def test_the_raw_rate_decodes_every_row_to_its_budget_in_one_call(fake_vllm: None) -> None:
    """Every row with a budget in one ``LLM.generate``: EOS ignored and ``min_tokens`` = ``max_tokens``, no
    structured outputs, no log-probabilities; rows without tokens are left out; a server engine has no such
    measure and a failing engine gives its reason, never a number."""
    llm = FakeLLM([[5, 6, 7, 8, 9, EOS, 4]])
    gen = VLLMGenerator(eos_ids=[EOS], engine=FakeEngine(llm))
    raw = gen.raw_throughput([[1, 2], [3], [4]], [3, 0, 5], seed=1)
    assert raw is not None and raw["rows"] == 2 and raw["tokens"] == 8 and raw["tokens_per_second"] > 0
    (params,) = llm.calls[-1:]
    assert [p.kw["max_tokens"] for p in params] == [3, 5] == [p.kw["min_tokens"] for p in params]
    assert all(p.kw["ignore_eos"] and "structured_outputs" not in p.kw and "logprobs" not in p.kw
               for p in params)
    assert VLLMGenerator(eos_ids=[EOS], engine=FakeEngine(llm, mode="server")).raw_throughput([[1]], [2]) is None
    failing = VLLMGenerator(eos_ids=[EOS], engine=FakeEngine(FakeLLM([[5]], fail=True)))
    assert "out of memory" in failing.raw_throughput([[1]], [2])["error"]


def test_the_raw_rate_by_call_replays_each_logged_call_as_one_engine_call(fake_vllm: None) -> None:
    """``call_log`` on: each ``generate`` call's rows are logged with the tokens they got; ``raw_by_call``
    replays every call as one ``LLM.generate`` of its own (each row to its length, EOS ignored) and sums."""
    llm = FakeLLM([[5, 6, EOS], [7, 8, 9, 10]])
    gen = VLLMGenerator(eos_ids=[EOS], engine=FakeEngine(llm))
    gen.call_log = []
    gen.generate([[1, 2], [3]], max_new_tokens=4, json_schemas=[SCHEMA, None])
    gen.generate([[4]], max_new_tokens=2)
    assert gen.call_log == [[([1, 2], 3), ([3], 4)], [([4], 2)]]
    before = len(llm.calls)
    by_call = gen.raw_by_call(gen.call_log, seed=3)
    assert by_call is not None and by_call["calls"] == 2 and by_call["rows"] == 3 and by_call["tokens"] == 9
    replayed = llm.calls[before:]
    assert [[p.kw["min_tokens"] for p in call] for call in replayed] == [[3, 4], [2]]
    assert all(p.kw["ignore_eos"] and "structured_outputs" not in p.kw for call in replayed for p in call)
    assert by_call["tokens_per_second"] == pytest.approx(9 / by_call["seconds"])
    failing = VLLMGenerator(eos_ids=[EOS], engine=FakeEngine(FakeLLM([[5]], fail=True)))
    assert "out of memory" in failing.raw_by_call([[([1], 2)]])["error"]
    assert gen.raw_by_call([]) is None
