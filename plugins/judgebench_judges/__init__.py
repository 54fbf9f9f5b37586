"""LLM judges as a plugin: judge.rubric, judge.geval, judge.pairwise, judge.reference,
judge.panel, judge.listwise (the best of N), judge.dag (a compound judge read from a file),
Prometheus 2's judge.prometheus and judge.prometheus_relative, GEMBA-MQM's error spans
(judge.mqm) and the retrieval-grounded rag.* metrics (rag.py). Prompt templates live in
templates/*.txt; pass ``template=PATH`` to override.

Registering imports no model library; a judge builds its backend on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgebench.plugin_api import hookimpl

if TYPE_CHECKING:
    from judgebench.plugin_api import MetricRegister

__version__ = "0.1.0"


@hookimpl
def register_metrics(register: MetricRegister) -> None:
    from judgebench_judges.dag import JudgeDag
    from judgebench_judges.geval import GEvalJudge
    from judgebench_judges.listwise import ListwiseJudge
    from judgebench_judges.mqm import MqmJudge
    from judgebench_judges.pairwise import PairwiseJudge
    from judgebench_judges.panel import JudgePanel
    from judgebench_judges.prometheus import PrometheusJudge, PrometheusRelativeJudge
    from judgebench_judges.rag import METRICS as RAG_METRICS
    from judgebench_judges.reference import ReferenceJudge
    from judgebench_judges.rubric import RubricJudge

    for metric in (RubricJudge, GEvalJudge, PairwiseJudge, ReferenceJudge, JudgePanel,
                   PrometheusJudge, PrometheusRelativeJudge, MqmJudge, JudgeDag, ListwiseJudge,
                   *RAG_METRICS):
        register(metric)
