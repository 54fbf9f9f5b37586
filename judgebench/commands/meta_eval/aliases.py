"""The mode flags `meta-eval` had before its subcommands, kept for one release: `rewrite`
turns `meta-eval SCORES --pairwise ...` into `meta-eval pairwise SCORES ...`, and `warn` says
so on stderr. A command line with several mode flags goes to the one the old command ran
(the first below); the others are then options that subcommand does not have (exit 2)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

import click


@dataclass(frozen=True)
class ModeFlag:
    flag: str
    subcommand: str
    #: The option the flag's value becomes, "" for the subcommand's second argument, None for
    #: a flag without a value.
    value_to: str | None = None
    #: Flags that mean nothing more once the subcommand is chosen (dropped with it).
    implied: tuple[str, ...] = ()


#: In the order the old command chose among them.
MODE_FLAGS = (
    ModeFlag("--spans", "spans", value_to=""),
    ModeFlag("--alt-test", "alt-test"),
    ModeFlag("--power-for", "power", value_to="--delta"),
    ModeFlag("--construct", "construct", value_to="--intended"),
    ModeFlag("--transitivity", "transitivity", implied=("--pairwise",)),
    ModeFlag("--pairwise", "pairwise"),
)


def _options(args: list[str]) -> list[str]:
    """The arguments before a `--` (after it, every argument is a value)."""
    return args[:args.index("--")] if "--" in args else args


def _named(token: str, mode: ModeFlag) -> bool:
    return token == mode.flag or (mode.value_to is not None
                                  and token.startswith(mode.flag + "="))


def rewrite(args: list[str]) -> list[str] | None:
    """`args` of `meta-eval` with an old mode flag, as the subcommand's arguments (the
    subcommand name first); None when no mode flag is given."""
    options = _options(args)
    mode = next((m for m in MODE_FLAGS if any(_named(t, m) for t in options)), None)
    if mode is None:
        return None
    out: list[str] = []
    trailing: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        if i >= len(options):
            out.append(token)
        elif token in mode.implied:
            pass
        elif _named(token, mode):
            if mode.value_to is not None:
                if "=" in token:
                    value = token.split("=", 1)[1]
                elif i + 1 < len(options):
                    i += 1
                    value = args[i]
                else:
                    raise click.UsageError(f"Option '{mode.flag}' requires an argument.")
                if mode.value_to:
                    out += [mode.value_to, value]
                else:
                    trailing.append(value)
        else:
            out.append(token)
        i += 1
    if any(value.startswith("-") for value in trailing) and "--" not in out:
        out.append("--")
    return [mode.subcommand, *out, *trailing]


def warn(args: list[str], rewritten: list[str], command_path: str) -> None:
    from judgebench.display import safe

    flag = next(m.flag for m in MODE_FLAGS if m.subcommand == rewritten[0])
    click.echo(safe(f"meta-eval: warning: {flag} is deprecated and goes in the next release; "
                    f"use: {command_path} {shlex.join(rewritten)}"), err=True)
