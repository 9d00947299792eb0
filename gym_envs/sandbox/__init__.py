"""The sandbox: runs a spec's tool code and checks, in-process or in isolated worker processes.

Threat model
============
The ``code`` of an :class:`~gym_envs.spec.EnvSpec` and its ``python`` checks are written by a model and
are **untrusted**; so are the agent's tool-call arguments. The host (trainer, generator, evaluator) is
trusted, and so is what it passes in; a worker's replies are treated as untrusted (size-capped, parsed as
plain JSON, any failure is a crashed worker). One pure-Python implementation enforces all of it; each
property has adversarial tests in ``tests/gym_envs/sandbox/`` (one file per module below). We defend:

1. **Confidentiality and integrity of the host.** Code is compiled with RestrictedPython under a policy
   (:mod:`~gym_envs.sandbox.guards`) that rejects ``_``-names (also as positional-only, keyword-only and ``*``
   parameters), ``except*``, ``yield`` and the frame/code/traceback attributes, and drops annotations (library
   code such as ``typing.get_type_hints`` would ``eval`` a string annotation with the real builtins); class
   statements fail (there is no ``__build_class__``). At run time ``_getattr_`` refuses ``_``-names, those
   attributes, ``format`` and ``format_map`` on anything, every attribute of an exception but ``args`` and
   ``register`` on ABCs. Builtins are a curated set without ``type``, ``globals``, ``vars``, ``eval``, ``exec``,
   ``compile``, ``open``, ``getattr``, ``setattr``, ``id`` or ``hash``. ``import`` is an allow-list that hands
   out read-only **views** of pure modules (:mod:`~gym_envs.sandbox.modules`): classes, functions and immutable
   constants, never a module, a mutable module-level container or shared mutable state; functions that would
   bypass the guards, run source text (``functools.singledispatch``) or reach process-wide state are replaced or
   left out. **Re-exports reached through allowed modules**: an allowed module's public name can be another
   module's function (``statistics.mul`` is ``operator.mul``, ``fractions.Decimal`` is ``decimal.Decimal``), so
   what a view holds is decided by the identity of each object, whichever module hands it on: a removed object
   is left out of every view, a replaced one replaced in every view (a class by a stand-in that keeps
   ``isinstance`` and its class attributes working). :mod:`~gym_envs.sandbox.surface` classifies every callable
   reachable from the builtins and each view, through attributes and instances, as removed, replaced, wrapped by
   ``_getattr_`` or allowed as it is with its reason; ``test_surface.py`` enumerates the reachable set afresh
   and fails, naming it, on anything unclassified (a new Python version adding a function) and on any removed or
   replaced original still reachable under another name. Views cannot be written (``_write_`` refuses attribute
   writes on anything but the code's own dicts and lists). SQL (:mod:`~gym_envs.sandbox.sqlpolicy`,
   :mod:`~gym_envs.sandbox.db`) is allowed, not filtered: the authorizer allows reads and writes of the schema's
   own tables, ``CREATE TABLE``/``INDEX`` at setup, and calls of an allow-list of SQL functions, and denies every
   other action, table and function whatever the SQLite build compiles in (``sqlite_stmt``, ``dbstat``,
   ``fts3_tokenizer``...); every function off the list is also replaced on the connection by one that refuses, so
   a column's ``DEFAULT`` (which the authorizer never sees) cannot call it either. Untrusted SQL may not contain
   the host statements' tag.
2. **Spec code runs only inside its own call.** A ``db`` facade works only while the engine runs a call
   (or check) of its own episode: every statement checks the connection's owner token, which the engine
   installs around each piece of spec code and removes after it. A statement started while another runs
   on the connection is refused before it touches the guard state, and each statement saves and
   restores the authorizer mode and deadline it replaces, so nothing can leave a connection in host mode
   or without a deadline. No spec code runs at an arbitrary moment: there are no class statements (so no
   ``__del__``) and no ``yield``. We forbid generator functions rather than collecting garbage at each call
   boundary, because a collection there would still run one episode's abandoned generator inside another
   episode's call (charged to that call's deadline, its outcome depending on when the collector ran) and
   would cost a full collection per call; generator expressions stay, because their frames hold no
   handlers, so freeing one runs no spec code.
3. **What spec code computes depends only on its episode.** Every episode re-executes the compiled module
   in fresh globals over builtins it cannot reach, gets its database back in the template's exact state
   (connections are pooled per program; a reset is a rollback to the episode savepoint) with
   ``last_insert_rowid()``/``changes()`` reset, and its own ``random`` (seeded from the episode seed; it
   cannot be re-seeded from entropy). Nothing reachable reads the clock, entropy, the host's time zone or a
   process-wide random generator, or writes process state: ``datetime``'s ``now``/``today``/``utcnow`` are
   refused, ``fromtimestamp``/``astimezone``/``timestamp`` need an explicit tzinfo, ``strftime`` (and an
   f-string's format spec, compiled through ``_format_``) refuses ``%s``, ``time.strftime`` needs its time
   tuple and refuses ``%z``/``%Z`` too, ``statistics.NormalDist.samples`` and ``Random.seed`` need a seed,
   ``re`` refuses ``re.DEBUG`` (it printed to the host's stdout) and leaves out ``purge``,
   ``functools.total_ordering`` (it writes the class it is given) is left out, SQL's date functions refuse
   ``'now'``, ``'localtime'`` and ``'utc'``, and ``random()`` and ``current_*`` are refused. An episode that
   imports a module from which ``decimal`` is reachable (``decimal``, ``fractions`` and ``statistics``, which
   re-export ``Decimal``: the red team reached the host's context through them) computes in a context of its
   own, never the host thread's (whose precision the host may set, and whose flags would collect the spec's):
   a copy of the sandbox's, made at that import and installed around all the episode's later code
   (:class:`~gym_envs.sandbox.scope.CallScope`); ``decimal.Context()`` fills what it is not given from Python's
   defaults spelled out, not from the process's ``DefaultContext``, and the host's own ``Decimal`` parsing of
   replies uses no context. **Process state visible through text, identity and counters** is out of reach, so
   nothing spec code observes differs between a worker and the host or between runs: the text of an object has
   no memory address in it (``<function f>``, not ``<function f at 0x7f...>``), however it is made (``repr``,
   ``str``, f-strings, ``%`` formatting, ``print``, an exception's ``args`` and the error text the agent sees:
   :mod:`~gym_envs.sandbox.reprs`), and a fuzz of every reachable callable finds none handing one back
   (``collections.UserString`` did, and is removed); ``id`` and ``hash`` are not builtins, ``random.seed``
   refuses objects it would seed from their hash, and the audit finds nothing reachable that calls them or reads
   ``gc``, ``sys`` or locks; nothing reachable from the views is mutable (no shared counter, cache or registry;
   ``functools.get_cache_token``, the process-wide ABC counter, is removed), and what an episode makes at
   module level (``itertools.count()``, an ``lru_cache``) is made afresh for each episode. An audit test
   (``tests/gym_envs/sandbox/test_audit.py``) walks every attribute reachable from the builtins and the
   module views, judges the code behind each (transitively, Python by the globals it loads, C by a table)
   and fails on anything that reaches such state, or ``eval``/``exec``/``compile``, and is not listed there as
   harmless with its reason (the memo of compiled regular expressions, constant tables, ``namedtuple``'s
   ``eval`` of checked identifiers). Arguments enter and results leave as plain JSON
   values (copied, subclasses stripped, nesting capped), so a ``python`` check passes only when it returns
   the real ``True``.
4. **Availability.** In **worker** mode (the default) code runs in a separate process (which imports only
   this package and :mod:`gym_envs.errors`) with rlimits (CPU seconds per request, address space, open
   files, processes, file size 0, no core dumps, an SQLite heap limit), a per-request wall-clock timeout
   enforced by the parent (which kills the worker, starts a fresh one and replays the surviving episodes'
   logged calls, so they continue), an in-worker timer for cheap recovery from Python loops (it re-fires,
   so a ``finally:`` loop is interrupted too; C code that ignores signals is left to the parent's timeout
   or RLIMIT_CPU), a low recursion limit (spec code starts every call and check with exactly
   ``Limits.recursion_limit`` frames left, whatever path called it: a single call, a batch, a replay),
   capped ``print`` output, capped result and exception text, and its
   stdin/stdout moved off the protocol pipes. SQL runs under a progress-handler deadline, length, row and
   result-size limits, and ``printf``/``format`` widths and precisions capped for any argument type (the
   call runs SQLite's own code on a canonical format whose widths are checked literals). Every way to
   multiply, raise to a power, shift or repeat by an argument's value (:mod:`~gym_envs.sandbox.sizes`) is
   checked before it runs, in both modes: the operators for every operand type (integers, fractions, anything
   with a length; decimals through their capped contexts), ``operator``'s functions under any name,
   ``math.prod``/``factorial``/``comb``/``perm``/``lcm``, ``itertools.repeat``/``product``/
   ``combinations_with_replacement``/``tee``, ``statistics.fmean`` (it multiplies with ``operator.mul``
   inside), ``json``'s ``indent`` (repeated at every nesting level),
   ``round``, ``random.getrandbits``/``randbytes``, and ``Decimal``/``Fraction`` values whose exponent would
   make a huge integer when converted. Action parsing (:mod:`gym_envs.parsing`) never raises: deep or huge
   actions become parse errors.
5. **Reward integrity.** Checks read the state after the turn through probes on a read-only view (authorizer in
   ``ro`` mode, every statement of the view prepared under a text no other mode's statement has, so the statement
   cache never serves it one a tool prepared; :mod:`~gym_envs.sandbox.checks`) and only JSON crosses back: a query's
   rows, a ``python`` check's verdict, digests; the verdicts are the host's (:mod:`gym_envs.checks`). The state
   always equals the replay of the episode's logged calls (successes, and failures that a replay reproduces): a call
   that fails after writing is undone by rolling back to the episode start and replaying the log (unless the spec
   keeps failed calls' writes, ``failed_calls: "keep"``: then a failure a replay reproduces keeps them, and its
   replay keeps them too), and an episode whose transaction SQLite aborted is rebuilt from the image the same way.
   A checkpoint (``fork``/``restore``, given
   only to a program whose code keeps no state between calls: :mod:`~gym_envs.sandbox.purity`) is a savepoint plus
   the connection's counters, so restoring it gives that same state; one a reset removed is replayed. The table
   digests that ``state`` and ``unchanged`` checks compare are always those of the current content: a table's cached
   digest (:mod:`~gym_envs.sandbox.digests`) is dropped by every event that can change it (a statement that writes it
   or a table it cascades from, seen by the authorizer; a rollback past such a write; an image load; a trusted
   write), and the cache adds nothing spec code can see (no SQL object, no change to ``changes()`` or
   ``last_insert_rowid()``). For code that keeps no state, a digest may also come from an earlier episode that made
   the same changing calls on the same setup (:mod:`~gym_envs.sandbox.recall`: the ground checkpoints stand on), and, in
   an episode that asks for it (the validity gate's), a call that changes nothing may take the result the same call
   gave on the same content, counters and arguments (answered as a copy of its own; never in an episode that
   computes in a decimal context of its own); the gate's determinism rule reads its replay's digests fresh and makes
   its replay's calls afresh.

6. **Validation cannot be told from use.** What spec code can observe (its limits, recursion headroom, hash
   order, the draws of its episode's ``random``) is the same in every episode a worker runs: the validity
   gate judges generated specs on the worker, under episode seeds drawn fresh for each run
   (:func:`gym_envs.seeding.fresh_seed`), and every mode that pays a reward (the TRL adapter, GRPO rollouts,
   evaluation, the MCP server, ``ToolEnv`` and its vector env) runs them on the worker with the default
   limits unless told otherwise, so a spec cannot behave honestly only while the gate watches.

Not defended: the **in-process** mode has the same guards minus the process boundary, so an infinite loop, a
catastrophic regular expression, a C-level CPU burner (``hashlib.pbkdf2_hmac`` with 10**9 rounds, one SQLite
function call over a megabyte such as an ``instr`` or a LIKE with a 100-character pattern) or a memory bomb that
evades the size guards (a width: ``'x'.ljust(10**10)``, ``(0).to_bytes(10**10)``, an f-string, ``%`` or ``strftime``
width; ``''.join`` of a repeated long string, ``str.replace`` of an empty pattern; allocation that grows with the
time spent, as ``list(itertools.count())``) can stall or exhaust the host, and what spec code can observe there
differs from a worker's (the host's recursion depth and hash seed, no memory limit): a spec judged on a worker
could tell it runs in process. Use it only for trusted specs (the shipped examples, the compilers' own output).
Episode seeds are as unpredictable as their source: the gate's and the TRL adapter's are drawn fresh, while
rollouts and evaluation derive theirs from the run's seed (for reproducible runs), so an author who knows a run's
seed could compute its episodes' seeds; give runs over untrusted specs a seed that is not public. The worker
mode's limits are per request, so a worker's own memory is shared by the episodes it holds. A tool that writes
exactly the rows a check looks for is judged by state: that is correct (the checks define the task), not a hack.
Set iteration order follows hashes, and spec code can observe it: for strings it depends on the hash seed
(workers run with ``PYTHONHASHSEED=0``, the host with its own, so the order can differ between the modes), for
identity-hashed objects (functions) on their addresses. The memo of compiled regular expressions is the
process's: an episode that compiles hundreds of patterns could see through ``is`` when one was evicted. The
locale is the process's (the C locale unless host code changes it), and ``datetime.strptime``'s ``%Z`` matches
the names of the process's time zone (workers inherit the host's ``TZ``). Timing (a call that times out in one
run may not in another) is not deterministic.

Layout
======
:mod:`~gym_envs.sandbox.guards` (compilation and run-time guards), :mod:`~gym_envs.sandbox.modules` (builtins and
module views), :mod:`~gym_envs.sandbox.surface` (what is reachable, and what is removed or replaced),
:mod:`~gym_envs.sandbox.sizes` (the size guards), :mod:`~gym_envs.sandbox.reprs` (text without addresses),
:mod:`~gym_envs.sandbox.scope` (the call scope), :mod:`~gym_envs.sandbox.sqlpolicy`, :mod:`~gym_envs.sandbox.db` and
:mod:`~gym_envs.sandbox.binding` (the SQL policy, the connection and the ``db`` facade, bound parameters and result
rows), :mod:`~gym_envs.sandbox.digests` and :mod:`~gym_envs.sandbox.content` (table digests and their cache, the
host's reads of content), :mod:`~gym_envs.sandbox.values` and :mod:`~gym_envs.sandbox.arguments` (plain JSON,
argument checks), :mod:`~gym_envs.sandbox.engine`, :mod:`~gym_envs.sandbox.program` and
:mod:`~gym_envs.sandbox.checks` (the engine, the programs it loads, the state reads of checks),
:mod:`~gym_envs.sandbox.host` and :mod:`~gym_envs.sandbox.inprocess` (sessions, the in-process executor),
:mod:`~gym_envs.sandbox.protocol` and :mod:`~gym_envs.sandbox.pool` (the worker protocol and the worker executor).

"""

