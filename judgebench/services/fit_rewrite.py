"""`fit --search criteria --rewrite-with SPEC`: critique shadowing. A judge (any LLM judge
spec; its backend writes) is shown the criterion and the search rows where the starting
judge is furthest from people (the texts, the judge's score and people's), and asked for a
rewritten criterion, `--rewrites` times; each answer is a wording (`rewrite-1` ...) tried
beside the user's. Only the search folds are shown: the held-out fold never informs a
wording. Each request goes through the rewriter's backend and the judge cache, under the run's
budget, so a rerun asks nothing again.

The rows shown are the search folds' (every fold but the held-out one): the cross-fitted
number of a rewritten wording is optimistic (its rewrite saw every search fold); the
held-out number is not.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from judgebench.errors import InputError
from judgebench.spec import parse_spec

if TYPE_CHECKING:
    from judgebench.engine.runtime import RunSettings
    from judgebench.models import Sample
    from judgebench.plugins import PluginHost
    from judgebench.tables.criteria_variants import Variant
    from meta_eval.arrays import BoolArray, FloatArray

#: The most tokens a rewrite may take (asked of the backend, and the estimate's bound).
REWRITE_TOKENS = 400
#: The characters of a row's input shown (an input is often a long source text).
INPUT_CHARS = 2000
ANSWER = re.compile(r"<criterion>(.*?)</criterion>", re.S)

PROMPT = """You are improving the wording of an evaluation criterion. A judge model reads \
the criterion and scores each response on {low} to {high}.

The criterion ({name}): {definition}

On the rows below the judge's score is furthest from people's scores.
{rows}
Rewrite the criterion's definition so that a judge reading it would score responses as \
these people did. Keep it general: do not mention these rows. This is proposal {number} of \
{total}: make it differ from the other proposals. Answer with the new definition only, \
between <criterion> and </criterion>."""

ROW = """
### Row {n}
Input:
{input}

Response:
{output}

The judge's score: {judge}; people's score: {human}
"""


@dataclass(frozen=True)
class Rewrite:
    """One rewrite asked for: its wording's name, the text (None: no usable answer) and why
    not."""

    name: str
    text: str | None
    reason: str | None = None


def check(text: str) -> None:
    """Refuse a --rewrite-with spec that names no single LLM judge (before any call)."""
    spec = parse_spec(text.strip(), what="--rewrite-with spec")
    if not spec.name.startswith("judge.") or spec.name == "judge.panel":
        _not_a_judge(spec.name)


def _not_a_judge(name: str) -> None:
    raise InputError(f"--rewrite-with {name} is not an LLM judge: give a judge spec whose "
                     "backend writes the rewrite (judge.rubric:backend=...,model=...)",
                     field="--rewrite-with")


def rewriter(text: str, host: PluginHost | None) -> Any:
    """The judge metric whose backend writes the rewrites."""
    from judgebench.plugins import build_host

    spec = parse_spec(text.strip(), what="--rewrite-with spec")
    metric = (host or build_host()).metric(spec.name).build(**spec.options)
    if not (callable(getattr(metric, "use_cache", None))
            and callable(getattr(metric, "request", None))):
        _not_a_judge(spec.name)
    return metric


def furthest(*, human: FloatArray, judge: FloatArray, use: BoolArray, rows: int
             ) -> list[int]:
    """The positions of `use` where |judge - human| is largest (both finite), at most
    `rows` of them, the largest first (ties in position order)."""
    distance = np.abs(judge - human)
    keep = [int(i) for i in np.flatnonzero(use & np.isfinite(distance))]
    return sorted(keep, key=lambda i: -float(distance[i]))[:rows]


def prompts(*, criterion: tuple[str, str], scale: tuple[int, int],
            shown: Sequence[tuple[Sample, float, float]], total: int) -> list[str]:
    """The `total` rewrite prompts (one per proposal) showing the rows of `shown` (each a
    sample, the judge's score and people's)."""
    rows = "".join(ROW.format(n=n, input=(s.input_text or "")[:INPUT_CHARS],
                              output=s.output or "", judge=f"{j:g}", human=f"{h:.3g}")
                   for n, (s, j, h) in enumerate(shown, start=1))
    name, definition = criterion
    return [PROMPT.format(low=scale[0], high=scale[1], name=name, definition=definition,
                          rows=rows, number=k, total=total) for k in range(1, total + 1)]


