"""Keeping the sampler on the trainer's weights (training/weight_sync.py), on CPU.

The engine is a stand-in for TRL's ``VLLMGeneration`` whose "vLLM" is a copy of the tiny model (built, as a
fresh vLLM engine is, from other weights than the trainer's): the sync bookkeeping, the weight push that
changes what the engine writes, the sampler-trainer gap, and the loud failures when the weights were not
synced (the step counter) or a sync did not reach the engine (the gap).
"""

from __future__ import annotations

import copy
import math
from types import SimpleNamespace
from typing import Any

import pytest

from training.errors import StaleWeightsError
from training.generation import ScriptedGenerator, TransformersGenerator
from training.loss import Sample, UpdateConfig
from training.weight_sync import (
    SamplerGap,
    WeightSync,
    check_gap,
    gap_samples,
    logprob_gap,
    measure_gap,
    sampler_report,
)


def test_the_gap_is_taken_over_the_masked_tokens_and_skips_what_the_engine_could_not_score() -> None:
    gap = logprob_gap([[-1.0, -2.0, -3.0], [-0.5, math.nan]], [[-1.5, -9.0, -3.25], [-0.5, -1.0]],
                      [[1, 0, 1], [1, 1]])
    assert gap.tokens == 3 and gap.mean == pytest.approx((0.5 + 0.25 + 0.0) / 3) and gap.max == 0.5
    with pytest.raises(ValueError, match="2 sampler, 1 trainer"):
        logprob_gap([[0.0, 0.0]], [[0.0]], [[1, 1]])
    check_gap(SamplerGap(0.4, 3.0, 10), 0.5, engine="vllm", syncs=1)  # the max alone does not fail
    check_gap(SamplerGap(9.0, 9.0, 10), None, engine="vllm", syncs=1)  # no limit: reported only
    with pytest.raises(StaleWeightsError, match=r"differ from the trainer's by 0\.700"):
        check_gap(SamplerGap(0.7, 2.0, 10), 0.5, engine="vllm", syncs=3)


def test_the_counter_sees_every_optimizer_step_and_only_those() -> None:
    import torch

    layer = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(layer.parameters(), lr=0.1)
    ws = WeightSync()
    ws.track(opt)
    ws.require_synced("vllm")  # nothing taken yet
    for _ in range(2):
        layer(torch.ones(1, 2)).sum().backward()
        opt.step()
    opt.zero_grad()  # not a step
    assert ws.pending == 2
    with pytest.raises(StaleWeightsError, match="2 optimizer step"):
        ws.require_synced("vllm")
    ws.synced(0.25)
    assert ws.pending == 0 and ws.stats() == {"syncs": 1.0, "pending_steps": 0.0, "sync_seconds": 0.25}


# -- an engine with its own copy of the weights -------------------------------------------------------


class CopyLLM:
    """vLLM's ``LLM`` over a copy of the model: each row generated on its own with its ``SamplingParams``."""

    def __init__(self, model: Any, eos: int, pad: int):
        self.model = model
        self.gen = TransformersGenerator(model, eos_ids=[eos], pad_id=pad)

    def generate(self, prompts: list[dict[str, Any]], sampling_params: list[Any], use_tqdm: bool) -> list[Any]:
        outs = []
        for p, sp in zip(prompts, sampling_params, strict=True):
            (g,) = self.gen.generate([p["prompt_token_ids"]], max_new_tokens=sp.max_tokens,
                                     temperature=sp.temperature, top_p=sp.top_p, seed=sp.seed)
            lps = [{t: SimpleNamespace(logprob=v, rank=1)} for t, v in zip(g.ids, g.logprobs, strict=True)]
            outs.append(SimpleNamespace(prompt_token_ids=p["prompt_token_ids"],
                                        outputs=[SimpleNamespace(token_ids=g.ids, logprobs=lps)]))
        return outs


class CopyEngine:
    """TRL's ``VLLMGeneration`` over :class:`CopyLLM`: built from weights other than the trainer's (as a vLLM
    engine loads its checkpoint from disk); ``sync_weights`` copies the trainer's in, unless ``broken``."""

    mode = "colocate"
    enable_sleep_mode = False

    def __init__(self, model: Any, tokenizer: Any):
        import torch

        self.model = model
        other = copy.deepcopy(model)
        with torch.no_grad():
            for p in other.parameters():
                p.add_(torch.randn_like(p))
        self.llm = CopyLLM(other, tokenizer.eos_token_id, tokenizer.pad_token_id)
        self.broken = False

    def sync_weights(self) -> None:
        if not self.broken:
            self.llm.model.load_state_dict(self.model.state_dict())


