"""A conversation as data in a judge's prompt: each message between `<turn>` tags that
carry its index and role, the judged turn flagged (`judged="yes"`), every message's text
neutralised so it cannot open or close a tag (`as_data_with`).

The modes of a judge that reads conversations (option ``mode``): ``response`` (the default:
the sample's input and output, for a conversation its last user message and the judged
assistant message), ``turn`` (the conversation up to and including the judged turn,
`Sample.turn`, that turn marked; what follows it is not shown) and ``conversation`` (the
whole conversation, judged as one)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from judgebench.plugin_api import Message, Sample
from judgebench_judges.base import MissingField
from judgebench_judges.templates import as_data_with

Mode = Literal["response", "turn", "conversation"]
#: The tags a conversation template draws (neutralised inside every message).
TAGS = ("turn", "conversation", "conversation_a", "conversation_b")


def rendered(messages: Sequence[Message], *, judged: int | None = None, start: int = 0
             ) -> str:
    """The messages as data: one `<turn index=".." role="..">` block each (a tool message
    names the call it answers, a named message its name; tool calls are written out)."""
    blocks = []
    for offset, message in enumerate(messages):
        index = start + offset
        attrs = f'index="{index}" role="{message.role}"'
        if message.name:
            attrs += f' name="{as_data_with(message.name, TAGS)}"'
        if message.tool_call_id:
            attrs += f' answers="{as_data_with(message.tool_call_id, TAGS)}"'
        if index == judged:
            attrs += ' judged="yes"'
        blocks.append(f"<turn {attrs}>\n{as_data_with(message.text, TAGS)}\n</turn>")
    return "\n".join(blocks)


def conversation_of(sample: Sample, mode: Mode) -> tuple[str, int | None]:
    """(the conversation as data, the judged index) for `mode` turn or conversation;
    MissingField when the sample has no messages (or, for turn, no turn)."""
    if sample.messages is None:
        raise MissingField(f"sample {sample.item}/{sample.system} has no 'messages' "
                           f"(mode={mode} judges a conversation)")
    if mode == "turn":
        if sample.turn is None:
            raise MissingField(f"sample {sample.item}/{sample.system} has no 'turn' "
                               "(mode=turn judges one assistant message)")
        return rendered(sample.messages[:sample.turn + 1], judged=sample.turn), sample.turn
    return rendered(sample.messages), None
