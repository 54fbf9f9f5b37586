"""`judgebench meta-eval PAIRS --pairwise`: run the pairwise service and print its results, a
JSON array with --json, otherwise one judge x statistic table per human column (and
category): value [CI], the human ceiling last."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import click

from judgebench.display import safe
from judgebench.render import json as json_out
from judgebench.render import text as text_out


def run_pairwise(pairs: Path, *, humans: Sequence[str], judges: Sequence[str], by: str | None,
                 human_ties: str, bootstrap: int, ci: float, seed: int, compare: bool,
                 resamples: int, alpha: float, as_json: bool, log: Callable[[str], None],
                 failed_as: str = "missing") -> None:
    from judgebench.services.pairwise import pairwise_meta_eval

    result = pairwise_meta_eval(pairs, humans=humans, judges=judges, by=by,
                                human_ties=human_ties, bootstrap=bootstrap, ci=ci, seed=seed,
                                compare=compare, resamples=resamples, alpha=alpha,
                                failed_as=failed_as, log=log)
    if as_json:
        click.echo(json_out.document(result.to_dict()))
    else:
        click.echo(safe(text_out.pairwise_meta_eval(result)))
