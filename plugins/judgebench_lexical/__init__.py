"""Lexical metrics (BLEU, chrF, TER, ROUGE, exact match, token F1, length) as a plugin."""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgebench.plugin_api import hookimpl

if TYPE_CHECKING:
    from judgebench.plugin_api import MetricRegister

__version__ = "0.1.0"


@hookimpl
def register_metrics(register: MetricRegister) -> None:
    from judgebench_lexical import metrics

    for metric in metrics.ALL:
        register(metric)
