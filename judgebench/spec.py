"""Metric specs: `NAME` or `NAME:key=value[,key=value...]` on the command line, or a TOML file.

A value that holds a comma is quoted, `key="a, b"` or `key='a, b'` (see `parse_spec`). Nothing
else is loose: a ':' with no option after it, an empty option (`a=1,,b=2`, a trailing comma, a
`key=` without a value: `key=""` is the empty text) and a space around a name, a key, '=', ','
or ':' are refused (they would end up in the column's name); blanks around the whole spec are
dropped.

The scores-table column of a metric is its spec as written, so two configurations of one
metric sit side by side, less the options that say how to reach a model rather than what is
computed (`RUNTIME_OPTIONS`: endpoint, key variable, concurrency, rate limits, timeouts,
retries, prices, the answer cache): `judge.rubric:model=m,api_base=http://h/v1,concurrency=8`
is the column `judge.rubric:model=m`. In a TOML file each table under `[metrics]` is one
metric; its key is the column:

    [metrics.geval-coherence]
    metric = "judge.geval"
    criterion = "coherence"
    model = "hosted_vllm/my-judge"

`@FILE` in place of a spec (`score -m @judge.toml`) is every metric of that TOML file, as
`--config FILE` reads it (`specs_of`): the judge `judgebench fit -o` writes is one.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgebench.errors import InputError


@dataclass(frozen=True)
class MetricSpec:
    name: str
    options: dict[str, Any] = field(default_factory=dict)
    column: str = ""

    def __post_init__(self) -> None:
        if not self.column:
            object.__setattr__(self, "column", self.name)


#: Options that change how a model is reached, never what a metric computes: no signature
#: holds them (tests/test_column_names.py checks each), so they stay out of column names.
RUNTIME_OPTIONS = frozenset({
    "api_base", "api_key_env", "concurrency", "rpm", "tpm", "timeout_s", "max_attempts",
    "backoff_base_s", "backoff_max_s", "max_retry_after_s", "input_cost_per_token",
    "output_cost_per_token", "price_in", "price_out", "cache",
})


def parse_spec(text: str, *, what: str = "metric spec") -> MetricSpec:
    """Parse `lexical.rouge2:multi_ref=mean,stemmer=false` (values stay strings; the metric's
    Options model converts them). A value that holds a comma goes in single or double quotes
    (`judge.rubric:definition="short, clear",model=x`); inside them `\\"` (or `\\'`) is the
    quote and `\\\\` a backslash; any other backslash, and a quote inside an unquoted value, is
    a plain character. A bad spec is a SpecError that shows where in it the problem is (`what`
    names the kind of spec: an aggregation rule's is read the same way)."""
    spec = text.strip()
    name, colon, rest = spec.partition(":")
    spans: dict[str, tuple[int, int]] = {}
    try:
        if not name.strip():
            raise _Problem(0, "has no name")
        if name != name.rstrip(_BLANK):
            raise _Problem(len(name.rstrip(_BLANK)), _SPACE)
        if colon and not rest:
            raise _Problem(len(name), "ends with ':' and no option: write NAME alone, or "
                                      "NAME:key=value")
        options = _options(spec, len(name) + len(colon), spans) if colon else {}
    except _Problem as problem:
        raise SpecError(spec, problem.position, problem.text, what) from None
    return MetricSpec(name=name.strip(), options=options, column=_column(spec, name, spans))


def _column(spec: str, name: str, spans: dict[str, tuple[int, int]]) -> str:
    """`spec` as written, less its `RUNTIME_OPTIONS` (each `key=value` as it was typed)."""
    runtime = [span for key, span in spans.items() if key in RUNTIME_OPTIONS]
    if not runtime:
        return spec
    kept = [spec[start:end].strip() for key, (start, end) in spans.items()
            if key not in RUNTIME_OPTIONS]
    return f"{name}:{','.join(kept)}" if kept else name


class SpecError(InputError):
    """A spec that does not parse, with the position of the problem marked under it."""

    def __init__(self, spec: str, position: int, problem: str, what: str = "metric spec"
                 ) -> None:
        super().__init__(
            f"{what} '{spec}' {problem} (at position {position + 1}):\n"
            f"  {spec}\n  {' ' * position}^\n"
            "Write NAME:key=value[,key=value...]; quote a value that holds a comma: "
            "key=\"a, b\". Long or complex options read better from a TOML file: --config.")


class _Problem(Exception):
    """What is wrong at `position` (0-based) of the spec being read."""

    def __init__(self, position: int, text: str) -> None:
        super().__init__(text)
        self.position, self.text = position, text


_BLANK = " \t"
#: Blanks are text only inside a value (`criterion=short and clear`): around a name, a key,
#: '=', ',' or ':' they would end up in the column's name, so they are refused.
_SPACE = ("has a space around a name, key, '=', ',' or ':': write NAME:key=value,key=value "
          "(a space may be inside a value, or anywhere in quotes)")


def _options(spec: str, at: int, spans: dict[str, tuple[int, int]] | None = None
             ) -> dict[str, str]:
    """The `key=value` options of `spec` from position `at` on; `spans` gets where each
    option's text starts and ends."""
    options: dict[str, str] = {}
    while True:
        if at == len(spec):
            raise _Problem(at - 1, "ends with a comma: leave it out")
        if spec[at] in _BLANK:
            raise _Problem(at, _SPACE)
        if spec[at] == ",":
            raise _Problem(at, "has an empty option (two commas, or a comma after ':')")
        equals = _until(spec, at, "=,")
        key = spec[at:equals]
        if equals == len(spec) or spec[equals] == ",":
            raise _Problem(at, f"has option '{key.strip()}' that is not key=value")
        if not key.strip():
            raise _Problem(at, "has an option with no name before '='")
        if key != key.rstrip(_BLANK):
            raise _Problem(at + len(key.rstrip(_BLANK)), _SPACE)
        if key in options:
            raise _Problem(at, f"gives option '{key}' twice")
        start = at
        options[key], at = _value(spec, equals + 1, key)
        if spans is not None:
            spans[key] = (start, at)
        if at == len(spec):
            return options
        at += 1  # the comma


def _until(spec: str, at: int, stops: str) -> int:
    """The position of the first of `stops` from `at` on (the end if none)."""
    while at < len(spec) and spec[at] not in stops:
        at += 1
    return at


def _value(spec: str, at: int, key: str) -> tuple[str, int]:
    """The value of option `key` starting at `at` and the position after it (at its comma
    or the end)."""
    if at < len(spec) and spec[at] in _BLANK:
        raise _Problem(at, _SPACE)
    if at == len(spec) or spec[at] == ",":
        raise _Problem(at - 1, f"has option '{key}' with no value: write {key}=\"\" for an "
                               "empty text")
    if spec[at] not in "\"'":
        comma = _until(spec, at, ",")
        value = spec[at:comma]
        if value != value.rstrip(_BLANK):
            raise _Problem(at + len(value.rstrip(_BLANK)), _SPACE)
        return value, comma
    quote, opened, chars = spec[at], at, []
    at += 1
    while at < len(spec) and spec[at] != quote:
        if spec[at] == "\\" and at + 1 < len(spec) and spec[at + 1] in (quote, "\\"):
            at += 1
        chars.append(spec[at])
        at += 1
    if at == len(spec):
        raise _Problem(opened, f"has an unbalanced quote: this {quote} is never closed")
    after = at + 1
    if after < len(spec) and spec[after] in _BLANK:
        raise _Problem(after, _SPACE)
    if after < len(spec) and spec[after] != ",":
        raise _Problem(after, "has text after a closing quote: put the whole value inside "
                              "the quotes")
    return "".join(chars), after


def specs_of(text: str) -> list[MetricSpec]:
    """The specs `text` names: `@FILE`, the metrics of that TOML file (`load_config`); any
    other text, the one spec it is (`parse_spec`)."""
    if text.strip().startswith("@"):
        path = text.strip()[1:]
        if not path:
            raise InputError(f"metric spec '{text}' names no file after '@': write @judge.toml")
        return load_config(path)
    return [parse_spec(text)]


def spec_file(text: str) -> Path | None:
    """The file of an `@FILE` spec (None for any other spec)."""
    stripped = text.strip()
    return Path(stripped[1:]) if stripped.startswith("@") and len(stripped) > 1 else None


def load_config(path: str | Path) -> list[MetricSpec]:
    """Metric specs from a TOML file (see the module docstring for the shape)."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("config file not found", path=str(path)) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a TOML file", path=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot read the config file ({exc.strerror})",
                         path=str(path)) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"not valid TOML: {exc}", path=str(path)) from None
    except RecursionError:
        raise InputError("not readable TOML: nested deeper than this reader reads",
                         path=str(path)) from None
    metrics = data.get("metrics")
    if not isinstance(metrics, dict) or not metrics:
        raise InputError("expected one or more [metrics.<column>] tables", path=str(path),
                         field="metrics")
    specs = []
    for column, table in metrics.items():
        if not isinstance(table, dict) or not isinstance(table.get("metric"), str):
            raise InputError("each [metrics.<column>] table needs metric = \"NAME\"",
                             path=str(path), field=f"metrics.{column}.metric")
        options = {k: v for k, v in table.items() if k != "metric"}
        specs.append(MetricSpec(name=table["metric"], options=options, column=column))
    return specs
