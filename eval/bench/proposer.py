"""``envwright bench proposer``: does a model write environments? Six setups on two sets of documents.

Setups (``SETUPS``), one model (``--model``: a hub id, a folder or a ``.gguf``):

* ``free``: a whole spec, unconstrained (the free stream as it was);
* ``free-constrained``: a whole spec decoded under the finite EnvSpec schema;
* ``blueprint``: a blueprint (v1) decoded under the blueprint schema, compiled;
* ``blueprint-warm``: the same with the warm-started model (``--warm``, the ``model/`` folder that
  ``envwright train proposer`` writes);
* ``world``: a world blueprint (v2) decoded under ``world_json_schema()``, compiled by the world compiler;
* ``world-warm``: the same with the world warm start (``--world-warm``: the ``model/`` folder of
  ``envwright train proposer`` with ``proposer_sft.structure: world``).

Documents: ``--stdlib-docs`` held-out stdlib modules (``--holdout``: a warm start's
``holdout.json``, so none of them was trained on) and ``--other-docs`` documents of a corpus that
is not Python (``--other-corpus``, default the npm packages of :data:`NPM_PACKAGES`, JavaScript and
TypeScript; ``npm pack`` fetches them once into ``$ENVWRIGHT_CACHE/npm``), where the template AST writer
yields nothing. A document that a warm start trained on (the ``trained`` list of the ``holdout.json``
beside its ``model/`` folder) is left out of every set, so two warm starts of different splits are both
scored on documents neither saw.

Per setup and document set it reports: parsed (the model wrote a completion, and it is a JSON object of
the structure; a proposal the model backend failed, with no completion, is not parsed but counted as
``backend_failures``),
compiled (a spec came out: it parsed as a spec, or the blueprint compiled), accepted by the gate
(isolated workers), mean grounding of the accepted ones, distinct tool sets, tokens per accepted
environment (prompt and completion, all proposals) and generation tokens/s; constrained setups also
count ``constrained_parse`` failures, which must be 0. The accepted environments of every setup are
measured for realism (:func:`envgen.realism.measure_specs`: CRUD-verb and slug shares, tables and rows,
words per first turn, row ids in user text, hops, policy rules and tasks, scenario share...), under
``realism`` and printed as a second table.

Batches and resuming: a setup's documents go to the engine ``--batch-size`` at a time (:data:`BATCH_SIZES`: 8 on
transformers, whose memory grows with the rows; 64 on vLLM, which schedules its rows itself and in batches of 8
decoded 48 worlds at 199 tokens/s on an H100; also the rows it decodes at once), under a progress bar over documents
that shows the decoding rate (completion tokens/s). Each batch's proposals are written atomically to
``--out/work/<setup>/batch-NNNNN.json`` as the batch ends, beside the ``settings.json`` they were made with. Results
are written (atomically) to ``--out/proposer.json`` after each setup, with a bar chart ``proposer.png``.
``--resume`` skips the setups already there and, in the setup a kill stopped, the batches already written (a kill
loses at most the batch running), cutting the same batches as an uninterrupted run, so it ends with the same
proposals; a work folder made with other options (model, engine, batch size, budgets, sampling, excerpt, seed) is
refused. Without ``--resume`` an earlier run's results or work are never replaced unless ``--overwrite`` says so.

The context window: every prompt's token budget (``--max-new-tokens``; a constrained one's is raised to its
schema's worst case) is cut to what the model's context window leaves after the prompt, so prompt and output
never pass it (the engine's ``max_model_len`` on vLLM, ``max_position_embeddings`` on transformers). A prompt
that leaves less than ``--min-new-tokens`` is not sent: it is counted as ``too_long`` (per document set, and in
``outcomes``), not as a parse or backend failure, and the bench warns.

A setup whose every proposal failed in the model backend (a missing dependency of constrained decoding, an
engine error) measured nothing: the bench stops with an error naming the backend's first error (exit 1;
the setups before it are kept, and ``--resume`` retries it); a setup with some such proposals warns.
"""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from envgen.blueprint.grounding import grounding
from envgen.catalog import signature_key
from envgen.errors import PARSE_FAILURES, FailureCode
from gym_envs.spec import atomic_write_text

__all__ = ["NPM_PACKAGES", "SETUPS", "ProposerBench", "command", "run"]

