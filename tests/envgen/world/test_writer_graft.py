"""The AST world writer's grafted tools (envgen.proposers.world.writer): named from the document's function and
described in the service's words."""

from __future__ import annotations

from dataclasses import dataclass

from envgen.proposers.world.sense import graft_verb
from envgen.proposers.world.writer import _tool_name, write_world


@dataclass
class _Doc:
    id: str
    path: str
    text: str


_BUFFER = '''
class PathBuffer:
    """A buffer of paths for the search."""

    def __init__(self):
        self.paths = []
        self.maxlen = 10

    def __len__(self):
        return len(self.paths)

    def push(self, cost, path):
        if len(self.paths) >= self.maxlen:
            raise OverflowError("the buffer is full")
        self.paths.append((cost, path))

    def append_path_with_extra_cost(self, cost, path):
        self.paths.append((cost, path))

    def pop(self):
        if not self.paths:
            raise IndexError("no paths left")
        return self.paths.pop(0)
'''


def test_a_tool_is_named_from_the_functions_service_verb_and_the_services_record() -> None:
    taken: set[str] = {"get_subscription", "cancel_subscription"}
    assert graft_verb("after_cancel", "remove", {"booking"}) == "cancel"
    assert _tool_name("cancel", "booking", taken) == "cancel_booking"
    assert _tool_name("cancel", "subscription", taken) is None  # another tool's name: not named in code words
    assert _tool_name("cancel", "subscription", taken, free="cancel_subscription") == "cancel_subscription"
    assert _tool_name("put", "print_job", taken) == "put_print_job"
    assert _tool_name("count", "application", taken, kind="count") == "count_applications"
    assert _tool_name("get", "subscription", taken, kind="take") == "take_subscription"  # the lookup has "get"


def test_grafted_tools_are_described_by_the_service_and_each_effect_is_grafted_once() -> None:
    written = write_world(_Doc("paths.py", "paths.py", _BUFFER), seed=0)
    bp = written.blueprint
    grafted = [o for o in bp.operations if o.name in written.grafted]
    assert grafted, "the buffer's operations are grafted"
    for op in grafted:
        assert "buffer" not in op.description.lower() and "path" not in op.description.lower(), op.description
        assert not op.name.startswith("_") and "__" not in op.name
    names = [o.name for o in bp.operations]
    assert len(names) == len(set(names))


def test_a_refusal_keeps_the_writers_key_slot_and_drops_the_codes_braces() -> None:
    from types import SimpleNamespace

    from envgen.proposers.world.writer import _message

    fallback = "the support queue {key} is full"
    assert _message(None, fallback) == fallback
    assert _message(SimpleNamespace(exception="QueueFull", message=""), fallback) == f"QueueFull: {fallback}"
    assert _message(SimpleNamespace(exception="ValueError", message="bad {item!r} <x>"), fallback) == \
        "ValueError: bad itemr x"