def criterion_of(metric: Any, options: dict[str, Any]) -> tuple[str, str]:
    """The starting judge's criterion: its name and definition (the built metric's, or the
    options' definition)."""
    found = getattr(metric, "criterion", None)
    name = str(getattr(found, "name", options.get("criterion", "criterion")))
    definition = getattr(found, "definition", None) or options.get("definition") or name
    return name, str(definition)


def ask(metric: Any, texts: Sequence[str], run_settings: RunSettings) -> list[Rewrite]:
    """Each prompt asked of the rewriter's backend through the judge cache, under the run's
    budget; each answer's text between <criterion> tags (or the whole answer)."""
    from judgebench.backends.base import run_sync
    from judgebench.engine.runtime import running

    with running(run_settings):
        backend = metric.use_cache()
        requests = [metric.request(({"role": "user", "content": t},),
                                   max_tokens=REWRITE_TOKENS) for t in texts]
        answers = run_sync(backend.agenerate(requests))
    found: list[Rewrite] = []
    for k, answer in enumerate(answers, start=1):
        name = f"rewrite-{k}"
        if not answer.ok:
            found.append(Rewrite(name, None, f"the rewriter failed: {answer.error}"))
            continue
        tagged = ANSWER.search(answer.text)
        text = (tagged.group(1) if tagged else answer.text).strip()
        found.append(Rewrite(name, text or None, None if text else "an empty answer"))
    return found


def estimate(metric: Any, texts: Sequence[str], run_settings: RunSettings
             ) -> dict[str, Any]:
    """The calls and cost (None: unknown) of asking `texts` (cached answers excluded)."""
    import dataclasses

    from judgebench.engine.runtime import running

    calls, cost = 0, 0.0
    unknown = False
    with running(dataclasses.replace(run_settings, dry_run=True)):
        backend = metric.use_cache()
        identity = backend.identity()
        for text in texts:
            request = metric.request(({"role": "user", "content": text},),
                                     max_tokens=REWRITE_TOKENS)
            if backend.cache is not None and backend.cache.get(request.content_hash(identity)):
                continue
            calls += 1
            one = backend.inner.estimate_cost(backend.count_tokens(request), REWRITE_TOKENS)
            unknown = unknown or one is None
            cost += one or 0.0
    return {"calls": calls, "cost_usd": None if unknown else cost}


def variants(found: Sequence[Rewrite], given: Sequence[Variant], start_text: str
             ) -> tuple[list[Variant], list[Rewrite]]:
    """The usable rewrites as wordings beside `given` (a text already tried, the starting
    judge's included, is left out with its reason), and every rewrite with its outcome."""
    from judgebench.tables.criteria_variants import Variant

    seen = {start_text.strip(): "the starting judge's", **{v.text: v.name for v in given}}
    kept: list[Variant] = []
    report: list[Rewrite] = []
    for rewrite in found:
        if rewrite.text is None:
            report.append(rewrite)
        elif rewrite.text in seen:
            report.append(Rewrite(rewrite.name, rewrite.text,
                                  f"the same text as {seen[rewrite.text]} (not tried twice)"))
        else:
            seen[rewrite.text] = rewrite.name
            kept.append(Variant(rewrite.name, rewrite.text))
            report.append(rewrite)
    return kept, report


def placeholders(count: int) -> list[Variant]:
    """Stand-ins for `count` rewrites before they are written, for the estimate: each as
    long as a rewrite may be (REWRITE_TOKENS words), so its calls' cost is an upper bound."""
    from judgebench.tables.criteria_variants import Variant

    return [Variant(f"rewrite-{k}", f"rewrite {k}: " + "word " * REWRITE_TOKENS)
            for k in range(1, count + 1)]
