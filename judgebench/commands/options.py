"""Options shared by the commands that read a scores table, each defined once and spelt alike
everywhere (`meta-eval` and its subcommands, `audit`, `bench`, ...).

Each is a decorator (inspect_ai's `eval_options` is the model); the ones whose help or default
differs between commands are functions that make the decorator. A float option takes
`finite_float`: a value that overflows (1e309) or reads as nan or inf is a usage error (exit 2)
naming the option, as is one outside its range. meta_eval is imported only by the options
that need it, so that a command without them starts without numpy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


class Decorator(Protocol):
    """What click.option returns: a decorator that hands back the command it decorates."""

    def __call__(self, command: F, /) -> F: ...


class FiniteFloat(click.FloatRange):
    """A float that is finite (and, given bounds, inside them). click's FloatRange lets nan
    through (every comparison with nan is false) and float() reads 1e309 as inf."""

    def __init__(self, min: float | None = None, max: float | None = None, *,
                 min_open: bool = False, max_open: bool = False) -> None:
        super().__init__(min, max, min_open=min_open, max_open=max_open)
        self.name = "float" if min is None and max is None else "float range"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return super().convert(number, param, ctx)

    def _describe_range(self) -> str:
        return "" if self.min is None and self.max is None else super()._describe_range()


def finite_float(min: float | None = None, max: float | None = None, *,
                 min_open: bool = False, max_open: bool = False) -> FiniteFloat:
    return FiniteFloat(min, max, min_open=min_open, max_open=max_open)


#: A finite float, no bounds.
FINITE = finite_float()
#: A probability strictly between 0 and 1 (confidence level, significance level, power).
OPEN_UNIT = finite_float(0, 1, min_open=True, max_open=True)


def _stack(*options: Decorator) -> Decorator:
    """One decorator applying `options` so that --help lists them in the order given."""
    def decorate(command: F) -> F:
        for option in reversed(options):
            command = option(command)
        return command
    return decorate


def criterion_options(show_reference_help: str) -> Decorator:
    """A new criterion's kind and scale (`labels import`, `label`): --scale/--step, --binary,
    --choices, --pairwise, --description, --show-reference/--no-show-reference."""
    return _stack(
        click.option("--scale", metavar="LOW-HIGH",
                     help="A new criterion: a scale, such as 1-5 (whole steps; see --step)."),
        click.option("--step", default="1", show_default=True, metavar="S|any",
                     help="With --scale: the scale's step, or 'any' for every value between."),
        click.option("--binary", is_flag=True, help="A new criterion: yes or no (0/1)."),
        click.option("--choices", metavar="A,B,...",
                     help="A new criterion: one of these choices."),
        click.option("--pairwise", is_flag=True,
                     help="A new criterion: which of two outputs is better (a, b or tie)."),
        click.option("--description", metavar="TEXT",
                     help="What the criterion asks, shown to annotators."),
        click.option("--show-reference/--no-show-reference", default=None,
                     help=show_reference_help))


def humans_option(help: str, *, required: bool = False) -> Decorator:
    """`--human COL` (parameter `humans`), repeatable."""
    return click.option("--human", "humans", multiple=True, required=required,
                        metavar="COL", help=help)


def metrics_option(help: str) -> Decorator:
    """`--metric COL` (parameter `metrics`), repeatable."""
    return click.option("--metric", "metrics", multiple=True, metavar="COL", help=help)


def statistics_option(help: str = "Repeatable; default: pearson.") -> Decorator:
    """`--statistic NAME` (parameter `statistics`), repeatable, the registered names listed."""
    from meta_eval.statistics import help_text as statistic_help

    return click.option("--statistic", "statistics", multiple=True, metavar="NAME",
                        help=f"{statistic_help()}. {help}")


def epsilon_option(command: F) -> F:
    """`--epsilon`: the metric tie threshold of kendall-23 and acc-23."""
    return click.option("--epsilon", type=FINITE, default=0.0, show_default=True,
                        help="Metric tie threshold for kendall-23 and acc-23.")(command)


def bootstrap_option(default: int, help: str) -> Decorator:
    """`--bootstrap N`: item resamples (0: none)."""
    return click.option("--bootstrap", type=click.IntRange(min=0), default=default,
                        show_default=True, help=help)


def ci_option(help: str | None = "Confidence level of the interval.") -> Decorator:
    return click.option("--ci", type=OPEN_UNIT, default=0.95, show_default=True, help=help)


def interval_option(help: str = "") -> Decorator:
    """`--interval bootstrap|analytic|both`: which confidence interval a correlation gets
    (`meta_eval.analytic`: Fisher z, Bonett-Wright, Fieller)."""
    return click.option(
        "--interval", type=click.Choice(("bootstrap", "analytic", "both")),
        default="bootstrap", show_default=True,
        help="Which confidence interval: the item bootstrap (--bootstrap N), the analytic "
             "one of an ungrouped pearson (Fisher z), spearman (Bonett-Wright) or kendall "
             f"(Fieller), or both.{' ' + help if help else ''}")


def alpha_option(help: str | None) -> Decorator:
    return click.option("--alpha", type=OPEN_UNIT, default=0.05, show_default=True, help=help)


def seed_option(help: str | None = None) -> Decorator:
    return click.option("--seed", type=int, default=0, show_default=True, help=help)


def test_option(help: str, choices: tuple[str, ...] = ("permutation", "williams")
                ) -> Decorator:
    """`--test permutation|williams` (parameter `method`; meta-eval adds steiger)."""
    return click.option("--test", "method", type=click.Choice(choices),
                        default="permutation", show_default=True, help=help)


def resamples_option(command: F) -> F:
    return click.option(
        "--resamples", type=click.IntRange(min=1), default=1000, show_default=True,
        help="Permutation resamples per comparison (early stopping may use fewer).")(command)


def significance_options(test_help: str, alpha_help: str | None) -> Decorator:
    """--test, --resamples and --alpha: how metrics are told apart."""
    return _stack(test_option(test_help), resamples_option, alpha_option(alpha_help))


def exclude_system_option(command: F) -> F:
    return click.option("--exclude-system", "excluded", multiple=True, metavar="NAME",
                        help="Leave this system out; repeatable.")(command)


def raters_option(help: str) -> Decorator:
    """`--rater COL` (parameter `raters`), repeatable."""
    return click.option("--rater", "raters", multiple=True, metavar="COL", help=help)


def judges_option(help: str) -> Decorator:
    """`--judge SPEC` (parameter `judges`), repeatable."""
    return click.option("--judge", "judges", multiple=True, metavar="SPEC", help=help)


def alt_test_options(score_help: str) -> Decorator:
    """`--alt-score` and `--alt-min-items`: how the alternative-annotator test scores an
    answer and which annotators it tests."""
    return _stack(
        click.option("--alt-score", type=click.Choice(("accuracy", "neg-rmse")),
                     default="accuracy", show_default=True, help=score_help),
        click.option("--alt-min-items", type=click.IntRange(min=2), default=30,
                     show_default=True,
                     help="--alt-test: an annotator with fewer items is not tested."))


def target_power_option(help: str) -> Decorator:
    return click.option("--target-power", type=OPEN_UNIT, default=0.8, show_default=True,
                        help=help)


def direction_options(command: F) -> F:
    """`--lower-is-better COL` and `--higher-is-better COL` (parameters `lower`, `higher`):
    the user's word on a column's direction, which outranks the sidecar and the registered
    metric (judgebench.tables.scores_table)."""
    command = click.option(
        "--higher-is-better", "higher", multiple=True, metavar="COL",
        help="A metric column where higher is better, whatever the sidecar or the registered "
             "metric say; repeatable.")(command)
    return click.option(
        "--lower-is-better", "lower", multiple=True, metavar="COL",
        help="A metric column where lower is better (negated, so that higher always means "
             "better); repeatable. Known without it from the table's .meta.json or the "
             "registered metric the column names (lexical.ter).")(command)


def pairwise_options(command: F) -> F:
    """`--by COL` and `--human-ties drop|half|class` (parameters `by`, `human_ties`): how a
    pairwise table's judges are read against people (`meta-eval pairwise`, `audit
    --pairwise`; meta_eval.pairwise)."""
    from meta_eval.pairwise import DEFAULT_TIES

    command = click.option(
        "--human-ties", type=click.Choice(("drop", "half", "class")),
        default=DEFAULT_TIES,
        show_default=True, help="Pairwise: pairs people called a tie: drop = left out of "
        "accuracy; half = a tie on one side earns 0.5; class = a third class.")(command)
    return click.option(
        "--by", metavar="COL", help="Pairwise: every statistic per value of COL (e.g. "
        "category) and macro-averaged.")(command)


def failed_as_option(command: F) -> F:
    """`--failed-as` (parameter `failed_as`): how a failed verdict (a cell reading `failed`,
    or one the sidecar's statuses say failed) is counted (judgebench.tables.failed)."""
    return click.option(
        "--failed-as", "failed_as", default="missing", show_default=True,
        metavar="missing|wrong|tie|min|max|VALUE",
        help="A failed verdict: pairwise missing (dropped), wrong (in the denominator, never "
             "the human label; LLMBar) or tie; numeric missing, min, max (the column's) or a "
             "number. Told from a never-judged cell by the sidecar's statuses or a cell "
             "reading 'failed'.")(command)
