"""The report of the audit of pairwise judges: `judgebench audit PAIRS --pairwise`.

PAIRS is a pairwise table (DESIGN.md: one row per compared pair, `human.*` preferences and
per judge `<spec>`, `<spec>.ab`, `<spec>.ba` verdicts). The report carries every statistic of
`meta-eval --pairwise` (accuracy per order, both-correct, consistency, tie rate, the kappas;
item-bootstrap CIs; per category and macro-averaged with `--by`; significance clusters of the
judges' accuracy) and a summary per human column that opens the report
(`judgebench.auditing.pairwise`), next to the judge-bias probes. There are no sentinels and
no gate: a pairwise judge is compared with people and with the other judges.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from judgebench.auditing.blocks import Options
from judgebench.auditing.report import Report
from judgebench.tables.failed import MISSING, FailedAs


def pairwise_report(pairs: Path, *, humans: Sequence[str], by: str | None, human_ties: str,
                    options: Options, version: str, failed_as: FailedAs = MISSING,
                    log: Callable[[str], None] | None = None, texts: Path | None = None
                    ) -> Report:
    """The report of the judges of the pairwise table `pairs` against `humans`; `texts`
    (generations, `--pairs`) gives the outputs' texts to the style control of a table
    without them (judgebench.services.pairwise_style)."""
    from judgebench.services.pairwise import pairwise_meta_eval

    result = pairwise_meta_eval(pairs, humans=humans, by=by, human_ties=human_ties,
                                bootstrap=options.bootstrap, ci=options.ci, seed=options.seed,
                                compare=True, resamples=options.resamples,
                                alpha=options.alpha, failed_as=failed_as, log=log)
    from judgebench.services.pairwise_style import style_rankings

    style = style_rankings(pairs, result.judges, level=options.ci, failed_as=failed_as,
                           log=log, texts=texts)
    cycles: list[dict[str, Any]] = []
    if options.robustness:
        from judgebench.services.transitivity import transitivity

        cycles = transitivity(pairs, humans=humans, bootstrap=options.bootstrap, ci=options.ci,
                              seed=options.seed, log=log).to_dict()
    return Report(
        title=f"Audit of {pairs.name}",
        created=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        version=version,
        inputs={"scores": str(pairs), "table": "pairwise", "samples": None, "store": None,
                "rows": result.pairs, "items": result.items, "judges": result.judges},
        settings={"statistics": [], "levels": [], "by": by, "human_ties": human_ties,
                  "failed_as": failed_as.name,
                  "bootstrap": options.bootstrap, "ci": options.ci, "seed": options.seed,
                  "alpha": options.alpha, "resamples": options.resamples},
        humans=list(result.humans), metrics=[], sentinels=[], blocks=[],
        pairwise=result.to_dict(), transitivity=cycles, style=style)
