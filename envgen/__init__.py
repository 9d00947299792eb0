"""envgen: documents in, validated environments out.

Proposers (``template``, ``llm``) and model backends (``transformers``, ``vllm``, ``openai``,
``scripted``) write :class:`~gym_envs.spec.EnvSpec` candidates; the validity gate
(:mod:`envgen.gate`) accepts or rejects them with reasons; the library (:mod:`envgen.library`)
stores accepted specs with a catalog; :mod:`envgen.skills` co-evolves a skill library with the model.
Imports nothing heavy at package import; :mod:`envgen.cli` is the ``envwright`` command
(``python -m envgen`` runs it too).
"""
