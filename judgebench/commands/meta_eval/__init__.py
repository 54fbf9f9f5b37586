"""`judgebench meta-eval`: one command per question about metrics and judges against people.

Without a subcommand name (`judgebench meta-eval SCORES --human COL ...`) it correlates the
metric columns of a scores table with human columns (`correlations`); each other question is a
subcommand in a module of its own, imported only when invoked. The mode flags of the release
before (`meta-eval SCORES --pairwise ...`) still work for one release: `aliases` rewrites them
into the subcommand, with a deprecation warning on stderr that names the new form.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from judgebench.commands.meta_eval import aliases

#: Subcommand name -> (module, short help), in the order --help lists them.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "pairwise": ("judgebench.commands.meta_eval.pairwise",
                 "Pairwise judges against people on a table of compared pairs."),
    "transitivity": ("judgebench.commands.meta_eval.transitivity",
                     "Cyclic triples and Bradley-Terry misfit of pairwise verdicts."),
    "spans": ("judgebench.commands.meta_eval.spans",
              "A judge's error spans against people's: precision, recall, F1."),
    "alt-test": ("judgebench.commands.meta_eval.alt_test",
                 "The alternative-annotator test: can a metric replace an annotator?"),
    "construct": ("judgebench.commands.meta_eval.construct",
                  "Construct validity: does a metric follow its own criterion most?"),
    "power": ("judgebench.commands.meta_eval.power",
              "Items (and annotators) a study needs to separate the metrics."),
    "listwise": ("judgebench.commands.meta_eval.listwise",
                 "Best-of-N judges against people's best candidates (RewardBench 2)."),
    "reliability": ("judgebench.commands.meta_eval.reliability",
                    "Draws of a judge or raters against themselves: ICC, flakiness, pass@k."),
    "nodes": ("judgebench.commands.meta_eval.nodes",
              "A compound judge's nodes against people; where its disagreements pass."),
}
DEFAULT_MODULE = "judgebench.commands.meta_eval.correlations"


def default_command() -> click.Command:
    """The correlations, what `meta-eval` runs without a subcommand name."""
    command: click.Command = importlib.import_module(DEFAULT_MODULE).command
    return command


class MetaEvalGroup(click.Group):
    """A group whose arguments, when they do not start with a subcommand name (nor ask for
    the group's help), go to the default command, which then runs as `meta-eval` itself:
    its usage, errors and `--help` read `judgebench meta-eval [OPTIONS] SCORES` as before."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in SUBCOMMANDS:
            return None
        command: click.Command = importlib.import_module(SUBCOMMANDS[name][0]).command
        return command

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and (args[0] in SUBCOMMANDS or args[0] in ctx.help_option_names):
            return super().parse_args(ctx, args)
        rewritten = aliases.rewrite(args)
        if rewritten is not None:
            if not ctx.resilient_parsing:
                aliases.warn(args, rewritten, ctx.command_path)
            return super().parse_args(ctx, rewritten)
        ctx.meta[_DEFAULT_ARGS] = list(args)
        return []

    def invoke(self, ctx: click.Context) -> Any:
        if _DEFAULT_ARGS not in ctx.meta:
            return super().invoke(ctx)
        command = default_command()
        args = ctx.meta.pop(_DEFAULT_ARGS)
        with command.make_context(ctx.info_name, args, parent=ctx.parent) as sub_ctx:
            return command.invoke(sub_ctx)

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The default command's usage, text and options, then the subcommands, then the
        examples."""
        default = default_command()
        default_ctx = click.Context(default, info_name=ctx.info_name, parent=ctx.parent)
        formatter.write_usage(ctx.command_path, "[OPTIONS] SCORES | COMMAND [ARGS]...")
        default.format_help_text(default_ctx, formatter)
        default.format_options(default_ctx, formatter)
        self.format_commands(ctx, formatter)
        default.format_epilog(default_ctx, formatter)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands (judgebench meta-eval COMMAND --help)"):
            formatter.write_dl([(name, short) for name, (_, short) in SUBCOMMANDS.items()])


_DEFAULT_ARGS = "judgebench.meta_eval.default_args"


@click.group("meta-eval", cls=MetaEvalGroup)
def command() -> None:
    """Correlate metrics with human judgments, or answer another question about them."""
