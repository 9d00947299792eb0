"""The model-backed user: a model plays the scenario, as τ²-bench's user simulator does.

:class:`ModelUser` turns each :class:`~gym_envs.users.base.UserContext` into a chat (:func:`user_chat`): a system
prompt with the persona, the goal, the facts, what to answer when asked to confirm and when asked what it does not
know; then the conversation seen from the user's side (its own messages as ``assistant``, the agent's plain messages
as ``user``), ending with the agent's message to answer. The model's text is the reply (:func:`parse_reply`):
:data:`STOP` in it, or no text at all, ends the turn; a reply that begins with a yes is a confirmation
(:func:`~gym_envs.users.base.is_confirmation`).

The model is any batch generator ``generate(chats) -> texts`` (``None`` for a chat that got no completion): this
package imports no backend. ``envgen.users.make_user`` builds one over the backend registry (``transformers``,
``vllm``, ``openai``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gym_envs.users.base import END_TURN, UserContext, UserReply, UserSimulator, is_confirmation
from gym_envs.users.scenario import Scenario, fact_text

__all__ = ["GREETING", "STOP", "Generate", "ModelUser", "opening_chat", "parse_reply", "user_chat",
           "user_instructions"]

STOP = "###STOP###"  #: what the model writes to end the turn (τ²-bench's stop token)
GREETING = "Hi! How can I help you today?"  #: the agent's first message, to which the user opens (τ²-bench's)

#: a batch generator: one text (or None: no completion) per chat
Generate = Callable[[list[list[dict[str, str]]]], Sequence[str | None]]


def user_instructions(scenario: Scenario) -> str:
    """The system prompt of the model that plays ``scenario``."""
    facts = "\n".join(f"- {Scenario.fact_names(k)[0]}: {fact_text(v)}" for k, v in scenario.facts.items())
    confirm = "yes, go ahead" if scenario.on_confirm == "yes" else "no, do not do it"
    parts = ["You play a customer talking to a customer-service agent, to test the agent. Stay in character and "
             "never say you are an AI or that this is a test.",
             f"Who you are: {scenario.persona}" if scenario.persona else "",
             f"Your instructions (follow them; never read them out): {scenario.goal}",
             f"What you know (tell each only when the agent asks for it):\n{facts}" if facts else "",
             f"When the agent asks you to confirm or to go ahead, answer {confirm}. When it asks something you do not "
             f"know, answer: {scenario.unknown}",
             "Write only your next message, briefly, as the customer. When what you wanted is done, or the agent "
             f"cannot help you, write {STOP} and nothing else."]
    return "\n\n".join(p for p in parts if p)


def user_chat(context: UserContext) -> list[dict[str, str]]:
    """The chat the model answers for ``context`` (module docstring)."""
    flip = {"user": "assistant", "assistant": "user"}
    chat = [{"role": "system", "content": user_instructions(context.scenario)}]
    chat += [{"role": flip[role], "content": text} for role, text in context.conversation if role in flip]
    chat.append({"role": "user", "content": context.message})
    return chat


def opening_chat(scenario: Scenario) -> list[dict[str, str]]:
    """The chat the model answers with its first message: its instructions, then the agent's :data:`GREETING`."""
    return [{"role": "system", "content": user_instructions(scenario)}, {"role": "user", "content": GREETING}]


def parse_reply(text: str | None) -> UserReply:
    """The model's text as a reply (module docstring)."""
    if text is None or STOP in text or not text.strip():
        return END_TURN
    reply = text.strip()
    return UserReply(reply, confirmed=is_confirmation(reply))


class ModelUser(UserSimulator):
    """A model playing the scenario (module docstring); ``label`` names it in reports."""

    def __init__(self, generate: Generate, *, label: str = "model"):
        self.generate = generate
        self.label = label

    def reply_batch(self, contexts: Sequence[UserContext]) -> list[UserReply]:
        if not contexts:
            return []
        texts = list(self.generate([user_chat(c) for c in contexts]))
        if len(texts) != len(contexts):
            raise RuntimeError(f"the user model gave {len(texts)} replies for {len(contexts)} messages")
        return [parse_reply(t) for t in texts]

    def open_batch(self, scenarios: Sequence[Scenario]) -> list[str | None]:
        """Each scenario's first message, written by the model to the agent's :data:`GREETING` (None: it wrote
        nothing, or only :data:`STOP`)."""
        if not scenarios:
            return []
        texts = list(self.generate([opening_chat(s) for s in scenarios]))
        if len(texts) != len(scenarios):
            raise RuntimeError(f"the user model gave {len(texts)} openings for {len(scenarios)} scenarios")
        return [parse_reply(t).text for t in texts]

    def close(self) -> None:
        close = getattr(self.generate, "close", None)
        if callable(close):
            close()
