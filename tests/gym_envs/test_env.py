"""ToolEnv: episode semantics, reward modes, truncation, parsing, rendering, registration, vector envs."""

from __future__ import annotations

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import gym_envs  # noqa: F401  (registers envwright/ToolEnv-v0)
from gym_envs.env import ToolEnv
from gym_envs.parsing import format_tool_call, parse_action
from tests.fixtures.library_spec import SPEC

FIND = '<tool_call>{"name": "find_book", "arguments": {"title": "Dune"}}</tool_call>'
BORROW = {"content": "", "tool_calls": [{"name": "borrow_book", "arguments": {"member_id": 7, "book_id": 3}}]}
LIST = '{"name": "list_loans", "arguments": {"member_id": 7}}'


@pytest.fixture(params=["inprocess", "worker"])
def env(request):
    e = ToolEnv(SPEC, task="t0", executor=request.param, render_mode="ansi")
    yield e
    e.close()


def test_full_episode_reward_and_info(env):
    obs, info = env.reset(seed=0)
    assert obs.startswith("Member 7 wants to borrow")
    assert info["n_turns"] == 2 and len(info["tools"]) == 3 and "find_book" in info["system_prompt"]
    obs, r, term, trunc, info = env.step(FIND)
    assert '"Dune"' in obs and r == 0.0 and not term and info["tool_results"][0]["ok"]
    env.step(BORROW)
    obs, r, term, trunc, info = env.step("Borrowed.")
    assert obs.startswith("How many books") and info["turn_passed"] and info["checks"][0]["passed"]
    env.step(LIST)
    obs, r, term, trunc, info = env.step("Member 7 has two books out.")
    assert term and not trunc and r == 1.0 and info["episode_passed"]
    assert info["score"] == {"episode": 1.0, "turns": 1.0, "checks": 1.0}
    text = env.render()
    assert "[turn 1] PASSED" in text and "[turn 2] PASSED" in text  # counted from 1, as everywhere
    with pytest.raises(RuntimeError, match="reset"):
        env.step("again")


def test_reply_ends_the_turn_without_parsing(env):
    env.reset(seed=0)
    env.step(BORROW)
    # text that step() would parse as a tool call is, through reply(), the agent's message
    obs, _, _, _, info = env.reply(LIST)
    assert obs.startswith("How many books") and info["turn_passed"] and env.turn_index == 1
    assert env.transcript[-2] == ("assistant", LIST)
    with pytest.raises(TypeError, match="text"):
        env.reply({"content": "x"})
    env.step(LIST)
    assert env.reply("Member 7 has two books out.")[2]
    with pytest.raises(RuntimeError, match="reset"):
        env.reply("again")


def test_score_reply_scores_without_ending_the_turn(env):
    env.reset(seed=0)
    env.step(FIND)
    before = [c.passed for c in env.score_reply("Done.")]
    assert before[0] is False and env.turn_index == 0 and not env.done  # nothing borrowed yet; the turn goes on
    env.step(BORROW)
    picked = env.score_reply("Done.", [2, 0])  # a subset, in the order asked; indexes are the turn's
    assert [(c.index, c.kind, c.passed) for c in picked] == [(2, "unchanged", True), (0, "sql", True)]
    _, _, _, _, info = env.step("Borrowed.")
    assert info["turn_passed"] and env.turn_index == 1


def test_reset_is_fresh_state(env):
    env.reset(seed=0)
    env.step(BORROW)
    env.reset(seed=0)
    _, _, _, _, info = env.step(BORROW)
    assert info["tool_results"][0]["ok"], "the loan of the previous episode leaked into this one"


@pytest.mark.parametrize("mode,expected", [("episode", [0.0, 0.0]), ("turns", [0.5, 0.0]), ("checks", [0.6, 0.2])])
def test_reward_modes_sum_to_fraction(mode, expected):
    env = ToolEnv(SPEC, task="t0", executor="inprocess", reward_mode=mode)
    env.reset(seed=0)
    env.step(BORROW)
    rewards = [env.step("done")[1]]
    rewards.append(env.step("I do not know")[1])
    assert rewards == expected
    env.close()