@pytest.fixture
def trainer(tiny_dir: Any, tokenizer: Any, fake_vllm: None, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The trainer's model, its optimizer, and a VLLMGenerator built over a :class:`CopyEngine`."""
    import torch
    from transformers import AutoModelForCausalLM

    from training.vllm_generator import VLLMGenerator

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    monkeypatch.setattr("trl.generation.vllm_generation.VLLMGeneration",
                        lambda **kw: CopyEngine(kw["model"], kw["processing_class"]))
    monkeypatch.setattr("training.vllm_generator.vllm_available", lambda: True)
    gen = VLLMGenerator(eos_ids=[tokenizer.eos_token_id], model=model, tokenizer=tokenizer, accelerator=None)
    opt = torch.optim.SGD(model.parameters(), lr=20.0)  # one step moves the tiny model's next token
    gen.track(opt)
    return SimpleNamespace(model=model, opt=opt, gen=gen, local=TransformersGenerator(
        model, eos_ids=[tokenizer.eos_token_id], pad_id=tokenizer.pad_token_id))


def _contexts(tokenizer: Any) -> list[list[int]]:
    return [tokenizer(t, add_special_tokens=False)["input_ids"] for t in ("List the loans.", "Borrow Dune")]


def _samples(contexts: list[list[int]], outs: list[Any]) -> list[Sample]:
    return [Sample(c, g.ids, [1] * len(g.ids), sampler_logprobs=g.logprobs) for c, g in zip(contexts, outs,
                                                                                           strict=True)]


def _step_towards(model: Any, opt: Any, contexts: list[list[int]], token: int) -> None:
    """One optimizer step that makes ``token`` the likeliest next token after every context."""
    import torch

    for c in contexts:
        logits = model(input_ids=torch.tensor([c])).logits[0, -1]
        (-torch.log_softmax(logits, -1)[token]).backward()
    opt.step()
    opt.zero_grad()


def test_the_engine_writes_with_the_trainers_weights_and_fails_loudly_without_them(trainer: Any,
                                                                                   tokenizer: Any) -> None:
    from gym_envs.seeding import stable_seed

    ctx = _contexts(tokenizer)
    # a fresh engine gets the trainer's weights before its first batch: row i writes what the trainer's model
    # writes with the row's seed
    outs = trainer.gen.generate(ctx, max_new_tokens=6, temperature=1.0, seed=3)
    for i, (c, g) in enumerate(zip(ctx, outs, strict=True)):
        (ref,) = trainer.local.generate([c], max_new_tokens=6, temperature=1.0, seed=stable_seed(3, i))
        assert g.ids == ref.ids
    gap = measure_gap(trainer.model, _samples(ctx, outs), pad_id=tokenizer.pad_token_id, temperature=1.0)
    assert gap.tokens == sum(len(g.ids) for g in outs) and gap.mean < 1e-4  # right after a sync: numerics only
    before = trainer.gen.generate(ctx, max_new_tokens=3, temperature=0.0)
    target = next(t for t in range(100, 200) if t not in {g.ids[0] for g in before})
    _step_towards(trainer.model, trainer.opt, ctx, target)
    with pytest.raises(StaleWeightsError, match="1 optimizer step"):  # the trainer stepped, nobody synced
        trainer.gen.generate(ctx, max_new_tokens=3, temperature=0.0)
    trainer.gen.sync()
    after = trainer.gen.generate(ctx, max_new_tokens=3, temperature=0.0)
    assert [g.ids[0] for g in after] == [target, target] != [g.ids[0] for g in before]  # the sync changed them
    assert after == trainer.local.generate(ctx, max_new_tokens=3, temperature=0.0)


def test_a_sync_that_does_not_reach_the_engine_shows_in_the_gap(trainer: Any, tokenizer: Any) -> None:
    ctx = _contexts(tokenizer)
    trainer.gen.generate(ctx, max_new_tokens=2, temperature=1.0)  # the first push
    trainer.gen.engine.broken = True  # e.g. parameter names the engine does not know: nothing is loaded
    _step_towards(trainer.model, trainer.opt, ctx, 150)
    trainer.gen.sync()  # the counter is satisfied...
    outs = trainer.gen.generate(ctx, max_new_tokens=6, temperature=1.0, seed=5)
    cfg = UpdateConfig(temperature=1.0)
    with pytest.raises(StaleWeightsError, match=r"above generation\.max_logprob_gap=0\.5"):  # ...the gap is not
        sampler_report(trainer.gen, trainer.model, _samples(ctx, outs), pad_id=tokenizer.pad_token_id, cfg=cfg,
                       limit=0.5)
    report = sampler_report(trainer.gen, trainer.model, _samples(ctx, outs), pad_id=tokenizer.pad_token_id,
                            cfg=cfg, limit=None)  # no limit: the same gap, reported
    assert report["engine"] == "vllm" and report["logprob_gap"]["mean"] > 0.5 and report["syncs"] == 2.0


def test_the_report_measures_what_a_generator_records(tiny_dir: Any, tokenizer: Any) -> None:
    """The transformers engine's own log-probabilities agree with the trainer's (same weights); a scripted
    generator records none, so nothing is measured; every report puts the engine to sleep first."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    gen = TransformersGenerator(model, eos_ids=[tokenizer.eos_token_id], pad_id=tokenizer.pad_token_id)
    ctx = _contexts(tokenizer)
    samples = _samples(ctx, gen.generate(ctx, max_new_tokens=5, temperature=0.8, seed=1))
    samples.append(Sample([1, 2], [3], [1]))  # no sampler log-probabilities: left out
    assert len(gap_samples(samples)) == 2
    report = sampler_report(gen, model, samples, pad_id=tokenizer.pad_token_id, cfg=UpdateConfig(temperature=0.8),
                            limit=0.5)
    assert report["engine"] == "transformers" and report["logprob_gap"]["tokens"] > 0
    assert report["logprob_gap"]["max"] < 1e-4
    slept: list[bool] = []
    scripted = ScriptedGenerator(tokenizer, lambda _: "hi")
    scripted.sleep = lambda: slept.append(True)  # type: ignore[method-assign]
    report = sampler_report(scripted, model, samples, pad_id=tokenizer.pad_token_id, cfg=UpdateConfig(), limit=0.5)
    assert report["logprob_gap"]["tokens"] == 0 and slept == [True]
