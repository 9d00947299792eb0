"""One environment as an MCP server (the official ``mcp`` SDK), over stdio or streamable HTTP.

``envwright serve SPEC --mcp`` runs this. Any MCP client (Claude Desktop, an agent framework, the
SDK's own ``mcp.Client``) then sees:

* **the environment's tools**, one MCP tool each, with the spec's name, description and JSON Schema
  (``inputSchema`` is the spec's ``parameters`` object, unchanged). A call is one step of a
  :class:`~gym_envs.env.ToolEnv` episode on the **worker** executor (isolated, rlimited processes:
  the sandbox of :mod:`gym_envs.sandbox`), so a spec's code never runs in the server process. The
  result is the JSON the gym's observation shows; a failed call (bad arguments, ``ToolError``, a
  sandbox refusal, a timeout, a tool not offered) is an ``isError`` result with ``{"error": ..., "type":
  ...}``, and the server carries on. The list holds the tools the episode offers now: a task that
  withholds a tool lists it from the turn that reveals it, whose instruction shows it (a call of it
  before then is refused as a call of a name no tool has).
* **episode control**, the tools named in :data:`CONTROL_TOOLS`:

  - ``envwright_tasks``: the tasks (id, kind, number of turns);
  - ``envwright_reset`` ``{task?, seed?}``: a fresh episode (the database rebuilt), returns the first
    instruction;
  - ``envwright_instruction``: where the episode stands (task, turn, the current instruction, or the
    score once it is over);
  - ``envwright_end_turn`` ``{reply}``: the agent's message that ends the turn, unless the task's simulated user
    answers it (``user_reply``: the turn goes on)
    (:func:`gym_envs.turns.end_turn`, shared with the TRL adapter); returns each check's verdict,
    whether the turn passed, the reward (``episode`` mode by default: 1.0 at the end iff every check
    of every turn passed), and the next instruction or the final score.

One server holds **one episode** at a time (an MCP tool has no episode argument, and the spec's
schemas are kept as they are): requests are served one at a time, and every client of an HTTP
server shares the episode. Run one server per concurrent episode. The server starts an episode of
``task`` (default: the first task) with ``seed`` before it accepts a request, so a client that never
touches episode control can use the tools at once.

A spec with a tool named like a control tool does not parse (the spec's naming rules reserve those
names); one built without parsing is refused (:class:`ReservedToolName`). Imports: the
SDK, uvicorn (HTTP only) and :mod:`gym_envs`; nothing else of ours (layering).
"""

from __future__ import annotations

import functools
import json
import socket
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from gym_envs import Limits, make_executor
from gym_envs.env import ToolEnv
from gym_envs.errors import ErrorKind, exception_text
from gym_envs.spec import MCP_CONTROL_TOOLS, EnvSpec, as_spec, naming_problems
from gym_envs.turns import END_TURN_TOOL, end_turn

if TYPE_CHECKING:
    from gym_envs.sandbox import Executor

__all__ = ["CONTROL_TOOLS", "EpisodeHost", "ReservedToolName", "build_server", "check_tool_names",
           "control_tool_schemas", "serve_http", "serve_stdio"]

#: Episode-control tool names the MCP server adds next to an environment's own tools: the spec module's
#: :data:`gym_envs.spec.MCP_CONTROL_TOOLS`, which its naming rules reserve (a spec that uses one does not parse).
CONTROL_TOOLS: tuple[str, ...] = MCP_CONTROL_TOOLS


class ReservedToolName(ValueError):
    """A spec's tool or parameter name breaks the spec's naming rules (one named like an episode-control
    tool, say): possible only for a spec built or changed without parsing."""


def check_tool_names(spec: EnvSpec) -> None:
    """Raise :class:`ReservedToolName` when ``spec``'s names break :func:`gym_envs.spec.naming_problems`."""
    problems = naming_problems(spec)
    if problems:
        raise ReservedToolName(f"cannot serve {spec.id!r} over MCP: " + "; ".join(problems)
                               + "; rename them in the spec")


def control_tool_schemas(spec: EnvSpec) -> list[dict[str, Any]]:
    """The control tools as ``{name, title, description, inputSchema}`` (task ids as an enum)."""
    tasks = [t.id for t in spec.tasks]
    return [
        {"name": "envwright_tasks", "title": "List tasks",
         "description": "Episode control: the tasks of this environment (id, kind, number of turns).",
         "inputSchema": {"type": "object", "properties": {}}},
        {"name": "envwright_reset", "title": "Start an episode",
         "description": ("Episode control: start a fresh episode (the database is rebuilt) of a task with a "
                         "seed; returns its first instruction. Without a task, the server's default task."),
         "inputSchema": {"type": "object", "properties": {
             "task": {"type": "string", "enum": tasks, "description": "Task id (envwright_tasks lists them)."},
             "seed": {"type": "integer", "minimum": 0,
                      "description": "Episode seed (the tool code's random), default 0."}}}},
        {"name": "envwright_instruction", "title": "Current instruction",
         "description": ("Episode control: the current user instruction, the task and turn; once the episode "
                         "is over, its score."),
         "inputSchema": {"type": "object", "properties": {}}},
        {"name": END_TURN_TOOL, "title": "End the turn",
         "description": ("Episode control: send the agent's reply, which ends the current turn. Returns each "
                         "check's verdict, whether the turn passed, the reward and the next instruction (or "
                         "the episode's score after the last turn)."),
         "inputSchema": {"type": "object", "properties": {
             "reply": {"type": "string", "description": "The agent's message to the user for this turn."}},
             "required": ["reply"]}},
    ]