def test_max_steps_truncates_and_scores_current_turn():
    env = ToolEnv(SPEC, task="t0", executor="inprocess", max_steps=2, reward_mode="turns")
    env.reset(seed=0)
    env.step(FIND)
    _, r, term, trunc, info = env.step(BORROW)
    assert trunc and not term
    assert info["checks"][0]["passed"] and r == 0.5  # the state already satisfied turn 0's check
    assert info["score"]["turns"] == 0.5 and info["truncated_at_turn"] == 0


def test_errors_are_observations():
    env = ToolEnv(SPEC, task="t0", executor="inprocess")
    env.reset(seed=0)
    obs, *_ = env.step('<tool_call>{"name": "nope", "arguments": {}}</tool_call>')
    assert "UnknownTool" in obs
    obs, *_ = env.step('<tool_call>{"name": "borrow_book", "arguments": {"member_id": "x"}}</tool_call>')
    assert "InvalidArguments" in obs and "book_id" in obs
    obs, *_ = env.step("<tool_call>{not json</tool_call>")
    assert "ParseError" in obs
    obs, *_ = env.step(format_tool_call("find_book", {"title": "Nothing"}) + format_tool_call("list_loans",
                                                                                         {"member_id": 7}))
    assert obs.startswith("[") and "ToolError" in obs and "Emma" in obs  # two calls, two results


def test_parsing_forms():
    p = parse_action("<think>plan</think>Sure. " + FIND + FIND)
    assert [c["name"] for c in p.calls] == ["find_book", "find_book"] and p.content == "Sure."
    assert parse_action('```json\n{"name": "a", "arguments": "{\\"x\\": 1}"}\n```').calls == [
        {"name": "a", "arguments": {"x": 1}}]
    assert parse_action('[{"name": "a", "parameters": {}}, {"name": "b", "arguments": {}}]').calls[1]["name"] == "b"
    assert parse_action({"tool_calls": [{"function": {"name": "a", "arguments": "{}"}}]}).calls[0]["name"] == "a"
    assert parse_action('<tool_call>{"name": "a", "arguments": {}}').calls[0]["name"] == "a"  # unterminated
    assert parse_action("Just text {not a call}").is_message
    assert parse_action('{"answer": 3}').is_message


def test_make_and_check_env():
    env = gym.make("envwright/ToolEnv-v0", spec=SPEC, task="t0", executor="inprocess")
    check_env(env.unwrapped)
    obs, _ = env.reset(seed=3)
    assert obs.startswith("Member 7") and env.unwrapped.env_spec.id == "library-demo"
    env.close()
    with pytest.raises(KeyError, match="no task"):
        ToolEnv(SPEC, task="missing", executor="inprocess")
    with pytest.raises(ValueError, match="reward_mode"):
        ToolEnv(SPEC, reward_mode="dense", executor="inprocess")


def _vector_run(vec):
    obs, _ = vec.reset(seed=[0, 1])
    assert all(o.startswith("Member 7") for o in obs)
    obs, *_ = vec.step([FIND, LIST])
    assert '"Dune"' in obs[0] and "Emma" in obs[1]
    return obs


def test_sync_vector_env():
    vec = gym.vector.SyncVectorEnv([lambda: ToolEnv(SPEC, task="t0", executor="inprocess") for _ in range(2)])
    _vector_run(vec)
    vec.close()


def test_async_vector_env_returns_real_observations():
    vec = gym.vector.AsyncVectorEnv([lambda: ToolEnv(SPEC, task="t0", executor="inprocess") for _ in range(2)],
                                    shared_memory=False)
    _vector_run(vec)
    vec.close()


# -- several envs at once: reset_many / step_many -------------------------------------------------
BOTH = '<tool_call>{"name": "find_book", "arguments": {"title": "Emma"}}</tool_call>' + FIND
SCRIPTS = [  # one script per env: tool calls (one, two, a failing one, a parse error), messages, truncation
    [FIND, BORROW, "Borrowed.", LIST, "Member 7 has two books out."],
    [BOTH, '{"name": "borrow_book", "arguments": {"member_id": 9, "book_id": 3}}', "Done.", "No idea."],
    ["<tool_call>{not json}</tool_call>", BORROW, BORROW, LIST, LIST, LIST],
]


