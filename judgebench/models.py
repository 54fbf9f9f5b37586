"""The data model: what a metric reads (Sample), declares (MetricInfo) and produces (Score)."""

from __future__ import annotations

import hashlib
import json
from enum import StrEnum
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

Role = Literal["system", "user", "assistant", "tool"]


class ToolCall(BaseModel):
    """One tool call an assistant message makes (OpenAI's chat shape, flattened): its id,
    the tool's name and its arguments as written (a JSON text, or an object)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str | None = None
    name: str = Field(min_length=1)
    arguments: str | dict[str, Any] = ""

    @property
    def arguments_text(self) -> str:
        """The arguments as written, or as sorted-key JSON when given as an object."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, sort_keys=True)


class Message(BaseModel):
    """One message of a conversation. `content` is required (it may be empty) except on an
    assistant message that makes tool calls; a `tool` message answers a call
    (`tool_call_id`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Role
    content: str | None = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None

    @model_validator(mode="after")
    def _shape(self) -> Message:
        if self.content is None and not (self.role == "assistant" and self.tool_calls):
            raise ValueError("a message needs 'content' (only an assistant message that makes "
                             "tool_calls may have none)")
        if self.tool_calls and self.role != "assistant":
            raise ValueError(f"only an assistant message makes tool_calls, not a {self.role}")
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("a tool message needs 'tool_call_id' (the call it answers)")
        return self

    @property
    def text(self) -> str:
        """The content, with its tool calls written out (`name(arguments)`)."""
        calls = [f"[tool call {call.name}({call.arguments_text})]"
                 for call in self.tool_calls or ()]
        if not calls:
            return self.content or ""
        return "\n".join([*([self.content] if self.content else []), *calls])


class Sample(BaseModel):
    """One system output for one item. `reference` may hold several references.

    A conversation sample carries `messages` instead of `input`/`output`: `turn` (an index
    into `messages`, an assistant message) is the judged turn, None the whole conversation.
    Its `output` is then derived: the judged assistant message (or the conversation's last
    assistant message), and its `input` the last user message before it, so every metric
    reads a conversation as it reads an input and an output; `input`/`output` given beside
    `messages` must equal what is derived. A pair of conversations shares `messages` (their
    common start) and continues it with `messages_a` and `messages_b`; `output_a`/`output_b`
    are their last assistant messages."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    item: str = Field(min_length=1)
    system: str = Field(min_length=1)
    output: str | None = None
    input: str | None = None
    source: str | None = None
    reference: str | list[str] | None = None
    context: str | list[str] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    human: dict[str, float | None] = Field(default_factory=dict)
    # Pairwise samples: `output_a` (by `system_a`) against `output_b` (by `system_b`).
    output_a: str | None = None
    output_b: str | None = None
    system_a: str | None = None
    system_b: str | None = None
    # Conversations (see the class docstring).
    messages: list[Message] | None = None
    turn: int | None = None
    messages_a: list[Message] | None = None
    messages_b: list[Message] | None = None

    @field_validator("turn")
    @classmethod
    def _turn_addresses(cls, value: int | None, info: ValidationInfo) -> int | None:
        from judgebench.conversation import check_turn

        if "messages" in info.data:  # else the messages failed and say so themselves
            check_turn(info.data["messages"], value)
        return value

    @model_validator(mode="after")
    def _conversation(self) -> Sample:
        if self.messages is None and self.messages_a is None and self.messages_b is None:
            return self
        from judgebench.conversation import derived_fields

        derived = derived_fields(self)
        for name, value in derived.items():
            given = getattr(self, name)
            if given is not None and given != value:
                raise ValueError(
                    f"'{name}' is derived from the messages ({_short_text(value)}), but the "
                    f"sample gives {_short_text(given)}: give messages or {name}, not both")
            object.__setattr__(self, name, value)
        return self

    @model_validator(mode="before")
    @classmethod
    def _pair_names_system(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("system") and data.get("system_a"):
            data = {**data, "system": f"{data['system_a']} vs {data.get('system_b')}"}
        return data

    @field_validator("item", "system", mode="before")
    @classmethod
    def _id_as_text(cls, value: Any) -> Any:
        # Ids like 17 in a CSV are ids, not numbers; bools and floats are not ids.
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        return value

    @property
    def references(self) -> list[str]:
        if self.reference is None:
            return []
        return [self.reference] if isinstance(self.reference, str) else list(self.reference)

    @property
    def input_text(self) -> str | None:
        """What the sample was asked, the one rule every metric reads it by: its `input`, or
        else its `source` (None: neither). An empty `input` is a text (see `EmptyText`), so
        it wins over a `source` as any other input does."""
        return self.input if self.input is not None else self.source

    @property
    def is_pairwise(self) -> bool:
        return self.output_a is not None or self.output_b is not None

    @property
    def is_conversation(self) -> bool:
        return self.messages is not None


def _short_text(value: str | None) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


SAMPLE_FIELDS: tuple[str, ...] = tuple(Sample.model_fields)
#: The conversation fields: a scores table keeps `turn` as a key beside item and system.
CONVERSATION_FIELDS = ("messages", "turn", "messages_a", "messages_b")


class Status(StrEnum):
    OK = "ok"
    PARSE_ERROR = "parse_error"
    REFUSED = "refused"
    ERROR = "error"
    SKIPPED = "skipped"


EmptyAction = Literal["scored", "skipped"]


class EmptyText(BaseModel):
    """What a metric does with a text given as the empty string (an empty output is a text,
    not a missing field): `scored` as its reference library scores it, or `skipped` (a status
    with the reason) where the metric is undefined on it. One entry per text field it reads
    (`output` covers `output_a`/`output_b`, `reference` each reference, `input` the input or
    source, `context` each retrieved passage); None: it does not read that field. `note`: the
    value it gets, or why not."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    output: EmptyAction | None = None
    reference: EmptyAction | None = None
    input: EmptyAction | None = None
    context: EmptyAction | None = None
    note: str = ""

    def describe(self) -> str:
        """One line: `output scored, reference scored: NOTE`."""
        fields = [f"{name} {action}" for name, action in
                  (("output", self.output), ("reference", self.reference),
                   ("input", self.input), ("context", self.context)) if action is not None]
        head = ", ".join(fields) or "reads no text"
        return f"{head}: {self.note}" if self.note else head


MetricKind = Literal["reference", "learned", "judge", "sentinel"]
MetricLevel = Literal["segment", "corpus"]


class MetricInfo(BaseModel):
    """What a metric is, what it needs and how to read its numbers."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z0-9_-]+\.[A-Za-z0-9_.+-]+$")
    version: str = "1"
    kind: MetricKind
    requires: tuple[str, ...] = ("output",)
    higher_is_better: bool = True
    value_range: tuple[float | None, float | None] = (None, None)
    # segment: one score per sample; a segment metric may also offer a corpus statistic
    # (`has_corpus`), which is NOT the mean of its segment scores. corpus: one score per system.
    level: MetricLevel = "segment"
    has_corpus: bool = False
    deterministic: bool = True
    description: str = ""
    #: The paper (or software) to cite for this metric, as one readable reference.
    citation: str = ""
    #: What it does with an empty text (None: not declared); every built-in metric declares it.
    empty_text: EmptyText | None = None
    #: Whether it judges one prompt's N candidates at once (a listwise sample, see
    #: `judgebench.listwise_sample`): `score` then writes the listwise table.
    listwise: bool = False

    @field_validator("requires")
    @classmethod
    def _known_fields(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [f for f in value if f not in SAMPLE_FIELDS]
        if unknown:
            raise ValueError(f"unknown Sample field(s) {unknown}; known: {list(SAMPLE_FIELDS)}")
        return value


class Signature(BaseModel):
    """Everything that decides a score, as a canonical sacreBLEU-style string.

    `str(signature)` looks like ``lexical.bleu@1|plugin:judgebench-lexical 0.1.0|tok:13a``:
    the metric and its version first, then ``key:value`` pairs sorted by key. It is also the
    base of the store and cache keys (`key`).
    """

    model_config = ConfigDict(frozen=True)

    metric: str
    version: str
    fields: dict[str, str] = Field(default_factory=dict)

    def __str__(self) -> str:
        parts = [f"{self.metric}@{self.version}"]
        parts += [f"{k}:{self.fields[k]}" for k in sorted(self.fields)]
        return "|".join(parts)

    @property
    def key(self) -> str:
        return hashlib.sha256(str(self).encode("utf-8")).hexdigest()[:16]


class Outcome(BaseModel):
    """What a metric returns for one sample: a value, or a failed status with a reason (never
    a silent 0), plus what a judge call cost. The runner stamps it into a Score."""

    model_config = ConfigDict(extra="forbid")

    value: float | None
    status: Status = Status.OK
    reason: str | None = None
    raw: str | None = None
    rationale: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    latency_s: float | None = None

    @field_validator("value")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and value != value:  # NaN: use status + reason instead
            raise ValueError("a score value may not be NaN; return a failed status with a reason")
        return value

    @classmethod
    def failed(cls, status: Status, reason: str, **kwargs: Any) -> Outcome:
        return cls(value=None, status=status, reason=reason, **kwargs)


class Score(Outcome):
    """One metric's verdict on one sample, as stored: an Outcome with its keys and signature."""

    item: str
    system: str
    metric: str
    signature: str = ""
    sample_index: int = 0


class CorpusScore(BaseModel):
    """A corpus-level number for one system (e.g. corpus BLEU), with how it was made."""

    system: str
    metric: str
    value: float | None
    status: Status = Status.OK
    reason: str | None = None
    signature: str = ""
    n: int = 0
