"""The `judgebench` command group.

Built-in commands live one per module in judgebench/commands/ and are imported only when
invoked, so `judgebench --help` stays fast. `make_cli(host)` makes a group of its own for one
plugin host: the built-in commands, the commands that host's plugins add (`register_commands`),
and the host in the context (`ctx.obj["host"]`, read with `context_host`), where the commands
find it. `main` builds the host and the group for each call; the commands of HOSTLESS_COMMANDS
start without loading any plugin. The module's `cli` is a group without a host (its commands
build one when they need it) that nothing changes after import.
Exit codes: 0 success, 2 bad usage or input, 3 a run with failed scores (`score`),
1 any other failure.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import TYPE_CHECKING, Any

import click

from judgebench._version import __version__
from judgebench.commands.examples import examples
from judgebench.errors import JudgebenchError

if TYPE_CHECKING:
    from judgebench.plugins import PluginHost

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
    "view": ("judgebench.commands.view", "Browse a store in a local web viewer (read-only)."),
    "items": ("judgebench.commands.items", "Item response theory: abilities, items, subsets."),
    "combine": ("judgebench.commands.combine", "Learn a cross-fitted combination of metrics."),
    "fit": ("judgebench.commands.fit", "Fit a judge to people's labels (few-shot examples, a "
            "threshold) and report it out of fold."),
    "estimate": ("judgebench.commands.estimate", "Estimate people's mean or pass rate from a "
                 "judge and a few human labels (PPI++)."),
    "escalate": ("judgebench.commands.escalate", "Trust a judge's verdicts above a confidence "
                 "threshold with guaranteed human agreement; escalate the rest."),
    "suites": ("judgebench.commands.suites", "List the meta-evaluation suites, show one, or "
               "export its samples and human table."),
    "bench": ("judgebench.commands.bench", "Benchmark metrics or judges on the suites, beside "
              "published baselines and the human ceiling."),
    "label": ("judgebench.commands.label", "Label outputs in the browser: blind, keyboard "
              "first, saved in the store as you go."),
    "labels": ("judgebench.commands.labels", "People's labels in a store: import, export the "
               "human table, agreement and judges against them."),
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

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and not ctx.resilient_parsing \
                and self.get_command(ctx, name) is None:
            from judgebench.suggest import close_matches

            known = [n for n in self.list_commands(ctx)
                     if not getattr(self.commands.get(n), "hidden", False)]
            matches = close_matches(name, known)
            hint = f" Did you mean {' or '.join(repr(m) for m in matches)}?" if matches else ""
            ctx.fail(f"No such command {name!r}.{hint}")
        return super().resolve_command(ctx, args)

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


def _group(host: PluginHost | None) -> LazyGroup:
    """A new `judgebench` group whose context carries `host` (None: none yet)."""

    @click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]},
                 epilog=examples(
                     ("every registered metric", "judgebench metrics"),
                     ("BLEU of the first 8 rows of the SummEval sample, as CSV on stdout",
                      "judgebench score examples/summeval-sample.jsonl -m lexical.bleu "
                      "--limit 8"),
                     ("how well chrF follows people's coherence ratings",
                      "judgebench meta-eval examples/summeval-scores.csv --human "
                      "human.coherence --metric lexical.chrf")))
    @click.version_option(__version__, prog_name="judgebench")
    @click.option(
        "-p", "--plugin", "plugins", multiple=True, metavar="MODULE",
        help="Load a local plugin: a module path or a .py file (repeatable).",
    )
    @click.option("-v", "--verbose", is_flag=True,
                  help="Let third-party libraries print their warnings and progress bars "
                       "(transformers, huggingface_hub, sacrebleu, ...); without it, only "
                       "errors.")
    @click.pass_context
    def cli(ctx: click.Context, plugins: tuple[str, ...], verbose: bool) -> None:
        """Score generated text with pluggable metrics and audit them against people."""
        from judgebench.engine import progress_line
        from judgebench.verbosity import set_third_party_output

        obj = ctx.ensure_object(dict)
        if obj.get("host") is None:
            obj["host"] = host
        set_third_party_output(verbose)
        if ctx.invoked_subcommand is not None:
            ctx.with_resource(progress_line.watching(f"judgebench {ctx.invoked_subcommand}"))

    assert isinstance(cli, LazyGroup)
    return cli


def make_cli(host: PluginHost | None) -> LazyGroup:
    """A new `judgebench` group for `host`: the built-in commands, the commands its plugins
    register, and `host` for every command it runs (`context_host`, `given_host`). None:
    the built-in commands only, which build a host if they need one."""
    group = _group(host)
    if host is not None:
        host.call_register_commands(group)
    return group


def given_host() -> PluginHost | None:
    """The plugin host of the command running now: the one its group was made for (or
    `main` put in `ctx.obj`); None for a hostless command started without -p (its service
    builds one only if it needs it)."""
    obj = click.get_current_context().find_root().ensure_object(dict)
    host: PluginHost | None = obj.get("host")
    return host


def context_host() -> PluginHost:
    """`given_host()`, or, without one, a host of the installed plugins built now and kept
    for the rest of the call."""
    host = given_host()
    if host is None:
        from judgebench.plugins import build_host

        host = click.get_current_context().find_root().obj["host"] = build_host()
    return host


#: The group without a host (`python -m judgebench.cli`, click's CliRunner); never changed.
cli = make_cli(None)


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
HOSTLESS_COMMANDS = frozenset({"meta-eval", "runs", "logs", "view"})

# The plugins judgebench ships (entry-point name and module). None registers a command
# (tests/test_cli_startup.py checks it), so the top-level help, which lists the commands
# plugins add, needs a host only when some other plugin is installed.
BUILTIN_PLUGINS = frozenset({
    ("audit", "judgebench_audit"), ("backends", "judgebench_backends"),
    ("judges", "judgebench_judges"), ("lexical", "judgebench_lexical"),
    ("neural", "judgebench_neural"), ("socialchoice", "judgebench_socialchoice"),
    ("suites", "judgebench_suites"),
})


def _needs_host(args: list[str], local: list[str], command: str | None) -> bool:
    """Whether this call builds the plugin host before the group runs: always with `-p`; for
    a command unless it is hostless; without a command (`--version`, `--help`, a bare
    `judgebench`) only for the help's list of commands, and only when a plugin other than
    the built-in ones is installed (the version is judgebench's own)."""
    if local:
        return True
    if command is not None:
        return command not in HOSTLESS_COMMANDS
    if "--version" in args:
        return False
    return _other_plugins_installed()


def _other_plugins_installed() -> bool:
    import importlib.metadata

    return any((ep.name, ep.value) not in BUILTIN_PLUGINS
               for ep in importlib.metadata.entry_points(group="judgebench"))


def main(argv: list[str] | None = None) -> None:
    """`judgebench ARGS`: a plugin host built for this call (with the `-p` plugins), and a
    group made for it (`make_cli`)."""
    args = sys.argv[1:] if argv is None else argv
    local, command = _plugins_and_command(args)
    host = None
    if _needs_host(args, local, command):
        from judgebench.plugins import build_host

        try:
            host = build_host(local)
        except JudgebenchError as exc:
            click.echo(f"Error: {exc}", err=True)
            sys.exit(exc.exit_code)
    # The arguments as given, for the command line a run records (`judgebench runs`).
    make_cli(host).main(args=args, prog_name="judgebench", obj={"argv": list(args), "host": host})


if __name__ == "__main__":
    main()
