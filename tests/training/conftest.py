"""Fixtures of the trainer tests: the tiny Qwen3 model, a small spec, scripted policies.

The tiny model is random, so tests that need a meaningful tool call script the
policy's text (:class:`training.generation.ScriptedGenerator`); the token ids,
masks, environment and updates are real.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("trl")

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from gym_envs.parsing import format_tool_call
from gym_envs.spec import EnvSpec, as_spec
from tests.fixtures.library_spec import SPEC

SOLVER_MARK = "You are an assistant operating"  # start of gym_envs.env.system_prompt


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from training.tiny_model import build_tiny_qwen3

    return build_tiny_qwen3(tmp_path_factory.mktemp("tiny-qwen3"))


@pytest.fixture(scope="session")
def wide_tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model with a context window that holds a world blueprint's teaching pair (its 512-token vocabulary
    spends several tokens a word)."""
    from training.tiny_model import build_tiny_qwen3

    return build_tiny_qwen3(tmp_path_factory.mktemp("tiny-qwen3-wide"), context=65_536)


@pytest.fixture(scope="session")
def tokenizer(tiny_dir: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_dir)


@pytest.fixture(scope="session")
def chat(tokenizer: Any) -> Any:
    from gym_envs.messages import ChatFormat

    return ChatFormat(tokenizer)


@pytest.fixture
def spec() -> EnvSpec:
    """Library demo: task t0 = borrow 'Dune' for member 7 (2 calls), then count member 7's loans."""
    return as_spec(copy.deepcopy(SPEC))


def solver_plan(wrong_every: int = 0) -> Callable[[str], str]:
    """A scripted solver for the library demo's task t0; every ``wrong_every``-th episode borrows the wrong book."""
    counter = itertools.count()

    def script(context: str) -> str:
        step = context.count("<|im_start|>assistant") - 1
        wrong = step == 1 and wrong_every and next(counter) % wrong_every == wrong_every - 1
        plan = [format_tool_call("find_book", {"title": "Dune"}),
                format_tool_call("borrow_book", {"member_id": 7, "book_id": 2 if wrong else 3}),
                "Done.", format_tool_call("list_loans", {"member_id": 7}), "Member 7 has 2 books out."]
        return plan[step] if step < len(plan) else "Nothing more to do."

    return script


def selfplay_script(solver: Callable[[str], str]) -> Callable[[str], str]:
    """Proposals: a valid spec, an unparsable answer, a valid spec, ...; solver contexts go to ``solver``."""
    counter = itertools.count()

    def script(context: str) -> str:
        if SOLVER_MARK in context:
            return solver(context)
        k = next(counter)
        if k % 3 == 1:
            return "I would rather not write an environment today."
        spec = copy.deepcopy(SPEC)
        spec["id"] = f"library-demo-{k}"
        return json.dumps(spec)

    return script


@pytest.fixture
def corpus_dir(tmp_path: Path) -> Path:
    d = tmp_path / "corpus"
    d.mkdir()
    (d / "bank.py").write_text(
        "class Bank:\n"
        "    \"\"\"A tiny bank with accounts.\"\"\"\n"
        "    def __init__(self):\n        self.accounts = {}\n"
        "    def open_account(self, name, balance=0):\n        self.accounts[name] = balance\n"
        "    def deposit(self, name, amount):\n        self.accounts[name] += amount\n"
        "    def withdraw(self, name, amount):\n        if self.accounts[name] < amount:\n"
        "            raise ValueError('insufficient funds')\n        self.accounts[name] -= amount\n")
    return d


class SamplingParamsRecord:
    """vLLM's ``SamplingParams`` (or ``StructuredOutputsParams``) as a record of its keyword arguments."""

    def __init__(self, **kw: Any):
        self.__dict__.update(kw)
        self.kw = kw


@pytest.fixture
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> None:
    """``vllm.SamplingParams`` and ``vllm.sampling_params.StructuredOutputsParams`` as records (vLLM itself
    cannot be installed on a CPU machine): what :mod:`training.vllm_generator` builds its requests from."""
    import sys
    import types

    import trl.generation.vllm_generation  # noqa: F401  (TRL looks for vLLM when imported: before the stand-in)

    sampling = types.ModuleType("vllm.sampling_params")
    sampling.StructuredOutputsParams = SamplingParamsRecord  # type: ignore[attr-defined]
    vllm = types.ModuleType("vllm")
    vllm.SamplingParams = SamplingParamsRecord  # type: ignore[attr-defined]
    vllm.sampling_params = sampling  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm.sampling_params", sampling)
