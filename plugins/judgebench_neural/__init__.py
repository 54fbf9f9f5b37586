"""Neural and learned metrics, fully offline: BERTScore, embedding cosine, MAUVE, Vendi,
LM likelihood, COMET and any local sequence-classification model."""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgebench.plugin_api import hookimpl

if TYPE_CHECKING:
    from judgebench.plugin_api import MetricRegister

__version__ = "0.1.0"


@hookimpl
def register_metrics(register: MetricRegister) -> None:
    from judgebench_neural.metrics import ALL

    for metric in ALL:
        register(metric)
