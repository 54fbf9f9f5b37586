"""Conversations as samples: which message is judged, what a conversation's `input` and
`output` are, and how a probe's change of the output reaches the judged message.

A sample's `turn` is the index in `messages` of the judged assistant message; without it the
whole conversation is judged. `derived_fields` is the one rule that gives a conversation
its `output` (the judged message, else the last assistant message) and `input` (the last
user message before it), and a pair of conversations its `output_a`/`output_b` (each
continuation's last assistant message)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from judgebench.models import Message, Sample


def check_turn(messages: Sequence[Message] | None, turn: int | None) -> None:
    """ValueError unless `turn` addresses an assistant message of `messages` (None: none)."""
    if turn is None:
        return
    if messages is None:
        raise ValueError("a turn addresses a message of 'messages', and the sample has none")
    if not 0 <= turn < len(messages):
        raise ValueError(f"turn {turn} is out of range: the conversation has "
                         f"{len(messages)} message(s), indexed 0 to {len(messages) - 1}")
    if messages[turn].role != "assistant":
        raise ValueError(f"turn {turn} is a {messages[turn].role} message; the judged turn "
                         "is an assistant message")


def judged_index(messages: Sequence[Message], turn: int | None) -> int | None:
    """The index of the judged message: `turn`, else the last assistant message (None:
    the conversation has none)."""
    if turn is not None:
        return turn
    return next((i for i in range(len(messages) - 1, -1, -1)
                 if messages[i].role == "assistant"), None)


def last_user(messages: Sequence[Message], before: int) -> str | None:
    return next((messages[i].text for i in range(before - 1, -1, -1)
                 if messages[i].role == "user"), None)


def derived_fields(sample: Sample) -> dict[str, str]:
    """The fields a conversation sample derives from its messages (see the module)."""
    out: dict[str, str] = {}
    if sample.messages is None:
        if sample.messages_a is not None or sample.messages_b is not None:
            raise ValueError("messages_a and messages_b continue 'messages', their common "
                             "start: give messages too")
        return out
    pair = sample.messages_a is not None or sample.messages_b is not None
    if pair:
        if sample.turn is not None:
            raise ValueError("a pair of conversations is judged on its continuations; "
                             "'turn' addresses one conversation's message")
        for side in ("a", "b"):
            tail = getattr(sample, f"messages_{side}")
            if not tail:
                raise ValueError(f"a pair of conversations needs messages_{side} (its "
                                 "continuation of 'messages')")
            index = judged_index(tail, None)
            if index is None:
                raise ValueError(f"messages_{side} has no assistant message to judge")
            out[f"output_{side}"] = tail[index].text
        user = last_user(sample.messages, len(sample.messages))
        if user is not None:
            out["input"] = user
        return out
    index = judged_index(sample.messages, sample.turn)
    if index is None:
        raise ValueError("the conversation has no assistant message to judge")
    out["output"] = sample.messages[index].text
    user = last_user(sample.messages, index)
    if user is not None:
        out["input"] = user
    return out


def with_output(sample: Sample, text: str) -> Sample:
    """`sample` with its output replaced by `text` (a probe's change); for a conversation
    the judged assistant message says `text` too (its tool calls dropped: `text` is the
    whole message), so a judge that reads the messages sees the change."""
    if sample.messages is None or sample.messages_a is not None:
        return sample.model_copy(update={"output": text})
    index = judged_index(sample.messages, sample.turn)
    messages = list(sample.messages)
    if index is not None:
        messages[index] = messages[index].model_copy(update={"content": text,
                                                             "tool_calls": None})
    return sample.model_copy(update={"output": text, "messages": messages})
