"""Mutation testing of a spec's checks: validity rules 4, 5 and 7 played on a :class:`~gym_envs.env.ToolEnv`.

Role: :class:`MutationRun` plays, for every task of one spec, the reference trajectory (recording what
each turn saw: :class:`~envgen.gate.mutants.RefTurn`), the do-nothing trajectory, and the wrong
trajectories of :mod:`envgen.gate.mutants` and :mod:`envgen.gate.inputs` (writes to the state a check
reads), and judges each wrong one against the turn's checks.

How a wrong trajectory (a *mutant*) is judged, turn by turn:

* **killed** when a check that catches it fails: its kind's :meth:`~gym_envs.checks.BaseCheck.catches` says so for
  the mutant's kind. A ``calls`` check alone never makes a turn adequate (it sees which tools were called, not what
  they did or what the agent said), but one whose call patterns pin arguments catches the argument and retarget
  mutants; a ``judged`` check catches nothing (the gate has no judge).
* otherwise it is compared with the reference: if it leaves the same state, gives the same answers
  and (in a turn whose output is an answer that no check reads) read the same data, it is
  **tolerated** (the turn provably does not care; no wrong trajectory at all);
* else it **survived**: a wrong trajectory earns the turn's reward. The spec is rejected and the
  reason names the mutant, so a model repairing the spec knows what its checks let through.

How each is played, cheapest first (the verdict is the one a replay from the episode start gives):

* the checks that read no state for the trajectory are judged first, with the runtime's own
  :func:`~gym_envs.checks.judge` (:mod:`envgen.gate.scoring`); then the state checks in stages by their kind's
  cost (the first ``sql`` check, the other cheap ones, then ``python``, ``unchanged`` and ``state``), stopping at the
  first that catches the mutant;
* reply mutants keep the reference's state, so its state verdicts stand and only the reply is judged;
  doing nothing (rule 4: no calls, an empty reply) and dropping a turn's only call are scored on the
  turn's start state; the argument mutants of a last turn that only reads are made after its reference
  calls, and the last turn's extra writes after the reference and its determinism replay, in their
  own episodes;
* other mutants start at their turn: the turns before are replayed unscored
  (:meth:`~gym_envs.env.ToolEnv.reset_to_turn`), and for tool code that keeps no state but its database
  (:func:`~gym_envs.sandbox.purity.stateless`) the next mutants of the turn start from a checkpoint made
  there (:meth:`~gym_envs.env.ToolEnv.checkpoint`), or from one after the reference's first items when a mutant
  begins with them (:mod:`envgen.gate.starts`). With such code a lookup (a call that changed no
  row) has its wrong arguments tried at its own place in the reference's episode (the calls after it
  then run as in the reference), leaving it out is judged without a replay, and a turn's extra writes
  follow its reference calls from one checkpoint;
* a turn where the task still withholds a tool plays that tool's call early
  (:func:`~envgen.gate.mutants.early_mutants`, made with ``offer_all``), judged as an extra write;
* a turn with an ``unchanged`` check on every table catches every extra write by construction (a call
  that changes the state changes some table), so its extra-write and input-write mutants are not played.

A scenario turn's reference holds ``say`` items: each trajectory plays them where the reference does
(:func:`~envgen.gate.mutants.trajectory`), and the scripted user (``ToolEnv``'s) answers them, as in any episode; a
``say`` the scripted user does not answer fails the reference (rule 3). A turn with a ``calls_per_message`` check
makes its calls in actions of at most its ``max``.

A turn stops at its first survivor. The state is digested only for a mutant that no check killed.
``reply_contains`` strings must also be distinctive (:mod:`envgen.gate.replies`).

The mutation score of a spec is killed / (killed + survived) over every mutant tried; accepted
specs score 1.0, and :attr:`MutationRun.tried` lists every mutant with its outcome.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from envgen.gate.extras import WritesElsewhere, call_key
from envgen.gate.mutants import (
    Locator,
    Mutant,
    RefTurn,
    argument_mutants,
    call_dicts,
    call_mutants,
    derive_reply,
    early_mutants,
    extra_writes,
    locate_answers,
    reply_mutants,
    short_call,
    trajectory,
)
from envgen.gate.replies import GENERIC_REPLIES, answer_problem, oracle_reply, reply_problems, tool_texts
from envgen.gate.scoring import catches, caught, detail, guards_all, local_verdicts, stages, uncaught_note
from envgen.gate.starts import Starts, Trail, shared_items
from envgen.gate.values import Snapshot
from gym_envs.checks import CallView, TurnView, answers_of
from gym_envs.env import ToolEnv
from gym_envs.sandbox.purity import stateless
from gym_envs.spec import EnvSpec, Task, ToolCall, Turn

__all__ = ["GENERIC_REPLIES", "Finding", "MutationRun", "answer_problem", "oracle_reply", "reply_problems",
           "tool_texts"]

SNAPSHOT_ROWS = 200  #: rows per table read from the state to draw other values from


@dataclass
class Finding:
    """A failed rule (:mod:`envgen.gate.rules` turns it into a ``Reason``)."""

    rule: int
    code: str
    message: str


@dataclass
class MutationRun(WritesElsewhere, Starts):
    """Rules 4, 5 and 7 for the tasks of one spec, on one env (see the module docstring)."""

    env: ToolEnv
    spec: EnvSpec
    seed: int = 0
    findings: list[Finding] = field(default_factory=list)
    tried: list[dict[str, Any]] = field(default_factory=list)  #: every mutant: task, turn, rule, ..., outcome
    played: int = 0  #: trajectories replayed
    _initial: Snapshot | None = None
    stateless: bool = False  #: the code keeps no state but the database (:func:`gym_envs.sandbox.purity.stateless`)
    _trail: Trail | None = None  #: the checkpoints of the turn of the last mutant (:class:`~envgen.gate.starts.Trail`)
    #: the JSON keys of the extra calls tried at every turn, outside the per-turn caps: one call of each tool no
    #: reference makes (:func:`~envgen.gate.mutants.unused_tool_calls`; padding a spec with such tools must
    #: not use up the tries before its destructive one)
    uncapped: set[str] = field(default_factory=set)
    input_calls: list[ToolCall] = field(default_factory=list)  #: what input-write mutants start from (inputs_from)
    _writes: dict[str, set[str]] | None = None  #: the tables each tool writes (:func:`~envgen.gate.inputs.tool_writes`)

    def __post_init__(self) -> None:
        self.stateless = stateless(self.spec.code)

    def inputs_from(self, calls: Iterable[ToolCall]) -> None:
        """The calls the input-write mutants start from (:func:`~envgen.gate.inputs.input_mutants`): the
        references' and the extra-write pool's."""
        self.input_calls = list(calls)

    def uncap(self, calls: Iterable[ToolCall]) -> None:
        """Try these extra calls at every turn outside the per-turn caps (:attr:`uncapped`)."""
        self.uncapped = {call_key(c) for c in calls}

    # -- counts ------------------------------------------------------------------------------------
    def count(self, outcome: str) -> int:
        return sum(1 for t in self.tried if t["outcome"] == outcome)

    @property
    def score(self) -> float | None:
        """Killed / (killed + survived) over the mutants tried; None when there were none."""
        killed, survived = self.count("killed"), self.count("survived")
        return killed / (killed + survived) if killed + survived else None

    # -- the reference -----------------------------------------------------------------------------
    def _reset(self, task: Task) -> None:
        self._trail = None
        self.env.reset(options={"task": task.id, "episode_seed": self.seed})
        self.played += 1

    def _snapshot(self, ti: int, previous: Snapshot | None = None) -> Snapshot:
        """The state at turn ``ti``'s start (turn 0's made once); ``previous``: a snapshot of an earlier state of the
        episode, whose tables that hold the same content (by digest) this one shares."""
        if ti == 0 and self._initial is not None:
            return self._initial
        assert self.env.session is not None
        held = previous.tables if previous is not None else {}
        dumped = self.env.session.dump(limit=SNAPSHOT_ROWS, unless={t: d["digest"] for t, d in held.items()
                                                                    if d.get("digest")})
        snap = Snapshot({t: held[t] if d.get("same") else d for t, d in dumped.items()}, previous)
        if ti == 0:
            self._initial = snap
        return snap

    def reference(self, task: Task, *, replies: bool = True,
                  extras: Callable[[RefTurn], list[tuple[ToolCall, str]]] | None = None) -> list[RefTurn]:
        """Play the reference: each turn's calls in one step, then the oracle reply. With ``replies``,
        also score doing nothing on each turn's start state and the reply mutants on its end state.

        The last turn is scored in place (its reply is not sent), so that extra-write mutants
        (``extras(ref)``: candidate calls, each with its key) can follow the reference in the same episode: a candidate
        that changes nothing leaves the state as it was, and the first that changes it is judged
        (see :meth:`_chain_extra`). A turn that ends the episode early (step budget) ends the list."""
        env = self.env
        self._reset(task)
        refs: list[RefTurn] = []
        history: list[str] = []
        for ti, turn in enumerate(task.turns):
            same = ti and refs and not refs[-1].effectful  # the turn before changed nothing: same state
            start_state = refs[-1].start if same else self._snapshot(ti, refs[-1].start if refs else None)
            ref = RefTurn(task, ti, start_state, reply=oracle_reply(turn), history=list(history))
            start: dict[int, list[dict[str, Any]]] = {}  # the start state's verdicts, shared by the two below
            noop = self._score(turn, "", [], start, mutant="noop") if replies else []  # doing nothing, in place
            # the reference without its only call, scored in place too (its answers stay the oracle's)
            drop = self._start_drop(ref, start) if replies and len(ref.calls) == 1 else None
            in_place: list[tuple[Mutant, list[Any]]] = []
            if ref.calls and replies and self.stateless and not ref.says and turn.pace() is None:
                ref.results, in_place = self._calls_with_lookups(ref)
            elif turn.reference:
                ref.unanswered = self._play_items(turn, trajectory(ref))
                ref.results = list(env.turns[-1].calls)
            if env.done:
                break
            last = ti + 1 == len(task.turns)
            if ref.unanswered is not None:
                ref.checks, ref.passed = [], False
            elif last:
                ref.checks = [c.to_dict() for c in env.score_reply(ref.reply)]
                ref.passed = all(c["passed"] for c in ref.checks)
            else:
                _, _, _, _, info = env.step({"content": ref.reply, "tool_calls": []})
                if "user_reply" in info:  # the scripted user answered the oracle's reply: the turn did not end
                    ref.unanswered, ref.ends = "", False
                    refs.append(ref)
                    break
                ref.checks, ref.passed = info.get("checks", []), bool(info.get("turn_passed"))
            history += [s.say for s in ref.says] + [ref.reply]
            ref.digest = env.state_digest()
            refs.append(ref)
            if ref.unanswered is not None:
                break
            if ref.passed and replies:
                self._judge_noop(ref, noop)
                if drop is not None:
                    ref.stopped = self._verdict(ref, drop[0], drop[1], [], ref.reply, digest=drop[2])
                if not ref.stopped:
                    self._record_replies(ref, self._score_replies(ref))
                self._judge_in_place(ref, in_place)
            if last and ref.passed and replies and not ref.effectful:
                self._reads_in_place(ref)
            if last and ref.passed and extras is not None and not ref.dirty:
                self._chain_extra(ref, extras(ref))
            if env.done:
                break
        return refs

    def _score(self, turn: Turn, reply: str, calls: list[Any] | None = None,
               state: dict[int, list[dict[str, Any]]] | None = None, *, mutant: str = "argument"
               ) -> list[dict[str, Any]]:
        """The turn's checks on the current state with ``reply`` and the turn's ``calls`` (default: those the
        env's current turn made), in stages, stopping at the first stage where a check that catches a ``mutant``
        failed, which is all a wrong trajectory's verdict needs: the checks that read no state first (judged here,
        by the runtime's own :func:`~gym_envs.checks.judge`), then the state checks in the stages of
        :func:`~envgen.gate.scoring.stages` (a local check whose verdict on this reply reads the state goes with the
        first). ``state``: verdicts of state stages already scored on this same state (read and filled: two
        replies on one state score it once)."""
        view = self._view(reply, calls)
        checks, pending = local_verdicts(turn.checks, view)
        if caught(turn, checks, mutant):
            return checks
        for k, stage in enumerate(stages(turn) or [[]]):
            done = state.get(k) if state is not None else None
            if done is None:
                done = [c.to_dict() for c in self.env.score_view(view, stage + pending)] if stage + pending else []
                if state is not None:
                    state[k] = [c for c in done if c["index"] not in pending]
            elif pending:
                done = done + [c.to_dict() for c in self.env.score_view(view, pending)]
            pending = []  # the local checks that read the state go with the first stage
            checks += done
            if caught(turn, checks, mutant):
                break
        return checks

    def _view(self, reply: str, calls: list[Any] | None = None) -> TurnView:
        """The current turn as checks see it with ``reply``, with ``calls`` (CallResults, one per action) instead of
        the turn's own when given."""
        view = self.env.turn_view(reply)
        if calls is None:
            return view
        return TurnView(view.reply, tuple(CallView(c.name, c.arguments, c.ok, i) for i, c in enumerate(calls)),
                        view.said, view.history, view.answers)

    def _local(self, turn: Turn, reply: str, calls: list[Any] | None) -> list[dict[str, Any]]:
        """The verdicts of the turn's checks that read no state but the reply's candidates (the runtime judges
        those on the current state: the trajectory's own)."""
        view = replace(self._view(reply, calls), answers=answers_of(turn.checks))  # the env may be past ``turn``
        out, pending = local_verdicts(turn.checks, view)
        if pending:
            out += [c.to_dict() for c in self.env.score_view(view, pending, turn.checks)]
        return out

    def _charge(self, calls: int) -> None:
        """Count checks the run makes outside the env's own methods against its budget (a gate env's meter)."""
        meter = getattr(self.env, "meter", None)
        if meter is not None:
            meter.charge(calls)

    def _known(self, ref: RefTurn, reply: str, calls: list[Any]) -> list[dict[str, Any]]:
        """The checks of a reply on the reference's own end state (its state verdicts are the reference's); the
        env is at that state."""
        checks = self._local(ref.turn, reply, calls)
        return checks + [c for c in ref.checks if ref.turn.checks[c["index"]].cost != "local"]

    def _start_drop(self, ref: RefTurn, start: dict[int, list[dict[str, Any]]]
                    ) -> tuple[Mutant, list[dict[str, Any]], str | None]:
        """The drop mutant of a one-call turn, scored on the turn's start state (cheap checks first); the
        start state's digest when no check other than ``calls`` caught it."""
        m = Mutant(5, "drop", f"without call 1 {short_call(ref.calls[0])}", [], [])
        checks = self._score(ref.turn, ref.reply, [], start, mutant="drop")
        return m, checks, None if caught(ref.turn, checks, "drop") else self.env.state_digest()

    def _calls_with_lookups(self, ref: RefTurn) -> tuple[list[Any], list[tuple[Mutant, list[Any]]]]:
        """Make the turn's reference calls one at a time (stateless code only: :mod:`gym_envs.sandbox.purity`).
        Right after a call that changed nothing (a lookup), make each of its argument mutants at the same
        place: one that changes nothing too leaves the episode as the reference has it, so the calls after it
        run as in the reference and the mutant's trajectory is the reference's with that one result changed.
        Returns the reference's results and those mutants with their trajectories' results (judged once
        the reference's turn is scored, :meth:`_judge_in_place`). A mutated call that changes the state is
        judged by replay instead, and the reference's episode is rebuilt from its start."""
        env = self.env
        done: list[tuple[Mutant, list[Any]]] = []
        mine: list[Any] = []
        for ci, call in enumerate(ref.calls):
            env.call_tools(call_dicts([call]))
            made = env.turns[-1].calls[-1]
            mine.append(made)
            if not (made.ok and made.changes == 0):
                continue
            ref.results = list(mine)  # the calls so far: which of them wrote decides each mutant's values
            seen = {Mutant(0, "", "", ref.calls, []).key()}
            for m in argument_mutants(self.spec, ref, ci):
                if m.key() in seen:
                    continue
                seen.add(m.key())
                env.call_tools(call_dicts([m.calls[ci]]))
                tried = env.turns[-1].calls[-1]
                if tried.changes > 0:  # it wrote: the episode left the reference; start it again
                    self._rewind(ref, mine)
                    continue
                done.append((m, [*mine[:ci], tried]))
        return mine, [(m, [*got, *mine[len(got):]]) for m, got in done]

    def _rewind(self, ref: RefTurn, made: list[Any]) -> None:
        """Put the episode back where the reference is: the turn's start (its earlier turns' calls made, not
        scored), then the turn's calls ``made`` so far."""
        calls = [{"name": c.name, "arguments": c.arguments} for prior in ref.task.turns[:ref.index]
                 for c in prior.calls()]
        self._trail = None
        self.env.reset_to_turn(ref.index, calls, options={"task": ref.task.id, "episode_seed": self.seed},
                               history=ref.history)
        self.played += 1
        if made:
            self.env.call_tools(call_dicts([ToolCall(name=c.name, arguments=c.arguments) for c in made]))

    def _judge_in_place(self, ref: RefTurn, in_place: list[tuple[Mutant, list[Any]]]) -> None:
        """Judge the lookup mutants made in place (:meth:`_calls_with_lookups`) and the reference without
        one of its lookups (stateless code: leaving out a call that changed nothing changes nothing else):
        their state is the reference's, their reply is derived from what their calls returned."""
        if not self.stateless:
            return
        locators = ref.locators or locate_answers(ref)
        drops = [(Mutant(5, "drop", f"without call {ci + 1} {short_call(c)}", ref.calls[:ci] + ref.calls[ci + 1:],
                         [j for j in range(len(ref.calls)) if j != ci]), ref.results[:ci] + ref.results[ci + 1:])
                 for ci, c in enumerate(ref.calls) if ci not in ref.effectful and len(ref.calls) > 1]
        for m, results in [*in_place, *drops]:
            if ref.stopped:
                return
            reply = derive_reply(ref, locators, m, results)
            ref.done_in_place.add(m.key())
            ref.stopped = self._verdict(ref, m, self._known(ref, reply, results), results, reply, digest=ref.digest)

    def _reads_in_place(self, ref: RefTurn) -> None:
        """The argument mutants of a last turn that only reads, judged in the reference's own episode:
        each mutated call is made after the reference's calls and its result stands in for the original
        call's (a read-only turn leaves the state as it found it, so the call sees what it would have seen
        in its place). A mutated call that writes leaves the episode changed: it and the rest are replayed."""
        env = self.env
        for m in call_mutants(self.spec, ref):
            if m.kind != "argument" or ref.stopped or m.key() in ref.done_in_place:
                continue
            ci = next(i for i, (a, b) in enumerate(zip(m.calls, ref.calls, strict=True)) if a != b)
            env.call_tools(call_dicts([m.calls[ci]]))
            made = env.turns[-1].calls[-1]
            if made.changes > 0:
                ref.dirty = True  # this one changed the state: replayed with the others left
                return
            results = [*ref.results[:ci], made, *ref.results[ci + 1:]]
            reply = derive_reply(ref, ref.locators, m, results)
            ref.done_in_place.add(m.key())
            # nothing changed, so the state checks' verdicts are the reference's own; the calls are the mutant's
            checks = self._known(ref, reply, results)
            ref.stopped = self._verdict(ref, m, checks, results, reply, digest=ref.digest)

    def _score_replies(self, ref: RefTurn) -> list[tuple[Mutant, list[dict[str, Any]]]]:
        """The reply mutants, scored on the reference's end state: only their reply differs."""
        ref.locators = locate_answers(ref)
        return [(m, self._known(ref, m.reply or "", ref.results)) for m in reply_mutants(ref, ref.locators)]

    def _record_replies(self, ref: RefTurn, scored: list[tuple[Mutant, list[dict[str, Any]]]]) -> None:
        for m, checks in scored:
            if self._judge_fixed(ref, m, checks):
                ref.stopped = True
                return

    def _judge_fixed(self, ref: RefTurn, m: Mutant, checks: list[dict[str, Any]]) -> bool:
        """Record a reply mutant (wrong by construction); True if it survived."""
        hard = [c for c in checks if catches(ref.turn, c, m.kind)]
        if hard:
            self._note(ref, m, "killed", detail(hard[0]))
            return False
        self._survivor(ref, m, uncaught_note(ref.turn, checks), "it gives a wrong answer")
        return True

    # -- do nothing ----------------------------------------------------------------------------------
    def _judge_noop(self, ref: RefTurn, checks: list[dict[str, Any]]) -> None:
        """Rule 4: doing nothing in a turn that changes the state or answers (no calls, an empty reply, on
        the state the reference leaves before the turn) fails a check that catches it (not ``calls``, not
        ``judged``)."""
        if not (ref.effectful or ref.answers):
            return
        task, ti = ref.task, ref.index
        hard = [c for c in checks if catches(ref.turn, c, "noop")]
        entry = {"task": task.id, "turn": ti + 1, "rule": 4, "mutation": "no calls, an empty reply"}
        if hard:
            self.tried.append(entry | {"outcome": "killed", "detail": detail(hard[0])})
            return
        note = uncaught_note(ref.turn, checks)
        self.tried.append(entry | {"outcome": "survived", "detail": note})
        self.findings.append(Finding(4, "noop_passes", f"task {task.id!r} turn {ti + 1}: doing nothing (no calls, "
                                     f"an empty reply) is not caught: {note}; add a check on the state this turn "
                                     "must change or on the answer it must give"))

    # -- mutants ---------------------------------------------------------------------------------------
    def mutate(self, task: Task, refs: list[RefTurn], pool: list[ToolCall]) -> None:
        """Rules 5 and 7: every turn's call mutants, then its input-write mutants, then its extra-write mutants
        (those the reference runs did not already make, :meth:`_chain_extra`)."""
        for ti, ref in enumerate(refs):
            if ref.stopped:
                continue
            locators = ref.locators or locate_answers(ref)
            mutants = [m for m in call_mutants(self.spec, ref)  # (a one-call drop was scored in place)
                       if not (m.kind == "drop" and not m.calls) and m.key() not in ref.done_in_place]
            if any(self._judge(refs, ti, m, locators) for m in mutants) or \
                    any(self._judge(refs, ti, m, locators, extra=True) for m in early_mutants(ref)) or \
                    guards_all(ref.turn):
                continue
            if not self._inputs(refs, ti, locators):
                self._extras(refs, ti, pool, locators)

    def replay(self, task: Task, refs: list[RefTurn], pool: list[ToolCall]) -> bool:
        """Rule 6: the reference's calls made again from the same seed give the same results and the same
        end state (a check's verdict is a function of the state, the reply and the calls, so the reward is
        the same too); the last turn then hosts one more extra-write mutant, from ``pool``. The turns before
        the last are replayed without scoring (:meth:`ToolEnv.reset_to_turn`)."""
        env = self.env
        last = refs[-1]
        ti = last.index
        self._trail = None
        was, env.recall_calls = env.recall_calls, False  # every call of the replay made afresh, as its digest is read
        try:
            _, info = env.reset_to_turn(ti, [{"name": c.name, "arguments": c.arguments} for ref in refs[:ti]
                                             for c in ref.calls], options={"task": task.id, "episode_seed": self.seed},
                                        history=last.history)
        finally:
            env.recall_calls = was
        self.played += 1
        theirs = [(x.ok, x.result) for ref in refs[:ti] for x in ref.results]
        same = [(r["ok"], r["result"]) for r in info.get("prior_results", [])] == theirs
        if last.turn.reference:
            self._play_items(last.turn, trajectory(last))
        again = RefTurn(task, ti, last.start, results=list(env.turns[-1].calls), reply=last.reply,
                        digest=env.state_digest(fresh=True), passed=last.passed, checks=last.checks,
                        history=last.history)
        same = same and again.digest == last.digest and \
            [(x.ok, x.result) for x in again.results] == [(x.ok, x.result) for x in last.results]
        if same and last.passed and len(refs) == len(task.turns) and not env.done:
            # the replayed last turn carries on from the reference's extra writes
            again.extra_made, again.extra_tries, again.extra_tried = last.extra_made, last.extra_tries, \
                last.extra_tried
            again.stopped = last.stopped
            fresh = [(c, key) for c, key in extra_writes(self.spec, last, pool) if key not in last.extra_tried]
            self._chain_extra(again, fresh)
            last.extra_made, last.extra_tries, last.stopped = again.extra_made, again.extra_tries, again.stopped
        return same

    def _play(self, refs: list[RefTurn], ti: int, m: Mutant,
              locators: list[Locator | None]) -> tuple[list[dict[str, Any]], list[Any], str]:
        """Put the episode where the mutant first differs from the reference (:meth:`~envgen.gate.starts.Starts.
        _start_at`: turn ``ti``'s start, after the reference's first calls the mutant makes too), play the rest of
        its items (its calls, the ``say`` items it keeps) and score its reply: the cheap checks first, and the
        costly ones only when no cheap one caught it (a killed mutant needs one failure). The episode is left
        mid-turn: the next trajectory starts again."""
        env = self.env
        ref = refs[ti]
        items = trajectory(ref, m)
        made = self._start_at(refs, ti, shared_items(ref, items, m, says=self._says_kept))
        if made is not None and items:
            self._play_items(ref.turn, items, offer_all=m.kind == "early", made=made)
        results = list(env.turns[-1].calls) if env.turns else []
        reply = m.reply if m.reply is not None else derive_reply(ref, locators, m, results)
        if env.done:  # the step budget ended the episode: its last scores are final
            return [], results, reply
        return self._score(ref.turn, reply, mutant=m.kind), results, reply

    def _judge(self, refs: list[RefTurn], ti: int, m: Mutant, locators: list[Locator | None],
               extra: bool = False) -> bool | None:
        """Play and record a mutant; True if it survived, False if not, None if it was no mutant at all
        (an extra call that changed nothing)."""
        ref = refs[ti]
        checks, results, reply = self._play(refs, ti, m, locators)
        if extra and not (len(results) == len(m.calls) and results[-1].changes > 0):
            return None
        ref.stopped = self._verdict(ref, m, checks, results, reply)
        return ref.stopped

    def _verdict(self, ref: RefTurn, m: Mutant, checks: list[dict[str, Any]], results: list[Any],
                 reply: str, digest: str | None = None) -> bool:
        """Record what became of a played mutant (``digest``: its state's, when it is not the env's
        current one); True if it survived."""
        hard = [c for c in checks if catches(ref.turn, c, m.kind)]
        if hard:
            self._note(ref, m, "killed", detail(hard[0]))
            return False
        why = self._wrong(ref, m, results, reply, digest)
        if why is None:
            self._note(ref, m, "tolerated", "same state and answer as the reference")
            return False
        self._survivor(ref, m, uncaught_note(ref.turn, checks), why)
        return True

    def _wrong(self, ref: RefTurn, m: Mutant, results: list[Any], reply: str, digest: str | None = None) -> str | None:
        """Why a mutant that no check caught is a wrong trajectory, or None if it is none."""
        if (digest or self.env.state_digest()) != ref.digest:
            return "it leaves a different state than the reference"
        if reply.strip().lower() != ref.reply.strip().lower():
            return f"it answers {reply!r} instead of {ref.reply!r}"
        if ref.answering and not ref.answers:
            mine = [(r.ok, r.result) for r in results]
            theirs = [(r.ok, r.result) for r in ref.results]
            if mine != theirs:
                return "it reads other data than the reference, and no reply_contains check reads the answer"
        return None

    # -- records ---------------------------------------------------------------------------------------
    def _note(self, ref: RefTurn, m: Mutant, outcome: str, detail: str) -> None:
        self.tried.append({"task": ref.task.id, "turn": ref.index + 1, "rule": m.rule, "mutation": m.label,
                           "outcome": outcome, "detail": detail[:300]})

    def _survivor(self, ref: RefTurn, m: Mutant, note: str, why: str) -> None:
        self._note(ref, m, "survived", f"{why}; {note}")
        code = "near_miss_passes" if m.rule == 5 else "writable_input" if m.kind == "input" else "mutant_survives"
        advice = ("take each check's expected values from the turn's starting state or constants, not from state "
                  "the agent can change, and check that such state is unchanged" if m.kind == "input" else
                  "make the checks pin the state this turn must produce: the written rows' exact values and "
                  "that nothing else changed (an unchanged check on the other tables)" if "state" in why else
                  "check the answer: a reply_contains string that only the right answer contains")
        self.findings.append(Finding(m.rule, code, f"task {ref.task.id!r} turn {ref.index + 1}: the wrong "
                                     f"trajectory {m.label} is not caught ({why}; {note}); "
                                     f"{advice}"))