def _run_sequential(envs, seeds):
    out = [env.reset(seed=s) for env, s in zip(envs, seeds, strict=True)]
    for step in range(max(map(len, SCRIPTS))):
        for env, script in zip(envs, SCRIPTS, strict=True):
            if step < len(script) and not env.done:
                out.append(env.step(script[step]))
    return out


def _run_batched(envs, seeds):
    from gym_envs.env import reset_many, step_many

    out = list(reset_many(envs, seeds=seeds))
    for step in range(max(map(len, SCRIPTS))):
        live = [(env, script[step]) for env, script in zip(envs, SCRIPTS, strict=True)
                if step < len(script) and not env.done]
        out += step_many([e for e, _ in live], [a for _, a in live])
    return out


@pytest.mark.parametrize("mode", ["inprocess", "worker"])
def test_step_many_and_reset_many_equal_one_env_at_a_time(mode):
    from gym_envs.sandbox import make_executor

    ex = make_executor(mode, workers=2)  # worker mode: the envs' sessions spread over two workers
    try:
        seq = [ToolEnv(SPEC, task="t0", executor=ex, render_mode="ansi", max_steps=5) for _ in SCRIPTS]
        bat = [ToolEnv(SPEC, task="t0", executor=ex, render_mode="ansi", max_steps=5) for _ in SCRIPTS]
        for episode in range(2):  # the second round re-opens live sessions (open_many), the first makes them
            seeds = [10 * episode + k for k in range(len(SCRIPTS))]
            expected, got = _run_sequential(seq, seeds), _run_batched(bat, seeds)
            assert got == expected
            assert [e.render() for e in bat] == [e.render() for e in seq]
            assert [e.state_digest() for e in bat] == [e.state_digest() for e in seq]
            assert [e.score() for e in bat] == [e.score() for e in seq]
        # the scripts cover what they should: a passed episode, a truncation, parse errors, tool errors
        finals = [info for *_, info in expected if "score" in info]
        assert any(i["episode_passed"] for i in finals) and any("truncated_at_turn" in i for i in finals)
        assert any(i.get("parse_errors") for *_, i in expected[3:])
        assert any(not r["ok"] for *_, i in expected[3:] for r in i.get("tool_results", []))
    finally:
        for e in seq + bat:
            e.close()
        ex.close()


def test_many_keeps_going_past_a_failing_env():
    from gym_envs.env import reset_many, step_many
    from gym_envs.sandbox import LoadFailure, make_executor

    broken = {**SPEC, "code": SPEC["code"] + "\nraise ValueError('broken at import')\n"}
    ex = make_executor("worker")
    envs = [ToolEnv(SPEC, task="t0", executor=ex), ToolEnv(broken, task="t0", executor=ex),
            ToolEnv(SPEC, task="t0", executor=ex)]
    try:
        out = reset_many(envs, seeds=[0, 1, 2], return_exceptions=True)
        assert isinstance(out[1], LoadFailure) and "broken at import" in str(out[1])
        assert out[0] == envs[2].reset(seed=2) and out[0][0].startswith("Member 7")
        with pytest.raises(LoadFailure, match="broken at import"):
            reset_many(envs, seeds=[0, 1, 2])
        assert not envs[0].done and not envs[2].done  # the others were reset all the same
        # the broken env never started: its step fails, the others' steps happen
        out = step_many(envs, [FIND, FIND, BORROW], return_exceptions=True)
        assert isinstance(out[1], RuntimeError) and "reset" in str(out[1])
        assert '"Dune"' in out[0][0] and out[2][4]["tool_results"][0]["ok"]
        with pytest.raises(RuntimeError, match="reset"):
            step_many(envs, [LIST, LIST, LIST])
        assert envs[0].steps == 2 and envs[2].steps == 2
        with pytest.raises(ValueError, match="more than once"):
            step_many([envs[0], envs[0]], [LIST, LIST])
        with pytest.raises(ValueError, match="one per env"):
            reset_many(envs[:2], seeds=[1])
        assert reset_many([]) == [] and step_many([], []) == []
    finally:
        for e in envs:
            e.close()
        ex.close()


