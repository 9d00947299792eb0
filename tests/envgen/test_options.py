"""No option is swallowed: every proposer and backend builds its typed options through ``build_config``,
so a misspelt option is refused, naming the closest one, however the component is made."""

from __future__ import annotations

import dataclasses

import pytest

from corpora.errors import OptionError, UnknownNameError
from corpora.registry import build_config
from envgen.backends import BACKENDS, make_backend
from envgen.proposers import PROPOSERS, make_proposer


@dataclasses.dataclass(kw_only=True)
class _Opts:
    size: int = 3
    ratio: float = 0.5
    name: str | None = None
    anything: object = None


def test_build_config_refuses_unknown_options_and_wrong_kinds() -> None:
    assert build_config(_Opts, options={"size": 4, "ratio": 1}) == _Opts(size=4, ratio=1)
    with pytest.raises(UnknownNameError, match=r"unknown option 'sise' for widget; did you mean 'size'\?.*accepted"):
        build_config(_Opts, options={"sise": 4}, owner="widget")
    with pytest.raises(OptionError, match="option 'size' of widget must be an integer"):
        build_config(_Opts, options={"size": "4"}, owner="widget")
    assert build_config(_Opts, options={"name": None, "anything": [1]}).anything == [1]  # Any and None pass


@pytest.mark.parametrize(("name", "typo", "close"), [
    ("template", {"max_tabels": 1}, "max_tables"),
    ("llm", {"backend": "scripted", "temperatur": 0.1}, "temperature"),
])
def test_a_typo_of_a_proposer_option_names_the_close_match(name: str, typo: dict[str, object], close: str) -> None:
    assert name in PROPOSERS
    with pytest.raises(UnknownNameError, match=rf"for proposer '{name}'; did you mean '{close}'"):
        make_proposer(name, **typo)


@pytest.mark.parametrize(("name", "typo", "close"), [
    ("scripted", {"completions": ["x"], "cycel": True}, "cycle"),
    ("openai", {"base_ulr": "http://x"}, "base_url"),
    ("transformers", {"devcie": "cpu"}, "device"),
    ("vllm", {"tensor_paralel_size": 2}, "tensor_parallel_size"),
])
def test_a_typo_of_a_backend_option_names_the_close_match(name: str, typo: dict[str, object], close: str) -> None:
    """Refused before anything loads: no model, no server, no vLLM needed."""
    assert name in BACKENDS
    with pytest.raises(UnknownNameError, match=rf"for backend '{name}'; did you mean '{close}'"):
        make_backend(name, "m", **typo)


def test_an_option_the_backend_does_not_take_is_refused() -> None:
    """A sampling setting is an argument of ``generate``, not of the backend: refused, not kept and ignored."""
    with pytest.raises(UnknownNameError, match=r"'temperatur' for backend 'scripted'.*accepted: completions, cycle"):
        make_backend("scripted", completions=["x"], temperatur=0.1)
    with pytest.raises(OptionError, match="'cycle' of backend 'scripted' must be true or false"):
        make_backend("scripted", completions=["x"], cycle="yes")
    with pytest.raises(UnknownNameError, match="'max_task' for the llm proposer's compile_options; did you mean "
                                               "'max_tasks'"):
        make_proposer("llm", backend="scripted", backend_options={"completions": []}, compile_options={"max_task": 3})