SETUPS = ("free", "free-constrained", "blueprint", "blueprint-warm", "world", "world-warm")
NPM_PACKAGES = ("bull@4.16.5", "nedb@1.8.0", "express-session@1.19.0", "passport@0.7.0", "node-schedule@2.1.1",
                "bottleneck@2.19.5", "bee-queue@2.0.0", "node-cache@5.1.2", "sequelize@6.37.8", "knex@3.3.0",
                "express@4.21.2", "lru-cache@7.18.3", "keyv@4.5.4", "ioredis@5.4.2")
BATCH_SIZES = {"transformers": 8, "vllm": 64}
"""Documents per engine call by default: transformers' memory grows with the rows it decodes at once; vLLM schedules
its own rows, and with 8 a call it decoded 48 worlds at 199 tokens/s on an H100."""


@dataclass(frozen=True)
class ProposerBench:
    """The options of one run (``envwright bench proposer -h`` documents each)."""

    model: str
    warm: str | None = None
    world_warm: str | None = None
    holdout: str | None = None
    setups: tuple[str, ...] = SETUPS
    stdlib_docs: int = 64
    other_docs: int = 64
    other_corpus: str | None = None
    engine: str = "transformers"
    device: str = "auto"
    dtype: str = "auto"
    batch_size: int | None = None  #: None: :data:`BATCH_SIZES` of the engine
    backend_options: tuple[str, ...] = ()
    max_new_tokens: int = 2048
    min_new_tokens: int = 256
    temperature: float = 0.7
    excerpt_tokens: int = 900
    seed: int = 0
    out: str = "runs/bench-proposer"
    resume: bool = False
    overwrite: bool = False

    @property
    def batch(self) -> int:
        """Documents per engine call, resolved (:data:`BATCH_SIZES` when ``batch_size`` was not given)."""
        return int(self.batch_size or BATCH_SIZES.get(self.engine, 8))


def _documents(args: ProposerBench) -> dict[str, list[Any]]:
    from corpora import SelectConfig, load_corpus, select_documents
    from envgen.proposers.pairs import split_documents

    sets: dict[str, list[Any]] = {}
    if args.stdlib_docs:
        if args.holdout:
            meta = json.loads(Path(args.holdout).read_text())
            held = set(meta["held_out"])
            docs = [d for d in load_corpus(meta.get("corpus", "stdlib")) if d.id in held]
        else:
            pool = select_documents(load_corpus("stdlib"), SelectConfig(min_stateful_score=0.0, sample=400,
                                                                        seed=args.seed, dedup="exact"))
            docs = split_documents(pool, 0.2, args.seed)[1]
        sets["stdlib (held out)"] = docs[:args.stdlib_docs]
    if args.other_docs:
        corpus = args.other_corpus or "npm:" + ",".join(NPM_PACKAGES)
        sel = SelectConfig(min_stateful_score=0.0, sample=args.other_docs, seed=args.seed, max_chars=60_000)
        sets[corpus.split(":", 1)[0] + " (not Python)"] = select_documents(load_corpus(corpus), sel)
    trained = _trained(args)
    return {name: [d for d in docs if str(d.id) not in trained] for name, docs in sets.items()}


def _trained(args: ProposerBench) -> set[str]:
    """The documents a warm start of this run trained on (its ``holdout.json``, beside ``model/``)."""
    out: set[str] = set()
    for model in (args.warm, args.world_warm):
        meta = Path(model).parent / "holdout.json" if model else None
        if meta is not None and meta.is_file():
            out.update(str(x) for x in json.loads(meta.read_text()).get("trained", []))
    return out


def _setup_model(setup: str, args: ProposerBench) -> tuple[str, str]:
    """The structure a setup writes and the model that writes it."""
    structure = setup.split("-", 1)[0] if setup.startswith(("blueprint", "world")) else "spec"
    if not setup.endswith("-warm"):
        return structure, args.model
    warm, option = (args.warm, "--warm") if structure == "blueprint" else (args.world_warm, "--world-warm")
    if warm is None:
        raise SystemExit(f"{setup} needs {option} (the model/ folder of `envwright train proposer` with "
                         f"proposer_sft.structure: {structure})")
    return structure, warm


