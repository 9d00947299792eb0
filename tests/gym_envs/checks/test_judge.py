"""``gym_envs.checks.judge``: the probes of a turn's checks are asked once each, equal probes being those equal as
JSON."""

from __future__ import annotations

import itertools
import json
from typing import Any

from gym_envs.checks.judge import _probe_key

PROBES: list[dict[str, Any]] = [
    {"sql": "SELECT 1"}, {"sql": "SELECT 1 "}, {"python": "def check(db):\n    return True"}, {"digests": None},
    {"digests": []}, {"digests": ["a", "b"]}, {"digests": ("a", "b")}, {"digests": ["b", "a"]}, {"marks": None},
    {"columns": "Pear"}, {"columns": "pear"}, {"x": 1}, {"x": "1"}, {"x": 1.0}, {"x": True}, {"x": [1]}, {"x": ["1"]},
    {"a": "1", "b": "2"}, {"b": "2", "a": "1"}, {"sql": None}, {"digests": ["a", 1]}, {"digests": ["a", "1"]},
]


def test_probes_are_one_probe_exactly_when_equal_as_json() -> None:
    for a, b in itertools.product(PROBES, repeat=2):
        same = json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
        assert (_probe_key(a) == _probe_key(b)) is same, (a, b)
