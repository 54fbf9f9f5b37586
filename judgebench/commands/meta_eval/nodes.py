"""`judgebench meta-eval nodes SCORES --human COL`: a compound judge's (judge.dag) nodes,
each against the human column of its own question, and the disagreements of its score with
people attributed to the nodes they pass through (judgebench.services.dag_nodes)."""

from __future__ import annotations

from pathlib import Path

import click

from judgebench.commands.examples import examples
from judgebench.commands.meta_eval._shared import REPORT_FORMATS, echo_report, log
from judgebench.commands.options import finite_float, metrics_option
from judgebench.commands.output_format import format_options

EXAMPLES = examples(
    ("the five-node compound judge of examples/dag.toml on one summary (the CPU default "
     "model), then its nodes against people",
     "judgebench score examples/summeval-sample.jsonl -m judge.dag:path=examples/dag.toml "
     "--limit 1 -o dag.csv --store dag.db && judgebench meta-eval nodes dag.csv "
     "--human human.coherence --store dag.db"),
    ("a score within 1 of people's counts as agreeing; the report as JSON",
     "judgebench score examples/summeval-sample.jsonl -m judge.dag:path=examples/dag.toml "
     "--limit 1 -o dag.csv --store dag.db && judgebench meta-eval nodes dag.csv "
     "--human human.coherence --store dag.db --tolerance 1 --json"),
)


@click.command("nodes", epilog=EXAMPLES)
@click.argument("scores", type=click.Path(path_type=Path))
@click.option("--human", required=True, metavar="COL",
              help="The human column of the compound judge's final question (a column of "
                   "SCORES, or store:CRITERION).")
@metrics_option("judge.dag column; repeatable. Default: every judge.dag column.")
@click.option("--store", "store_path", type=click.Path(path_type=Path),
              help="The store `score` wrote the node answers to (default: the one the "
                   "sidecar names, else judgebench.db).")
@click.option("--tolerance", type=finite_float(0), default=0.0, show_default=True,
              help="A score agrees with people when within this distance of their label.")
@format_options("Print the report as a JSON object.", REPORT_FORMATS)
def command(scores: Path, human: str, metrics: tuple[str, ...], store_path: Path | None,
            tolerance: float, output_format: str) -> None:
    """Each node of a compound judge (judge.dag) against the human column its question has
    (`human = ...` in the DAG file), and the share of the judge's disagreements with HUMAN
    that pass through each node."""
    from judgebench.cli import given_host
    from judgebench.render.dag_nodes import nodes_report
    from judgebench.services.dag_nodes import node_meta_eval

    result = node_meta_eval(scores, human=human, metrics=metrics, store=store_path,
                            tolerance=tolerance, host=given_host(), log=log)
    echo_report(result, output_format, nodes_report)