def _proposer(setup: str, args: ProposerBench, backends: dict[str, Any]) -> Any:
    from envgen.backends import make_engine
    from envgen.proposers.llm import LLMProposer

    structure, model = _setup_model(setup, args)
    if model not in backends:
        from envgen.cli.library import parse_backend_options

        backends[model] = make_engine(args.engine, model, device=args.device, dtype=args.dtype,
                                      batch_size=args.batch, options=parse_backend_options(args.backend_options))
    return LLMProposer(backends[model], structure=structure, constrained=setup != "free",
                       max_new_tokens=args.max_new_tokens, min_new_tokens=args.min_new_tokens,
                       temperature=args.temperature, excerpt_tokens=args.excerpt_tokens, n_examples=1)


def _score(props: list[Any], docs: list[Any], verdicts: list[Any], gen_seconds: float,
           batch: list[Any], executor: Any) -> dict[str, Any]:
    """One document set's figures; ``batch`` is every proposal of the generate call (for its throughput); the
    accepted environments' references run through ``executor`` for their realism figures."""
    from envgen.realism import measure_specs

    codes = Counter(p.meta.get("error_code") or "ok" for p in props)
    accepted = [(p, d) for p, d, v in zip(props, docs, verdicts, strict=True) if v is not None and v.accepted]
    tokens = sum(p.prompt_tokens + p.completion_tokens for p in props)
    completion = sum(p.completion_tokens for p in props)
    ground = [grounding(p.spec, d) for p, d in accepted]
    backend = codes.get(FailureCode.GENERATION, 0)
    return {
        "documents": len(docs),
        "parsed": sum(1 for p in props if (p.meta.get("error_code") or "ok") not in PARSE_FAILURES | {
            FailureCode.GENERATION, FailureCode.TOO_LONG}),  # only what the model wrote: these two wrote nothing
        "backend_failures": backend,
        "too_long": codes.get(FailureCode.TOO_LONG, 0),
        "compiled": sum(1 for p in props if p.spec is not None),
        "accepted": len(accepted),
        "accepted_share": len(accepted) / len(docs) if docs else 0.0,
        "constrained_parse_failures": codes.get("constrained_parse", 0),
        "mean_grounding": sum(ground) / len(ground) if ground else None,
        "distinct_tool_sets": len({signature_key(p.spec) for p, _ in accepted}),
        "tokens_per_accepted": tokens / len(accepted) if accepted else None,
        "completion_tokens": completion,
        "generation_tokens_per_s": (sum(p.completion_tokens for p in batch) / gen_seconds
                                    if gen_seconds > 0 else None),
        "cut_at_limit": sum(1 for p in props if p.meta.get("finish_reason") == "length"),
        "outcomes": dict(codes),
        "gate_rejections": dict(Counter(c for v in verdicts if v is not None and not v.accepted for c in v.codes)),
        "realism": measure_specs([p.spec for p, _ in accepted], executor).to_dict() if accepted else None,
    }


_KEPT_META = ("error_code", "finish_reason")  #: what a saved proposal keeps of its ``meta`` (what the scores read)


def _saved(p: Any) -> dict[str, Any]:
    """One proposal as a line of the setup's work file (what :func:`_score` and the examples read)."""
    return {"doc": p.doc_id, "spec": None if p.spec is None else json.loads(p.spec.to_json(indent=None)),
            "error": p.error, "raw": (p.raw or "")[:600], "prompt_tokens": p.prompt_tokens,
            "completion_tokens": p.completion_tokens, "meta": {k: p.meta[k] for k in _KEPT_META if k in p.meta}}


def _restored(row: dict[str, Any]) -> Any:
    from envgen.proposers.base import Proposal
    from gym_envs.spec import parse_spec

    return Proposal(row["doc"], None if row["spec"] is None else parse_spec(row["spec"]), error=row["error"],
                    raw=row["raw"], prompt_tokens=row["prompt_tokens"], completion_tokens=row["completion_tokens"],
                    meta=dict(row["meta"]))


def _work_settings(setup: str, args: ProposerBench) -> dict[str, Any]:
    """What a setup's proposals depend on besides the documents: a setup's work folder is resumed only with these."""
    return {"model": _setup_model(setup, args)[1], "engine": args.engine, "dtype": args.dtype,
            "backend_options": sorted(args.backend_options), "batch_size": args.batch,
            "max_new_tokens": args.max_new_tokens, "min_new_tokens": args.min_new_tokens,
            "temperature": args.temperature, "excerpt_tokens": args.excerpt_tokens, "seed": args.seed}


