"""Neural and learned metrics, fully offline: BERTScore, embedding cosine, MAUVE, Vendi,
LM likelihood, COMET and any local sequence-classification model."""

from __future__ import annotations

from typing import Any

from judgebench.hookspecs import hookimpl

__version__ = "0.1.0"


@hookimpl
def register_metrics(register: Any) -> None:
    from judgebench_neural.metrics import ALL

    for metric in ALL:
        register(metric)
