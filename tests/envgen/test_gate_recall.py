"""What the gate takes from what the process remembers: the results of calls that change nothing (its episodes
ask for them, but for the determinism rule's replay, which makes its calls afresh), and one parse of a spec's
code. The verdicts are those of a run that remembers nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

import gym_envs.sandbox.engine as engine_module
from envgen.gate import validate_spec
from envgen.gate.adequacy import MutationRun
from envgen.gate.budget import GateEnv
from envgen.gate.signature import signature_problems
from gym_envs.examples import example_path, load_example
from gym_envs.sandbox import InProcessExecutor
from gym_envs.sandbox.purity import stateless, syntax_tree
from gym_envs.sandbox.recall import Recalls
from gym_envs.spec import as_spec

EXAMPLES = ["bank-ledger", "shop-support", "travel-booking"]  # code that keeps no state: its calls may be recalled


def _record(verdict: Any) -> tuple[Any, ...]:
    return verdict.accepted, [str(r) for r in verdict.reasons], verdict.mutations


@pytest.mark.parametrize("name", EXAMPLES)
def test_the_verdict_is_the_one_made_without_recalled_results(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = load_example(name)
    assert stateless(spec.code)
    monkeypatch.setattr(engine_module, "RECALLS", Recalls())
    recalled = validate_spec(spec, executor=InProcessExecutor(), seed=7)
    monkeypatch.setattr(engine_module, "RECALLS", Recalls())
    monkeypatch.setattr(GateEnv, "recall_calls", False)
    made = validate_spec(spec, executor=InProcessExecutor(), seed=7)
    assert _record(recalled) == _record(made) and recalled.mutants > 0


def test_the_determinism_replay_makes_every_call_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_module, "RECALLS", Recalls())
    seen: list[tuple[bool, bool]] = []  # (in the replay, the episode may be answered from what is remembered)
    replaying = [False]
    call_plain = engine_module.Engine.call_plain
    replay = MutationRun.replay

    def recording(self: Any, ep_id: str, name: str, args: dict[str, Any]) -> Any:
        seen.append((replaying[0], self.episodes[ep_id].recall))
        return call_plain(self, ep_id, name, args)

    def in_replay(self: MutationRun, *a: Any, **kw: Any) -> bool:
        replaying[0] = True
        try:
            return replay(self, *a, **kw)
        finally:
            replaying[0] = False

    monkeypatch.setattr(engine_module.Engine, "call_plain", recording)
    monkeypatch.setattr(MutationRun, "replay", in_replay)
    verdict = validate_spec(load_example("bank-ledger"), executor=InProcessExecutor(), seed=7)
    assert verdict.accepted
    assert any(r for r, _ in seen) and not any(recall for r, recall in seen if r)
    assert any(recall for r, recall in seen if not r)


def test_one_parse_of_a_code_serves_its_purity_and_its_signatures() -> None:
    code = load_example("bank-ledger").code
    assert syntax_tree(code) is syntax_tree(code)
    data = json.loads(example_path("bank-ledger").read_text())
    assert signature_problems(as_spec(data)) == []
    tool = data["tools"][0]["name"]
    data["code"] = data["code"].replace(f"def {tool}(db, ", f"def {tool}(db, extra, ", 1)  # a changed text
    assert f"def {tool}(db, extra, " in data["code"]
    problems = signature_problems(as_spec(data))
    assert any(tool in p and "extra" in p for p in problems)
    assert syntax_tree(data["code"]) is not syntax_tree(code)