from __future__ import annotations

import os

from gym_envs.errors import ErrorKind, LoadFailure, ToolError
from gym_envs.sandbox.arguments import validate_arguments
from gym_envs.sandbox.db import StateDB
from gym_envs.sandbox.engine import Engine
from gym_envs.sandbox.facade import DbFacade
from gym_envs.sandbox.guards import compile_code
from gym_envs.sandbox.host import CallResult, CheckResult, Executor, Session, program_request
from gym_envs.sandbox.inprocess import InProcessExecutor
from gym_envs.sandbox.limits import Limits, SqlLimits
from gym_envs.sandbox.modules import ALLOWED_MODULES
from gym_envs.sandbox.pool import WorkerExecutor
from gym_envs.sandbox.program import FAILED_CALLS
from gym_envs.sandbox.values import plain_json

__all__ = [
    "ALLOWED_MODULES",
    "FAILED_CALLS",
    "CallResult",
    "CheckResult",
    "DbFacade",
    "Engine",
    "ErrorKind",
    "Executor",
    "InProcessExecutor",
    "Limits",
    "LoadFailure",
    "Session",
    "SqlLimits",
    "StateDB",
    "ToolError",
    "WorkerExecutor",
    "compile_code",
    "default_executor",
    "make_executor",
    "plain_json",
    "program_request",
    "validate_arguments",
]


def make_executor(mode: str = "worker", *, workers: int = 1, limits: Limits | None = None) -> Executor:
    """A new executor: ``worker`` (isolated, default) or ``inprocess`` (trusted specs)."""
    if mode == "worker":
        return WorkerExecutor(workers, limits)
    if mode in ("inprocess", "in-process", "in_process"):
        return InProcessExecutor(limits)
    raise ValueError(f"unknown executor mode {mode!r}; use 'worker' or 'inprocess'")


_DEFAULTS: dict[str, Executor] = {}
_DEFAULTS_PID = [os.getpid()]


def default_executor(mode: str = "worker") -> Executor:
    """A process-wide shared executor per mode (re-created after ``fork``)."""
    if os.getpid() != _DEFAULTS_PID[0]:
        _DEFAULTS.clear()
        _DEFAULTS_PID[0] = os.getpid()
    if mode not in _DEFAULTS:
        _DEFAULTS[mode] = make_executor(mode)
    return _DEFAULTS[mode]
