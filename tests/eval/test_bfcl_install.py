"""eval.bfcl without bfcl-eval: importing works, using it says how to install it."""

from __future__ import annotations

import sys

import pytest

from eval.bfcl import INSTALL_HINT, BfclNotInstalledError, _backend, load_entries


@pytest.fixture
def bfcl_hidden(monkeypatch: pytest.MonkeyPatch):
    """Make every ``bfcl_eval`` import fail, as if the package were not installed."""
    _backend.bfcl.cache_clear()
    for name in [n for n in sys.modules if n == "bfcl_eval" or n.startswith("bfcl_eval.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "bfcl_eval", None)
    yield
    _backend.bfcl.cache_clear()


def test_missing_package_error_says_how_to_install(bfcl_hidden: None) -> None:
    with pytest.raises(BfclNotInstalledError) as info:
        load_entries("multi_turn_base", limit=1)
    assert INSTALL_HINT in str(info.value)
    assert "pip install --no-deps bfcl-eval mpmath" in str(info.value)
    assert isinstance(info.value, ImportError)


def test_unknown_category_is_rejected_before_import(bfcl_hidden: None) -> None:
    with pytest.raises(ValueError, match="multi_turn_base"):
        load_entries("multi_turn_bse")
