"""Converting τ² domains into specs: lossless tables, τ²'s tools and policy, one task per τ² task."""

from __future__ import annotations

import json

import pytest

from eval.tau2 import _backend
from eval.tau2.convert import convert
from eval.tau2.domain import DOMAINS, domain
from eval.tau2.tables import check_rows, digests
from gym_envs.sandbox import InProcessExecutor
from gym_envs.spec import parse_spec
from tests.fixtures.tau2 import needs_tau2

pytestmark = needs_tau2


@pytest.mark.parametrize("name", sorted(DOMAINS))
def test_the_tables_read_back_to_taus_database_exactly(name: str) -> None:
    d = domain(name)
    env = _backend.environment(name)
    db = _backend.db_dump(env)
    rows = d.to_tables(db)
    check_rows(d.tables, rows)
    back = d.from_tables({t: list(reversed(r)) for t, r in rows.items()})  # row order is not information
    assert back == db
    assert json.dumps(back) == json.dumps(db)  # the same key order: tool results print alike
    assert _backend.dict_hash(back) == _backend.db_hash(env)


@pytest.fixture(scope="module")
def retail():
    return convert("retail", task_ids=["0", "2", "24", "57"])


def test_a_domain_becomes_one_v2_spec_with_taus_tools_and_policy(retail) -> None:
    spec = parse_spec(json.loads(retail.spec.to_json()))  # what a file holds reads back
    assert spec.spec_version == 2 and spec.id == "tau2-retail"
    schemas = _backend.tool_schemas("retail")
    assert [t.name for t in spec.tools] == [f["name"] for f, _ in schemas]
    assert [t.parameters for t in spec.tools] == [f["parameters"] for f, _ in schemas]
    assert spec.policy and any(r.enforced == "tool" for r in spec.policy) and any(
        r.enforced == "policy" for r in spec.policy)
    text = " ".join([spec.description, *(r.text for r in spec.policy)])
    for sentence in ("authenticate the user identity", "Product ID and Item ID have no relations",
                     "An order can only be exchanged if its status is 'delivered'"):
        assert sentence in text


def test_each_task_checks_taus_final_state_and_communicated_info(retail) -> None:
    by_tau2 = {t.tau2_id: t for t in retail.tasks.values()}
    taus = {str(t.id): t for t in _backend.tasks("retail")}
    for tau2_id, side in by_tau2.items():
        task = retail.spec.task(side.id)
        checks = task.turns[0].checks
        gold = _backend.gold_environment("retail", taus[tau2_id])
        final = retail.domain.to_tables(_backend.db_dump(gold))
        assert checks[0].kind == "state" and checks[0].digests == digests(retail.domain.tables, final)
        assert [c.any_of for c in checks[1:]] == [[s] for s in side.communicate_info]
        assert [c.name for c in task.turns[0].reference] == [a["name"] for a in side.actions]
        assert side.evaluable and not side.judged and side.split in ("train", "test")
        assert side.scenario["instructions"]["reason_for_call"] in task.turns[0].instruction
    assert retail.spec.task(by_tau2["57"].id).kind == "decline"  # no gold action: the request is refused
    assert retail.spec.task(by_tau2["0"].id).kind == "read_then_write"


def test_the_seed_state_has_the_digests_the_converter_computes(retail) -> None:
    ex = InProcessExecutor()
    try:
        session = ex.session(retail.spec)
        assert session.digest()["tables"] == digests(retail.domain.tables, retail.rows)
    finally:
        ex.close()


def test_an_unknown_task_or_domain_is_refused_naming_what_exists() -> None:
    with pytest.raises(ValueError, match="no tasks"):
        convert("retail", task_ids=["nope"])
    with pytest.raises(ValueError, match="did you mean 'retail'"):
        domain("retial")
