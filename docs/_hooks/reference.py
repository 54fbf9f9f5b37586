"""MkDocs hook: the reference pages, generated at build time from the code they describe, so
they cannot drift from it.

- reference/commands.md: click's own help of every command of `judgebench.cli.make_cli(host)`
  (every option, as `judgebench COMMAND --help` prints it), for the installed plugins' host;
- reference/metrics.md: every registered metric's and sentinel's card
  (`judgebench.metric_card`, what `judgebench metrics NAME` prints);
- reference/statistics.md: the one statistic table, `meta_eval.statistics.STATISTICS`;
- reference/plugin-api.md: every name `judgebench.plugin_api` exports, with its signature and
  docstring;
- reference/python-api.md: every function `judgebench.api` exports (the Python API), likewise;
- benchmarks.md: benchmarks/README.md as it is (it lives beside the benchmarks it describes).

`pages()` gives them as {path: Markdown} without MkDocs (tests/test_docs_run.py reads it).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for path, content in pages().items():
        files.append(File.generated(config, path, content=content))
    return files


def pages() -> dict[str, str]:
    from judgebench.plugins import build_host

    host = build_host()
    return {
        "reference/commands.md": commands_page(host),
        "reference/metrics.md": metrics_page(host),
        "reference/statistics.md": statistics_page(),
        "reference/plugin-api.md": plugin_api_page(),
        "reference/python-api.md": python_api_page(),
        "benchmarks.md": (REPO / "benchmarks" / "README.md").read_text(encoding="utf-8"),
    }


def _cell(value: Any) -> str:
    """A value in a Markdown table cell: pipes escaped, newlines folded."""
    return " ".join(str(value).split()).replace("|", "\\|")


def _fence(text: str) -> str:
    return f"```text\n{text.rstrip()}\n```\n"


def commands_page(host: Any) -> str:
    import click

    from judgebench.cli import make_cli

    group = make_cli(host)
    out = ["# Commands", "",
           "Generated from click's help of every command (`judgebench COMMAND --help` prints "
           "the same), for the plugins installed where the site was built.", ""]
    root = click.Context(group, info_name="judgebench")
    out += ["## judgebench", "", _fence(group.get_help(root))]

    def walk(command: click.Group, parent: click.Context, prefix: str) -> None:
        for name in command.list_commands(parent):
            sub = command.get_command(parent, name)
            if sub is None or sub.hidden:
                continue
            ctx = click.Context(sub, info_name=name, parent=parent)
            full = f"{prefix} {name}"
            out.extend([f"## {full}", "", _fence(sub.get_help(ctx))])
            if isinstance(sub, click.Group):
                walk(sub, ctx, full)

    walk(group, root, "judgebench")
    return "\n".join(out)


def metrics_page(host: Any) -> str:
    from judgebench.metric_card import metric_card
    from judgebench.render import text as text_out

    entries = sorted((host.metrics() | host.sentinels()).values(), key=lambda e: e.name)
    out = ["# Metrics and sentinels", "",
           "Every registered metric's card, generated from its declaration (its `MetricInfo` "
           "and its `Options` model): what `judgebench metrics NAME` prints (`--json` gives "
           "the same card as one object).", "",
           "| metric | kind | needs | direction | description |", "| --- | --- | --- | --- | --- |"]
    for entry in entries:
        info = entry.info
        out.append(f"| [`{info.name}`](#{_anchor(info.name)}) | {info.kind} | "
                   f"{_cell(', '.join(info.requires) or '-')} | "
                   f"{'higher' if info.higher_is_better else 'lower'} is better | "
                   f"{_cell(info.description or '')} |")
    out.append("")
    for entry in entries:
        card = metric_card(entry)
        out += [f"## {entry.info.name}", "", _fence(text_out.metric_card(card))]
    return "\n".join(out)


def _anchor(name: str) -> str:
    """The id Python-Markdown's toc gives the heading `name` (its default `slugify`; the
    strict build checks every anchor)."""
    import re
    import unicodedata

    text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", text).strip().lower())


def statistics_page() -> str:
    from meta_eval.statistics import STATISTICS

    out = ["# Statistics", "",
           "Generated from the one table of statistics, `meta_eval/statistics.py` (what "
           "`meta-eval --statistic`, the bootstrap, the permutation tests and the audit read). "
           "Better: which way a value is better (`zero`: closest to zero). Levels: where it is "
           "defined. Ties: whether a metric tie can count as right.", "",
           "| statistic | what it is | paper | levels | better | ties credited | scale |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    for s in STATISTICS.values():
        scale = ("probabilities" if s.probabilities else "categories" if s.categorical
                 else "human scale" if s.on_scale else "any")
        out.append(f"| `{s.name}` | {_cell(s.description)} | {_cell(s.paper)} | "
                   f"{', '.join(s.levels)} | {s.better} | {'yes' if s.credits_ties else 'no'} "
                   f"| {scale} |")
    out += ["", "## Analytic intervals and tests", "",
            "Generated from `meta_eval/analytic.py` (`meta-eval --interval analytic|both`, "
            "`meta-eval --compare --test williams|steiger`; "
            "q is the standard normal quantile of (1 + confidence) / 2). The default "
            "comparison is signed: for metric evaluation a negative correlation with people "
            "is worse, not as good; `absolute=True` compares |r| (each negatively correlated "
            "metric negated first).", "",
            "| form | applies to | formula | paper | assumptions |",
            "| --- | --- | --- | --- | --- |"]
    from meta_eval.analytic import REFERENCE

    out += [f"| `{name}` | {_cell(what)} | {_cell(formula)} | {_cell(paper)} | "
            f"{_cell(assumptions)} |" for name, what, formula, paper, assumptions in REFERENCE]
    return "\n".join(out + agreement_inference()) + "\n"


# The analytic inference of agreement (meta_eval.kappa_inference, meta_eval.icc): what each
# gives, its paper, what it assumes, and where the CLI shows it.
AGREEMENT_INFERENCE = [
    ("Cohen's kappa, unweighted, linear, quadratic or a custom disagreement matrix",
     "`meta_eval.kappa_inference.cohen_kappa_inference`: se, Wald interval, se0, z, "
     "two-sided p of kappa = 0",
     "Fleiss, Cohen and Everitt 1969", "independent pairs; large n (the interval may pass "
     "1 near perfect agreement)", "`labels stats` (`analytic` of each annotator pair; "
     "`--weights none|linear|quadratic|FILE.csv`); `meta-eval`, `audit` and `bench` "
     "`--interval analytic|both` for an ungrouped kappa, kappa-linear or qwk"),
    ("Fleiss' kappa, m raters, fixed marginals", "`fleiss_kappa_inference`: se0, z, two-sided "
     "p of kappa = 0; no interval (bootstrap the units)", "Fleiss 1971; Fleiss, Nee and "
     "Landis 1979", "every rater codes every unit (incomplete units dropped); the observed "
     "marginals taken as fixed", "`labels stats` (`analytic` of Fleiss' kappa)"),
    ("Randolph's free-marginal kappa", "`randolph_kappa`: se (of a mean of units), Wald "
     "interval, se0 (exact under uniform coding), z, p", "Randolph 2005",
     "q declared categories raters may use in any proportion; independent units",
     "`labels stats` (`randolph`, q the criterion's declared codes)"),
    ("ICC1, ICC2, ICC3, ICC1k, ICC2k, ICC3k", "`meta_eval.icc.icc_forms`: F-test of ICC = 0 "
     "and the F-based interval (ICC2: Satterthwaite's df)", "Shrout and Fleiss 1979; McGraw "
     "and Wong 1996", "normal ratings, independent targets, a complete targets x raters "
     "table; one-way: exchangeable raters or draws, two-way random: raters a sample, "
     "two-way mixed: these raters only", "`meta-eval`/`audit` repeats section "
     "(`icc_inference`, one-way, when every unit has all its draws)"),
    ("Bradley-Terry log-strengths (Davidson ties)", "`meta_eval.aggregation."
     "bradley_terry_covariance`: the observed-information covariance; se(theta_i - theta_j) "
     "= sqrt(C_ii + C_jj - 2 C_ij)", "Bradley and Terry 1952; Davidson 1970; Agresti 2013, "
     "11.6", "independent comparisons (weights as counts), a maximum-likelihood fit (no "
     "penalty; Ford's condition holds)", "Python"),
    ("Order effect (position bias) in Bradley-Terry", "`meta_eval.aggregation.rating."
     "fit_order_effect`: logit P(first wins) = theta_i - theta_j + h; h and the "
     "observed-information covariance", "Agresti 2013, 11.6.3 (home advantage)",
     "independent comparisons, one h for every pair; ties left out", "Python"),
]


def agreement_inference() -> list[str]:
    out = ["", "## Standard errors, intervals and tests of agreement", "",
           "| statistic | gives | paper | assumes | shown by |", "| --- | --- | --- | --- | --- |"]
    out += [f"| {' | '.join(_cell(c) for c in row)} |" for row in AGREEMENT_INFERENCE]
    return out


def _members(cls: type) -> list[str]:
    """The public methods and properties `cls` itself defines that have a docstring."""
    out = []
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        function = member.__func__ if isinstance(member, (classmethod, staticmethod)) else member
        if isinstance(member, property):
            head, doc = f"{cls.__name__}.{name} (property)", inspect.getdoc(member)
        elif inspect.isfunction(function):
            try:
                signature = str(inspect.signature(function))
            except (TypeError, ValueError):
                signature = "(...)"
            head, doc = f"{cls.__name__}.{name}{signature}", inspect.getdoc(function)
        else:
            continue
        if doc:
            out += [f"```text\n{head}\n\n{doc}\n```", ""]
    return out


def plugin_api_page() -> str:
    import judgebench.plugin_api as api

    return module_page(api, "# The plugin API (`judgebench.plugin_api`)",
                       "A plugin imports judgebench through this module only.")


def python_api_page() -> str:
    import judgebench.api as api

    return module_page(api, "# The Python API (`judgebench.api`)",
                       "Each function is re-exported at `judgebench` (`judgebench.score`, ...) "
                       "and returns a typed result with `to_dict()`, `to_json()` and "
                       "`to_pandas()`.")


def module_page(module: Any, title: str, intro: str) -> str:
    """Every name `module.__all__` exports, with its signature and docstring."""
    out = [title, "",
           f"Generated from the module: every name it exports, with its signature and "
           f"docstring. {intro}", "",
           inspect.getdoc(module) or "", ""]
    for name in sorted(module.__all__, key=str.lower):
        obj = getattr(module, name)
        out += [f"## `{name}`", ""]
        if inspect.isclass(obj) or inspect.isfunction(obj):
            kind = "class" if inspect.isclass(obj) else "def"
            try:
                signature = str(inspect.signature(obj))
            except (TypeError, ValueError):
                signature = "(...)"
            out += [f"```text\n{kind} {name}{signature}\n```", ""]
            own = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
            if own:  # a class's own docstring, not one it inherits (Generic's, BaseModel's)
                out += [_fence(inspect.cleandoc(own))]
            if inspect.isclass(obj):
                out += _members(obj)
        else:
            out += [f"A constant: `{_cell(repr(obj))[:300]}`", ""]
    return "\n".join(out)
