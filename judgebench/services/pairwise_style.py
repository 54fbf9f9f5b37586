"""The style-controlled rankings of `audit PAIRS --pairwise` and of `bench`'s pairwise cards
(the scored pairs.csv, to which bench adds the suite's texts): for each pairwise judge, the
systems ranked by Bradley-Terry on its verdicts as given (raw) and with the outputs' style
controlled, side by side with their Wald intervals, and the style covariates' coefficients
with theirs (judgebench.services.bt_models.style_control, as `aggregate -r bradley-terry
--control length,markdown --winner JUDGE` computes it: the aggregate service is called, not
copied).

Where the table has it: the controls are length and markdown where it has the outputs'
texts (`output_a`, `output_b`), length alone where it has only their lengths (`length_a`,
`length_b`); a table without either, or without `system_a`/`system_b`, has no section.
`score`'s pairwise table has the lengths only: `add_texts` adds the texts of the samples it
scored (bench: the suite's; audit: those of --pairs) where they cover every pair and each
markdown feature varies over the pairs (else aggregate could not fit it). A
judge whose fit has no finite estimate, or whose verdicts cannot be read so, is a row with
status "error" and the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from judgebench.errors import InputError
from judgebench.tables.failed import FailedAs, parse_failed_as

OUTPUTS = ("output_a", "output_b")
LENGTHS = ("length_a", "length_b")
HAS_TEXTS = "the table has texts"


def controls_of(columns: Sequence[str]) -> tuple[str, ...]:
    """The style controls a pairwise table's columns allow (module docstring)."""
    present = set(columns)
    if not {"system_a", "system_b"} <= present:
        return ()
    if set(OUTPUTS) <= present:
        return ("length", "markdown")
    return ("length",) if set(LENGTHS) <= present else ()


def add_texts(table: Path, samples: Path, *, output: Path) -> str | None:
    """Write `table` with the texts of `samples` (generations read as `score` reads them:
    `output_a`, `output_b`, a conversation's last assistant messages) on the pair key to
    the CSV `output` (atomically; it may be `table`): None where written, else why not
    (the table has texts already, `samples` give one pair twice, a pair of the table
    lacks a text there, or a markdown feature is the same on every pair: most often no
    output has any of it, as in summaries), writing nothing. A CSV table's other cells are
    kept as written (read as text), another format's as `read_pairs` reads them; a table
    without the lengths gets them too (characters, as `score` counts them)."""
    import pandas as pd

    from judgebench.tables.io import atomic_path, file_format, read_samples
    from judgebench.tables.pairs import PAIR_KEY, read_pairs

    if file_format(table) == "csv":
        scored = pd.read_csv(table, dtype=str, keep_default_na=False, na_values=[""])
    else:
        scored = read_pairs(table)
    if set(OUTPUTS) & set(scored.columns):
        return HAS_TEXTS
    key = list(PAIR_KEY)
    texts = pd.DataFrame([(s.item, s.system_a, s.system_b, s.output_a, s.output_b)
                          for s in read_samples(samples)], columns=[*key, *OUTPUTS])
    texts = texts.dropna(subset=["system_a", "system_b"]).astype({k: str for k in key})
    twice = texts.duplicated(subset=key)
    if twice.any():
        item, a, b = texts[key].to_numpy()[twice.to_numpy().argmax()]
        return f"{samples} gives the pair ({item}, {a}, {b}) twice"
    merged = scored.astype({k: str for k in key}).merge(texts, on=key, how="left")
    lacking = merged[list(OUTPUTS)].isna().any(axis=1)
    if lacking.any():
        item, a, b = merged[key].to_numpy()[lacking.to_numpy().argmax()]
        return f"{samples} has no text for the pair ({item}, {a}, {b})"
    still = _constant_markdown(merged)
    if still:
        return (f"arena-hard-auto's {still} feature is the same on every pair of the texts "
                "(most often: no output has any), so its coefficient cannot be estimated")
    if not set(LENGTHS) & set(merged.columns):  # CSV reads an empty text as missing
        for length, text in zip(LENGTHS, OUTPUTS, strict=True):
            merged[length] = merged[text].str.len()
    with atomic_path(output) as tmp:  # a reader never sees it half-written
        merged.to_csv(tmp, index=False)
    return None


