"""What the gate takes from what the process remembers: the results of calls that change nothing (its episodes
ask for them, but for the determinism rule's replay, which makes its calls afresh), and one parse of a spec's
code, read once per text for its signatures. The verdicts are those of a run that remembers nothing. A run pauses
automatic garbage collection."""

from __future__ import annotations

import gc
import json
from typing import Any

import pytest

import envgen.gate.adequacy as adequacy_module
import envgen.gate.mutants as mutants_module
import envgen.gate.signature as signature_module
import gym_envs.sandbox.engine as engine_module
from envgen.gate import validate_spec
from envgen.gate.adequacy import MutationRun
from envgen.gate.budget import GateEnv
from envgen.gate.rules import collection_paused
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


def test_the_signatures_of_a_code_are_read_once_and_judged_against_each_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule parses a code text once (a second spec with the same code reads no tree), yet judges each spec's own
    schemas: the same code with a schema it does not match is rejected."""
    data = json.loads(example_path("bank-ledger").read_text())
    data["code"] += "\n# read once\n"
    parsed: list[str] = []
    monkeypatch.setattr(signature_module, "syntax_tree", lambda code: parsed.append(code) or syntax_tree(code))
    assert signature_problems(as_spec(data)) == []
    props = data["tools"][0]["parameters"]["properties"]
    props["unheard_of"] = {"type": "string"}
    problems = signature_problems(as_spec(data))
    assert any("unheard_of" in p for p in problems)
    assert len(parsed) == 1
    data["code"] += "def (:\n"
    assert signature_problems(as_spec(data))[0].startswith("code: syntax error at line")


def test_a_validation_runs_with_collection_paused_and_restores_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Automatic collection is off while the gate plays trajectories, and on again after, even when the run raises;
    a process that had it off keeps it off."""
    seen: list[bool] = []
    reference = MutationRun.reference

    def recording(self: MutationRun, *a: Any, **kw: Any) -> Any:
        seen.append(gc.isenabled())
        return reference(self, *a, **kw)

    monkeypatch.setattr(MutationRun, "reference", recording)
    assert gc.isenabled()
    assert validate_spec(load_example("bank-ledger"), executor=InProcessExecutor(), seed=7).accepted
    assert seen and not any(seen) and gc.isenabled()

    def broken(self: MutationRun, *a: Any, **kw: Any) -> Any:
        raise RuntimeError("broken")

    monkeypatch.setattr(MutationRun, "reference", broken)
    with pytest.raises(RuntimeError):
        validate_spec(load_example("bank-ledger"), executor=InProcessExecutor(), seed=7)
    assert gc.isenabled()
    gc.disable()
    try:
        with collection_paused(), collection_paused():  # nested: the outer one decides
            assert not gc.isenabled()
        assert not gc.isenabled()  # it was off before: it stays off
    finally:
        gc.enable()
    with collection_paused():
        with collection_paused():
            pass
        assert not gc.isenabled()  # the inner block's end does not resume it
    assert gc.isenabled()


def test_a_calls_argument_mutants_are_made_once_and_judged_as_when_made_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """A turn's lookups have their argument mutants made when they are tried in place, and the turn's call mutants
    again later: each call's are made once (by whether it wrote), and the verdict is the one made without keeping
    them."""
    spec = load_example("shop-support")
    made: list[tuple[int, int, bool]] = []
    real = mutants_module._argument_mutants

    def counting(spec: Any, ref: Any, ci: int, writes: bool) -> Any:
        made.append((id(ref), ci, writes))
        return real(spec, ref, ci, writes)

    monkeypatch.setattr(mutants_module, "_argument_mutants", counting)
    kept = validate_spec(spec, executor=InProcessExecutor(), seed=7)
    assert made and len(made) == len(set(made))

    def afresh(spec: Any, ref: Any, ci: int) -> Any:
        return real(spec, ref, ci, ci in ref.effectful)

    monkeypatch.setattr(mutants_module, "argument_mutants", afresh)
    monkeypatch.setattr(adequacy_module, "argument_mutants", afresh)
    assert _record(validate_spec(spec, executor=InProcessExecutor(), seed=7)) == _record(kept)
    assert kept.mutants > 0
