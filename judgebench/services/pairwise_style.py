"""The style-controlled rankings of `audit PAIRS --pairwise` and of `bench`'s pairwise cards
(the scored pairs.csv, to which bench adds the suite's texts): for each pairwise judge, the
systems ranked by Bradley-Terry on its verdicts as given (raw) and with the outputs' style
controlled, side by side with their Wald intervals, and the style covariates' coefficients
with theirs (judgebench.services.bt_models.style_control, as `aggregate -r bradley-terry
--control length,markdown --winner JUDGE` computes it: the aggregate service is called, not
copied).

Where the table has it: the controls are length and markdown where it has the outputs'
texts (`output_a`, `output_b`), length alone where it has only their lengths (`length_a`,
`length_b`); a table without either, or without `system_a`/`system_b`, has no section. A
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


def controls_of(columns: Sequence[str]) -> tuple[str, ...]:
    """The style controls a pairwise table's columns allow (module docstring)."""
    present = set(columns)
    if not {"system_a", "system_b"} <= present:
        return ()
    if set(OUTPUTS) <= present:
        return ("length", "markdown")
    return ("length",) if set(LENGTHS) <= present else ()


def style_rankings(pairs: Path, judges: Sequence[str], *, level: float,
                   failed_as: FailedAs | str | None,
                   log: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """One row per judge: its raw and style-controlled Bradley-Terry rankings and the
    covariates' coefficients (`StyleControl.to_dict`, with `judge` and `rule`); [] where the
    table has no style to control."""
    from judgebench.services.aggregate import aggregate
    from judgebench.tables.pairs import read_pairs

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