def test_text_space_deep_copies_share_the_charset_but_not_the_rng():
    import copy

    from gym_envs.env import text_space

    space = text_space(64)
    space.seed(3)
    twin = copy.deepcopy(space)
    assert twin == space and twin._char_index is space._char_index  # shared, never written
    assert twin.np_random is not space.np_random
    assert twin.sample() == space.sample()  # the same RNG state, copied
    twin.seed(4)
    assert space.contains(twin.sample()) and twin.np_random is not space.np_random


def test_the_spaces_have_a_short_repr():
    env = ToolEnv("bank-ledger", task="pay-rent", executor="inprocess")
    try:
        for space in (env.action_space, env.observation_space):
            text = repr(space)
            assert len(text) < 200 and str(space) == text, text
            assert text.startswith(f"Text(0, {space.max_length}, ") and "63,488 characters" in text
    finally:
        env.close()


@pytest.mark.parametrize("action", [FIND, FIND + FIND, BORROW, '<tool_call>{"name": "find_book", "arguments": '
                                    '{"title": "Ünïcødé ✓"}}</tool_call><tool_call>{oops}</tool_call>',
                                    {"tool_calls": [{"name": "nope", "arguments": {}}, {"name": "find_book"}]}])
def test_observation_is_the_calls_observations(env, action):
    """The observation is each call's observation() (one, or a JSON list with the parse errors), as text."""
    import json

    from gym_envs.sandbox import CallResult

    env.reset(seed=0)
    obs, _, _, _, info = env.step(action)
    entries = [json.loads(CallResult(**r).observation()) for r in info["tool_results"]]
    entries += [{"error": e, "type": "ParseError"} for e in info["parse_errors"]]
    assert obs == json.dumps(entries[0] if len(entries) == 1 else entries, ensure_ascii=False)
    raw = action if isinstance(action, str) else json.dumps(action, ensure_ascii=False, default=str)
    assert env.transcript[-2] == ("assistant", raw)


def test_one_system_prompt_for_specs_and_bare_tool_lists() -> None:
    """The solver prompt exists once: a spec's is the bare-tool-list prompt of its title and tools."""
    from gym_envs.env import system_prompt, tool_system_prompt
    from gym_envs.examples import load_example

    spec = load_example("library-loans")
    assert system_prompt(spec) == tool_system_prompt(spec.title, spec.description,
                                                     [t.model_dump() for t in spec.tools])
    assert '<tool_call>{"name": TOOL' in system_prompt(spec)


# -- callers that replay a known prefix (the validity gate) -------------------------------------------


def test_reset_to_turn_is_the_turns_before_played_unscored(env):
    env.reset(seed=0)
    env.step(FIND)
    env.step(BORROW)
    env.step("Borrowed.")
    played = env.state_digest()
    obs, info = env.reset_to_turn(1, [{"name": "find_book", "arguments": {"title": "Dune"}},
                                      BORROW["tool_calls"][0]], seed=0)
    assert obs.startswith("How many books") and info["turn"] == 1
    assert [r["ok"] for r in info["prior_results"]] == [True, True]
    assert env.state_digest() == played and len(env.turns) == 2 and not env.turns[0].scored
    env.step(LIST)
    _, reward, term, _, info = env.step("Member 7 has two books out.")
    assert term and info["turn_passed"] and reward == 0.0  # the first turn counts as unscored (failed)
    with pytest.raises(ValueError, match="out of range"):
        env.reset_to_turn(5, [], seed=0)


def test_call_tools_is_a_step_without_an_observation(env):
    env.reset(seed=0)
    results = env.call_tools([{"name": "find_book", "arguments": {"title": "Dune"}}])
    assert results[0].ok and env.turns[-1].calls == results and env.steps == 1
    env.call_tools([BORROW["tool_calls"][0]])
    _, _, _, _, info = env.step("Borrowed.")
    assert info["turn_passed"]


