"""The one search for a task's target (:meth:`envgen.world.tasks.targets.Targets.targets`): what it yields, that
its draws are fixed by the seed, and that every family that picks a target takes it from there."""

from __future__ import annotations

import copy
import dataclasses
import random
from collections.abc import Iterator
from typing import Any

import pytest

from envgen.world.compile import CompiledWorld, compile_world
from envgen.world.data import Pools
from envgen.world.sim import Simulator
from envgen.world.tasks.base import Row, Writer
from envgen.world.tasks.families import Families
from envgen.world.tasks.targets import Target, Targets
from tests.envgen.world.store_world import _WORLD, simulated, store_world


@pytest.fixture(scope="module")
def shop() -> Iterator[tuple[CompiledWorld, Simulator]]:
    yield from simulated(store_world(), "test-shop-2", 3)


def _families(shop: tuple[CompiledWorld, Simulator], seed: int) -> Families:
    cw, sim = shop
    rng = random.Random(seed)
    return Families(Writer(cw.world, sim, rng), Pools(rng, currency=cw.world.currency))


def _op(fam: Families, name: str) -> Any:
    return next(o for o in fam.world.ops if o.name == name)


def _drawn(fam: Families, op: Any, keep: Any, **kw: Any) -> list[tuple[Any, ...]]:
    return [(t.scope["id"], t.row["id"], t.said.words, tuple(sorted(t.args.items())), t.value)
            for t in fam.targets(op, keep, **kw)]


def test_every_candidate_is_one_of_its_scopes_records_that_the_predicate_keeps(shop: Any) -> None:
    fam = _families(shop, 0)
    op = _op(fam, "change_address")
    pending = [t for t in fam.targets(op, lambda r: r["state"] == "pending", scopes=5, each=2)]
    assert pending
    per_scope: dict[int, int] = {}
    for t in pending:
        assert isinstance(t, Target)
        assert t.row["state"] == "pending" and t.row in t.cands
        assert t.cands == fam.w.owned(fam.main, t.scope) and len(t.cands) >= 2
        assert t.args["order_number"] == t.row["order_number"] and t.args["address"] != t.row["address"]
        assert t.value and t.find and t.said.words
        per_scope[t.scope["id"]] = per_scope.get(t.scope["id"], 0) + 1
    assert len(per_scope) <= 5 and max(per_scope.values()) <= 2


def test_a_row_the_operation_cannot_act_on_is_skipped_and_none_without_an_operation(shop: Any) -> None:
    fam = _families(shop, 0)
    count = dataclasses.replace(_op(fam, "change_address"), kind="count")  # act() gives no arguments for a count
    assert list(fam.targets(count, lambda r: True)) == []
    assert all(t.args == {} and t.value == "" for t in fam.targets(None, lambda r: True))


def test_the_draw_order_is_fixed_by_the_seed(shop: Any) -> None:
    op = _op(_families(shop, 0), "change_address")
    keep = lambda r: True  # noqa: E731
    first = _drawn(_families(shop, 7), op, keep)
    assert first == _drawn(_families(shop, 7), op, keep)
    assert any(_drawn(_families(shop, seed), op, keep) != first for seed in range(3))


def test_a_pinned_scope_is_the_only_one_searched(shop: Any) -> None:
    fam = _families(shop, 1)
    scope = next(s for s in fam.scopes() if len(fam.w.owned(fam.main, s)) >= 3)
    fam.pin = scope
    assert {t.scope["id"] for t in fam.targets(None, lambda r: True, each=10)} == {scope["id"]}


@pytest.fixture(scope="module")
def strict_shop() -> Iterator[tuple[CompiledWorld, Simulator]]:
    """The shop, where the policy (not the tool) forbids changing the address of a shipped order."""
    ops = copy.deepcopy(_WORLD["operations"])
    next(o for o in ops if o["name"] == "change_address").pop("conditions")
    policy = [*copy.deepcopy(_WORLD["policy"]), {"kind": "forbid_state", "op": "change_address",
                                                 "states": ["shipped"], "text": "Shipped orders keep their address."}]
    yield from simulated(store_world(operations=ops, policy=policy), "test-shop-2", 3)


@pytest.fixture(scope="module")
def catalog_shop() -> Iterator[tuple[CompiledWorld, Simulator]]:
    """A shop whose catalog has a kind of product with one cheapest (not every draw of rows has one)."""
    for seed in range(8):
        cw = compile_world(store_world(), env_id="test-shop-catalog", seed=seed)
        sim = Simulator(cw.spec)
        fam = _families((cw, sim), 0)
        if fam._choice() is not None:
            yield cw, sim
            sim.close()
            return
        sim.close()
    raise AssertionError("no seed gives the shop's catalog a single cheapest product of a kind")


def _refuse_state(fam: Families) -> Any:
    rule = next(r for r in fam.rules("forbid_state"))
    return fam._refuse_state(rule, _op(fam, rule.op))


_SEARCHERS = ["write_goal", "withheld_tool", "tool_refusal", "add_line", "catalog_goal", "missing_identity",
              "_refuse_state"]


@pytest.mark.parametrize("family", _SEARCHERS)
def test_a_family_that_picks_a_target_takes_it_from_the_one_search(family: str, request: pytest.FixtureRequest,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """With the search patched to find nothing, the family writes nothing; unpatched, some seed writes one."""
    worlds = {"_refuse_state": "strict_shop", "catalog_goal": "catalog_shop"}
    world = request.getfixturevalue(worlds.get(family, "shop"))
    write = _refuse_state if family == "_refuse_state" else (lambda fam: getattr(fam, family)())

    def wrote(seeds: range) -> bool:
        return any(write(_families(world, s)) is not None for s in seeds)

    assert wrote(range(12))

    def nothing(self: Targets, op: Any, keep: Any, **kw: Any) -> Iterator[Target]:
        return iter(())

    monkeypatch.setattr(Targets, "targets", nothing)
    assert not wrote(range(12))


def test_fresh_is_the_state_a_new_record_starts_in(shop: Any) -> None:
    fam = _families(shop, 0)
    rows: list[Row] = fam.w.rows(fam.main)
    assert {r["state"] for r in rows if fam.fresh(r)} == {"pending"} and len({r["state"] for r in rows}) > 1
