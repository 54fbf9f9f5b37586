"""`judgebench labels`: people's labels in a store, one subcommand per module (imported only
when invoked): `import` a file of labels, `export` the human table, `stats` (agreement and
judges against the labels). The work is in `judgebench.services.label_*`, the store's label
tables in `judgebench.engine.labels`."""

from __future__ import annotations

import importlib

import click

from judgebench.commands.examples import examples

#: Subcommand name -> (module, short help), in the order --help lists them.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "import": ("judgebench.commands.labels.import_labels",
               "Import people's labels from a table or a JSONL file into a store."),
    "export": ("judgebench.commands.labels.export",
               "Write a store's labels as the human table the other commands read."),
    "stats": ("judgebench.commands.labels.stats",
              "Labels per item, agreement between annotators, judges against the labels."),
}


class LabelsGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in SUBCOMMANDS:
            return None
        command: click.Command = importlib.import_module(SUBCOMMANDS[name][0]).command
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, text) for name, (_, text) in SUBCOMMANDS.items()])


@click.group("labels", cls=LabelsGroup, epilog=examples(
    ("two annotators' relevance labels of the SummEval sample into a store",
     "judgebench labels import examples/summeval-labels.csv --store runs.db --criterion "
     "relevance --scale 1-5"),
    ("the store's labels as a human table",
     "judgebench labels import examples/summeval-labels.csv --store runs.db --criterion "
     "relevance --scale 1-5 && judgebench labels export --store runs.db -o human.csv"),
))
def command() -> None:
    """People's labels in a store: import them, export the human table, and measure how well
    annotators agree and how well judges follow them."""
