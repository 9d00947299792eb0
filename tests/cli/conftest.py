"""Fixtures for the ``envwright`` command tests: a spec that passes the gate, and broken ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.specs import lending_spec, write_spec


@pytest.fixture
def good_spec(tmp_path: Path) -> Path:
    """A spec file that passes every rule of the validity gate."""
    return write_spec(tmp_path / "lending.json", lending_spec())


@pytest.fixture
def wrong_reference_spec(tmp_path: Path) -> Path:
    """Parses, but a check fails on the reference trajectory (rule 3)."""
    spec = lending_spec()
    spec["id"] = "cli-test.wrong-reference"
    spec["tasks"][0]["turns"][0]["checks"][1]["expect"] = [[3]]
    return write_spec(tmp_path / "wrong_reference.json", spec)


@pytest.fixture
def unparsable_spec(tmp_path: Path) -> Path:
    """Does not parse into EnvSpec: no title, an unknown check kind (rule 1)."""
    spec = lending_spec()
    spec["id"] = "cli-test.unparsable"
    del spec["title"]
    spec["tasks"][1]["turns"][0]["checks"][0]["kind"] = "regex"
    return write_spec(tmp_path / "unparsable.json", spec)