def _check_settings(folder: Path, settings: dict[str, Any]) -> None:
    """Refuse a setup's work folder written with other settings (its proposals would not be this run's)."""
    saved = folder / "settings.json"
    if saved.is_file():
        old = json.loads(saved.read_text())
        diff = [f"{k}: {old.get(k)!r} there, {settings.get(k)!r} now" for k in sorted(set(old) | set(settings))
                if old.get(k) != settings.get(k)]
        if diff:
            raise SystemExit(f"{folder} holds proposals made with other options ({'; '.join(diff)}): resume with "
                             "the same options, or --overwrite to start again")


def _load_work(folder: Path, settings: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], float]:
    """The proposals already written in a setup's work folder (by document id) and their generation seconds
    (:func:`_check_settings` first)."""
    _check_settings(folder, settings)
    done: dict[str, dict[str, Any]] = {}
    seconds = 0.0
    for part in sorted(folder.glob("batch-*.json")):
        chunk = json.loads(part.read_text())
        seconds += chunk["seconds"]
        done.update((row["doc"], row) for row in chunk["proposals"])
    return done, seconds


def _rate(tokens: int, seconds: float) -> str:
    return f"{tokens / seconds:,.0f} tok/s" if seconds > 0 and tokens else "- tok/s"


def _generate(prop: Any, docs: list[Any], args: ProposerBench, folder: Path, settings: dict[str, Any],
              progress: Any) -> tuple[list[Any], float]:
    """Every document's proposal, in batches of ``--batch-size`` documents (cut from the whole list, so a resumed
    run makes the batches an uninterrupted one makes), each batch's proposals written (atomically) to
    ``folder/batch-NNNNN.json`` as it ends: a killed run re-run with ``--resume`` goes on from the first batch not
    written (``settings``: :func:`_work_settings`). Returns the proposals in document order and the generation
    seconds of all batches."""
    done, seconds = _load_work(folder, settings)
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(folder / "settings.json", json.dumps(settings, indent=1))
    written = len(list(folder.glob("batch-*.json")))
    tokens = sum(row["completion_tokens"] for row in done.values())
    bar = progress.add_task("  documents", total=len(docs), completed=sum(d.id in done for d in docs),
                            rate=_rate(tokens, seconds))
    for start in range(0, len(docs), args.batch):
        todo = [d for d in docs[start:start + args.batch] if d.id not in done]
        if not todo:
            continue
        t0 = time.perf_counter()
        props = prop.propose_batch(todo, seed=args.seed)
        took = time.perf_counter() - t0
        rows = [_saved(p) for p in props]
        atomic_write_text(folder / f"batch-{written:05d}.json",
                          json.dumps({"seconds": round(took, 3), "proposals": rows}))
        written += 1
        seconds += took
        tokens += sum(p.completion_tokens for p in props)
        done.update((row["doc"], row) for row in rows)
        progress.update(bar, advance=len(props), rate=_rate(tokens, seconds))
    progress.remove_task(bar)
    return [_restored(done[d.id]) for d in docs], seconds