def test_begin_turn_on_the_state_the_calls_before_leave_is_reset_to_turn(env):
    calls = [{"name": "find_book", "arguments": {"title": "Dune"}}, BORROW["tool_calls"][0]]
    other = ToolEnv(SPEC, task="t0", executor="inprocess")
    try:
        obs, _ = env.reset_to_turn(1, calls, seed=0, history=["Found it."])
        other.reset(seed=0)
        other.call_tools(calls)  # turn 0's calls, in the episode itself
        assert other.begin_turn(1, ["Found it."]) == obs
        for e in (env, other):
            assert [(t.index, t.calls, t.scored) for t in e.turns] == [(0, [], False), (1, [], False)]
        assert (other.turn_index, other.steps, other.done, other.transcript, other._tool_dicts, other._prior) == \
            (env.turn_index, env.steps, env.done, env.transcript, env._tool_dicts, env._prior)
        assert other.state_digest() == env.state_digest()
        got = [e.step(LIST)[1:4] for e in (env, other)] + [e.step("Member 7 has two books out.")[1:4]
                                                            for e in (env, other)]
        assert got[0] == got[1] and got[2] == got[3]
        with pytest.raises(ValueError, match="out of range"):
            other.begin_turn(2)
    finally:
        other.close()


def _record(env):
    t = env.turns[-1]
    return ([(c.name, c.ok, c.result, c.changes) for c in t.calls], list(t.call_actions), t.actions, env.steps,
            env.done, env.state_digest())


@pytest.mark.parametrize("max_steps", [32, 2])
def test_an_action_made_in_parts_is_the_action_made_at_once(max_steps):
    """One action's calls made in parts (a checkpoint may sit between them) give the record, the step count, the
    state and the end at the step budget that making them at once gives; the budget is checked as the action ends."""
    calls = [{"name": "find_book", "arguments": {"title": "Dune"}}, BORROW["tool_calls"][0]]
    once = ToolEnv(SPEC, task="t0", executor="inprocess", max_steps=max_steps)
    parts = ToolEnv(SPEC, task="t0", executor="inprocess", max_steps=max_steps)
    try:
        for e in (once, parts):
            e.reset(seed=0)
            e.call_tools(calls[:1])
        once.call_tools(calls)
        parts.call_tools(calls[:1], ends=False)
        assert not parts.done
        parts.call_tools(calls[1:], continues=True, ends=False)
        cp = parts.checkpoint()
        assert cp is not None and not parts.done
        parts.call_tools([], continues=True)  # the action ends: the step budget is checked now
        assert _record(parts) == _record(once)
        assert parts.done == (max_steps == 2)
        if not parts.done:
            assert parts.restore(cp)
            parts.call_tools([], continues=True)
            assert _record(parts) == _record(once)
    finally:
        once.close()
        parts.close()


def test_checkpoints_restore_the_episode_or_are_refused():
    env = ToolEnv("bank-ledger", task="pay-rent", executor="inprocess")
    try:
        env.reset(seed=0)
        cp = env.checkpoint()
        assert cp is not None  # the bank's code keeps no state of its own
        start = env.state_digest()
        env.step({"tool_calls": [{"name": "transfer", "arguments": {"from_account_id": 1001, "to_account_id": 1009,
                                                                      "amount_cents": 125000, "memo": "rent June"}}]})
        assert env.state_digest() != start and len(env.turns[-1].calls) == 1
        assert env.restore(cp) is True
        assert env.state_digest() == start and env.turns[-1].calls == [] and env.steps == 0
    finally:
        env.close()
    worker = ToolEnv("bank-ledger", task="pay-rent", executor="worker")
    try:
        worker.reset(seed=0)
        assert worker.checkpoint() is None  # a worker replays a log after a crash: replay instead
    finally:
        worker.close()


def test_gym_make_refuses_a_misspelt_option_naming_the_close_match() -> None:
    """``gym.make``/``make_vec`` with an option ToolEnv does not take: an error that names the option it meant,
    not Python's bare "unexpected keyword argument"."""
    with pytest.raises(TypeError, match="takes no option 'rewad_mode'; did you mean 'reward_mode'"):
        gym.make("envwright/ToolEnv-v0", spec=SPEC, task="t0", executor="inprocess", rewad_mode="checks")
    with pytest.raises(TypeError, match="takes no option 'max_step'; did you mean 'max_steps'"):
        gym.make_vec("envwright/ToolEnv-v0", num_envs=2, spec=SPEC, executor="inprocess", max_step=3)
    env = gym.make("envwright/ToolEnv-v0", spec=SPEC, task="t0", executor="inprocess", reward_mode="checks")
    assert env.unwrapped.reward_mode == "checks"
    env.close()
