"""``ToolEnv``: one environment spec as a multi-turn Gymnasium environment.

Episode semantics (gym_envs/ENVSPEC.md):

* ``reset(seed=, options={"task": ID})`` opens a fresh episode (the database is
  rebuilt from a cached image, then the task's ``setup_sql`` runs) and returns
  the first instruction. Without a
  task option the env's ``task`` argument is used, else a task is drawn with
  the env's seeded ``np_random``. The episode's own seed (the tool code's
  ``random``) is ``options["episode_seed"]`` when given, else drawn from
  ``np_random``. :func:`reset_many` and :func:`step_many` do the same for
  several envs at once, batching their executors' round trips.
* An action is the model's raw text or a structured dict (see
  :mod:`gym_envs.parsing`). If it contains tool calls, each is executed and the
  observation is its JSON result (a JSON list, one entry per call, when there
  are several). A message with no tool call ends the turn: its checks are
  scored on the state after the turn and the next instruction becomes the
  observation; after the last turn the episode terminates. In a task with a
  ``scenario`` (spec_version 2) the message goes to the user first
  (:mod:`gym_envs.conversation`; ``user``, the :class:`~gym_envs.users.ScriptedUser`
  by default): a reply is the observation (``info["user_reply"]``) and the turn
  goes on. ``max_steps`` actions truncate it (the current turn is scored as it
  stands, later turns fail).
* Rewards: ``episode`` (1.0 at the end iff every check of every turn passed),
  ``turns``, ``checks`` and ``progress`` (credited as each turn ends, so an
  episode's rewards sum to the fraction of turns / checks passed). ``progress``
  is ``checks`` without the floor: as a turn begins, its checks are judged as if
  the agent did nothing in it (no call, an empty reply); those that would pass
  (the guards) are credited only in a turn that also passes a check doing nothing
  fails, so doing nothing scores 0. ``info`` carries the per-check results of
  every ended turn; ``info["score"]`` has the modes at the end (``progress`` in
  that mode or with ``track_progress``: the others skip its extra check per turn).
* A ``calls`` check's ``require`` counts successful calls of the turn, its
  ``forbid`` counts every attempted call. ``judged`` checks count in no reward mode:
  each turn record's ``judged`` lists them undecided (a judge in evaluation decides them).
* Tools a task withholds (``withheld_tools``) are offered from the turn that
  reveals them (``reveal_tools``): the system prompt and ``info["tools"]`` list
  the tools offered, the revealing turn's observation adds the new tools' schemas
  and its step's ``info["tools"]`` the tools offered from then on, and a call of a
  tool not offered gets the answer a call of a name no tool has gets
  (:mod:`gym_envs.offers`).

Hidden from the agent: checks, references, code. The env's own spec lives in
``env_spec`` (``Env.spec`` belongs to Gymnasium).
"""

from __future__ import annotations

import copy
import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from corpora.errors import did_you_mean
from gym_envs import display
from gym_envs.availability import revealed_text
from gym_envs.conversation import Conversation
from gym_envs.errors import ErrorKind
from gym_envs.offers import Offers
from gym_envs.outcome import TurnOutcome
from gym_envs.parsing import ParsedAction, action_text, parse_action
from gym_envs.prompt import system_prompt, tool_system_prompt
from gym_envs.replay import EpisodeCheckpoint, Replays
from gym_envs.sandbox import CallResult, Executor, Session, default_executor, make_executor
from gym_envs.spec import EnvSpec, Task, as_spec
from gym_envs.users import ScriptedUser, UserReply, UserSimulator

__all__ = ["REWARD_MODES", "EpisodeCheckpoint", "ToolEnv", "TurnOutcome", "check_tool_env_options", "cut_observation",
           "reset_many", "step_many", "system_prompt", "text_space", "tool_system_prompt"]

REWARD_MODES = ("episode", "turns", "checks", "progress")
# json.dumps(..., ensure_ascii=False) without building an encoder per call
_OBSERVATION_JSON = json.JSONEncoder(ensure_ascii=False).encode
_CHARSET = "".join(chr(c) for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF)


