"""Seeds derived from parts: the project's one way to turn an explicit seed and a context into a seed.

Determinism by construction means every sampled thing derives from an explicit seed. Where one seed
must give many (one per prompt of a batch, per episode of a task, per training step and rank),
:func:`stable_seed` derives each from the seed and what tells them apart::

    stable_seed(seed, prompt_index)          # a backend's per-prompt sampling seed
    stable_seed(seed, task.key, trial)       # an evaluation episode
    stable_seed(run_seed, step, rank, role)  # a training step's rollouts

Contract: the result is an integer in ``[0, 2**31)`` (every library takes it: NumPy, torch, vLLM,
OpenAI's ``seed``), a function of the parts' ``str`` only, stable across processes, platforms and
Python versions (SHA-256, no ``hash()``), and the parts are joined by a separator that text rarely
holds, so ``("a:b", "c")`` and ``("a", "b:c")`` differ.

:func:`fresh_seed` is the other way: a seed in the same range drawn from the operating system's entropy
(``secrets``), for episodes whose seed spec code must not be able to predict (the validity gate's, whose
draws a hostile tool could otherwise recognise); whoever draws one records it, so the run can be replayed.
"""

from __future__ import annotations

import hashlib
import secrets

__all__ = ["fresh_seed", "stable_seed"]

_SEP = "\x1f"  # ASCII unit separator


def stable_seed(*parts: object) -> int:
    """A 31-bit seed derived from ``parts`` (see the module docstring)."""
    digest = hashlib.sha256(_SEP.join(str(p) for p in parts).encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def fresh_seed() -> int:
    """An unpredictable seed in ``[0, 2**31)``, the range of :func:`stable_seed` (see the module docstring)."""
    return secrets.randbelow(2**31)
