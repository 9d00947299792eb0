"""Writes elsewhere (validity rule 7): the extra-write and input-write mutants of a turn, as a mixin of the run.

Role: the methods of :class:`~envgen.gate.adequacy.MutationRun` that play a turn's reference with a write it
must not make. An **extra write** is the reference plus one more state-changing call on another row
(:func:`~envgen.gate.mutants.extra_writes`): at most :data:`MAX_EXTRA` per turn, out of
:data:`MAX_EXTRA_TRIES` candidates, besides the calls of tools no reference makes, tried at every turn
(:attr:`~envgen.gate.adequacy.MutationRun.uncapped`). An **input write** writes a table a ``sql`` or ``python``
check reads and the reference does not write, instead of the turn's calls and after them
(:mod:`envgen.gate.inputs`): at most :data:`MAX_INPUT` per turn out of :data:`MAX_INPUT_TRIES`. A candidate
call that changes nothing is no mutant. The last turn's extra writes follow its reference in the reference's
own episode (:meth:`WritesElsewhere._chain_extra`); with stateless code a turn's extra writes follow its
reference calls from one checkpoint (:meth:`WritesElsewhere._extras_at_end`); the others are replayed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from envgen.gate.inputs import input_mutants, tool_writes
from envgen.gate.mutants import (
    Locator,
    Mutant,
    RefTurn,
    call_dicts,
    extra_mutant,
    extra_writes,
    key_text,
    trajectory,
)
from envgen.gate.scoring import guards_all
from envgen.gate.starts import shared_items
from gym_envs.env import ToolEnv
from gym_envs.spec import EnvSpec, Say, ToolCall, Turn

__all__ = ["MAX_EXTRA", "MAX_EXTRA_TRIES", "MAX_INPUT", "MAX_INPUT_TRIES", "WritesElsewhere", "call_key"]

MAX_EXTRA = 2  #: extra-write mutants per turn
MAX_EXTRA_TRIES = 3  #: extra calls tried per turn (one that changes nothing is no mutant)
MAX_INPUT = 6  #: input-write mutants per turn
MAX_INPUT_TRIES = 12  #: input writes tried per turn (one that changes nothing is no mutant)


def call_key(call: ToolCall) -> str:
    """A call as text (its name and arguments): equal for the same call."""
    return key_text([call.name, call.arguments])


class WritesElsewhere:
    """The extra-write and input-write methods of :class:`~envgen.gate.adequacy.MutationRun` (module docstring)."""

    # what these methods use of MutationRun, which sets it
    env: ToolEnv
    spec: EnvSpec
    played: int
    stateless: bool
    uncapped: set[str]
    input_calls: list[ToolCall]
    _writes: dict[str, set[str]] | None

    if TYPE_CHECKING:
        def _score(self, turn: Turn, reply: str, calls: list[Any] | None = None,
                   state: dict[int, list[dict[str, Any]]] | None = None, *, mutant: str = "argument"
                   ) -> list[dict[str, Any]]: ...
        def _play_items(self, turn: Turn, items: list[ToolCall | Say], *, offer_all: bool = False,
                        made: int = 0) -> str | None: ...
        def _verdict(self, ref: RefTurn, m: Mutant, checks: list[dict[str, Any]], results: list[Any],
                     reply: str, digest: str | None = None) -> bool: ...
        def _judge(self, refs: list[RefTurn], ti: int, m: Mutant, locators: list[Locator | None],
                   extra: bool = False) -> bool | None: ...
        def _start_at(self, refs: list[RefTurn], ti: int, k: int = 0) -> int | None: ...

        @property
        def _says_kept(self) -> bool: ...

    def _chain_extra(self, ref: RefTurn, candidates: list[tuple[ToolCall, str]]) -> None:
        """After the reference's last turn, in its own episode: make candidate extra calls (each with its
        :func:`call_key`) until one changes the state, and judge that one (a turn takes at most :data:`MAX_EXTRA`
        extra mutants)."""
        env = self.env
        if guards_all(ref.turn):
            return
        for call, key in candidates:
            if ref.extra_made >= MAX_EXTRA or ref.extra_tries >= MAX_EXTRA_TRIES or ref.stopped:
                return
            ref.extra_tried.add(key)
            ref.extra_tries += 1
            env.call_tools(call_dicts([call]))
            result = env.turns[-1].calls[-1]
            if result.changes == 0:
                continue  # no mutant: the state is still the reference's (a failed call keeps no write unless its
                # spec's failed_calls is "keep", and then it reports what it kept)
            ref.extra_made += 1
            m = extra_mutant(ref, call)
            checks = self._score(ref.turn, ref.reply, mutant="extra")
            ref.stopped = self._verdict(ref, m, checks, list(env.turns[-1].calls), ref.reply)
            return

    def _extras(self, refs: list[RefTurn], ti: int, pool: list[ToolCall], locators: list[Locator | None]) -> None:
        """The extra-write mutants of turn ``ti`` that the reference runs did not make already: from a
        checkpoint after its reference calls (stateless code), else each replayed."""
        ref = refs[ti]
        if self.stateless and self._extras_at_end(refs, ti, pool):
            return
        for call, key in extra_writes(self.spec, ref, pool):
            capped = key not in self.uncapped
            if key in ref.extra_tried or (capped and (ref.extra_made >= MAX_EXTRA
                                                      or ref.extra_tries >= MAX_EXTRA_TRIES)):
                continue
            ref.extra_tried.add(key)
            ref.extra_tries += capped
            verdict = self._judge(refs, ti, extra_mutant(ref, call), locators, extra=True)
            if verdict is None:
                continue
            ref.extra_made += capped
            if verdict:
                return

    def _inputs(self, refs: list[RefTurn], ti: int, locators: list[Locator | None]) -> bool:
        """The input-write mutants of turn ``ti`` (:mod:`envgen.gate.inputs`: writes to the tables its checks
        read and its reference does not write); True if one survived. A write that changes nothing is no
        mutant; a turn makes at most :data:`MAX_INPUT` of them out of :data:`MAX_INPUT_TRIES` tries."""
        ref = refs[ti]
        made = tries = 0
        seen: set[str] = set()
        for m in input_mutants(self.spec, ref, self._tool_writes(), self.input_calls):
            if made >= MAX_INPUT or tries >= MAX_INPUT_TRIES:
                break
            if m.key() in seen:
                continue
            seen.add(m.key())
            tries += 1
            verdict = self._judge(refs, ti, m, locators, extra=True)
            if verdict is None:
                continue
            made += 1
            if verdict:
                return True
        return False

    def _tool_writes(self) -> dict[str, set[str]]:
        if self._writes is None:
            self._writes = tool_writes(self.spec)
        return self._writes

    def _extras_at_end(self, refs: list[RefTurn], ti: int, pool: list[ToolCall]) -> bool:
        """The extra-write mutants of turn ``ti`` made after its reference calls in one episode (stateless
        code): a checkpoint after the reference calls, each candidate call, then back to the checkpoint.
        False when no checkpoint could be made (the caller replays each one instead)."""
        env, ref = self.env, refs[ti]
        items = trajectory(ref)
        start = self._start_at(refs, ti, shared_items(ref, items, None, says=self._says_kept))
        if start is not None and items:
            self._play_items(ref.turn, items, made=start)
        cp = env.checkpoint()
        if cp is None:
            return False
        for call, key in extra_writes(self.spec, ref, pool):
            if ref.stopped:
                break
            capped = key not in self.uncapped
            if key in ref.extra_tried or (capped and (ref.extra_made >= MAX_EXTRA
                                                      or ref.extra_tries >= MAX_EXTRA_TRIES)):
                continue
            ref.extra_tried.add(key)
            ref.extra_tries += capped
            env.call_tools(call_dicts([call]))
            made = env.turns[-1].calls[-1]
            if made.changes > 0:  # it changed the state (a failed call only when its spec keeps its writes)
                ref.extra_made += capped
                self.played += 1
                checks = self._score(ref.turn, ref.reply, mutant="extra")
                ref.stopped = self._verdict(ref, extra_mutant(ref, call), checks, list(env.turns[-1].calls),
                                            ref.reply)
            if not env.restore(cp):
                return True  # the checkpoint is gone (the episode was rebuilt): stop here
        return True