def cut_observation(text: str, limit: int) -> str:
    """``text`` when it has at most ``limit`` characters; else its beginning and a marker saying how much was cut
    (``...[truncated: 8912 of 12912 characters not shown]``), in at most ``limit`` characters."""
    if len(text) <= limit:
        return text
    marker = f"...[truncated: {len(text)} of {len(text)} characters not shown]"  # the longest the marker gets
    keep = max(limit - len(marker), 0)
    return (text[:keep] + f"...[truncated: {len(text) - keep} of {len(text)} characters not shown]")[:max(limit, 0)]


class _BmpText(spaces.Text):
    """``Text`` whose deep copies share the (immutable) charset tables and copy only the RNG:
    Gymnasium's vector envs deep-copy the space once per sub-env, which for 63,488 characters
    took about 0.1 s each. Its ``repr`` names the charset instead of listing it."""

    def __repr__(self) -> str:
        return (f"Text({self.min_length}, {self.max_length}, charset=the Basic Multilingual Plane "
                f"(U+0000-U+FFFF but surrogates: {len(self.character_set):,} characters))")

    def __deepcopy__(self, memo: dict[int, Any]) -> _BmpText:
        new = copy.copy(self)
        memo[id(self)] = new
        new._np_random = copy.deepcopy(self._np_random, memo)
        return new


def text_space(max_length: int) -> spaces.Text:
    """A ``Text`` space over the Basic Multilingual Plane (Gymnasium needs an explicit charset).

    Building the charset index costs milliseconds, so spaces are copied from a cached prototype.
    """
    proto = _TEXT_SPACES.get(max_length)
    if proto is None:
        proto = _TEXT_SPACES[max_length] = _BmpText(max_length=max_length, min_length=0, charset=_CHARSET)
    space = copy.copy(proto)
    space._np_random = None  # type: ignore[assignment]  # Gymnasium seeds a space lazily from None
    return space


_TEXT_SPACES: dict[int, spaces.Text] = {}


def resolve_spec_ref(spec: Any) -> Any:
    """A shipped example's name (``"library-loans"``) becomes its file; anything else is returned as is.

    A string that is neither JSON text, an existing file nor an example's name raises
    ``FileNotFoundError`` saying what ``spec=`` accepts (and the closest example names).
    """
    if not isinstance(spec, str) or spec.lstrip().startswith("{") or Path(spec).expanduser().exists():
        return spec
    from gym_envs.examples import UnknownExample, example_path

    try:
        return example_path(spec)
    except UnknownExample as e:
        raise FileNotFoundError(f"spec={spec!r}: no such spec file, and {e}. spec= takes a spec file, JSON "
                                "text, a dict, an EnvSpec or a shipped example's name") from None


