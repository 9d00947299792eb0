"""The field types and settings every config section shares: what a value of each kind accepts.

Role: the bottom of :mod:`training.config` (whose docstring describes the whole config). Pydantic checks
every value against its annotation, gently (``4.0`` is an integer, ``"1e-5"`` a number), but YAML's
``true`` is neither, and a flag takes only ``true`` or ``false``: :data:`Int`, :data:`Float` and
:data:`Bool` say so. :data:`Section` lets a section be left empty in YAML; :data:`CONFIG` makes every
section refuse an unknown key.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import BeforeValidator, ConfigDict, Strict
from pydantic_core import PydanticCustomError

__all__ = ["CONFIG", "Bool", "Float", "Int", "Section"]

CONFIG = ConfigDict(extra="forbid")  #: every section: an unknown key is an error (which names the keys)


def _refuse(types: tuple[type, ...], error_type: str) -> BeforeValidator:
    """Refuse values of ``types`` that pydantic would convert (YAML's ``true`` to 1, ``"4"`` to 4)."""
    def check(value: Any) -> Any:
        if isinstance(value, types):
            raise PydanticCustomError(error_type, "wrong type")
        return value
    return BeforeValidator(check)


Int = Annotated[int, _refuse((bool, str), "int_type")]  #: an integer (``4.0`` is one; ``true``, ``"4"``, 4.5 not)
Float = Annotated[float, _refuse((bool,), "float_type")]  #: a number (YAML 1.1's ``"1e-5"`` is one; ``true`` is not)
Bool = Annotated[bool, Strict()]  #: ``true`` or ``false`` only
_S = TypeVar("_S")
#: a section: a mapping of its fields (one left empty in YAML, ``selfplay:`` and nothing under it, has its defaults)
Section = Annotated[_S, BeforeValidator(lambda value: {} if value is None else value)]
