"""The domain catalog: every domain compiles and passes the gate; the loader refuses bad files clearly."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from envgen.gate import validate_spec
from envgen.realism.text import Vocabulary, is_crud_tool
from envgen.world.blueprint import MAX_OPERATIONS
from envgen.world.catalog import (
    DOMAINS_DIR,
    PATTERN_ROLES,
    PATTERNS,
    CatalogError,
    UnknownDomain,
    domain,
    domains,
    entries,
    hosting,
    load_domain,
)
from envgen.world.compile import compile_world
from envgen.world.normalize import to_world

DOMAIN_IDS = [e.id for e in entries()]
POLICY_ONLY = ("confirm", "forbid_state", "limit", "own_records")


def _compile_and_gate(domain_id: str, seed: int) -> None:
    bp = domain(domain_id)
    cw = compile_world(bp, env_id=domain_id.replace("_", "-"), seed=seed)
    verdict = validate_spec(cw.spec, executor="inprocess")
    assert verdict.accepted, [f"{r.code}: {r.message}" for r in verdict.reasons]
    assert len(cw.spec.tasks) >= 6


@pytest.mark.parametrize("domain_id", DOMAIN_IDS)
def test_every_domain_compiles_and_the_gate_accepts_it(domain_id: str) -> None:
    _compile_and_gate(domain_id, seed=0)


@pytest.mark.slow
@pytest.mark.parametrize("domain_id", DOMAIN_IDS)
def test_every_domain_passes_the_gate_under_a_second_seed(domain_id: str) -> None:
    _compile_and_gate(domain_id, seed=1)


@pytest.mark.parametrize("domain_id", DOMAIN_IDS)
def test_every_domain_is_a_service_worth_training_on(domain_id: str) -> None:
    """The floor of issue 34 for a hand-written world: tables, rows, the domain's own operations, a policy."""
    bp = domain(domain_id)
    world = to_world(bp)
    main = next(e for e in world.entities if e.role == "main")
    assert 4 <= len(world.entities) <= 6
    assert main.rows >= 200 and sum(e.rows for e in world.entities) / len(world.entities) >= 50
    writes = [o for o in bp.operations if o.kind not in ("lookup", "search", "count", "total")]
    # a domain leaves room for two operations a document grafts on (envgen/proposers/world/writer.py)
    assert 6 <= len(bp.operations) <= MAX_OPERATIONS - 2 and len(writes) >= 4
    assert all(o.phrase and o.reasons for o in writes), [o.name for o in writes if not (o.phrase and o.reasons)]
    assert 3 <= len(bp.policy) <= 6 and sum(p.kind in POLICY_ONLY for p in bp.policy) >= 2
    assert len(world.policy) >= 5


def test_the_catalogs_tools_are_mostly_the_services_own_operations_not_generic_crud() -> None:
    """Issue 34's bound on generic CRUD-verb tools holds for the catalog itself (the compiler's added lookups and
    escalations included), so the worlds grafted onto it start below it; each domain adds its own operations."""
    tools = crud = 0
    for bp in domains():
        world = to_world(bp)
        vocab = Vocabulary.of([e.table for e in world.entities], [c for e in world.entities for c in e.columns()])
        mine = [o.name for o in world.ops if is_crud_tool(o.name, vocab)]
        assert len(mine) < len(world.ops) * 0.6, (bp.id, mine)
        tools, crud = tools + len(world.ops), crud + len(mine)
    assert crud <= 0.47 * tools, f"{crud} of {tools} tools are generic CRUD verbs"


def test_the_catalog_covers_every_pattern_and_mixes_self_service_and_operator_worlds() -> None:
    assert len(DOMAIN_IDS) >= 25
    for pattern in PATTERNS:
        hosts = hosting(pattern)
        assert hosts, pattern
        for e in hosts:
            roles = e.host(pattern)
            assert roles is not None and set(roles) <= {r.name for r in PATTERN_ROLES[pattern]}
    operators = [bp.operator for bp in domains()]
    assert 8 <= sum(operators) <= len(operators) - 8


