"""The world stream's prompt: a document in, a world blueprint (JSON, blueprint_version 2) out.

:func:`build_world_messages` is the one prompt a model proposer sends for ``structure="world"``, and the one a
warm start trains on (pairs of the same prompt with the AST world writer's blueprint), so a trained model
sees at inference what it saw in training. It holds:

* a system message: what a world is (a service a person would use, doing what the document's code does),
  the fixed vocabularies (field kinds, operation kinds, condition and policy kinds) read from the modules
  that own them, and what makes a world good (four or more entities, user-facing keys, the document's
  operations with its guards, a policy of at least five rules);
* one worked example: :data:`envgen.proposers.template.prompt.EXAMPLE_DOCUMENT` and the AST world writer's blueprint
  of it (computed, so it always matches the compiler and the schema), shortened to one operation of each kind
  so that the prompt and a whole world fit a small model's context;
* a routed skill's guidance, when a skill conditions the proposal: its name, description and rules
  (:func:`envgen.proposers.template.prompt.skill_heading`) and the structure it requires in world terms
  (:func:`envgen.world.requirements.needs_text`; the decoding schema requires it too:
  :func:`envgen.world.blueprint.world_json_schema`);
* the document excerpt (:func:`envgen.prompts.document_excerpt` within ``excerpt_tokens``).

Without a skill the chat is exactly the warm start's.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from envgen.world.kinds import KINDS
from envgen.world.model import OP_KINDS, POLICY_KINDS

__all__ = ["EXAMPLE_OPERATIONS", "WORLD_SYSTEM", "build_world_messages", "example_world", "skill_world_text"]

TokenCounter = Callable[[str], int]

WORLD_SYSTEM = f"""\
You read a source document and design a small service a person would use whose operations work like the \
document's code: one JSON object, a world blueprint. A compiler turns it into database tables with \
realistic rows, tools, a policy and conversations with users.
- "domain" and "persona": what the service is and who talks to its assistant (a customer, or staff when \
"operator" is true).
- "entities": 4 to 6 kinds of records. Each has a singular snake_case "name", a "role" (person, main, \
container, catalog, child, record), a user-facing "key" (kinds such as email, code, title, file_name: what \
a person names a record by, never a row number), "fields" with semantic kinds ({", ".join(KINDS)}), \
"refs" to other entities ("owner": true for the one it belongs to), lifecycle "states" and "final" states.
- "operations": the tools, kinds {", ".join(OP_KINDS)}, named after the document's functions and the \
domain's records (put_print_job, cancel_order); the code's guards become "conditions" (a refusal with the \
code's exception and message), its updates "effects"; "phrase" says how a person asks for it.
- "policy": at least 5 rules, kinds {", ".join(POLICY_KINDS)}; some must be enforced only by the policy \
(confirm before a change, a limit that goes to a person, states a change is not allowed in).
- "vocabulary": the domain's words: titles of things, adjectives, notes; things that come in kinds go in \
"lines", each with its titles, the adjectives that fit all of them, its "category" and "price" range.
Leave out a key whose value is its default (false, null, [], "" or 0 rows changed), as the example does.
Answer with the JSON object only."""


#: the worked example's share of the prompt: one operation of each kind (at most this many), the reasons and
#: vocabulary cut to a few, so that the prompt, a document excerpt and a whole world fit a small model's
#: context (SmolLM2's 8,192 tokens: the whole example was 3,600 of them, and with it 85 of 164 warm-start
#: pairs did not fit)
EXAMPLE_OPERATIONS = 7


@lru_cache(maxsize=1)
def example_world() -> str:
    """The AST world writer's blueprint of the prompt's example document, shortened to one operation of each
    kind (:data:`EXAMPLE_OPERATIONS`) with the policy rules about them, as compact JSON."""
    from envgen.proposers.template.prompt import _Doc
    from envgen.proposers.world.writer import write_world
    from envgen.world.blueprint import WorldBlueprint

    bp = write_world(_Doc(), seed=0).blueprint
    kinds: set[str] = set()
    ops: list[Any] = []
    for op in bp.operations:
        if op.kind not in kinds and len(ops) < EXAMPLE_OPERATIONS:
            kinds.add(op.kind)
            ops.append(op.model_copy(update={"reasons": op.reasons[:1]}))
    kept = {op.name for op in ops}
    voc = bp.vocabulary
    short = bp.model_copy(update={
        "operations": ops, "policy": [r for r in bp.policy if r.op is None or r.op in kept],
        "vocabulary": voc.model_copy(update={
            "titles": voc.titles[:6], "adjectives": voc.adjectives[:4], "notes": voc.notes[:2],
            "categories": voc.categories[:4],
            "lines": [li.model_copy(update={"titles": li.titles[:3], "adjectives": li.adjectives[:2]})
                      for li in voc.lines[:2]]})})
    return WorldBlueprint.model_validate(short.model_dump(mode="json")).to_json()


def skill_world_text(skill: Any) -> str:
    """A routed skill's guidance in the world prompt: its heading and the world structure it requires."""
    from envgen.proposers.template.prompt import skill_heading
    from envgen.world.requirements import needs_text, world_needs

    needs = needs_text(world_needs(getattr(skill, "blueprint", None) or {}))
    return skill_heading(skill) + (f"\n{needs}" if needs else "")


def build_world_messages(doc: Any, *, skill: Any = None, excerpt_tokens: int = 900,
                         counter: TokenCounter | None = None, n_examples: int = 1) -> list[dict[str, str]]:
    """The world stream's chat for one document, conditioned on a routed ``skill`` when given (see the module
    docstring)."""
    from envgen.prompts import document_excerpt
    from envgen.proposers.template.prompt import EXAMPLE_DOCUMENT

    parts: list[str] = []
    if n_examples > 0:
        parts.append(f"Document (library.py):\n```python\n{EXAMPLE_DOCUMENT}```\nWorld:\n{example_world()}")
    if skill is not None:
        parts.append(skill_world_text(skill))
    path = getattr(doc, "path", None) or getattr(doc, "id", None) or "document"
    lang = getattr(doc, "language", "") or ""
    fence = lang if lang and lang != "unknown" else ""
    parts.append(f"Document ({path}):\n```{fence}\n{document_excerpt(doc, excerpt_tokens, counter)}\n```\nWorld:")
    return [{"role": "system", "content": WORLD_SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]
