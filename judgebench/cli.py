"""The `judgebench` command group.

Built-in commands live one per module in judgebench/commands/ and are imported only when
invoked, so `judgebench --help` stays fast. Plugins add commands through `register_commands`;
the commands of HOSTLESS_COMMANDS start without loading any plugin.
Exit codes: 0 success, 2 bad usage or input, 3 a run with failed scores (`score`),
1 any other failure.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any

import click

from judgebench import __version__
from judgebench.errors import JudgebenchError

BUILTIN_COMMANDS: dict[str, tuple[str, str]] = {
    "score": ("judgebench.commands.score", "Score generations with one or more metrics."),
    "meta-eval": ("judgebench.commands.meta_eval", "Correlate metrics with human judgments."),
    "aggregate": ("judgebench.commands.aggregate", "Rank systems with social-choice rules."),
    "audit": ("judgebench.commands.audit", "Audit metrics: sentinels, probes, report card."),
    "compare-judges": ("judgebench.commands.compare_judges",
                       "Compare two judges: flips, kappa, flips against people, KL/JS."),
    "diff": ("judgebench.commands.diff", "Compare two runs (tables or stores): flips, "
             "statistic changes, moved conclusions, fingerprints."),
    "plugins": ("judgebench.commands.plugins", "List installed plugins and their hooks."),
    "metrics": ("judgebench.commands.metrics", "List every registered metric, or show one "
                "metric's card."),
    "runs": ("judgebench.commands.runs", "List the recent runs in a store."),
    "logs": ("judgebench.commands.logs", "Show a run's scores: status, reason, judge prompt "
             "and answer."),
    "items": ("judgebench.commands.items", "Item response theory: abilities, items, subsets."),
    "combine": ("judgebench.commands.combine", "Learn a cross-fitted combination of metrics."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        names = set(super().list_commands(ctx))
        names |= {n for n, (module, _) in BUILTIN_COMMANDS.items() if _module_exists(module)}
        return sorted(names)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in BUILTIN_COMMANDS and name not in self.commands:
            module_name, _ = BUILTIN_COMMANDS[name]
            if not _module_exists(module_name):
                return None
            return importlib.import_module(module_name).command
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in BUILTIN_COMMANDS and name not in self.commands:
                rows.append((name, BUILTIN_COMMANDS[name][1]))
            else:
                cmd = super().get_command(ctx, name)
                if cmd is not None and not cmd.hidden:
                    rows.append((name, cmd.get_short_help_str(limit=60)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except JudgebenchError as exc:
            from judgebench.display import safe

            click.echo(f"Error: {safe(exc)}", err=True)
            ctx.exit(exc.exit_code)


def _module_exists(module_name: str) -> bool:
    return importlib.util.find_spec(module_name) is not None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="judgebench")
@click.option(
    "-p", "--plugin", "plugins", multiple=True, metavar="MODULE",
    help="Load a local plugin: a module path or a .py file (repeatable).",
)
@click.option("-v", "--verbose", is_flag=True,
              help="Let third-party libraries print their warnings and progress bars "
                   "(transformers, huggingface_hub, sacrebleu, ...); without it, only errors.")
def cli(plugins: tuple[str, ...], verbose: bool) -> None:
    """Score generated text with pluggable metrics and audit them against people."""
    from judgebench.verbosity import set_third_party_output

    set_third_party_output(verbose)


def _plugins_and_command(argv: list[str]) -> tuple[list[str], str | None]:
    """The -p/--plugin values given before the command name, and the command name."""
    found: list[str] = []
    command = None
    args = iter(argv)
    for arg in args:
        if arg in ("-p", "--plugin"):
            found.append(next(args, ""))
        elif arg.startswith("--plugin="):
            found.append(arg.split("=", 1)[1])
        elif not arg.startswith("-"):
            command = arg
            break
    return [f for f in found if f], command


# Built-in commands that start without the plugin host (unless -p names a plugin): no plugin
# command is registered for them, and the command builds the host itself where it needs one
# (meta-eval: for a column whose direction neither a flag nor the sidecar gives).
HOSTLESS_COMMANDS = frozenset({"meta-eval", "runs", "logs"})


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    local, command = _plugins_and_command(args)
    if local or command not in HOSTLESS_COMMANDS:
        from judgebench.plugins import get_host

        try:
            host = get_host(local)
        except JudgebenchError as exc:
            click.echo(f"Error: {exc}", err=True)
            sys.exit(exc.exit_code)
        host.call_register_commands(cli)
    # The arguments as given, for the command line a run records (`judgebench runs`).
    cli.main(args=args, prog_name="judgebench", obj={"argv": list(args)})


if __name__ == "__main__":
    main()
