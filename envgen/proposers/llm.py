"""The ``llm`` proposer: a model backend writes environment specs from documents.

:meth:`LLMProposer.propose_batch` builds one chat per document
(:func:`envgen.prompts.build_messages`: contract, example, skill guidance,
document excerpt) and generates them all in **one** batched backend call (or shares it with another
proposer's: :meth:`LLMProposer.batch_request`, :func:`envgen.proposers.base.propose_together`);
:meth:`LLMProposer.repair_batch` does the same for the repair conversations
(:func:`envgen.prompts.build_repair_messages`: the previous answer plus the
gate's feedback). Completions are parsed by
:func:`envgen.completions.parse_completion`, which also fills the fields the model
does not control (provenance ``llm:<model>``, stream ``explore`` or ``skill``,
the source document, a unique id when the model's is missing, invalid or
copied from an example).

A proposal that could not be parsed has ``spec is None`` and an ``error``
saying what to fix (fed back verbatim on repair); a backend that fails
outright turns every proposal of the batch into such a failure. Token counts
on a proposal are cumulative over its repairs (``meta["rounds"]`` has each
round's counts), so a run's total is the sum over its final proposals.

Three structures (``structure=``, :mod:`envgen.structure`):

* ``spec`` (the free stream, the default): the model writes a whole spec;
* ``blueprint``: the model writes a blueprint
  (:func:`envgen.proposers.template.prompt.build_blueprint_messages`), which the one
  compiler (:func:`envgen.blueprint.compiler.compile_blueprint`) turns into a
  spec; a routed skill's requirements narrow the blueprint schema and are
  compiler options. ``meta["repairs"]`` lists what the compiler changed;
* ``world``: the model writes a world blueprint (blueprint version 2,
  :func:`envgen.proposers.world.prompt.build_world_messages`), which the world compiler
  (:func:`envgen.world.compile.compile_world`) turns into a spec; a routed skill's requirements are said in
  world terms in the prompt and narrow the world schema (:mod:`envgen.world.requirements`).

With ``constrained=True`` (the default for ``blueprint`` and ``world``) every backend decodes
under the structure's JSON Schema (``json_schema=`` of
:meth:`~envgen.backends.Backend.generate`), and each constrained prompt's ``max_new_tokens`` is raised to
its schema's worst case, so every completion the budget does not cut parses; a constrained completion
that ended by itself and does not parse is reported with the code ``constrained_parse`` (a bug).

Every budget is then cut to what the model's context window leaves after the prompt (on a backend that knows
both: ``transformers``, ``vllm``), so a prompt and its completion never pass the window (a completion cut
there has ``finish_reason == "length"`` and the parse failure of its unfinished JSON); a prompt that leaves
less than ``min_new_tokens`` is not sent, and its proposal fails with the code ``too_long`` (the generation
pipeline tries no repair: a repair prompt is longer still).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from corpora.registry import build_config
from envgen.backends import Backend, Completion, make_backend
from envgen.backends.base import check_sampling, prompt_text
from envgen.blueprint.compiler import CompileError, CompileOptions, compile_blueprint
from envgen.blueprint.schema import blueprint_json_schema, max_completion_chars, parse_blueprint
from envgen.completions import ParsedCompletion, parse_completion
from envgen.errors import PARSE_FAILURES, FailureCode
from envgen.prompts import (
    BUILTIN_EXAMPLE,
    build_messages,
    build_repair_messages,
    messages_sha256,
    shipped_examples,
    skill_id_of,
)
from envgen.proposers.base import BatchRequest, Proposal, Proposer, run_requests
from envgen.proposers.template.prompt import build_blueprint_messages
from envgen.structure import STRUCTURES, spec_decoding_schema, spec_from_decoded
from gym_envs.spec import EnvSpec, as_spec

__all__ = ["LLMOptions", "LLMProposer"]


@dataclass(kw_only=True)
class LLMOptions:
    """Options of the ``llm`` proposer (beside its backend and model)."""

    max_new_tokens: int = 4096  #: the token budget of every generation
    #: the least room in the model's context window a prompt is sent with: a prompt that leaves less (and less than
    #: its budget) is not sent, and its proposal fails with ``too_long``
    min_new_tokens: int = 256
    temperature: float = 0.7  #: sampling temperature (0 is greedy)
    top_p: float = 0.95  #: nucleus sampling
    excerpt_tokens: int = 1500  #: token budget of the document excerpt
    n_examples: int = 1  #: example specs shown in the prompt (0 for none)
    example_tokens: int | None = 3500  #: token budget for all examples together (tasks are trimmed to fit)
    examples: Sequence[Any] | None = None  #: example specs to use instead of the shipped ones (specs, dicts, paths)
    #: disclosure level passed to ``skill.render(level)`` for skill-conditioned documents (``name``, ``summary``,
    #: ``rules``, ``full``; examples are shown separately, within budget)
    skill_level: Any = "rules"
    backend_options: dict[str, Any] = field(default_factory=dict)  #: options of the backend (its Options class)
    stop: Sequence[str] | None = None  #: stop strings for generation
    system_prompt: str | None = None  #: replaces the contract's system prompt
    structure: str = "spec"  #: ``spec`` (a whole spec, the free stream), ``blueprint`` or ``world`` (compiled)
    #: decode under the structure's JSON Schema (default: ``True`` for ``blueprint`` and ``world``, else ``False``)
    constrained: bool | None = None
    compile_options: dict[str, Any] = field(default_factory=dict)  #: sizes for the compiler (``max_tasks``, ``rows``)

    def __post_init__(self) -> None:
        check_sampling(max_new_tokens=self.max_new_tokens, temperature=self.temperature, top_p=self.top_p)
        if self.min_new_tokens < 1:
            raise ValueError(f"min_new_tokens must be >= 1, got {self.min_new_tokens}")
        if self.excerpt_tokens < 0:
            raise ValueError(f"excerpt_tokens must be >= 0, got {self.excerpt_tokens}")
        if self.n_examples < 0:
            raise ValueError(f"n_examples must be >= 0, got {self.n_examples}")
        if self.structure not in STRUCTURES:
            raise ValueError(f"structure must be one of {', '.join(STRUCTURES)}, got {self.structure!r}")
        # bad options fail now, an unknown one named with the closest (the compiler's own options class)
        build_config(CompileOptions, options=self.compile_options, owner="the llm proposer's compile_options")


class LLMProposer(Proposer):
    """Proposes specs with a model backend (``transformers``, ``vllm``, ``openai``, ``scripted``).

    Args:
        backend: a registered backend name or a :class:`~envgen.backends.Backend`.
        model: model name or path for the backend (ignored when ``backend`` is an instance).
        options: :class:`LLMOptions`' fields (sampling, prompt budgets, structure, the backend's options).
    """

    name = "llm"
    can_repair = True
    Options = LLMOptions

    def __init__(self, backend: str | Backend, model: str | None = None, **options: Any):
        opts: LLMOptions = build_config(LLMOptions, options=options, owner="proposer 'llm'")
        if not backend:
            raise ValueError("the llm proposer needs a backend (transformers, vllm, openai or scripted)")
        self.backend = make_backend(backend, model=model, **(opts.backend_options or {}))
        self.max_new_tokens = opts.max_new_tokens
        self.min_new_tokens = opts.min_new_tokens
        self.temperature = opts.temperature
        self.top_p = opts.top_p
        self.excerpt_tokens = opts.excerpt_tokens
        self.n_examples = opts.n_examples
        self.example_tokens = opts.example_tokens
        self.skill_level = opts.skill_level
        self.stop = list(opts.stop) if opts.stop else None
        self.system_prompt = opts.system_prompt
        self.examples: list[EnvSpec] = ([as_spec(e) for e in opts.examples] if opts.examples is not None
                                        else shipped_examples())
        self.structure = opts.structure
        self.constrained = (opts.structure in ("blueprint", "world")) if opts.constrained is None \
            else bool(opts.constrained)
        self.compile_options = dict(opts.compile_options or {})

    @property
    def reserved_ids(self) -> list[str]:
        """Ids a proposal may not keep (the examples': a copied id is replaced by a fresh one)."""
        return sorted({e.id for e in self.examples} | {BUILTIN_EXAMPLE["id"]})

    @property
    def generator(self) -> str:
        return f"llm:{self.backend.model_id}"

    # -- prompts --------------------------------------------------------------------------------
    def messages_for(self, doc: Any, skill: Any = None) -> list[dict[str, str]]:
        """The chat this proposer sends for ``doc`` (and an optional routed skill)."""
        if self.structure == "world":
            from envgen.proposers.world.prompt import build_world_messages

            return build_world_messages(doc, skill=skill, excerpt_tokens=self.excerpt_tokens,
                                        counter=self.backend.count_tokens, n_examples=min(1, self.n_examples))
        if self.structure == "blueprint":
            return build_blueprint_messages(doc, skill=skill, excerpt_tokens=self.excerpt_tokens,
                                            counter=self.backend.count_tokens, n_examples=min(1, self.n_examples))
        chat = build_messages(doc, skill=skill, examples=self.examples, n_examples=self.n_examples,
                              excerpt_tokens=self.excerpt_tokens, example_tokens=self.example_tokens,
                              counter=self.backend.count_tokens, skill_level=self.skill_level,
                              system_prompt=self.system_prompt)
        if self.constrained:
            chat[-1]["content"] += CONSTRAINED_SPEC_NOTE
        return chat

    def schema_for(self, skill: Any = None) -> dict[str, Any] | None:
        """The JSON Schema a proposal for this skill decodes under (``None`` when unconstrained)."""
        if not self.constrained:
            return None
        if self.structure == "blueprint":
            return blueprint_json_schema(getattr(skill, "blueprint", None) or None)
        if self.structure == "world":
            from envgen.world.blueprint import world_json_schema

            return world_json_schema(getattr(skill, "blueprint", None) or None)
        return spec_decoding_schema()

    def _budget(self, schema: dict[str, Any] | None) -> int:
        """A prompt's token budget: ``max_new_tokens``, raised to its schema's worst case when constrained."""
        return max(self.max_new_tokens, max_completion_chars(schema)) if schema is not None else self.max_new_tokens

    def _request(self, chats: list[list[dict[str, str]]], schemas: list[dict[str, Any] | None],
                 finish: Any) -> BatchRequest:
        return BatchRequest(self.backend, chats, [self._budget(x) for x in schemas], schemas, self.temperature,
                            self.top_p, self.stop, finish, self.min_new_tokens)

    # -- proposer API ---------------------------------------------------------------------------
    def batch_request(self, docs: list[Any], *, seed: int = 0, skills: list[Any] | None = None) -> BatchRequest:
        """:meth:`propose_batch`'s backend call, to share with other proposers' (module docstring)."""
        if skills is not None and len(skills) != len(docs):
            raise ValueError(f"skills has {len(skills)} entries for {len(docs)} documents")
        skills = list(skills) if skills is not None else [None] * len(docs)
        chats = [self.messages_for(d, s) for d, s in zip(docs, skills, strict=True)]

        def finish(completions: list[Completion] | str) -> list[Proposal]:
            out = []
            for i, (doc, skill, chat) in enumerate(zip(docs, skills, chats, strict=True)):
                meta = {"doc": doc, "skill": skill, "messages": chat, "rounds": [], "structure": self.structure,
                        "constrained": self.constrained}
                comp = completions if isinstance(completions, str) else completions[i]
                out.append(self._proposal(doc, chat, chat, comp, meta, seed=seed, retries=0, prev=None))
            return out

        return self._request(chats, [self.schema_for(s) for s in skills], finish)

    def propose_batch(self, docs: list[Any], *, seed: int = 0,
                      skills: list[Any] | None = None) -> list[Proposal]:
        request = self.batch_request(docs, seed=seed, skills=skills)
        return run_requests([request], seed=seed)[0] if docs else []

    def repair_batch(self, items: list[tuple[Proposal, str]], *, seed: int = 0) -> list[Proposal]:
        chats = []
        for p, feedback in items:
            base = p.meta.get("messages")
            if not base and p.meta.get("doc") is not None:
                base = self.messages_for(p.meta["doc"], p.meta.get("skill"))
            chats.append(build_repair_messages(base or [], p.raw or "", feedback))

        def finish(completions: list[Completion] | str) -> list[Proposal]:
            out = []
            for i, ((p, _), chat) in enumerate(zip(items, chats, strict=True)):
                meta = {**p.meta, "rounds": list(p.meta.get("rounds", []))}
                comp = completions if isinstance(completions, str) else completions[i]
                out.append(self._proposal(p.meta.get("doc"), meta.get("messages") or chat, chat, comp, meta,
                                          seed=seed, retries=p.retries + 1, prev=p))
            return out

        if not items:
            return []
        request = self._request(chats, [self.schema_for(p.meta.get("skill")) for p, _ in items], finish)
        return run_requests([request], seed=seed)[0]

    # -- completions to proposals ---------------------------------------------------------------
    def _proposal(self, doc: Any, base_chat: list[dict[str, str]], chat: list[dict[str, str]],
                  comp: Completion | str, meta: dict[str, Any], *, seed: int, retries: int,
                  prev: Proposal | None) -> Proposal:
        skill = meta.get("skill")
        prompt_sha = messages_sha256(chat)
        meta.update(messages=base_chat, prompt_sha256=prompt_sha, skill_id=skill_id_of(skill),
                    model=self.backend.model_id, stream="skill" if skill is not None else "explore")
        doc_id = str(getattr(doc, "id", None) or (prev.doc_id if prev else "unknown"))
        p_tok = prev.prompt_tokens if prev else 0
        c_tok = prev.completion_tokens if prev else 0
        if isinstance(comp, str) or not comp.ok:
            code = FailureCode.GENERATION if isinstance(comp, str) else comp.meta.get("error_code",
                                                                                      FailureCode.GENERATION)
            err = (comp if isinstance(comp, str) else comp.error if code == FailureCode.TOO_LONG
                   else f"generation failed ({self.backend.name}): {comp.error}")
            meta["rounds"].append({"seed": seed, "error": err, "error_code": code})
            meta["error_code"] = code
            return Proposal(doc_id, None, error=err, raw=prev.raw if prev else None, prompt=prompt_text(chat),
                            prompt_tokens=p_tok, completion_tokens=c_tok, retries=retries, meta=meta)
        fill = {"doc": doc, "generator": self.generator, "stream": meta["stream"], "skill_id": meta["skill_id"],
                "prompt_sha256": prompt_sha, "seed": seed,
                "created_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")}
        if self.structure == "blueprint":
            parsed = self._parse_blueprint(comp.text, doc, skill, meta, fill)
        elif self.structure == "world":
            parsed = self._parse_world(comp.text, doc, skill, meta, fill)
        else:
            text = comp.text
            if self.constrained:
                text = _joined_spec_text(text)
            parsed = parse_completion(text, reserved_ids=self.reserved_ids, **fill)
        if self.constrained and parsed.code in PARSE_FAILURES and comp.finish_reason != "length":
            parsed.code = FailureCode.CONSTRAINED_PARSE  # decoding under the schema should make this impossible
        error = self._error(parsed, comp)
        meta["rounds"].append({"seed": seed, "prompt_tokens": comp.prompt_tokens,
                               "completion_tokens": comp.completion_tokens,
                               "finish_reason": comp.finish_reason, "error_code": parsed.code,
                               "json_repairs": parsed.repairs})
        meta.update(finish_reason=comp.finish_reason, error_code=parsed.code, json_repairs=parsed.repairs)
        return Proposal(doc_id, parsed.spec, error=error, raw=comp.text, prompt=prompt_text(chat),
                        prompt_tokens=p_tok + comp.prompt_tokens,
                        completion_tokens=c_tok + comp.completion_tokens, retries=retries, meta=meta)

    def _parse_blueprint(self, text: str, doc: Any, skill: Any, meta: dict[str, Any],
                         fill: dict[str, Any]) -> ParsedCompletion:
        """A completion of the blueprint stream, compiled. Failures are typed as the parse failed (``no_json``,
        ``json_syntax``, ``not_object``, ``blueprint_schema``, with each schema problem's place and type in
        ``meta["schema_errors"]``) or ``compile``."""
        pb = parse_blueprint(text)
        meta.pop("schema_errors", None)  # a repair's meta starts as a copy of the attempt before
        if pb.blueprint is None:
            if pb.errors:
                meta["schema_errors"] = pb.errors[:8]
            return ParsedCompletion(None, f"{pb.error}. Answer with one blueprint JSON object.",
                                    _BLUEPRINT_PARSE_CODES.get(pb.code or "", FailureCode.BLUEPRINT_SCHEMA))
        meta["blueprint"] = pb.blueprint.to_json()
        require = dict(getattr(skill, "blueprint", None) or {})
        try:
            compiled = compile_blueprint(
                pb.blueprint, doc, seed=int(fill["seed"]), options=CompileOptions(**self.compile_options,
                                                                                  require=require),
                generator=fill["generator"], stream=fill["stream"], skill_id=fill["skill_id"],
                prompt_sha256=fill["prompt_sha256"], created_at=fill["created_at"])
        except CompileError as e:
            meta["repairs"] = e.repairs
            return ParsedCompletion(None, f"the blueprint cannot be compiled: {e}", FailureCode.COMPILE)
        meta["repairs"] = compiled.repairs
        meta["difficulty"] = compiled.difficulty
        return ParsedCompletion(compiled.spec, None, None)

    def _parse_world(self, text: str, doc: Any, skill: Any, meta: dict[str, Any],
                     fill: dict[str, Any]) -> ParsedCompletion:
        """A completion of the world stream, compiled by the world compiler (failures typed as for blueprints,
        ``meta["schema_errors"]`` included). A routed skill's structure is in the decoding schema (an unconstrained
        world that lacks it is judged by the skill's check on the compiled spec); its task counts are the
        compiler's (``require_tasks``: the task writer drafts those kinds first)."""
        import hashlib

        from envgen.world.blueprint import parse_world
        from envgen.world.compile import compile_world

        pw = parse_world(text)
        meta.pop("schema_errors", None)
        if pw.blueprint is None:
            if pw.errors:
                meta["schema_errors"] = pw.errors[:8]
            return ParsedCompletion(None, f"{pw.error}. Answer with one world blueprint JSON object.",
                                    _BLUEPRINT_PARSE_CODES.get(pw.code or "", FailureCode.BLUEPRINT_SCHEMA))
        meta["blueprint"] = pw.blueprint.to_json()
        body = str(getattr(doc, "text", "") or "")
        sha = getattr(doc, "sha256", "") or hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()
        stem = str(getattr(doc, "path", None) or getattr(doc, "id", "doc")).rsplit("/", 1)[-1]
        slug = "".join(c if c.isalnum() else "-" for c in stem.lower()).strip("-")[:40] or "doc"
        source = {"corpus": str(getattr(doc, "corpus", "") or "unknown"), "doc_id": str(getattr(doc, "id", "")),
                  "path": getattr(doc, "path", None), "sha256": sha}
        provenance = {k: fill[k] for k in ("generator", "stream", "skill_id", "prompt_sha256", "seed", "created_at")}
        # the id names the world as well as the document: G proposals of one prompt (a self-play group) differ
        digest = hashlib.sha256(f"{sha}:{meta['blueprint']}:{fill['seed']}".encode()).hexdigest()
        try:
            compiled = compile_world(pw.blueprint, env_id=f"llm-world-{slug}-{digest[:8]}",
                                     seed=int(fill["seed"]), source=source, provenance=provenance,
                                     require_tasks=(getattr(skill, "blueprint", None) or {}).get("tasks"))
        except CompileError as e:
            return ParsedCompletion(None, f"the world blueprint cannot be compiled: {e}", FailureCode.COMPILE)
        meta["repairs"] = compiled.repairs
        return ParsedCompletion(compiled.spec, None, None)

    def _error(self, parsed: ParsedCompletion, comp: Completion) -> str | None:
        if parsed.ok:
            return None
        if comp.finish_reason == "length" and parsed.code in (FailureCode.NO_JSON, FailureCode.JSON_SYNTAX):
            smaller = ("a smaller blueprint: fewer entities and operations" if self.structure == "blueprint"
                       else "a smaller environment: fewer tools, seed rows and tasks")
            limit = comp.meta.get("max_new_tokens", self.max_new_tokens)
            return (f"your answer was cut off at the {limit}-token limit before the JSON "
                    f"was complete ({parsed.error}). Write {smaller}, shorter descriptions, no text outside "
                    "the JSON.")
        return parsed.error


_BLUEPRINT_PARSE_CODES = {"no_json": FailureCode.NO_JSON, "json_syntax": FailureCode.JSON_SYNTAX,
                          "not_object": FailureCode.NOT_OBJECT}
"""A blueprint that failed before its schema: the same codes as a spec's (``schema``: ``blueprint_schema``)."""

CONSTRAINED_SPEC_NOTE = (
    "\n\nYour answer is decoded under a JSON Schema: write \"code\", \"state.schema_sql\" and "
    "\"state.seed_sql\" (and a python check's \"code\") as arrays of lines, one string per line. No string may "
    "contain a double quote or a backslash: quote Python and SQL strings with single quotes. Leave out "
    "\"source\" and \"provenance\".")


def _joined_spec_text(text: str) -> str:
    """A constrained free-stream completion with its line arrays joined (the text parse_completion expects)."""
    import json

    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return text
    return json.dumps(spec_from_decoded(value))
