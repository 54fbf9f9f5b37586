"""`fit --search criteria --rewrite-with SPEC`: critique shadowing. A judge (any LLM judge
spec; its backend writes) is shown the criterion and the training rows where the starting
judge is furthest from people (the texts, the judge's score and people's), and asked for a
rewritten criterion, `--rewrites` times; each answer is a wording tried beside the user's.

Rewrites are written per training split, so no number is computed on rows its wording saw:
`rewrite-1` ... from the search folds (the final choice, reported on the held-out fold, which
no prompt shows), and `rewrite-fJ-1` ... from the search folds but J (the choice the
cross-fitted number evaluates on fold J). Each request goes through the rewriter's backend
and the judge cache, under the run's budget, so a rerun asks nothing again.
"""

from __future__ import annotations

import dataclasses
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
    """One rewrite asked for: its wording's name, the text (None: no usable answer), why it
    is not tried under its name, the search fold left out of its rows (None: the final
    split's, every search fold shown) and the wording its text is tried as (None: not
    tried; another's name: the same text)."""

    name: str
    text: str | None
    reason: str | None = None
    fold: int | None = None
    tried_as: str | None = None


def name_of(fold: int | None, k: int) -> str:
    """The wording name of the k-th rewrite of a split (fold None: the final one)."""
    return f"rewrite-{k}" if fold is None else f"rewrite-f{fold}-{k}"


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


def ask(metric: Any, asked: Sequence[tuple[str, int | None, str]], run_settings: RunSettings
        ) -> list[Rewrite]:
    """Each (name, fold, prompt) of `asked` asked of the rewriter's backend through the
    judge cache, under the run's budget; each answer's text between <criterion> tags (or the
    whole answer)."""
    from judgebench.backends.base import run_sync
    from judgebench.engine.runtime import running

    with running(run_settings):
        backend = metric.use_cache()
        requests = [metric.request(({"role": "user", "content": t},),
                                   max_tokens=REWRITE_TOKENS) for _, _, t in asked]
        answers = run_sync(backend.agenerate(requests))
    found: list[Rewrite] = []
    for (name, fold, _), answer in zip(asked, answers, strict=True):
        if not answer.ok:
            found.append(Rewrite(name, None, f"the rewriter failed: {answer.error}", fold))
            continue
        tagged = ANSWER.search(answer.text)
        text = (tagged.group(1) if tagged else answer.text).strip()
        found.append(Rewrite(name, text or None, None if text else "an empty answer", fold))
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
        identity = backend.cache_identity()
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
    """The usable rewrites as wordings beside `given`, and every rewrite with its outcome: a
    text already tried (the starting judge's, the user's, an earlier rewrite's) is tried as
    that wording, under its name (`tried_as`), not twice."""
    from judgebench.tables.criteria_variants import Variant

    seen: dict[str, str | None] = {start_text.strip(): None, **{v.text: v.name for v in given}}
    kept: list[Variant] = []
    report: list[Rewrite] = []
    for rewrite in found:
        if rewrite.text is None:
            report.append(rewrite)
        elif rewrite.text in seen:
            same = seen[rewrite.text]
            report.append(dataclasses.replace(
                rewrite, tried_as=same,
                reason=f"the same text as {same or 'the starting judge'} (not tried twice)"))
        else:
            seen[rewrite.text] = rewrite.name
            kept.append(Variant(rewrite.name, rewrite.text))
            report.append(dataclasses.replace(rewrite, tried_as=rewrite.name))
    return kept, report


def allowed(rewrites: Sequence[Rewrite], fold: int | None) -> set[str | None]:
    """The rewritten wordings a split may choose among: its own rewrites' (as tried)."""
    return {r.tried_as for r in rewrites if r.fold == fold and r.text is not None}


def placeholders(count: int, folds: Sequence[int | None]) -> list[Variant]:
    """Stand-ins for `count` rewrites of each split of `folds` before they are written, for
    the estimate: each as long as a rewrite may be (REWRITE_TOKENS words), so its calls' cost
    is an upper bound."""
    from judgebench.tables.criteria_variants import Variant

    return [Variant(name_of(fold, k), f"{name_of(fold, k)}: " + "word " * REWRITE_TOKENS)
            for fold in folds for k in range(1, count + 1)]
