"""Which document operations the AST world writer grafts, and how (envgen.proposers.world.writer.graft and
envgen.proposers.world.sense): only a function whose name says what the service's operation does, once per
effect, taking over the domain tool of that effect so the tool does what its description says."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from envgen.proposers.template.semantics import analyze_semantics
from envgen.proposers.world.sense import graft_verb, same_state, update_field
from envgen.proposers.world.writer import graft
from envgen.world.blueprint import WorldBlueprint
from envgen.world.catalog import CatalogEntry, DomainMeta
from envgen.world.compile import compile_world

_ROOM: dict[str, Any] = {
    "blueprint_version": 2, "id": "print_room", "title": "Print room", "domain": "the print room of an office",
    "persona": "a member of staff", "operator": True,
    "entities": [
        {"name": "printer", "role": "container", "key": {"name": "printer_code", "kind": "code"}, "prefix": "PRN",
         "fields": [{"name": "queue_limit", "kind": "count", "min": 3, "max": 8}], "capacity": "queue_limit",
         "rows": 6},
        {"name": "employee", "role": "person", "key": {"name": "email", "kind": "email"},
         "fields": [{"name": "full_name", "kind": "person_name"}], "rows": 20},
        {"name": "print_job", "role": "main", "key": {"name": "job_number", "kind": "code"}, "prefix": "JOB",
         "refs": [{"name": "printer", "entity": "printer", "owner": True},
                  {"name": "employee", "entity": "employee"}],
         "fields": [{"name": "copies", "kind": "count", "min": 1, "max": 50},
                    {"name": "file_name", "kind": "file_name"}],
         "states": ["queued", "printing", "held", "done", "cancelled"], "final": ["done", "cancelled"],
         "rows": 40},
    ],
    "operations": [
        {"name": "get_printer", "kind": "lookup", "entity": "printer"},
        {"name": "get_print_job", "kind": "lookup", "entity": "print_job"},
        {"name": "list_printer_jobs", "kind": "search", "entity": "print_job", "by": "printer"},
        {"name": "submit_job", "kind": "create", "entity": "print_job", "fields": ["copies", "file_name"],
         "description": "Send a file to a printer's queue",
         "conditions": [{"kind": "room", "message": "Printer {key} has a full queue."}]},
        {"name": "start_next_job", "kind": "take", "entity": "print_job", "target": "printing",
         "sources": ["queued"], "order": "first", "description": "Start the job that has waited longest"},
        {"name": "cancel_job", "kind": "transition", "entity": "print_job", "target": "cancelled",
         "sources": ["queued", "held"], "description": "Cancel a job that has not started printing",
         "phrase": "cancel {record}", "reasons": ["the file was wrong"]},
        {"name": "hold_job", "kind": "transition", "entity": "print_job", "target": "held", "sources": ["queued"],
         "phrase": "hold {record}", "reasons": ["the paper ran out"]},
        {"name": "finish_job", "kind": "transition", "entity": "print_job", "target": "done",
         "sources": ["printing"], "phrase": "mark {record} as done", "reasons": ["the pages are out"]},
    ],
    "policy": [{"kind": "confirm", "op": "cancel_job", "text": "Before cancelling a job, read back its number."}],
    "vocabulary": {"titles": ["Poster", "Flyer"]},
}
_HOSTS = {"queue": {"container": "printer", "item": "print_job", "capacity": "queue_limit", "waiting": "queued",
                    "taken": "printing"},
          "lifecycle": {"record": "print_job", "initial": "queued", "final": "done"}}

_LINE = '''
class Full(Exception): pass

class Line:
    def __init__(self, maxsize=0):
        self.maxsize = maxsize
        self._items = []
        self.closed = False
    def qsize(self):
        return len(self._items)
    def put(self, item):
        if len(self._items) >= self.maxsize:
            raise Full("the line is full")
        self._items.append(item)
    def put_nowait(self, item):
        return self.put(item)
    def get(self):
        return self._items.pop(0)
    def get_nowait(self):
        return self.get()
    def add_edges_from(self, pairs):
        for p in pairs:
            self._items.append(p)
    def phase3(self):
        del self._items[0]
    def set_locale(self, loc):
        self.locale = loc
    def set_copies(self, n):
        self.copies = n
    def cancel(self, item):
        self._items.remove(item)
    def close(self):
        self.closed = True
'''


def _entry(patterns: list[str]) -> CatalogEntry:
    return CatalogEntry(WorldBlueprint.model_validate(_ROOM), DomainMeta.model_validate(
        {"patterns": patterns, "hosts": {p: _HOSTS[p] for p in patterns if p in _HOSTS}}), Path("print_room.yaml"))


def _grafted(source: str = _LINE) -> tuple[WorldBlueprint, list[str]]:
    sem = analyze_semantics(textwrap.dedent(source), "line.py")
    assert sem is not None and sem.pattern == "queue"
    return graft(_entry(["queue", "lifecycle", "generic"]), sem, "line")


def test_only_functions_whose_names_say_the_services_operation_are_grafted_once_each() -> None:
    bp, grafted = _grafted()
    assert set(grafted) == {"put_print_job", "take_print_job", "count_print_jobs", "cancel_print_job", "set_copies"}
    names = [o.name for o in bp.operations]
    assert len(names) == len(set(names))
    for code_word in ("edges", "phase", "locale", "nowait", "close"):
        assert not any(code_word in n for n in names), names
    assert sum(o.kind == "create" and o.entity == "print_job" for o in bp.operations) == 1
    assert sum(o.kind == "take" for o in bp.operations) == 1
    assert set(grafted) <= set(names)


def test_a_graft_takes_over_the_domain_tool_of_its_effect_and_keeps_the_codes_guard() -> None:
    bp, _ = _grafted()
    ops = {o.name: o for o in bp.operations}
    assert "cancel_job" not in ops and "submit_job" not in ops and "start_next_job" not in ops
    cancel = ops["cancel_print_job"]
    assert cancel.sources == ["queued", "held"]  # the domain's rule: a printing job cannot be cancelled
    assert cancel.description == "Cancel a job that has not started printing"
    assert cancel.origin == "line.Line.cancel" and cancel.reasons == ["the file was wrong"]
    assert [r.op for r in bp.policy if r.kind == "confirm"] == ["cancel_print_job"]
    put = ops["put_print_job"]
    assert put.fields == ["copies", "file_name"] and put.description == "Send a file to a printer's queue"
    assert [c.message for c in put.conditions] == ["Full: the line is full"]
    assert ops["set_copies"].fields == ["copies"]


def test_a_grafted_world_compiles_with_tool_descriptions_in_the_services_words() -> None:
    bp, grafted = _grafted()
    spec = compile_world(bp, env_id="print-room", seed=0, n_tasks=3).spec
    described = {t.name: t.description for t in spec.tools}
    assert set(grafted) <= set(described)
    for name in grafted:
        assert "Line" not in described[name] and "`" not in described[name], described[name]


def test_a_state_change_needs_the_state_its_verb_names() -> None:
    source = _LINE.replace("    def close(self):\n        self.closed = True\n",
                           "    def close(self):\n        self.closed = True\n    def pause(self):\n"
                           "        self.state = 'paused'\n")
    _, grafted = _grafted(source)
    assert not any(n.startswith(("close", "pause")) for n in grafted)  # no closed or paused job
    assert same_state("closed", ["published", "yanked", "deleted"]) is None
    assert same_state("cancelled", ["open", "canceled"]) == "canceled"
    assert same_state("completed", ["open", "complete"]) == "complete"


def test_the_lexicon_reads_verbs_modifiers_item_words_and_fields() -> None:
    assert graft_verb("put_nowait", "create", {"ticket"}, pattern="queue") == "put"
    assert graft_verb("push", "create", {"order"}) is None  # a console's push creates no order
    assert graft_verb("append", "create", {"reservation"}, pattern="generic") is None
    assert graft_verb("append", "create", {"shipment"}, pattern="stack") == "append"
    assert graft_verb("push", "create", {"appointment"}, pattern="scheduler") is None
    assert graft_verb("enterabs", "create", {"appointment"}, pattern="scheduler") == "schedule"
    assert graft_verb("add_node", "create", {"device"}) == "add"
    assert graft_verb("add_edges_from", "create", {"device"}) is None
    assert graft_verb("cancel_order", "remove", {"order"}) == "cancel"
    assert graft_verb("phase3", "remove", {"order"}) is None
    assert graft_verb("popleft", "take", {"job"}) == "pop"
    assert graft_verb("__len__", "count", {"job"}) == "count"
    assert graft_verb("__len__", "create", {"job"}) is None
    assert graft_verb("write", "create", {"file"}) is None
    assert graft_verb("write", "create", {"file"}, pattern="archive") == "upload"
    assert graft_verb("addTypeEqualityFunc", "create", {"task"}) is None
    assert update_field("set_shipping_address", ["shipping_address", "note"]) == ("set", "shipping_address")
    assert update_field("set_isolation_level", ["shipping_address"]) is None
    assert update_field("setName", ["pet_name"]) is None


def test_a_plain_verb_keeps_the_name_of_the_domain_tool_it_takes_over() -> None:
    source = _LINE.replace("    def cancel(self, item):\n        self._items.remove(item)\n",
                           "    def remove(self, item):\n        self._items.remove(item)\n")
    bp, grafted = _grafted(source)
    ops = {o.name: o for o in bp.operations}
    assert "cancel_job" in grafted and ops["cancel_job"].origin == "line.Line.remove"
    assert not any(n.startswith("remove") for n in ops)
    assert "put_print_job" in grafted  # put is the queue's own verb: it names the tool


def test_one_word_shared_with_a_domain_does_not_pick_it_two_do() -> None:
    from types import SimpleNamespace

    from envgen.proposers.world.writer import _choose

    room = _entry(["generic"])
    shop = CatalogEntry(WorldBlueprint.model_validate({**_ROOM, "id": "file_shop", "title": "File shop",
                                                       "domain": "a shop selling files"}),
                        DomainMeta.model_validate({"patterns": ["generic"]}), Path("file_shop.yaml"))
    plain = SimpleNamespace(pattern="generic", words=["file", "parse", "token"])
    picked = {_choose([room, shop], plain, f"doc-{i}", 0).id for i in range(40)}
    assert picked == {"print_room", "file_shop"}  # one shared word ("file") is in most code: the seed decides
    about = SimpleNamespace(pattern="generic", words=["office", "room", "token"])  # the print room's words
    assert {_choose([room, shop], about, f"doc-{i}", 0).id for i in range(20)} == {"print_room"}