def _run_setup(setup: str, sets: dict[str, list[Any]], args: ProposerBench,
               backends: dict[str, Any], work: Path, progress: Any) -> dict[str, Any]:
    from envgen.gate import validate_spec
    from gym_envs.sandbox import make_executor

    settings = _work_settings(setup, args)
    _check_settings(work, settings)  # before a model loads
    prop = _proposer(setup, args, backends)
    names = list(sets)
    docs = [d for n in names for d in sets[n]]
    props, gen = _generate(prop, docs, args, work, settings, progress)
    too_long = [p for p in props if p.meta.get("error_code") == FailureCode.TOO_LONG]
    if too_long:
        click.secho(f"warning: setup {setup}: {len(too_long)} of {len(props)} prompts left less than "
                    f"--min-new-tokens {args.min_new_tokens} of the model's context window and were not sent "
                    f"(counted as too_long; a smaller --excerpt-tokens shortens them). First: {too_long[0].error}",
                    err=True, fg="yellow")
    failed = [p for p in props if p.meta.get("error_code") == FailureCode.GENERATION]
    if props and len(failed) == len(props):
        raise click.ClickException(f"setup {setup}: every one of the {len(props)} proposals failed in the model "
                                   f"backend (no completion came back), so nothing was measured. First error: "
                                   f"{failed[0].error}")
    if failed:
        click.secho(f"warning: setup {setup}: {len(failed)} of {len(props)} proposals failed in the model backend "
                    f"and are counted as backend_failures, not as parse failures. First error: {failed[0].error}",
                    err=True, fg="yellow")
    out: dict[str, Any] = {"structure": prop.structure, "constrained": prop.constrained,
                           "generation_seconds": round(gen, 2)}
    ex = make_executor("worker")
    try:
        verdicts = [validate_spec(p.spec, executor=ex) if p.spec is not None else None for p in props]
        start = 0
        for n in names:
            k = len(sets[n])
            # the documents of both sets went through the backend together: its throughput is reported for each
            out[n] = _score(props[start:start + k], sets[n], verdicts[start:start + k], gen, props, ex)
            start += k
    finally:
        ex.close()
    out["examples"] = [{"doc": p.doc_id, "error": (p.error or "")[:300], "raw": (p.raw or "")[:600]}
                       for p in props[:2] + props[-2:]]
    return out


def plot(result: dict[str, Any], path: str | Path) -> Path | None:
    """Accepted share and mean grounding per setup and document set, as grouped bars."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    setups = [s for s in SETUPS if s in result.get("setups", {})]
    sets = result.get("document_sets", [])
    if not setups or not sets:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    width = 0.8 / len(sets)
    for ax, key, label in ((axes[0], "accepted_share", "accepted by the gate"),
                           (axes[1], "mean_grounding", "mean grounding (accepted)")):
        for j, name in enumerate(sets):
            vals = [result["setups"][s][name].get(key) or 0.0 for s in setups]
            bars = ax.bar([i + j * width for i in range(len(setups))], vals, width, label=name)
            ax.bar_label(bars, labels=[f"{v:.2f}" for v in vals], fontsize=7)
        ax.set_xticks([i + width * (len(sets) - 1) / 2 for i in range(len(setups))], setups, fontsize=8)
        ax.set_ylim(0, 1.1)
        ax.set_title(label)
    axes[0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(0, -0.12), ncol=len(sets))
    fig.suptitle(f"envwright bench proposer: {result.get('model', '')}", fontsize=9)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def _progress() -> Any:
    """The bench's progress display: setups, and the documents of the setup running with its decoding rate."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), transient=False)


def run(args: ProposerBench) -> dict[str, Any]:
    """Run the setups (see the module docstring); returns the result dict (also written to ``--out``)."""
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "proposer.json"
    result: dict[str, Any] = json.loads(path.read_text()) if args.resume and path.exists() else {}
    if path.exists() and not args.resume and not args.overwrite:
        raise SystemExit(f"{path} holds an earlier run: --resume to continue it or --overwrite to replace it")
    sets = _documents(args)
    result.update(model=args.model, warm=args.warm, world_warm=args.world_warm, engine=args.engine, seed=args.seed,
                  temperature=args.temperature, batch_size=args.batch, min_new_tokens=args.min_new_tokens,
                  document_sets=list(sets), documents={k: [d.id for d in v] for k, v in sets.items()})
    result.setdefault("setups", {})
    backends: dict[str, Any] = {}
    todo = [s for s in args.setups if s not in result["setups"]]
    work = out_dir / "work"
    if work.is_dir() and any(work.iterdir()) and not args.resume:
        if not args.overwrite:
            raise SystemExit(f"{work} holds the proposals of an earlier run: --resume to continue it or --overwrite "
                             "to replace it")
        shutil.rmtree(work)
    work.mkdir(exist_ok=True)
    with _progress() as progress:
        task = progress.add_task("bench proposer", total=len(todo), rate="")
        for setup in todo:
            progress.update(task, description=f"bench proposer: {setup}")
            result["setups"][setup] = _run_setup(setup, sets, args, backends, work / setup, progress)
            atomic_write_text(path, json.dumps(result, indent=1))
            progress.advance(task)
    plot(result, out_dir / "proposer.png")
    return result