class ControlError(ValueError):
    """A control request that cannot be served (bad arguments, no live episode); its text is the answer."""


class EpisodeHost:
    """One environment's episode, driven by MCP requests. Thread-safe (one request at a time).

    Args:
        spec: an :class:`EnvSpec`, a dict, JSON text or a spec file.
        task: the default task (``None``: the first task).
        seed: the seed of the episode started at construction.
        executor: an :class:`Executor` to use (it stays the caller's); default a new worker executor
            with ``limits``, closed by :meth:`close`.
        max_steps: tool calls and replies per episode before it is truncated.
        reward_mode: ``episode``, ``turns`` or ``checks`` (see :class:`ToolEnv`).
    """

    def __init__(self, spec: Any, *, task: str | None = None, seed: int = 0, executor: Executor | None = None,
                 limits: Limits | None = None, max_steps: int = 32, reward_mode: str = "episode"):
        self.spec = as_spec(spec)
        check_tool_names(self.spec)
        self.default_task = task if task is not None else self.spec.tasks[0].id
        self.spec.task(self.default_task)  # KeyError naming the task ids
        self._own_executor = executor is None
        self.executor = executor if executor is not None else make_executor("worker", limits=limits)
        self._lock = threading.Lock()
        self._final: dict[str, Any] | None = None
        try:
            self.env = ToolEnv(self.spec, task=self.default_task, executor=self.executor, max_steps=max_steps,
                               reward_mode=reward_mode)
            self.reset(None, seed)
        except BaseException:
            self.close()
            raise

    # -- episode control -----------------------------------------------------------------------
    def tasks(self) -> dict[str, Any]:
        return {"env_id": self.spec.id, "default_task": self.default_task,
                "tasks": [{"id": t.id, "kind": t.kind, "turns": len(t.turns)} for t in self.spec.tasks]}

    def reset(self, task: Any = None, seed: Any = None) -> dict[str, Any]:
        """A fresh episode of ``task`` (default task when None) with ``seed`` (0 when None)."""
        if task is not None and task not in {t.id for t in self.spec.tasks}:
            raise ControlError(f"no task {task!r} in {self.spec.id}; tasks are {[t.id for t in self.spec.tasks]}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ControlError(f"seed must be a non-negative integer, got {seed!r}")
        with self._lock:
            self.env.reset(seed=0 if seed is None else seed,
                           options={"task": task or self.default_task, "episode_seed": 0 if seed is None else seed})
            self._final = None
            return self._position()

    def instruction(self) -> dict[str, Any]:
        with self._lock:
            return self._position()

    def end_turn(self, reply: Any) -> dict[str, Any]:
        """The agent's reply ends the current turn: check verdicts, reward, what comes next."""
        if not isinstance(reply, str):
            raise ControlError(f"reply must be a string, got {type(reply).__name__}")
        with self._lock:
            self._live()
            ended = end_turn(self.env, reply)
            if ended.done:
                self._final = {"score": ended.score, "episode_passed": ended.episode_passed,
                               "truncated": ended.truncated}
            return ended.to_dict()

    # -- the environment's tools ---------------------------------------------------------------
    def offered(self) -> list[str]:
        """The names of the tools the episode offers now (a task may withhold some until a later turn)."""
        with self._lock:
            return [t["name"] for t in self.env._tool_dicts]

    def call(self, name: str, arguments: dict[str, Any] | None) -> tuple[bool, list[str]]:
        """One tool call as one step of the episode: ``(ok, texts)``, the first text the observation
        (the result's JSON, or ``{"error", "type"}``: a tool not offered, whether no tool has its name or the
        task withholds it, is refused alike), a second one when the call ended the episode."""
        with self._lock:
            self._live()
            obs, _, _, truncated, info = self.env.step(
                {"content": "", "tool_calls": [{"name": name, "arguments": dict(arguments or {})}]})
            results = info.get("tool_results") or [{"ok": False}]
            texts = [obs]
            if truncated:
                self._final = {"score": info["score"], "episode_passed": info["episode_passed"], "truncated": True}
                texts.append(f"The episode reached its limit of {self.env.max_steps} steps and is over "
                             f"(score {json.dumps(info['score'])}); call envwright_reset to start another.")
            return bool(results[0]["ok"]), texts

    def close(self) -> None:
        if hasattr(self, "env"):
            self.env.close()
        if self._own_executor:
            self.executor.close()

    # -- internals -----------------------------------------------------------------------------
    def _live(self) -> None:
        if self.env.done:
            raise ControlError("the episode is over; call envwright_reset to start another "
                               "(envwright_instruction shows its score)")

    def _position(self) -> dict[str, Any]:
        env = self.env
        assert env.task is not None
        head = {"env_id": self.spec.id, "task_id": env.task.id, "kind": env.task.kind,
                "n_turns": len(env.task.turns), "steps": env.steps, "max_steps": env.max_steps}
        if env.done:
            final = self._final or {"score": env.score(), "episode_passed": env.score()["episode"] == 1.0}
            return {**head, "done": True, **final}
        return {**head, "done": False, "turn": env.turn_index, "instruction": env.instruction}


# ============================================================================================
# The MCP server (low-level SDK API: the spec's schemas go out exactly as they are)
# ============================================================================================


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("envwright")
    except PackageNotFoundError:
        return "0+unknown"


def _instructions(spec: EnvSpec) -> str:
    return (f"{spec.title}. {spec.description}\n\nThis server is one envwright environment. Its tools act on a "
            "simulated system; the episode's current user request is returned by envwright_instruction. Call "
            "the tools to do what it asks, then send your reply to the user with envwright_end_turn, which "
            "scores the turn and gives the next request. envwright_reset starts a fresh episode "
            "(envwright_tasks lists the tasks).")


def build_server(host: EpisodeHost) -> Any:
    """An ``mcp.server.Server`` whose tools are the environment's tools plus :data:`CONTROL_TOOLS`."""
    import anyio.to_thread
    import mcp.types as types
    from mcp.server import Server

    spec = host.spec
    env_tools = {t.name: types.Tool(name=t.name, description=t.description, input_schema=t.parameters)
                 for t in spec.tools}
    controls = [types.Tool(name=c["name"], title=c["title"], description=c["description"],
                           input_schema=c["inputSchema"]) for c in control_tool_schemas(spec)]
    control_args = {c["name"]: set(c["inputSchema"]["properties"]) for c in control_tool_schemas(spec)}

    def text_result(texts: list[str], *, error: bool, structured: dict[str, Any] | None = None) -> Any:
        return types.CallToolResult(content=[types.TextContent(type="text", text=t) for t in texts],
                                    structured_content=structured, is_error=error)

    def control(name: str, args: dict[str, Any]) -> dict[str, Any]:
        if name == "envwright_tasks":
            return host.tasks()
        if name == "envwright_reset":
            return host.reset(args.get("task"), args.get("seed"))
        if name == "envwright_instruction":
            return host.instruction()
        return host.end_turn(args.get("reply"))

    async def off_loop(fn: Callable[[], Any]) -> Any:  # the executor blocks: keep the event loop free
        return await anyio.to_thread.run_sync(fn)

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=[env_tools[n] for n in host.offered()] + controls)

    async def call_tool(ctx: Any, params: Any) -> Any:
        name, args = params.name, dict(params.arguments or {})
        try:
            if name in CONTROL_TOOLS:
                unknown = sorted(set(args) - control_args[name])
                if unknown:
                    raise ControlError(f"{name} takes no argument(s) {unknown}")
                out = await off_loop(functools.partial(control, name, args))
                return text_result([json.dumps(out, ensure_ascii=False)], error=False, structured=out)
            ok, texts = await off_loop(functools.partial(host.call, name, args))
            return text_result(texts, error=not ok)
        except ControlError as e:
            return text_result([json.dumps({"error": str(e), "type": ErrorKind.EPISODE_CONTROL.value})], error=True)
        except Exception as e:  # the boundary: a failure is data, the server stays up
            return text_result([json.dumps({"error": exception_text(e), "type": ErrorKind.SERVER_ERROR.value})],
                               error=True)

    return Server(f"envwright-{spec.id}", version=_version(), title=spec.title,
                  description=spec.description or None, instructions=_instructions(spec),
                  on_list_tools=list_tools, on_call_tool=call_tool)


def serve_stdio(host: EpisodeHost) -> None:
    """Serve ``host`` over the process's stdin and stdout until the client closes them."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(host)

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)


def serve_http(host: EpisodeHost, *, address: str = "127.0.0.1", port: int = 8000, path: str = "/mcp",
               announce: Callable[[str], None] | None = None, log: TextIO | None = None) -> None:
    """Serve ``host`` over streamable HTTP at ``http://ADDRESS:PORT/PATH`` until interrupted.

    ``port=0`` takes a free port; ``announce`` is called with the URL once the socket listens (the
    CLI prints it). A loopback ``address`` gets the SDK's DNS-rebinding protection; there is no
    authentication, so serve on other addresses only on a trusted network.
    """
    import uvicorn

    server = build_server(host)
    app = server.streamable_http_app(streamable_http_path=path, host=address)
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.create_server((address, port), family=family)
    bound = sock.getsockname()[1]
    shown = f"[{address}]" if family == socket.AF_INET6 else address
    url = f"http://{shown}:{bound}{path}"
    if announce is not None:
        announce(url)
    elif log is not None:
        print(url, file=log, flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
