"""The ``world`` proposer and the world stream's writers (blueprint version 2).

* :mod:`~envgen.proposers.world.proposer`: :class:`WorldProposer`, the default of ``envwright generate``;
* :mod:`~envgen.proposers.world.writer`: the AST world writer (a catalog domain with a document's own
  operations grafted on), the model's teacher for the world format;
* :mod:`~envgen.proposers.world.prompt`: the world stream's prompt for model proposers.

The world compiler they feed is :mod:`envgen.world`, below this package.
"""

from __future__ import annotations

from envgen.proposers.world.proposer import GENERATOR, WorldProposer

__all__ = ["GENERATOR", "WorldProposer"]
