"""A metric's card (`judgebench metrics NAME`), read from its own declaration.

Everything on a card comes from what the plugin registered: the MetricInfo (description,
citation, what it does with an empty text, kind, required fields, direction, range, level)
and the pydantic Options model (each option's type, default, Literal choices and numeric
bounds), so a card cannot drift from the code. `MetricCard.to_dict()` is what `judgebench
metrics NAME --json` prints; its keys are listed in CARD_FIELDS and OPTION_FIELDS and stay
stable.
"""

from __future__ import annotations

import json
import shlex
import types
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from judgebench.registry import MetricEntry

CARD_FIELDS = ("name", "version", "kind", "plugin", "plugin_version", "description",
               "citation", "empty_text", "requires", "higher_is_better", "value_range", "level",
               "has_corpus", "deterministic", "options", "extra_options", "example")
OPTION_FIELDS = ("name", "type", "required", "default", "choices", "minimum", "maximum",
                 "exclusive_minimum", "exclusive_maximum", "description")


@dataclass(frozen=True)
class OptionCard:
    """One option of a metric's Options model."""

    name: str
    type: str
    required: bool
    default: Any
    choices: list[Any] | None
    minimum: float | None
    maximum: float | None
    exclusive_minimum: float | None
    exclusive_maximum: float | None
    description: str

    def to_dict(self) -> dict[str, Any]:
        return {key: getattr(self, key) for key in OPTION_FIELDS}

    @property
    def allowed(self) -> str:
        """The values it takes, as one short phrase: choices or bounds ("" when any)."""
        choices = " | ".join(map(str, self.choices)) if self.choices is not None else ""
        low = (f"{self.minimum:g} <= " if self.minimum is not None
               else f"{self.exclusive_minimum:g} < " if self.exclusive_minimum is not None
               else "")
        high = (f" <= {self.maximum:g}" if self.maximum is not None
                else f" < {self.exclusive_maximum:g}" if self.exclusive_maximum is not None
                else "")
        bounds = f"{low}x{high}" if low or high else ""
        return " | ".join(part for part in (bounds, choices) if part)


@dataclass(frozen=True)
class MetricCard:
    """What a metric is, needs, reads like and takes, and how to cite and run it."""

    entry: MetricEntry
    options: list[OptionCard] | None  # None: registered as a factory, options undeclared
    extra_options: bool  # the Options model passes unknown options on (judge.panel)
    example: str

    def to_dict(self) -> dict[str, Any]:
        info = self.entry.info
        return {
            "name": info.name, "version": info.version, "kind": info.kind,
            "plugin": self.entry.plugin, "plugin_version": self.entry.version,
            "description": info.description, "citation": info.citation,
            "empty_text": None if info.empty_text is None else info.empty_text.model_dump(),
            "requires": list(info.requires), "higher_is_better": info.higher_is_better,
            "value_range": list(info.value_range), "level": info.level,
            "has_corpus": info.has_corpus, "deterministic": info.deterministic,
            "options": None if self.options is None else [o.to_dict() for o in self.options],
            "extra_options": self.extra_options, "example": self.example,
        }


def metric_card(entry: MetricEntry) -> MetricCard:
    """The card of a registered metric or sentinel."""
    model = entry.options_model
    options = None if model is None else [option_card(name, field)
                                          for name, field in model.model_fields.items()]
    extra = model is not None and model.model_config.get("extra") == "allow"
    return MetricCard(entry, options, extra, example_command(entry, model))


def option_card(name: str, field: FieldInfo) -> OptionCard:
    # pydantic keeps Field(ge=..., lt=...) as annotated-types constraints with these attributes
    bounds: dict[str, float | None] = {"ge": None, "le": None, "gt": None, "lt": None}
    for constraint in field.metadata:
        for key in bounds:
            value = getattr(constraint, key, None)
            if isinstance(value, int | float):
                bounds[key] = float(value)
    required = field.is_required()
    default = None if required else json.loads(
        json.dumps(field.get_default(call_default_factory=True), default=repr))
    return OptionCard(name=name, type=type_name(field.annotation), required=required,
                      default=default, choices=_choices(field.annotation),
                      minimum=bounds["ge"], maximum=bounds["le"],
                      exclusive_minimum=bounds["gt"], exclusive_maximum=bounds["lt"],
                      description=field.description or "")


def _example_value(name: str, field: FieldInfo) -> str:
    return str(field.examples[0]) if field.examples else name.upper()


def type_name(annotation: Any) -> str:
    """`int`, `float | None`, `list[str]`; a Literal is named by the type of its choices."""
    origin = get_origin(annotation)
    if origin is Literal:
        kinds = dict.fromkeys(type(choice).__name__ for choice in get_args(annotation))
        return " | ".join(kinds)
    if origin in (Union, types.UnionType):
        return " | ".join(dict.fromkeys(type_name(arg) for arg in get_args(annotation)))
    if annotation is type(None):
        return "None"
    if origin is not None:
        args = ", ".join(type_name(arg) for arg in get_args(annotation))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    return getattr(annotation, "__name__", str(annotation).replace("typing.", ""))


def _choices(annotation: Any) -> list[Any] | None:
    """The Literal values an option takes (with None where it is optional)."""
    if get_origin(annotation) is Literal:
        return list(get_args(annotation))
    if get_origin(annotation) in (Union, types.UnionType):
        found = [_choices(arg) for arg in get_args(annotation)]
        literal = [values for values in found if values is not None]
        if literal:
            none = [None] if type(None) in get_args(annotation) else []
            return [value for values in literal for value in values] + none
    return None


def example_command(entry: MetricEntry, model: type[BaseModel] | None) -> str:
    """A command that runs the metric: `score` for a metric, `audit` for a sentinel. Its spec
    sets each option that is required, declares `examples` (pydantic's Field(examples=[..]):
    the first one), or is a `model` with no default (a judge's), as NAME=VALUE."""
    info = entry.info
    needed = [] if model is None else [
        f"{name}={_example_value(name, field)}" for name, field in model.model_fields.items()
        if field.is_required() or field.examples
        or (name == "model" and field.get_default() is None)]
    spec = shlex.quote(info.name + (":" + ",".join(needed) if needed else ""))
    if info.kind == "sentinel":  # the sentinels that read text read it from the generations
        samples = " --samples generations.jsonl" if info.requires else ""
        return f"judgebench audit scores.csv --human human.quality --sentinel {spec}{samples}"
    if {"output_a", "output_b"} & set(info.requires):
        return f"judgebench score pairs.jsonl -m {spec} -o verdicts.csv"
    return f"judgebench score generations.jsonl -m {spec} -o scores.csv"
