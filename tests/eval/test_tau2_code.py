"""The τ² domains' tool code is spliced from files and host constants, each written once.

:func:`eval.tau2.domain.splice_code` refuses a name bound twice (a helper copied into two files used to replace the
other silently: airline's ``type_name`` was replaced by the calculator's, and a list of strings came back as
"'ellipsis' object has no attribute ..."). The airline tools' type errors are checked against τ²'s own tools.
"""

from __future__ import annotations

import ast
from importlib import resources
from typing import Any

import pytest

from eval.tau2 import _backend, airline
from eval.tau2.domain import DOMAINS, SHARED_CODE, SHARED_CONSTANTS, splice_code
from gym_envs.sandbox import InProcessExecutor
from tests.fixtures.tau2 import needs_tau2


def test_a_name_bound_in_two_files_is_refused_naming_both() -> None:
    files = [("a.py", "def helper(x):\n    return 1\n"), ("b.py", "X = 2\n\n\ndef helper(x):\n    return 2\n")]
    with pytest.raises(ValueError, match=r"helper twice: in code/a\.py and in code/b\.py"):
        splice_code({}, files)
    with pytest.raises(ValueError, match=r"X twice: in the spliced constants and in code/b\.py"):
        splice_code({"X": 1}, files[1:])
    with pytest.raises(ValueError, match=r"helper twice: in code/a\.py and in code/a\.py"):
        splice_code({}, [("a.py", "def helper():\n    pass\n\n\nhelper = None\n")])


def test_imports_may_repeat_and_constants_are_literals() -> None:
    code = splice_code({"T": ("a", 1), "D": {"k": (None, 2.5)}}, [("a.py", "import json\n"), ("b.py", "import json\n")])
    assert _constants(ast.parse(code)) == {"T": ("a", 1), "D": {"k": (None, 2.5)}}
    with pytest.raises(ValueError, match="no Python literal"):
        splice_code({"S": object()}, [])
    with pytest.raises(ValueError, match=r"code/c\.py does not parse"):
        splice_code({}, [("c.py", "def (:\n")])


def _constants(tree: ast.Module) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for n in tree.body:
        if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name):
            try:
                out[n.targets[0].id] = ast.literal_eval(n.value)
            except ValueError:
                continue
    return out


@pytest.mark.parametrize("name", sorted(DOMAINS))
def test_each_domain_splices_the_shared_files_and_its_constants_once(name: str) -> None:
    d = DOMAINS[name]
    code = d.code  # splice_code raises on a name bound twice
    folder = resources.files("eval.tau2").joinpath("code")
    for f in (*SHARED_CODE, *d.code_files):
        assert code.count(folder.joinpath(f).read_text(encoding="utf-8").rstrip("\n")) == 1, f
    tree = ast.parse(code)
    defined = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert defined.count("type_name") == defined.count("calculate") == defined.count("address_of") == 1
    wanted = {**SHARED_CONSTANTS, **d.constants}
    assert {k: v for k, v in _constants(tree).items() if k in wanted} == wanted
    if name == "airline":
        assert wanted["CABINS"] == airline.CABINS and wanted["STATUS_FIELDS"] == airline.STATUS_FIELDS


#: list items that are not all dicts: τ² keeps the list and fails on its first item's attribute
NOT_DICTS: list[list[Any]] = [[None], [1], [1.5], [True], ["x"], [[1]],
                              [{"flight_number": "HAT001", "date": "2024-05-20"}, None]]


@needs_tau2
def test_airline_type_errors_name_the_type_taus_tool_names() -> None:
    from tau2.data_model.message import ToolCall

    from eval.tau2.convert import convert

    conv = convert("airline", limit=1)
    theirs = _backend.environment("airline")
    ex = InProcessExecutor()
    try:
        ours = ex.session(conv.spec)
        for flights in NOT_DICTS:
            args = {"reservation_id": "4WQ150", "cabin": "economy", "flights": flights, "payment_id": "x"}
            msg = theirs.get_response(ToolCall(id="c", name="update_reservation_flights", arguments=args))
            r = ours.call("update_reservation_flights", args)
            assert msg.error and not r.ok
            assert r.error == msg.content.removeprefix("Error: "), (flights, r.error, msg.content)
    finally:
        ex.close()
