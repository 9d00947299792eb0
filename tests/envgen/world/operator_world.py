"""A small operator world built for the tests: staff running the queues of a few printers."""

from __future__ import annotations

import copy
from typing import Any

from envgen.world.blueprint import WorldBlueprint

_WORLD: dict[str, Any] = {
    "id": "test_print_room", "title": "Print room", "domain": "the print room of an office",
    "persona": "a print room clerk", "operator": True,
    "entities": [
        {"name": "patron", "role": "person", "key": {"name": "email", "kind": "email"},
         "fields": [{"name": "full_name", "kind": "person_name"}], "rows": 30},
        {"name": "printer", "role": "container", "key": {"name": "printer_code", "kind": "code"}, "prefix": "PRN",
         "fields": [{"name": "queue_limit", "kind": "count"}], "capacity": "queue_limit", "rows": 5},
        {"name": "print_job", "role": "main", "key": {"name": "job_number", "kind": "code"}, "prefix": "JOB",
         "refs": [{"name": "printer", "entity": "printer", "owner": True}, {"name": "patron", "entity": "patron"}],
         "fields": [{"name": "copies", "kind": "quantity", "min": 1, "max": 50},
                    {"name": "submitted_on", "kind": "date"}, {"name": "charge", "kind": "money"}],
         "states": ["queued", "held", "printing", "done"], "final": ["done"], "rows": 60},
        {"name": "job_note", "role": "child", "key": {"name": "note_code", "kind": "code"}, "prefix": "NTE",
         "refs": [{"name": "print_job", "entity": "print_job", "owner": True}],
         "fields": [{"name": "text", "kind": "description"}], "rows": 40},
    ],
    "operations": [
        {"name": "search_patrons", "kind": "search", "entity": "patron"},
        {"name": "list_printer_queue", "kind": "search", "entity": "print_job", "by": "printer"},
        {"name": "submit_job", "kind": "create", "entity": "print_job", "fields": ["copies"],
         "conditions": [{"kind": "room", "message": "The queue of {key} is full."}]},
        {"name": "hold_job", "kind": "transition", "entity": "print_job", "target": "held", "sources": ["queued"],
         "phrase": "put {record} on hold"},
        {"name": "release_job", "kind": "transition", "entity": "print_job", "target": "queued", "sources": ["held"],
         "phrase": "release {record}"},
        {"name": "change_copies", "kind": "update", "entity": "print_job", "fields": ["copies"]},
        {"name": "discount_job", "kind": "adjust", "entity": "print_job", "fields": ["charge"]},
    ],
    "policy": [
        {"kind": "forbid_state", "op": "change_copies", "states": ["held"], "text": "Do not change a held job."},
        {"kind": "limit", "op": "discount_job", "field": "over_limit", "value": 10, "text": "At most $10 off a job."},
    ],
}


def operator_world(**changes: Any) -> WorldBlueprint:
    """The print room world, with top-level keys replaced by ``changes``."""
    return WorldBlueprint.model_validate({**copy.deepcopy(_WORLD), **changes})
