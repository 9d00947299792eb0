"""The gate's decision on one spec: :class:`Verdict`, with a :class:`Reason` per failed rule.

A verdict is plain data (``to_dict`` is JSON): the library stores it as the spec's gate report
(``LIBRARY/gate/ID.json``), the inspector shows it and LLM proposers get its reasons back verbatim
(:meth:`Verdict.feedback`). It records what a replay of the run needs: the episode seeds the gate drew
(:attr:`Verdict.seeds`; :func:`envgen.gate.validate_spec` takes them back as ``seeds=``) and the executor
kind spec code ran on (:attr:`Verdict.executor`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["RULES", "RULE_MEANINGS", "Reason", "Verdict"]

#: the validity rules by number (gym_envs/ENVSPEC.md, "Validity"; the package docstring says how each is decided)
RULES = {1: "parse", 2: "state", 3: "reference", 4: "no-op", 5: "near-miss", 6: "determinism", 7: "adequacy",
         8: "names", 9: "budget", 10: "antecedent"}
#: What each rule asks, in one line: shown beside every rule number of a gate report (``envwright inspect``).
RULE_MEANINGS = {
    1: "the spec parses, its code compiles in the sandbox, and each tool's function matches its schema",
    2: "the tables and seed rows build the database within the limits",
    3: "each task's reference calls run without error and pass every check",
    4: "doing nothing in a turn that changes state or must answer fails a check",
    5: "the reference with one call dropped or one argument changed fails a check (unless nothing differs)",
    6: "the reference run twice from one seed gives the same results and end state",
    7: "more wrong trajectories (another entity, an extra write, a wrong or missing answer) fail a check",
    8: "tool and parameter names, and parameter schemas, follow the spec's rules",
    9: "validating the spec stays within the gate's time and call budget",
    10: "a turn's 'it', 'its' or 'the same' leaves exactly one record it can mean",
}


@dataclass
class Reason:
    """One failed rule: its number, a short code and a message that says what to fix."""

    rule: int
    code: str
    message: str

    def __str__(self) -> str:
        return f"rule {self.rule} ({RULES[self.rule]}): {self.message}"


@dataclass
class Verdict:
    """The gate's decision on one spec."""

    spec_id: str | None
    accepted: bool
    reasons: list[Reason] = field(default_factory=list)
    trajectories: int = 0
    seconds: float = 0.0
    source: str | None = None
    mutants: int = 0  #: wrong trajectories tried (rules 4, 5, 7): killed + survived
    killed: int = 0  #: of which a check caught
    mutation_score: float | None = None  #: killed / mutants (None: none tried); 1.0 for an accepted spec
    #: every wrong trajectory the gate tried and what became of it: dicts with ``task``, ``turn`` (from 1),
    #: ``rule``, ``mutation`` (what was changed), ``outcome`` (``killed``: a check other than ``calls``
    #: failed; ``tolerated``: same state and answer as the reference; ``survived``: rejected) and ``detail``
    mutations: list[dict[str, Any]] = field(default_factory=list)
    #: the episode seeds of the run, drawn fresh for each run unless given: every trajectory's, then the second
    #: seed of rule 6 (judged under only when the code uses ``random``). ``validate_spec(spec, seeds=...)`` replays it
    seeds: list[int] = field(default_factory=list)
    executor: str | None = None  #: the executor kind spec code ran on (``worker`` or ``inprocess``)
    calls: int = 0  #: tool calls and check evaluations the run made (counted against the call budget, rule 9)

    @property
    def codes(self) -> list[str]:
        return sorted({r.code for r in self.reasons})

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["reasons"] = [asdict(r) | {"text": str(r)} for r in self.reasons]
        return d

    def feedback(self) -> str:
        """The reasons as a bullet list (for repair prompts)."""
        return "\n".join(f"- {r}" for r in self.reasons)