def _table(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"envwright bench proposer ({result.get('model')})")
    for col in ("setup", "documents", "parsed", "accepted", "backend failures", "too long", "grounding",
                "distinct tool sets",
                "tokens / accepted env", "generation tok/s", "constrained parse failures"):
        t.add_column(col, overflow="fold")
    for setup, by_set in result["setups"].items():
        for name in result["document_sets"]:
            r = by_set.get(name)
            if r is None:
                continue
            t.add_row(setup, name, f"{r['parsed']}/{r['documents']}", f"{r['accepted']}/{r['documents']}",
                      str(r.get("backend_failures", "-")), str(r.get("too_long", "-")),
                      "-" if r["mean_grounding"] is None else f"{r['mean_grounding']:.2f}",
                      str(r["distinct_tool_sets"]),
                      "-" if r["tokens_per_accepted"] is None else f"{r['tokens_per_accepted']:,.0f}",
                      "-" if r["generation_tokens_per_s"] is None else f"{r['generation_tokens_per_s']:,.0f}",
                      str(r["constrained_parse_failures"]) if by_set["constrained"] else "n/a")
    console = Console()
    console.print(t)
    from envgen.realism import realism_table

    for name in result["document_sets"]:
        sets = [(setup, by_set[name].get("realism") or "none accepted")
                for setup, by_set in result["setups"].items() if name in by_set]
        if sets:
            console.print(realism_table(sets, title=f"Realism of the accepted environments: {name}"))


def _setups(ctx: click.Context, param: click.Parameter, value: str) -> tuple[str, ...]:
    setups = tuple(s.strip() for s in value.split(",") if s.strip())
    bad = [s for s in setups if s not in SETUPS]
    if bad:
        raise click.BadParameter(f"unknown setup(s) {bad}; choose from {', '.join(SETUPS)}")
    return setups


def _backend_options(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    from envgen.cli.library import parse_backend_options

    parse_backend_options(value)  # a malformed pair is a usage error before any model loads
    return value


@click.command("proposer", context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@click.option("--model", required=True, help="the untrained model: a hub id, a folder or a .gguf file")
@click.option("--warm", default=None, help="the warm-started model (model/ of `envwright train proposer`)")
@click.option("--world-warm", default=None, help="the world warm start (model/ of `envwright train proposer` with "
              "proposer_sft.structure: world)")
@click.option("--holdout", default=None, help="holdout.json of the warm start (its held-out documents)")
@click.option("--setups", default=",".join(SETUPS), callback=_setups, help=f"comma-separated, of {', '.join(SETUPS)}")
@click.option("--stdlib-docs", type=int, default=64)
@click.option("--other-docs", type=int, default=64)
@click.option("--other-corpus", default=None, help="a corpus that is not Python (default: npm packages)")
@click.option("--engine", type=click.Choice(["transformers", "vllm"]), default="transformers",
              help="the generation engine")
@click.option("--device", default="auto")
@click.option("--dtype", default="auto")
@click.option("--batch-size", type=click.IntRange(min=1), default=None, help="documents per engine call (and rows "
              "decoded at once); each batch's proposals are written as it ends, so --resume loses at most one "
              "[default: 8 on transformers, 64 on vllm]")
@click.option("--backend-option", "backend_options", multiple=True, metavar="KEY=VALUE", callback=_backend_options,
              help="an option of the engine's backend, repeatable (e.g. gpu_memory_utilization=0.3 for vllm)")
@click.option("--max-new-tokens", type=int, default=2048, help="the unconstrained limit (constrained setups raise "
              "it to the schema's worst case); every budget is cut to what the model's context window leaves after "
              "the prompt")
@click.option("--min-new-tokens", type=click.IntRange(min=1), default=256, help="a prompt that leaves less of the "
              "context window than this is not sent: counted as too_long")
@click.option("--temperature", type=float, default=0.7)
@click.option("--excerpt-tokens", type=int, default=900)
@click.option("--seed", type=int, default=0)
@click.option("--out", default="runs/bench-proposer")
@click.option("--resume", is_flag=True)
@click.option("--overwrite", is_flag=True)
def command(**options: Any) -> None:
    """Does a model write environments? Free vs constrained, spec vs blueprint vs world, untrained vs
    warm-started."""
    _table(run(ProposerBench(**options)))
