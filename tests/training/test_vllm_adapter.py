"""The vLLM generator adapter against a stand-in engine with TRL 1.16's ``VLLMGeneration`` interface.

vLLM itself cannot be installed on the CI machine (it needs another torch), so these tests pin the
contract we rely on: the signature of ``VLLMGeneration.generate`` and ``sync_weights`` and the shapes
of what ``generate`` returns, the conversion into :class:`Generated` rows, and the choice of engine.
"""

from __future__ import annotations

import inspect
from types import SimpleNamespace
from typing import Any

import pytest

from training.config import config_from_dict
from training.errors import ConfigError
from training.generation import TransformersGenerator, VLLMGenerator, vllm_available
from training.solver import trainer_generator
from training.trl_config import to_grpo_config

EOS = 2


class StandInEngine:
    """Returns ``(prompt_ids, completion_ids, logprobs, logprob_token_ids)`` as TRL documents them."""

    def __init__(self, completions: list[list[int]], fail: bool = False):
        self.completions = completions
        self.fail = fail
        self.calls: list[dict[str, Any]] = []
        self.synced = 0
        self.temperature, self.top_p, self.max_completion_length = 1.0, 1.0, 16

    def generate(self, prompts: list[list[int]], images: list[list | None] | None, num_generations: int,
                 profiler: Any = None) -> tuple:
        self.calls.append({"prompts": prompts, "images": images, "n": num_generations, "temperature": self.temperature,
                           "top_p": self.top_p, "max": self.max_completion_length})
        if self.fail:
            raise RuntimeError("CUDA out of memory")
        comp = self.completions[: len(prompts)]
        logprobs = [[[-0.5 - i] for i, _ in enumerate(c)] for c in comp]  # (batch, completion_len, 1)
        return prompts, comp, logprobs, [[[t] for t in c] for c in comp]

    def sync_weights(self) -> None:
        self.synced += 1


def test_stand_in_matches_trl_signature() -> None:
    vg = pytest.importorskip("trl.generation.vllm_generation")
    real = inspect.signature(vg.VLLMGeneration.generate)
    ours = inspect.signature(StandInEngine.generate)
    assert list(real.parameters) == list(ours.parameters)
    assert hasattr(vg.VLLMGeneration, "sync_weights")
    for attr in ("temperature", "top_p", "max_completion_length"):  # set by VLLMGenerator before each call
        assert attr in inspect.getsource(vg.VLLMGeneration.__init__)


def test_generated_rows_and_sampling_parameters() -> None:
    engine = StandInEngine([[5, 6, EOS], [7, 8, 9]])
    gen = VLLMGenerator(eos_ids=[EOS], engine=engine)
    out = gen.generate([[1, 2], [3]], max_new_tokens=3, temperature=0.0, top_p=0.9)
    assert [g.ids for g in out] == [[5, 6, EOS], [7, 8, 9]]
    assert [g.finish for g in out] == ["stop", "length"]
    assert out[0].logprobs == [-0.5, -1.5, -2.5]
    call = engine.calls[0]
    assert call["prompts"] == [[1, 2], [3]] and call["n"] == 1 and call["images"] is None
    assert call["max"] == 3 and call["top_p"] == 0.9 and 0 < call["temperature"] <= 1e-5  # greedy: tiny T
    gen.sync()
    assert engine.synced == 1


def test_engine_failure_is_data() -> None:
    out = VLLMGenerator(eos_ids=[EOS], engine=StandInEngine([], fail=True)).generate([[1], [2]], max_new_tokens=4)
    assert [g.finish for g in out] == ["error", "error"] and "out of memory" in (out[0].error or "")


def test_missing_vllm_says_how_to_fix() -> None:
    if vllm_available():
        pytest.skip("vLLM is installed here")
    with pytest.raises(ConfigError, match="pip install 'envwright\\[vllm\\]'"):
        VLLMGenerator(eos_ids=[EOS])


def test_trainer_generator_picks_the_engine() -> None:
    cfg = config_from_dict({"model": {"name_or_path": "x"}, "generation": {"engine": "transformers"}})
    engine = StandInEngine([[EOS]])
    with_vllm = SimpleNamespace(use_vllm=True, vllm_generation=engine)
    gen = trainer_generator(with_vllm, cfg, [EOS], 0)
    assert isinstance(gen, VLLMGenerator) and gen.engine is engine
    without = SimpleNamespace(use_vllm=False, model=object(), model_wrapped=object(), accelerator=None,
                              args=SimpleNamespace(ds3_gather_for_generation=True,
                                                   gradient_checkpointing_kwargs=None))
    assert isinstance(trainer_generator(without, cfg, [EOS], 0), TransformersGenerator)


def test_grpo_config_for_vllm_server() -> None:
    cfg = config_from_dict({"model": {"name_or_path": "x"},
                            "generation": {"engine": "vllm", "vllm_mode": "server",
                                           "vllm_server_base_url": "http://localhost:8000"},
                            "run": {"output_dir": "/tmp/x", "report_to": []}})
    args = to_grpo_config(cfg, "/tmp/x/trainer")
    assert args.use_vllm and args.vllm_mode == "server" and args.vllm_server_base_url == "http://localhost:8000"
