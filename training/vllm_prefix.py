"""vLLM's side of a grammar from a prefix (:mod:`training.prefix_grammar`): a logits processor for ``vllm.LLM``.

Imported only where vLLM is installed (it subclasses vLLM's ``AdapterLogitsProcessor``, the per-request adapter
of vLLM's V1 logits-processor interface, which vLLM 0.26 runs for SmolLM2's and Qwen3's architectures);
:class:`training.vllm_generator.VLLMGenerator` builds its engine with :data:`training.prefix_grammar.PROCESSOR`
(a name, so that an engine in another process imports it too). A request without ``extra_args[EXTRA_KEY]`` is
left alone; one with it gets a :class:`~training.prefix_grammar.PrefixGrammar` over the grammar of its schema,
compiled once per schema for the engine's tokenizer (:class:`envgen.backends.transformers_local.JsonGrammars`,
which also cuts long repetitions).
"""

from __future__ import annotations

import functools
from typing import Any

from vllm.v1.sample.logits_processor import AdapterLogitsProcessor

from training.prefix_grammar import PrefixGrammar, read_request, stop_now

__all__ = ["PrefixGrammarProcessor"]


class PrefixGrammarProcessor(AdapterLogitsProcessor):
    """Rows that go on under a grammar from a prefix (module docstring)."""

    def __init__(self, vllm_config: Any, device: Any, is_pin_memory: bool) -> None:
        super().__init__(vllm_config, device, is_pin_memory)
        self._model_config = vllm_config.model_config
        self._grammars: Any = None
        self._stop_ids: list[int] = []

    @classmethod
    def validate_params(cls, params: Any) -> None:
        read_request(getattr(params, "extra_args", None))  # raises ValueError on a malformed request

    def is_argmax_invariant(self) -> bool:
        return False  # it masks tokens: a greedy row's choice changes too

    def _compiled(self, schema: dict[str, Any]) -> Any:
        if self._grammars is None:
            from transformers import AutoTokenizer

            from envgen.backends.transformers_local import JsonGrammars

            cfg = self._model_config
            tok = AutoTokenizer.from_pretrained(cfg.tokenizer, revision=getattr(cfg, "tokenizer_revision", None),
                                                trust_remote_code=bool(getattr(cfg, "trust_remote_code", False)))
            self._stop_ids = [tok.eos_token_id] if isinstance(tok.eos_token_id, int) else []
            self._vocab = int(cfg.get_vocab_size())
            self._grammars = JsonGrammars(tok, self._vocab, self._stop_ids)
        return self._grammars.get(schema)

    def new_req_logits_processor(self, params: Any) -> Any:
        request = read_request(getattr(params, "extra_args", None))
        if request is None:
            return None
        schema, prefix = request
        grammar = self._compiled(schema)
        stops = sorted(set(self._stop_ids) | set(getattr(params, "stop_token_ids", None) or []))
        try:
            return PrefixGrammar(grammar, prefix, stop_ids=stops, vocab_size=self._vocab)
        except ValueError:  # a prefix the grammar refuses: the row stops at once (never an error in the engine)
            return functools.partial(stop_now, stops)
