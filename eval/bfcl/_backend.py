"""The one boundary between envwright and the installed ``bfcl-eval`` package.

Role: import BFCL lazily (raising :class:`BfclNotInstalledError` with the install command), find
its data files, and run call strings through BFCL's own executor
``execute_multi_turn_func_call`` and checker ``multi_turn_checker`` inside private namespaces.

Contract:

- Only side-effect-free BFCL modules are imported: ``eval_checker.multi_turn_eval.*`` and
  ``constants.{executable_backend_config, default_prompts, type_mappings}``. Never
  ``bfcl_eval.utils`` or ``constants.eval_config`` (they create ``result/``, ``score/`` and
  ``.file_locks/`` next to the installed package at import time) nor the model handlers (they
  need BFCL's heavy declared dependencies).
- BFCL keeps every backend instance in the module globals of ``multi_turn_utils`` under
  ``f"{model_name}_{test_entry_id}_{class_name}_instance"`` (with ``-./:`` replaced by ``_``;
  ``_eval`` is appended to the model name for checker runs) and never frees them, so two runs
  with the same model name and entry share state. :func:`new_model_name` returns a fresh
  random name per run; :func:`release` deletes exactly the keys a run created (it never iterates
  over the shared dict, so it is safe while other threads insert their own keys).
- ``MathAPI.logarithm`` sets the process-global ``mpmath.mp.dps`` and the result string is
  rendered with it. Every execution involving ``MathAPI`` therefore holds one process-wide lock
  and restores the mpmath and decimal precisions afterwards: concurrent episodes get the same
  strings as sequential ones and nothing leaks into the rest of the process.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.metadata
import re
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval.errors import BfclNotInstalledError

_MULTI_TURN_UTILS = "bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils"
_MULTI_TURN_CHECKER = "bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker"
_BACKEND_CONFIG = "bfcl_eval.constants.executable_backend_config"
_DEFAULT_PROMPTS = "bfcl_eval.constants.default_prompts"
_TYPE_MAPPINGS = "bfcl_eval.constants.type_mappings"

_MATH_CLASS = "MathAPI"
_MATH_LOCK = threading.RLock()


@dataclass(frozen=True)
class BfclModules:
    """The handful of BFCL objects this package uses, resolved once."""

    version: str
    data_dir: Path
    utils: Any  # the ``multi_turn_utils`` module (its globals hold the backend instances)
    execute_multi_turn_func_call: Any
    multi_turn_checker: Any
    class_file_path_mapping: Mapping[str, str]
    func_doc_file_mapping: Mapping[str, str]
    stateless_classes: frozenset[str]
    additional_function_prompt: str
    gorilla_to_openapi: Mapping[str, str]


def _import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        missing = (exc.name or "bfcl_eval").split(".")[0]
        if missing in {"bfcl_eval", "mpmath"}:
            raise BfclNotInstalledError(missing) from exc
        raise


@functools.cache
def bfcl() -> BfclModules:
    """Import BFCL's multi-turn machinery, or raise :class:`BfclNotInstalledError`."""
    utils = _import(_MULTI_TURN_UTILS)
    checker = _import(_MULTI_TURN_CHECKER)
    config = _import(_BACKEND_CONFIG)
    prompts = _import(_DEFAULT_PROMPTS)
    types = _import(_TYPE_MAPPINGS)
    package = _import("bfcl_eval")
    try:
        version = importlib.metadata.version("bfcl-eval")
    except importlib.metadata.PackageNotFoundError:  # e.g. a source checkout on sys.path
        version = "unknown"
    return BfclModules(
        version=version,
        data_dir=Path(package.__file__).resolve().parent / "data",
        utils=utils,
        execute_multi_turn_func_call=utils.execute_multi_turn_func_call,
        multi_turn_checker=checker.multi_turn_checker,
        class_file_path_mapping=dict(config.CLASS_FILE_PATH_MAPPING),
        func_doc_file_mapping=dict(config.MULTI_TURN_FUNC_DOC_FILE_MAPPING),
        stateless_classes=frozenset(config.STATELESS_CLASSES),
        additional_function_prompt=prompts.DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC,
        gorilla_to_openapi=dict(types.GORILLA_TO_OPENAPI),
    )


@functools.cache
def backend_class(class_name: str) -> type:
    """The BFCL backend class called ``class_name`` (e.g. ``"GorillaFileSystem"``)."""
    mapping = bfcl().class_file_path_mapping
    if class_name not in mapping:
        raise KeyError(f"unknown BFCL backend class {class_name!r}; known: {sorted(mapping)}")
    cls: type = getattr(_import(mapping[class_name]), class_name)
    return cls


def new_model_name(tag: str = "run") -> str:
    """A model name no other run in this process uses (BFCL keys its instances by it)."""
    return f"envwright_{tag}_{uuid.uuid4().hex}"


def instance_key(model_name: str, test_entry_id: str, class_name: str) -> str:
    """The key under which BFCL stores an instance in ``multi_turn_utils`` globals."""
    return re.sub(r"[-./:]", "_", f"{model_name}_{test_entry_id}_{class_name}_instance")


def release(model_names: Sequence[str], test_entry_id: str, involved_classes: Sequence[str]) -> None:
    """Delete the backend instances BFCL created for ``model_names`` on this entry."""
    namespace = bfcl().utils.__dict__
    for model_name in model_names:
        for class_name in involved_classes:
            namespace.pop(instance_key(model_name, test_entry_id, class_name), None)


@contextlib.contextmanager
def numeric_guard(involved_classes: Sequence[str]) -> Iterator[None]:
    """Serialise MathAPI executions and restore mpmath/decimal precision afterwards."""
    if _MATH_CLASS not in involved_classes:
        yield
        return
    import decimal

    mpmath = _import("mpmath")
    with _MATH_LOCK:
        saved_prec = mpmath.mp.prec
        saved_decimal = decimal.getcontext().prec
        try:
            yield
        finally:
            mpmath.mp.prec = saved_prec
            decimal.getcontext().prec = saved_decimal


def execute(
    call_strings: Sequence[str],
    *,
    initial_config: Mapping[str, Any],
    involved_classes: Sequence[str],
    model_name: str,
    test_entry_id: str,
    long_context: bool,
) -> tuple[list[str], dict[str, Any]]:
    """Run ``call_strings`` with BFCL's executor; returns (result strings, class -> instance).

    The instances persist under ``model_name`` until :func:`release`; BFCL creates them on
    the first execution (also with an empty list) from a deep copy of ``initial_config``.
    """
    with numeric_guard(involved_classes):
        results, instances = bfcl().execute_multi_turn_func_call(
            list(call_strings),
            dict(initial_config),
            list(involved_classes),
            model_name,
            test_entry_id,
            long_context=long_context,
        )
    return list(results), dict(instances)


def run_bfcl_checker(
    decoded: list[list[list[str]]],
    ground_truth: list[list[str]],
    test_entry: Mapping[str, Any],
    category: str,
) -> dict[str, Any]:
    """BFCL's ``multi_turn_checker`` on a decoded trajectory, in a private, released namespace."""
    model_name = new_model_name("bfcl")
    involved = list(test_entry["involved_classes"])
    try:
        with numeric_guard(involved):
            result: dict[str, Any] = bfcl().multi_turn_checker(
                decoded, ground_truth, dict(test_entry), category, model_name
            )
    finally:
        release([f"{model_name}_eval", f"{model_name}_ground_truth_eval"], str(test_entry["id"]), involved)
    return result
