"""A row that goes on under a grammar from a prefix it did not decode: the mask of each step, engine-agnostic.

The format recovery (:mod:`training.format_recovery`) takes a free proposal that left the blueprint format, keeps
its tokens up to where the grammar would have refused one, and has the policy go on from there under the grammar.
vLLM's structured outputs start a grammar at the first token the engine decodes, so on vLLM this is done by a
logits processor of our own (:mod:`training.vllm_prefix`), whose per-row work is :class:`PrefixGrammar`: an
xgrammar matcher that has accepted the prefix, advanced over each token the row samples, writing the next
token's mask into the row's logits (every token the grammar refuses at ``-inf``; once the grammar has closed,
only the stop tokens). It needs no vLLM, so it is tested on the CPU with the tiny model's tokenizer.

The request carries what the row needs in ``SamplingParams.extra_args[EXTRA_KEY]`` (:func:`prefix_request`): the
schema (JSON text) and the prefix's token ids.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

__all__ = ["EXTRA_KEY", "PROCESSOR", "PrefixGrammar", "prefix_request", "read_request", "stop_now"]

EXTRA_KEY = "envwright_prefix_grammar"
PROCESSOR = "training.vllm_prefix:PrefixGrammarProcessor"  #: the logits processor's name, as ``vllm.LLM`` takes it


def prefix_request(schema: dict[str, Any], prefix: Sequence[int]) -> dict[str, Any]:
    """The ``extra_args`` of a row that goes on under ``schema`` after ``prefix`` (token ids of its text)."""
    return {EXTRA_KEY: {"schema": json.dumps(schema), "prefix": [int(t) for t in prefix]}}


def read_request(extra_args: dict[str, Any] | None) -> tuple[dict[str, Any], list[int]] | None:
    """``(schema, prefix)`` from a request's ``extra_args``; None where it asks for no prefix grammar. A malformed
    request raises ``ValueError`` saying what is wrong (vLLM refuses the request with it)."""
    spec = (extra_args or {}).get(EXTRA_KEY)
    if spec is None:
        return None
    if not isinstance(spec, dict) or not isinstance(spec.get("schema"), str) or not isinstance(spec.get("prefix"),
                                                                                               list):
        raise ValueError(f"extra_args[{EXTRA_KEY!r}] must be {{'schema': JSON text, 'prefix': [token ids]}}")
    try:
        schema = json.loads(spec["schema"])
    except json.JSONDecodeError as e:
        raise ValueError(f"extra_args[{EXTRA_KEY!r}]['schema'] is not JSON: {e}") from None
    if not all(isinstance(t, int) and t >= 0 for t in spec["prefix"]):
        raise ValueError(f"extra_args[{EXTRA_KEY!r}]['prefix'] must hold token ids (integers >= 0)")
    return schema, list(spec["prefix"])


class PrefixGrammar:
    """One row's grammar, started after ``prefix``; called with the row's output token ids so far and its logits
    row, it masks the logits in place and returns them.

    Raises ``ValueError`` when the grammar refuses the prefix (the caller kept tokens the grammar would not have
    written). ``stop_ids``: the tokens allowed once the grammar has closed; ``vocab_size``: the logits' width.
    """

    def __init__(self, grammar: Any, prefix: Sequence[int], *, stop_ids: Sequence[int], vocab_size: int) -> None:
        import xgrammar as xgr

        self._xgr = xgr
        self.matcher = xgr.GrammarMatcher(grammar)
        for i, token in enumerate(prefix):
            if not self.matcher.accept_token(int(token)):
                raise ValueError(f"the grammar refuses the prefix at token {i} (id {token}): keep only the tokens "
                                 "before the first one it refuses (envgen.backends.transformers_local.first_rejected)")
        self.bitmask = xgr.allocate_token_bitmask(1, vocab_size)
        self.stop_ids = [int(t) for t in stop_ids]
        self.seen = 0  #: output tokens the matcher has accepted
        self.refused = 0  #: sampled tokens the matcher refused (none while the mask is applied)

    def advance(self, output_ids: Sequence[int]) -> None:
        """Accept the tokens the row sampled since the last call (a stop token after the grammar closed ends it)."""
        for token in output_ids[self.seen:]:
            if self.matcher.is_terminated():
                break
            if not self.matcher.accept_token(int(token)):
                self.refused += 1
        self.seen = len(output_ids)

    def __call__(self, output_ids: Sequence[int], logits: Any) -> Any:
        self.advance(output_ids)
        if self.matcher.is_terminated():
            return stop_now(self.stop_ids, output_ids, logits)
        self.matcher.fill_next_token_bitmask(self.bitmask)
        self._xgr.apply_token_bitmask_inplace(logits.view(1, -1), self.bitmask.to(logits.device, non_blocking=True))
        return logits


def stop_now(stops: Sequence[int], output_ids: Sequence[int], logits: Any) -> Any:
    """A logits row with only the stop tokens left (in place): a row whose grammar has closed, or whose prefix
    the grammar refuses (it ends with an empty continuation, which the format recovery drops as unparsed)."""
    keep = logits[list(stops)].clone()
    logits.fill_(float("-inf"))
    logits[list(stops)] = keep
    return logits
