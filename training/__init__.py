"""envwright's trainer: GRPO self-play (proposer and solver roles, one model), rollouts over ToolEnv,
rewards, recovery-step self-distillation, configs and benchmarks.

Modules (each opens with its contract):

* :mod:`training.config` -- typed config (pydantic dataclasses + TRL's ``GRPOConfig`` keywords), YAML,
  ``--set`` overrides; :mod:`training.trl_config` -- the device, dtype and ``trl.GRPOConfig`` it sets;
* :mod:`training.generation` -- generators (HF fast path, vLLM, scripted) and the policy as an envgen backend;
* :mod:`training.model` -- loading the policy (LoRA, GGUF, chat template) and choosing its generator;
* :mod:`training.rollout` -- the solver's episodes through the one episode engine (:mod:`gym_envs.engine`, whose
  :mod:`gym_envs.messages` builds the messages and tokens, ``env_mask`` included, that evaluation shows too);
* :mod:`training.rewards`, :mod:`training.advantages`, :mod:`training.loss` -- small pure pieces of the update;
  every SFT path (the solver warm starts of ``bench learning`` and ``bench selfplay``, distillation, the proposer
  warm start) leaves out a sample longer than the model's context window (:func:`training.model.context_window`),
  counts it as ``too_long`` and warns (:func:`training.loss.drop_too_long`);
* :mod:`training.solver` -- ``envwright train solver``: TRL ``GRPOTrainer`` with our ``rollout_func``;
* :mod:`training.parallel` -- the two-GPU layouts' processes: the world a config is written for, each
  process's share of the sandbox workers;
* :mod:`training.selfplay` -- ``envwright train selfplay``: dual-stream rounds, per-role advantages, checkpoints;
* :mod:`training.distill` -- ``envwright train distill``: recovery-step self-distillation;
* :mod:`training.checkpoint`, :mod:`training.metrics` -- checkpoints and resume; metrics.jsonl, TensorBoard/W&B, plots;
* :mod:`training.cli` -- the ``train`` and ``plot`` commands; :mod:`training.bench` -- GPU benchmarks
  (``envwright bench speed|precision|throughput|learning|selfplay``).

Layering: imports ``envgen`` and ``gym_envs``, never ``eval``. Importing this package imports nothing
heavy (torch, transformers and TRL load when a trainer is built).
"""
