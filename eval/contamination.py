"""Contamination report: how much a generated library overlaps a benchmark suite.

Role: before trusting a score on a public benchmark, check that the environments we train on
do not copy it. Compares two suites (normally ``library:PATH`` against ``bfcl:base``; any suite
spec works on either side) on three levels:

- **Tool names**: the sets of tool names, their intersection and Jaccard similarity.
- **Schemas**: tools as ``(name, frozenset of parameter names)``; the intersection and Jaccard.
- **Task text**: each task's user instructions joined, as a set of word ``k``-shingles
  (:func:`corpora.similarity.word_shingles`, ``k = 3`` by default); per task of side A its maximum
  Jaccard similarity to any task of side B; the maximum and mean of those maxima; the share of A
  tasks at or above ``threshold``; the ``top`` closest
  pairs. Pairs are found through an inverted index of shingles, so only pairs that share a
  shingle are scored (any other pair has similarity 0).

Output: :func:`contamination_report` returns a JSON-able dict; :func:`contamination_markdown`
renders it; the CLI writes ``contamination.json`` and ``contamination.md``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from corpora.similarity import jaccard, word_shingles
from eval.report import md_code

__all__ = ["contamination_markdown", "contamination_report", "text_overlap"]


def _schema(tool: Mapping[str, Any]) -> tuple[str, frozenset[str]]:
    props = (tool.get("parameters") or {}).get("properties") or {}
    return str(tool["name"]), frozenset(props)


def text_overlap(a: list[tuple[str, str]], b: list[tuple[str, str]], *, k: int = 3, top: int = 10,
                 threshold: float = 0.5) -> dict[str, Any]:
    """Max/mean best-match similarity of each A text to the B texts, and the closest pairs."""
    sh_b = [word_shingles(t, k) for _, t in b]
    index: dict[str, list[int]] = defaultdict(list)
    for j, s in enumerate(sh_b):
        for g in s:
            index[g].append(j)
    best: list[float] = []
    pairs: list[tuple[float, int, int]] = []
    for i, (_, text) in enumerate(a):
        sa = word_shingles(text, k)
        shared: dict[int, int] = defaultdict(int)
        for g in sa:
            for j in index.get(g, ()):
                shared[j] += 1
        top_i = 0.0
        for j, inter in shared.items():
            sim = inter / (len(sa) + len(sh_b[j]) - inter)
            top_i = max(top_i, sim)
            pairs.append((sim, i, j))
        best.append(top_i)
    pairs.sort(key=lambda p: (-p[0], p[1], p[2]))
    closest = [{"similarity": round(s, 4), "a": a[i][0], "b": b[j][0], "a_text": a[i][1][:400],
                "b_text": b[j][1][:400]} for s, i, j in pairs[:top]]
    return {
        "k": k, "threshold": threshold, "a_tasks": len(a), "b_tasks": len(b),
        "max": max(best) if best else 0.0,
        "mean": sum(best) / len(best) if best else 0.0,
        "at_or_above_threshold": sum(1 for x in best if x >= threshold),
        "share_at_or_above_threshold": (sum(1 for x in best if x >= threshold) / len(best)) if best else 0.0,
        "closest_pairs": closest,
    }


def contamination_report(a: Any, b: Any, *, k: int = 3, top: int = 10,
                         threshold: float = 0.5) -> dict[str, Any]:
    """Overlap of suite ``a`` (e.g. a library) with suite ``b`` (e.g. a benchmark).

    ``a`` and ``b`` are :class:`eval.suites.Suite` objects or suite spec strings.
    """
    from eval.suites import Suite, make_suite, suite_options

    def read_only(spec: str) -> Suite:
        """A library is only read: its splits do not matter here, and nothing is written into it."""
        return make_suite(spec, **({"write_splits": False} if "write_splits" in suite_options(spec) else {}))

    sa = a if isinstance(a, Suite) else read_only(str(a))
    sb = b if isinstance(b, Suite) else read_only(str(b))
    try:
        tools_a, tools_b = sa.tool_docs(), sb.tool_docs()
        names_a, names_b = {t["name"] for t in tools_a}, {t["name"] for t in tools_b}
        schemas_a, schemas_b = {_schema(t) for t in tools_a}, {_schema(t) for t in tools_b}
        shared_schemas = sorted(schemas_a & schemas_b, key=lambda s: s[0])
        return {
            "a": sa.name, "b": sb.name,
            "tool_names": {"a": len(names_a), "b": len(names_b), "shared": sorted(names_a & names_b),
                           "n_shared": len(names_a & names_b), "jaccard": jaccard(names_a, names_b),
                           "share_of_a": len(names_a & names_b) / len(names_a) if names_a else 0.0},
            "schemas": {"a": len(schemas_a), "b": len(schemas_b),
                        "shared": [{"name": n, "parameters": sorted(p)} for n, p in shared_schemas],
                        "n_shared": len(shared_schemas), "jaccard": jaccard(schemas_a, schemas_b),
                        "share_of_a": len(shared_schemas) / len(schemas_a) if schemas_a else 0.0},
            "task_text": text_overlap(sa.task_texts(), sb.task_texts(), k=k, top=top, threshold=threshold),
        }
    finally:
        if not isinstance(a, Suite):
            sa.close()
        if not isinstance(b, Suite):
            sb.close()


def contamination_markdown(report: Mapping[str, Any]) -> str:
    """A Markdown rendering of :func:`contamination_report`."""
    tn, sc, tx = report["tool_names"], report["schemas"], report["task_text"]
    lines = [
        f"# Contamination: {md_code(report['a'])} vs {md_code(report['b'])}", "",
        "| level | A | B | shared | Jaccard | share of A |", "|---|---|---|---|---|---|",
        f"| tool names | {tn['a']} | {tn['b']} | {tn['n_shared']} | {tn['jaccard']:.3f} | "
        f"{tn['share_of_a']:.3f} |",
        f"| schemas (name + parameter set) | {sc['a']} | {sc['b']} | {sc['n_shared']} | "
        f"{sc['jaccard']:.3f} | {sc['share_of_a']:.3f} |", "",
        f"Task text (word {tx['k']}-shingle Jaccard, best match in B per A task over {tx['a_tasks']} A tasks "
        f"and {tx['b_tasks']} B tasks): max **{tx['max']:.3f}**, mean **{tx['mean']:.3f}**; "
        f"{tx['at_or_above_threshold']} A tasks at or above {tx['threshold']}.", "",
    ]
    if tn["shared"]:
        lines += ["Shared tool names: " + ", ".join(md_code(n) for n in tn["shared"][:100]), ""]
    if sc["shared"]:
        lines += ["Shared schemas: " + ", ".join(md_code(f"{s['name']}({', '.join(s['parameters'])})")
                                                 for s in sc["shared"][:100]), ""]
    if tx["closest_pairs"]:
        lines += ["## Closest task pairs", "", "| similarity | A | B | A text | B text |",
                  "|---|---|---|---|---|"]
        for p in tx["closest_pairs"]:
            at, bt = md_code(p["a_text"], table=True, limit=160), md_code(p["b_text"], table=True, limit=160)
            lines.append(f"| {p['similarity']:.3f} | {md_code(p['a'], table=True)} | {md_code(p['b'], table=True)} | "
                         f"{at} | {bt} |")
    return "\n".join(lines) + "\n"