def _constant_markdown(frame: Any) -> str | None:
    """The first of arena-hard-auto's markdown features (meta_eval.aggregation.style) that
    is the same on every row of `frame` (texts in output_a, output_b), which `aggregate
    --control markdown` cannot estimate; None if each varies."""
    import numpy as np

    from meta_eval.aggregation.style import MARKDOWN_FEATURES, markdown_counts, markdown_feature

    lengths = [frame[c].str.len().to_numpy(dtype=float) for c in OUTPUTS]
    counts = [np.array([markdown_counts(t) for t in frame[c]], dtype=float)
              .reshape(-1, len(MARKDOWN_FEATURES)) for c in OUTPUTS]
    for k, name in enumerate(MARKDOWN_FEATURES):
        feature = markdown_feature(count_a=counts[0][:, k], count_b=counts[1][:, k],
                                   length_a=lengths[0], length_b=lengths[1])
        if not (len(feature) > 1 and float(feature.std(ddof=1)) > 0):
            return name
    return None


def style_rankings(pairs: Path, judges: Sequence[str], *, level: float,
                   failed_as: FailedAs | str | None,
                   log: Callable[[str], None] | None = None,
                   texts: Path | None = None) -> list[dict[str, Any]]:
    """One row per judge: its raw and style-controlled Bradley-Terry rankings and the
    covariates' coefficients (`StyleControl.to_dict`, with `judge` and `rule`); [] where the
    table has no style to control. `texts` (generations) gives the outputs' texts to a
    table without them, where they cover every pair (`add_texts`, on a copy)."""
    import tempfile

    from judgebench.services.aggregate import aggregate
    from judgebench.tables.io import file_format
    from judgebench.tables.pairs import read_pairs

    if texts is not None:
        with tempfile.TemporaryDirectory(prefix="judgebench-style-") as folder:
            copy = Path(folder) / f"{pairs.stem}.csv"
            why = add_texts(pairs, texts, output=copy)
            if why is None:
                found = style_rankings(copy, judges, level=level, failed_as=failed_as,
                                       log=log)
                # a reason names the table given, not the copy (CSV: the same lines)
                named = str(pairs) if file_format(pairs) == "csv" else \
                    f"{pairs} (as CSV, with the texts of {texts})"
                return [{**r, "reason": r["reason"].replace(str(copy), named)}
                        if isinstance(r.get("reason"), str) else r for r in found]
        if log and why != HAS_TEXTS:
            log(f"style control without markdown: {why}")

    controls = controls_of([str(c) for c in read_pairs(pairs).columns])
    if not controls:
        return []
    rule = "bradley-terry" if level == 0.95 else f"bradley-terry:level={level:g}"
    # aggregate reads a failed verdict as missing or a tie; `wrong` needs people's label
    told = parse_failed_as(failed_as, pairwise=True)
    counted = told if told.name in ("missing", "tie") else None
    rows: list[dict[str, Any]] = []
    for judge in judges:
        if log:
            log(f"style control: {judge} ({', '.join(controls)})")
        try:
            result = aggregate(pairs, rules=[rule], winner=judge, control=controls,
                               failed_as=counted)
        except InputError as exc:
            rows.append({"judge": judge, "rule": rule, "controls": list(controls),
                         "status": "error", "reason": str(exc)})
            continue
        [outcome] = result.outcomes
        if outcome.style is None:
            rows.append({"judge": judge, "rule": rule, "controls": list(controls),
                         "status": "error", "reason": outcome.reason or "no fit"})
            continue
        rows.append({"judge": judge, "rule": rule, **outcome.style.to_dict()})
    return rows