def test_each_call_returns_fresh_copies() -> None:
    first = domain("print_shop_queue")
    first.entities.clear()
    assert domain("print_shop_queue").entities
    assert [bp.id for bp in domains()] == DOMAIN_IDS == sorted(DOMAIN_IDS)


def test_an_unknown_domain_or_pattern_names_the_closest_ones() -> None:
    with pytest.raises(KeyError) as e:
        domain("print_shop_queu")
    assert isinstance(e.value, UnknownDomain) and "did you mean 'print_shop_queue'" in str(e.value)
    with pytest.raises(UnknownDomain, match="did you mean 'queue'"):
        hosting("queu")


def _write(tmp_path: Path, raw: dict[str, object], name: str = "print_shop_queue") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


def _raw(domain_id: str = "print_shop_queue") -> dict[str, object]:
    loaded = yaml.safe_load((DOMAINS_DIR / f"{domain_id}.yaml").read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def test_a_good_file_loads_with_its_metadata(tmp_path: Path) -> None:
    e = load_domain(_write(tmp_path, _raw()))
    assert e.id == "print_shop_queue" and "queue" in e.meta.patterns
    assert e.host("queue") == {"container": "printer", "item": "print_job", "capacity": "queue_limit",
                               "waiting": "queued", "taken": "printing"}
    assert e.host("ledger") is None


def test_a_bad_blueprint_field_is_named_with_the_file(tmp_path: Path) -> None:
    raw = _raw()
    raw["entities"][0]["fields"][0]["kind"] = "persons_name"  # type: ignore[index]
    path = _write(tmp_path, raw)
    with pytest.raises(CatalogError) as e:
        load_domain(path)
    assert str(path) in str(e.value) and "entities.0.fields.0.kind" in str(e.value)


def test_a_role_naming_what_the_world_lacks_is_named_with_a_suggestion(tmp_path: Path) -> None:
    raw = _raw()
    raw["hosts"]["queue"]["item"] = "printjob"  # type: ignore[index]
    raw["hosts"]["queue"]["taken"] = "started"  # type: ignore[index]
    raw["hosts"]["lifecycle"]["finale"] = "done"  # type: ignore[index]
    with pytest.raises(CatalogError) as e:
        load_domain(_write(tmp_path, raw))
    text = str(e.value)
    assert "hosts.queue.item: no entity 'printjob'; did you mean 'print_job'" in text
    assert "hosts.lifecycle.finale: lifecycle has no role 'finale'; did you mean 'final'" in text
    assert "hosts.queue.taken" not in text  # its entity is reported instead


def test_roles_are_checked_for_their_sort(tmp_path: Path) -> None:
    raw = _raw()
    raw["hosts"]["queue"]["taken"] = "started"  # type: ignore[index]
    raw["hosts"]["queue"]["capacity"] = "building"  # type: ignore[index]
    raw["hosts"]["queue"]["container"] = "patron"  # type: ignore[index]
    raw["patterns"] = [*raw["patterns"], "lock"]  # type: ignore[misc]
    with pytest.raises(CatalogError) as e:
        load_domain(_write(tmp_path, raw))
    text = str(e.value)
    assert "hosts.queue.taken: 'started' is not a state of print_job" in text
    assert "hosts.queue.capacity: patron has no field 'building'" in text
    assert "hosts.queue.item: 'print_job' must belong to the container 'patron'" in text
    assert "hosts.lock: missing" in text


def test_the_id_must_be_the_file_name_and_the_file_a_mapping(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="id: 'print_shop_queue' must be the file's name, 'copy'"):
        load_domain(_write(tmp_path, _raw(), name="copy"))
    path = tmp_path / "list.yaml"
    path.write_text("- a\n- b\n", encoding="utf-8")
    with pytest.raises(CatalogError, match="a domain file is a YAML mapping"):
        load_domain(path)
    path.write_text("id: [unclosed\n", encoding="utf-8")
    with pytest.raises(CatalogError, match="cannot read the domain"):
        load_domain(path)