class ToolEnv(Replays, Conversation, Offers, gym.Env[str, Any]):
    """A generated tool-use environment (see the module docstring for the semantics).

    Args:
        spec: an :class:`EnvSpec`, a dict, JSON text, a path to a spec file, or a shipped example's
            name (``"library-loans"``).
        task: default task id (or index) for ``reset``; ``None`` draws one per reset.
        reward_mode: ``episode`` (default), ``turns``, ``checks`` or ``progress`` (``checks`` without the credit
            doing nothing gets; module docstring).
        max_steps: actions per episode before truncation.
        render_mode: ``None`` or ``"ansi"`` (``render()`` returns the transcript).
        executor: ``"worker"`` (isolated, default), ``"inprocess"`` (trusted specs), or an
            :class:`~gym_envs.sandbox.Executor` instance to share.
        max_observation_chars: observation text (the calls' results, an instruction, a user's reply) is cut to
            this length, with a marker that says how much was cut (:func:`cut_observation`); the episode engine
            shows each call's result cut alike (:class:`~gym_envs.episode_env.ToolEnvAdapter`).
        track_progress: judge each turn's checks as it begins in every mode (the ``progress`` mode always
            does), so that ``info["score"]`` has ``progress`` beside the mode that pays: for trainers that train
            on one mode and report the other. One more check of the turn's checks per turn.
        user: the user simulator that answers the agent's plain messages in a task with a scenario (default: a
            :class:`~gym_envs.users.ScriptedUser`; a :class:`~gym_envs.users.ModelUser` has a model play it).
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}
    #: the episodes it opens from now on may answer a call that changes nothing with the result the same call gave on
    #: the same content (:attr:`~gym_envs.sandbox.Session.recall`): for callers that replay the same calls many
    #: times (the validity gate), never for one that tests whether replaying them gives the same results
    recall_calls = False

    def __init__(self, spec: Any, task: str | int | None = None, *, reward_mode: str = "episode",
                 max_steps: int = 32, render_mode: str | None = None,
                 executor: str | Executor = "worker", max_observation_chars: int = 16_384,
                 track_progress: bool = False, user: UserSimulator | None = None):
        if reward_mode not in REWARD_MODES:
            raise ValueError(f"reward_mode must be one of {REWARD_MODES}, got {reward_mode!r}")
        if max_steps < 1:
            raise ValueError("max_steps must be >= 1")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        if user is not None and not isinstance(user, UserSimulator):
            raise TypeError(f"user must be a gym_envs.users.UserSimulator (ScriptedUser, ModelUser), got {user!r}")
        self.env_spec: EnvSpec = as_spec(resolve_spec_ref(spec))
        if task is not None:
            self.env_spec.task(task)  # fail early on an unknown task id
        self.default_task = task
        self.reward_mode = reward_mode
        self.track_progress = track_progress or reward_mode == "progress"
        self.max_steps = max_steps
        self.render_mode = render_mode
        self.max_observation_chars = max_observation_chars
        self._executor_arg = executor
        self.executor: Executor = (executor if isinstance(executor, Executor) else
                                   default_executor(executor) if executor in ("worker", "inprocess")
                                   else make_executor(executor))
        self.observation_space = text_space(max(max_observation_chars, 1))
        self.action_space = text_space(8_192)
        self.session: Session | None = None
        self.task: Task | None = None
        self.turns: list[TurnOutcome] = []
        self.turn_index = 0
        self.steps = 0
        self.done = True
        self.transcript: list[tuple[str, str]] = []
        self._system_prompt = system_prompt(self.env_spec)
        self._all_tools = [t.model_dump() for t in self.env_spec.tools]
        self._tool_dicts = self._all_tools  #: the tools offered now (all but those the task withholds)
        self._offered = self._all_names = frozenset(t["name"] for t in self._all_tools)
        self._revealed: list[dict[str, Any]] = []  #: the tools the current turn revealed
        self._prompts = {frozenset(): self._system_prompt}  # the task's withheld tools -> its system prompt
        self.instruction = ""  #: the current turn's observation: its instruction, with the tools it reveals
        self.user: UserSimulator = user if user is not None else ScriptedUser()
        self._preset: UserReply | None = None
        self._prior: list[str] = []

    # -- gymnasium API -------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        self._open_episode(self._choose_episode(seed, options))
        return self._start_episode()

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        parsed, info = self._begin_step(action)
        if parsed.is_message:
            return self._message(parsed.content, info)
        assert self.session is not None
        return self._after_calls(parsed, info, [self._call(c["name"], c["arguments"]) for c in parsed.calls])

    # reset and step in phases, so that reset_many and step_many can batch the executor's work
    def _choose_episode(self, seed: int | None, options: dict[str, Any] | None) -> int:
        """Seed ``np_random``, pick the task; returns the episode's seed."""
        super().reset(seed=seed)
        options = options or {}
        task_id = options.get("task", self.default_task)
        if task_id is None:
            task_id = int(self.np_random.integers(len(self.env_spec.tasks)))
        self.task = self.env_spec.task(task_id)
        if "episode_seed" in options:  # drawn only when not given (the draw advances np_random)
            return int(options["episode_seed"])
        return int(self.np_random.integers(2**31 - 1))

    def _open_episode(self, episode_seed: int) -> None:
        """Open the chosen task's episode on the session (made first if there is none): the template state,
        then the task's ``setup_sql``."""
        assert self.task is not None
        if self.session is None or self.session.lost:
            self.session = self.executor.session(self.env_spec, seed=episode_seed, start=False)
        self.session.setup = tuple(self.task.setup_sql)
        self.session.recall = self.recall_calls
        self.session.open(episode_seed)

    def _start_episode(self) -> tuple[str, dict[str, Any]]:
        """After the session's episode is open: the first turn's observation and info."""
        assert self.task is not None
        self.turns = []
        self.turn_index = 0
        self.steps = 0
        self.done = False
        self._prior, self._preset = [], None
        self._system_prompt = self._opening_prompt()
        self._offer_at(-1)
        self.transcript = [("system", self._system_prompt)]
        obs = self._begin_turn()
        info = {"task_id": self.task.id, "task_kind": self.task.kind, "turn": 0,
                "n_turns": len(self.task.turns), "tools": self._tool_dicts,  # shared: treat as read-only
                "system_prompt": self._system_prompt, "env_id": self.env_spec.id}
        return obs, info

    def _check_live(self) -> None:
        if self.done or self.task is None or self.session is None:
            raise RuntimeError("the episode is over; call reset() first")

    def _begin_step(self, action: Any) -> tuple[ParsedAction, dict[str, Any]]:
        """Count the step, parse the action, record it; the tool calls are made by the caller."""
        self._check_live()
        assert self.task is not None
        self.steps += 1
        self.turns[-1].actions += 1
        parsed = parse_action(action)
        raw = action_text(action)
        self.transcript.append(("assistant", raw))
        return parsed, {"task_id": self.task.id, "turn": self.turn_index, "step": self.steps}

    def _after_calls(self, parsed: ParsedAction, info: dict[str, Any],
                     results: list[CallResult]) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self.turns[-1].add_calls(results)
        # each entry is what the call's observation() shows (its result is plain JSON already)
        entries = [r.result if r.ok else {"error": r.error, "type": r.error_type} for r in results]
        entries += [{"error": e, "type": ErrorKind.PARSE_ERROR.value} for e in parsed.errors]
        obs = _OBSERVATION_JSON(entries[0] if len(entries) == 1 else entries)
        obs = self._cut(obs)
        self.transcript.append(("tool", obs))
        info["tool_results"] = [r.to_dict() for r in results]
        info["parse_errors"] = parsed.errors
        reward = 0.0
        truncated = self.steps >= self.max_steps
        if truncated:
            reward += self._truncate(info)
        return obs, reward, False, truncated, info

    def reply(self, text: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Take ``text`` as the agent's plain message, as :meth:`step` does with a message, but without looking
        for tool calls in it: for loops that parse the model's tool calls themselves (TRL's
        ``environment_factory``, :mod:`training.trl_env`). It ends the current turn, unless the task's user
        replies (``info["user_reply"]``, the observation)."""
        self._check_live()
        assert self.task is not None
        if not isinstance(text, str):
            raise TypeError(f"a reply must be text, not {type(text).__name__}")
        self.steps += 1
        self.turns[-1].actions += 1
        self.transcript.append(("assistant", text))
        return self._message(text, {"task_id": self.task.id, "turn": self.turn_index, "step": self.steps})

    def _message(self, text: str, info: dict[str, Any]) -> tuple[str, float, bool, bool, dict[str, Any]]:
        heard = self._hear(text)
        if heard is not None:  # the user replied: the turn goes on
            assert heard.text is not None
            self.transcript.append(("user", heard.text))
            info["user_reply"] = heard.text
            truncated = self.steps >= self.max_steps
            return self._cut(heard.text), self._truncate(info) if truncated else 0.0, False, truncated, info
        obs, reward, terminated = self._end_turn(text, info)
        truncated = not terminated and self.steps >= self.max_steps
        if truncated:
            reward += self._truncate(info)
        return obs, reward, terminated, truncated, info

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        lines = []
        for role, text in self.transcript:
            if role == "system":
                lines.append(f"[system] {self.env_spec.title}: {len(self.env_spec.tools)} tools")
                continue
            lines.append(f"[{role}] {text}")
        for t in self.turns:
            if t.scored:
                marks = ", ".join(f"{c.kind}:{'pass' if c.passed else 'FAIL'}" for c in t.checks)
                lines.append(f"[turn {t.index + 1}] {'PASSED' if t.passed else 'FAILED'} ({marks})")
        return display.clean("\n".join(lines)) + "\n"  # spec and tool text shown, never acting on a terminal

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None
        super().close()

    # -- turn mechanics ------------------------------------------------------------------------
    def _outcome(self, index: int, instruction: str) -> TurnOutcome:
        """A new turn's record (:mod:`gym_envs.replay` makes them through this)."""
        return TurnOutcome(index, instruction)

    def _begin_turn(self) -> str:
        assert self.task is not None and self.session is not None
        turn = self.task.turns[self.turn_index]
        before = self._offered
        self._offer_at(self.turn_index)  # the tools the turn reveals are offered from now on
        self._revealed = [t for t in self._tool_dicts if t["name"] not in before]
        outcome = TurnOutcome(self.turn_index, turn.instruction)
        self.turns.append(outcome)
        if any(c.marks_turn for c in turn.checks):
            self.session.mark()
        if self.track_progress:  # the turn's checks if the agent did nothing in it
            outcome.free = self._free_checks(turn)
        self.instruction = turn.instruction + revealed_text(self._revealed)
        self.transcript.append(("user", self.instruction))
        return self._cut(self.instruction)

    def _score_turn(self, reply: str) -> TurnOutcome:
        assert self.task is not None
        outcome = self.turns[-1]
        results = self._check_turn(reply)
        outcome.reply = reply
        outcome.checks = results
        outcome.judged = self._undecided(self.task.turns[outcome.index])
        outcome.scored = True
        return outcome

    def _turn_reward(self, outcome: TurnOutcome) -> float:
        assert self.task is not None
        if self.reward_mode == "turns":
            return (1.0 / len(self.task.turns)) if outcome.passed else 0.0
        if self.reward_mode in ("checks", "progress"):
            total = self._scored_checks()
            return (outcome.credited if self.reward_mode == "progress" else sum(c.passed for c in outcome.checks)) \
                / total
        return 0.0

    def _end_turn(self, reply: str, info: dict[str, Any]) -> tuple[str, float, bool]:
        assert self.task is not None
        outcome = self._score_turn(reply)
        reward = self._turn_reward(outcome)
        info["checks"] = [c.to_dict() for c in outcome.checks]
        info["turn_passed"] = outcome.passed
        self.turn_index += 1
        if self.turn_index >= len(self.task.turns):
            self.done = True
            reward += self._final(info)
            return "", reward, True
        obs = self._begin_turn()
        if self._revealed:
            info["tools"] = self._tool_dicts  # the tools offered from now on (shared: treat as read-only)
        return obs, reward, False

    def _truncate(self, info: dict[str, Any]) -> float:
        """Score the current turn as it stands (if not yet scored) and end the episode."""
        reward = 0.0
        if not self.turns[-1].scored:
            outcome = self._score_turn("")
            reward += self._turn_reward(outcome)
            info["checks"] = [c.to_dict() for c in outcome.checks]
            info["turn_passed"] = outcome.passed
        self.done = True
        info["truncated_at_turn"] = self.turn_index
        reward += self._final(info)
        return reward

    def _final(self, info: dict[str, Any]) -> float:
        score = self.score()
        info["score"] = score
        info["episode_passed"] = score["episode"] == 1.0
        info["turn_results"] = [t.to_dict() for t in self.turns]
        return score["episode"] if self.reward_mode == "episode" else 0.0

    def score(self) -> dict[str, float]:
        """The reward modes for the episode so far (unplayed turns count as failed): ``episode``, ``turns``,
        ``checks``, and ``progress`` in that mode or with ``track_progress`` (else a turn's checks are not judged
        as it begins)."""
        assert self.task is not None
        n_turns = len(self.task.turns)
        n_checks = self._scored_checks()
        passed_turns = sum(t.passed for t in self.turns)
        passed_checks = sum(c.passed for t in self.turns for c in t.checks)
        out = {"episode": 1.0 if passed_turns == n_turns else 0.0, "turns": passed_turns / n_turns,
               "checks": passed_checks / n_checks}
        if self.track_progress:
            out["progress"] = sum(t.credited for t in self.turns if t.scored) / n_checks
        return out

    def _cut(self, text: str) -> str:
        return cut_observation(text, self.max_observation_chars)

    # -- helpers for trainers and inspectors ---------------------------------------------------
    @property
    def system_prompt(self) -> str:
        return self._system_prompt

    def state_digest(self, *, fresh: bool = False) -> str:
        """SHA-256 of the current database content (order-independent); ``fresh``: read from the content
        wherever the sandbox's exact digest cache has no table's digest, never remembered from an earlier episode
        that made the same calls (:mod:`gym_envs.sandbox.recall`: what checks a replay's determinism needs)."""
        assert self.session is not None
        return str(self.session.digest(fresh=fresh).get("digest"))

    def __getstate__(self) -> dict[str, Any]:  # sessions hold pipes; rebuild them after pickling
        state = self.__dict__.copy()
        state["session"] = None
        if not isinstance(self._executor_arg, str):
            state["_executor_arg"] = getattr(self.executor, "mode", "worker")
        state["executor"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.executor = default_executor(self._executor_arg if self._executor_arg in ("worker", "inprocess")
                                         else "worker")
        self.done = True


def check_tool_env_options(options: Mapping[str, Any]) -> None:
    """Refuse a keyword :class:`ToolEnv` does not take, naming the closest ones (``TypeError``, as Python's own)."""
    params = [n for n in inspect.signature(ToolEnv.__init__).parameters if n != "self"]
    for key in options:
        if key not in params:
            raise TypeError(f"ToolEnv takes no option {key!r}{did_you_mean(key, params)} (its options: "
                            f"{', '.join(params)})")


# -- several envs at once ------------------------------------------------------------------------
def _distinct(envs: list[ToolEnv]) -> None:
    if len({id(e) for e in envs}) != len(envs):
        raise ValueError("an env appears more than once; each env takes one reset or action per batch")


def _per_env(values: Sequence[Any] | None, n: int, what: str) -> list[Any]:
    if values is None:
        return [None] * n
    values = list(values)
    if len(values) != n:
        raise ValueError(f"{what}: got {len(values)} for {n} envs; give one per env (or None)")
    return values


def _gather(envs: list[ToolEnv], work: Callable[[int], Any], return_exceptions: bool) -> list[Any]:
    """``work(j)`` for each env; an exception becomes that env's entry, or is raised after every env
    has had its turn."""
    out: list[Any] = []
    first: BaseException | None = None
    for j in range(len(envs)):
        try:
            out.append(work(j))
        except Exception as e:  # the boundary of the batch: one env's failure is its entry (return_exceptions)
            out.append(e)
            first = first or e
    if first is not None and not return_exceptions:
        raise first
    return out


def reset_many(envs: Sequence[ToolEnv], *, seeds: Sequence[int | None] | None = None,
               options: Sequence[dict[str, Any] | None] | None = None,
               return_exceptions: bool = False) -> list[tuple[str, dict[str, Any]]]:
    """``env.reset(seed=, options=)`` for several envs, with the episodes of envs that share an
    executor opened together (:meth:`~gym_envs.sandbox.Executor.open_many`: one round trip per
    worker process). Each env ends up exactly as its own ``reset`` would leave it.

    ``seeds`` and ``options`` give one entry per env (or ``None``). An env whose reset fails (its
    spec does not load, say) raises after every other env has been reset; with
    ``return_exceptions=True`` the exception is that env's entry instead.
    """
    envs = list(envs)
    _distinct(envs)
    seeds = _per_env(seeds, len(envs), "seeds")
    options = _per_env(options, len(envs), "options")
    failed: dict[int, BaseException] = {}
    groups: dict[int, tuple[Executor, list[tuple[int, Session, int]]]] = {}
    for j, env in enumerate(envs):
        try:
            episode_seed = env._choose_episode(seeds[j], options[j])
            if env.session is None or env.session.lost:
                env.session = env.executor.session(env.env_spec, seed=episode_seed, start=False)
            assert env.task is not None
            env.session.setup = tuple(env.task.setup_sql)
        except Exception as e:  # the batch's boundary, as above: this env's entry
            failed[j] = e
            continue
        groups.setdefault(id(env.executor), (env.executor, []))[1].append((j, env.session, episode_seed))
    for executor, entries in groups.values():
        for (j, _, _), failure in zip(entries, executor.open_many([(s, seed) for _, s, seed in entries]),
                                      strict=True):
            if failure is not None:
                failed[j] = failure

    def finish(j: int) -> tuple[str, dict[str, Any]]:
        if j in failed:
            raise failed[j]
        return envs[j]._start_episode()

    return _gather(envs, finish, return_exceptions)


def step_many(envs: Sequence[ToolEnv], actions: Sequence[Any], *,
              return_exceptions: bool = False) -> list[tuple[str, float, bool, bool, dict[str, Any]]]:
    """``env.step(action)`` for several envs, with the tool calls of envs that share an executor made
    together (:meth:`~gym_envs.sandbox.Executor.call_many`: one round trip per worker process for
    all of them). Each env's calls run in its own order; every env ends up exactly as its own
    ``step`` would leave it, and gets the same ``(obs, reward, terminated, truncated, info)``.

    An env whose step fails (its episode is over, say) raises after every other env has stepped;
    with ``return_exceptions=True`` the exception is that env's entry instead.
    """
    envs = list(envs)
    _distinct(envs)
    actions = _per_env(actions, len(envs), "actions")
    begun: dict[int, tuple[ParsedAction, dict[str, Any]]] = {}
    failed: dict[int, BaseException] = {}
    groups: dict[int, tuple[Executor, list[tuple[int, int, Session, str, Any]]]] = {}
    results: dict[int, list[CallResult | None]] = {}  # per env, each call's result (a refusal made here)
    for j, env in enumerate(envs):
        try:
            parsed, _ = begun[j] = env._begin_step(actions[j])
        except Exception as e:  # the batch's boundary, as above: this env's entry
            failed[j] = e
            continue
        made = results[j] = [env._refusal(c["name"], c["arguments"]) for c in parsed.calls]
        if any(r is None for r in made):
            entries = groups.setdefault(id(env.executor), (env.executor, []))[1]
            entries += [(j, k, env.session, c["name"], c["arguments"])  # type: ignore[misc]
                        for k, c in enumerate(parsed.calls) if made[k] is None]
    for executor, entries in groups.values():
        for (j, k, *_), r in zip(entries, executor.call_many([(s, n, a) for _, _, s, n, a in entries]), strict=True):
            results[j][k] = r

    def finish(j: int) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if j in failed:
            raise failed[j]
        parsed, info = begun[j]
        if parsed.is_message:
            return envs[j]._message(parsed.content, info)
        return envs[j]._after_calls(parsed, info, [r for r in results[j] if r is not None])

    return _gather(envs, finish, return_exceptions)
