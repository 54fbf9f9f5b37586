"""The aggregate service: what `judgebench aggregate` computes, as a Python function.

`aggregate(table, rules=[...])` reads a leaderboard, a scores table or a pairwise table,
ranks the systems with each rule (registered through `register_aggregators`), and adds where
asked: Kendall tau-b between the rules' rankings, agreement with human scores or a human
ranking, a bootstrap over the voters (rank intervals, P(win), top-k stability) and the voter
weights that make a system win (a linear programme, Rofin et al. 2023). The result is typed:
one `RuleOutcome` per rule with its status and reason; `to_dict()` is the `--json` array.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebench.errors import InputError
from judgebench.results import Result
from judgebench.spec import parse_spec
from judgebench.suggest import did_you_mean
from judgebench.tables.columns import metric_columns
from judgebench.tables.failed import (
    MISSING,
    FailedAs,
    FailedCells,
    apply_numeric,
    parse_failed_as,
)
from judgebench.tables.voters import VoterTable

if TYPE_CHECKING:
    import pandas as pd

    from judgebench.plugins import PluginHost
    from judgebench.services.bt_models import OrderEffect, StyleControl
    from meta_eval.aggregation import (
        BootstrapResult,
        HumanAgreement,
        Rule,
        RuleResult,
        WinningWeights,
    )

Log = Callable[[str], None]
DEFAULT_RULES = {"profile": ["mean", "borda", "copeland", "schulze", "kemeny"],
                 "pairwise": ["bradley-terry", "elo", "copeland", "schulze", "kemeny"]}


# -- results --------------------------------------------------------------------------------
@dataclass(frozen=True)
class HumanComparison:
    """A rule's ranking against human system scores from `source` (a column or "ranking")."""

    source: str
    agreement: HumanAgreement

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, **self.agreement.to_dict()}


@dataclass(frozen=True)
class MakeWin:
    """The voter weights that make `system` win under one rule: `found` when the linear
    programme ran, `error` when it failed, `note` when the rule is not covered."""

    system: str
    supported: bool
    found: WinningWeights | None = None
    error: str | None = None
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        if self.found is not None:
            return {"supported": True, **self.found.to_dict()}
        if self.error is not None:
            return {"system": self.system, "supported": True, "error": self.error}
        return {"system": self.system, "supported": False, "note": self.note}


@dataclass
class RuleOutcome:
    """One rule spec: its `result`, or the `reason` it failed; and what was added to it."""

    spec: str
    rule: Rule
    result: RuleResult | None = None
    reason: str | None = None
    agreement: dict[str, float | None] | None = None
    human: HumanComparison | None = None
    bootstrap: BootstrapResult | None = None
    make_win: MakeWin | None = None
    #: bradley-terry on a pairwise table: the position bias, the style-controlled ranking
    order_effect: OrderEffect | None = None
    style: StyleControl | None = None

    @property
    def ok(self) -> bool:
        return self.result is not None

    @property
    def status(self) -> str:
        return "ok" if self.ok else "error"

    def to_dict(self) -> dict[str, Any]:
        if self.result is None:
            return {"rule": self.spec, "status": "error", "reason": self.reason,
                    "ranking": [], "scores": None, "winners": [], "ties": []}
        out = {**self.result.to_dict(), "rule": self.spec, "status": "ok"}
        if self.agreement is not None:
            out["agreement"] = self.agreement
        if self.human is not None:
            out["human"] = self.human.to_dict()
        if self.bootstrap is not None:
            out["bootstrap"] = self.bootstrap.to_dict()
        if self.make_win is not None:
            out["make_win"] = self.make_win.to_dict()
        if self.order_effect is not None:
            out["order_effect"] = self.order_effect.to_dict()
        if self.style is not None:
            out["style_control"] = self.style.to_dict()
        return out


@dataclass(frozen=True)
class AggregateResult(Result):
    """Every rule's outcome, in the order asked; `note` says how the table was read."""

    outcomes: list[RuleOutcome]
    note: str
    human_source: str | None = None
    make_win: str | None = None
    failed_as: FailedAs = MISSING
    #: per voter (or verdict) column: its failed rows, how counted and how told
    failed_cells: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def ok(self) -> list[RuleOutcome]:
        return [o for o in self.outcomes if o.ok]

    @property
    def failed(self) -> list[RuleOutcome]:
        return [o for o in self.outcomes if not o.ok]

    def to_dict(self) -> list[dict[str, Any]]:
        return [{**o.to_dict(), "failed_as": self.failed_as.name,
                 "failed": self.failed_cells} for o in self.outcomes]

    def system_rows(self) -> list[dict[str, Any]]:
        """One dict per (rule, system) of the rules that ranked, best first: rule, system,
        rank, score (None for a rule without scores), winner; with a bootstrap also the
        rank interval (rank_low, rank_high) and p_win; then the rule's own per-system
        figures (its `extra`: bradley-terry's se, wald_low, wald_high; win-rate's
        standard_error and counts; a bootstrap's ci_low, ci_high)."""
        rows = []
        for o in self.ok:
            assert o.result is not None
            plain = o.result.to_dict()
            scores = plain["scores"] or {}
            extra = plain.get("extra") or {}
            ranks = o.result.ranks
            boot = o.bootstrap.to_dict()["systems"] if o.bootstrap is not None else {}
            for s in o.result.ranking:
                row = {"rule": o.spec, "system": s, "rank": ranks[s], "score": scores.get(s),
                       "winner": s in o.result.winners,
                       **{k: boot[s][k] for k in ("rank_low", "rank_high", "p_win")
                          if s in boot}}
                for key, by_system in extra.items():
                    row.setdefault(key, by_system.get(s))
                rows.append(row)
        return rows

    def order_effect_rows(self) -> list[dict[str, Any]]:
        """bradley-terry's order effect, one row per rule that has one (`OrderEffect.row`)."""
        return [{"rule": o.spec, **o.order_effect.row()} for o in self.ok
                if o.order_effect is not None]

    def style_rows(self) -> list[dict[str, Any]]:
        """The style-controlled and raw rankings, one row per (rule, system)."""
        return [{"rule": o.spec, **row} for o in self.ok if o.style is not None
                for row in o.style.system_rows()]

    def coefficient_rows(self) -> list[dict[str, Any]]:
        """The style covariates' coefficients, one row per (rule, covariate)."""
        return [{"rule": o.spec, **row} for o in self.ok if o.style is not None
                for row in o.style.coefficient_rows()]

    def to_frame(self) -> pd.DataFrame:
        """One row per (rule, system) of the rules that ranked: rank, score, winner."""
        import pandas as pd

        return pd.DataFrame(self.system_rows(),
                            columns=["rule", "system", "rank", "score", "winner"])


@dataclass(frozen=True)
class RuleInfo:
    """A registered rule as `--list-rules` shows it."""

    name: str
    inputs: list[str]
    description: str
    missing: str
    options: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "inputs": self.inputs, "description": self.description,
                "missing": self.missing, "options": self.options}


# -- the service ----------------------------------------------------------------------------
def registered_rules(host: PluginHost | None = None) -> dict[str, Rule]:
    """Every rule registered through `register_aggregators`, as a `Rule`."""
    from judgebench.plugins import build_host
    from meta_eval.aggregation import as_rule

    host = host or build_host()
    return {name: as_rule(entry.obj) for name, entry in host.aggregators().items()}


def list_rules(host: PluginHost | None = None) -> list[RuleInfo]:
    return [RuleInfo(name, sorted(rule.inputs), rule.description, rule.missing,
                     rule.option_names())
            for name, rule in sorted(registered_rules(host).items())]


@dataclass(frozen=True)
class Loaded:
    """A table read for aggregation: the voters' data, the human scores, and a note."""

    data: Any  # meta_eval.aggregation Profile or Comparisons
    human: tuple[str, dict[str, float]] | None
    note: str
    failed_as: FailedAs = MISSING
    failed: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: a pairwise table: its frame and the verdict column the comparisons were read from
    frame: pd.DataFrame | None = None
    verdict: str | None = None


def aggregate(table: str | Path, *, rules: Sequence[str] = (), kind: str = "auto",
              system_column: str | None = None, columns: Sequence[str] = (),
              metric: str | None = None, weights: Mapping[str, float] | None = None,
              lower: Sequence[str] = (), higher: Sequence[str] = (), missing: str = "keep",
              pair_weight: str | None = None, winner: str | None = None,
              human: str | None = None,
              human_ranking: Sequence[Sequence[str]] | None = None, bootstrap: int = 0,
              seed: int = 0, level: float = 0.95, top_k: int = 3,
              make_win: str | None = None, host: PluginHost | None = None,
              failed_as: str | FailedAs | None = None, log: Log | None = None,
              control: Sequence[str] = ()) -> AggregateResult:
    """Rank the systems of `table` with each rule spec (`NAME` or `NAME:key=value,...`;
    "all" = every rule that accepts the data; default: DEFAULT_RULES), as `judgebench
    aggregate` does. `human` (a column) or `human_ranking` (tiers, best first) gives human
    system scores to compare each ranking with; `bootstrap` resamples the voters; `make_win`
    names a system to find winning voter weights for; `winner` names a pairwise table's
    verdict column (default: `winner`, else the one judge's column); a failed verdict counts
    as `failed_as` says (judgebench.tables.failed: scores missing, min, max or a number; pairwise
    verdicts missing or tie: `wrong` needs a human label). A rule that fails has
    status "error" and its reason; bad input (a rule's baseline not in the table, a column a
    rule needs) raises `InputError` before any rule runs. On a pairwise table each
    bradley-terry outcome gets the order effect where the table records both presentation
    orders, and with `control` (length, markdown, covariate columns) the ranking with style
    controlled beside the raw one (judgebench.services.bt_models)."""
    from judgebench.plugins import build_host
    from meta_eval import aggregation as agg

    log = log or (lambda _message: None)
    host = host or build_host()
    registry = registered_rules(host)
    path = Path(table)
    loaded = load(path, kind=kind, system_column=system_column, columns=tuple(columns),
                  metric=metric, weights=dict(weights or {}), lower=tuple(lower),
                  higher=tuple(higher), missing=missing, pair_weight=pair_weight,
                  winner=winner, human_column=human, failed_as=failed_as, host=host)
    human_scores = _human(loaded.human, human_ranking)
    log(loaded.note)
    specs = rule_specs(rules, registry, loaded.data.kind)
    built = [build_rule(spec, registry, loaded.data.kind) for spec in specs]
    specs, built = _usable(specs, built, loaded.data, path,
                           explicit={s for s in rules if s.strip() != "all"}, log=log)
    _check_control(control, built, loaded, path)
    outcomes = [_rank(spec, rule, loaded.data, log) for spec, rule in zip(specs, built,
                                                                          strict=True)]
    ok = [o for o in outcomes if o.result is not None]
    _bt_models(ok, loaded, control, path)
    _agreement(ok)
    if human_scores is not None:
        _against_human(ok, human_scores, loaded.data.systems, log)
    if bootstrap:
        boots = agg.bootstrap(loaded.data, [o.rule for o in ok], n=bootstrap, seed=seed,
                              level=level, k=top_k, names=[o.spec for o in ok],
                              full=[o.result for o in ok if o.result is not None])
        by_name = {b.rule: b for b in boots}
        for o in ok:
            o.bootstrap = by_name.get(o.spec)
    if make_win is not None:
        if make_win not in loaded.data.systems:
            raise InputError(f"--make-win: no system '{make_win}' in the table; systems: "
                             f"{list(loaded.data.systems)}", path=str(path),
                             field="--make-win")
        for o in ok:
            o.make_win = winning_weights(loaded.data, make_win, o.rule)
    return AggregateResult(outcomes, loaded.note, human_scores[0] if human_scores else None,
                           make_win, loaded.failed_as, loaded.failed)


def _check_control(control: Sequence[str], built: list[Rule], loaded: Loaded, path: Path
                   ) -> None:
    """--control needs a pairwise table and a bradley-terry rule (checked before any rule)."""
    if not control:
        return
    if loaded.frame is None:
        raise InputError("--control (style-controlled Bradley-Terry) needs a pairwise table",
                         path=str(path), field="--control")
    if not any(rule.name == "bradley-terry" for rule in built):
        raise InputError("--control applies to -r bradley-terry: add it", path=str(path),
                         field="--control")


def _bt_models(ok: list[RuleOutcome], loaded: Loaded, control: Sequence[str], path: Path
               ) -> None:
    """Each bradley-terry outcome's order effect and style control (pairwise tables)."""
    from judgebench.services.bt_models import order_effect, style_control
    from meta_eval import aggregation as agg

    if loaded.frame is None or loaded.verdict is None:
        return
    for o in ok:
        if o.rule.name != "bradley-terry":
            continue
        level = float(o.rule.options.get("level", 0.95))
        try:
            o.order_effect = order_effect(loaded.frame, column=loaded.verdict,
                                          systems=loaded.data.systems, level=level)
            if control:
                o.style = style_control(loaded.frame, loaded.data, column=loaded.verdict,
                                        controls=control, level=level)
        except agg.TableError as exc:
            raise InputError(str(exc), path=str(path), **_location(path, exc.row),
                             field=exc.field) from None


def _usable(specs: list[str], built: list[Rule], data: Any, path: Path, *,
            explicit: set[str], log: Log) -> tuple[list[str], list[Rule]]:
    """The rules whose input check passes (a baseline in the table, the columns they need).
    A rule asked for by name that fails it is an InputError; one that came from "all" (or
    the defaults) is left out, with a message."""
    from meta_eval import aggregation as agg

    keep_specs, keep_rules = [], []
    for spec, rule in zip(specs, built, strict=True):
        try:
            rule.check_input(data)
        except (agg.TableError, ValueError) as exc:
            if spec in explicit:
                raise InputError(f"rule '{spec}': {exc}", path=str(path),
                                 field=getattr(exc, "field", None) or "--rule") from None
            log(f"rule '{spec}' left out: {exc}")
            continue
        keep_specs.append(spec)
        keep_rules.append(rule)
    return keep_specs, keep_rules


def _human(from_table: tuple[str, dict[str, float]] | None,
           ranking: Sequence[Sequence[str]] | None) -> tuple[str, dict[str, float]] | None:
    if ranking is None:
        return from_table
    if from_table is not None:
        raise InputError("give --human or --human-ranking, not both", field="--human")
    from meta_eval import aggregation as agg

    try:
        return "ranking", agg.ranking_scores([list(tier) for tier in ranking])
    except ValueError as exc:
        raise InputError(str(exc), field="--human-ranking") from None


def _rank(spec: str, rule: Rule, data: Any, log: Log) -> RuleOutcome:
    try:
        return RuleOutcome(spec, rule, result=rule.rank(data))
    except Exception as exc:  # a rule's failure is its status, never a silent result
        reason = f"{type(exc).__name__}: {exc}"
        log(f"rule '{spec}' failed: {reason}")
        return RuleOutcome(spec, rule, reason=reason)


def _clean(value: Any) -> float | None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return None if value != value else value


def _agreement(ok: list[RuleOutcome]) -> None:
    """Kendall tau-b between every two rules' rankings (with two rules or more)."""
    if len(ok) < 2:
        return
    from meta_eval import aggregation as agg

    taus = agg.rule_agreement({o.spec: o.result for o in ok if o.result is not None})
    for o in ok:
        o.agreement = {other.spec: _clean(taus.loc[o.spec, other.spec])
                       for other in ok if other.spec != o.spec}


def _against_human(ok: list[RuleOutcome], human: tuple[str, dict[str, float]],
                   systems: Sequence[str], log: Log) -> None:
    from meta_eval import aggregation as agg

    label, scores = human
    unknown = sorted(set(scores) - set(systems))
    if unknown:
        log(f"human scores name systems not in the table: {unknown}")
    for o in ok:
        assert o.result is not None
        o.human = HumanComparison(label, agg.against_human(o.result, human=scores))


def winning_weights(data: Any, system: str, rule: Rule) -> MakeWin:
    """The voter weights that make `system` win under `rule` (see meta_eval.aggregation
    .weights), for a rule that supports it with its default options on profile data."""
    from meta_eval import aggregation as agg

    options = dict(rule.options)
    ties = options.pop("ties", "average")
    if data.kind != "profile" or not rule.supports_make_win or options:
        return MakeWin(system, False,
                       note=f"which-weights covers {', '.join(agg.WEIGHTS_RULES)} with "
                            "default options on a leaderboard or scores table")
    try:
        return MakeWin(system, True, found=agg.weights_to_win(data, system, rule.name,
                                                              ties=ties))
    except (ValueError, RuntimeError) as exc:
        return MakeWin(system, True, error=str(exc))


# -- rules ----------------------------------------------------------------------------------
def _parse_value(text: str) -> Any:
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def parse_rule_spec(text: str) -> tuple[str, dict[str, Any]]:
    """`NAME:key=value,...` -> (NAME, options), read as a metric spec is (quoted values
    included, judgebench.spec); values become bool, int or float if they read as one."""
    spec = parse_spec(text, what="rule spec")
    return spec.name, {key: _parse_value(value) for key, value in spec.options.items()}


def rule_specs(specs: Sequence[str], registry: Mapping[str, Rule], data_kind: str
               ) -> list[str]:
    if not specs:
        return [n for n in DEFAULT_RULES[data_kind] if n in registry]
    out: list[str] = []
    for spec in specs:
        if spec.strip() == "all":
            out += [n for n, r in registry.items() if data_kind in r.inputs and n not in out]
        elif spec not in out:
            out.append(spec)
    return out


def build_rule(spec: str, registry: Mapping[str, Rule], data_kind: str) -> Rule:
    name, options = parse_rule_spec(spec)
    if name not in registry:
        raise InputError(f"unknown rule '{name}'{did_you_mean(name, registry)} (registered "
                         f"rules: {', '.join(sorted(registry)) or 'none'})", field="--rule")
    rule = registry[name]
    if data_kind not in rule.inputs:
        usable = sorted(n for n, r in registry.items() if data_kind in r.inputs)
        what = ("voters that score systems (a leaderboard or a scores table)"
                if "pairwise" not in rule.inputs else "pairwise comparisons")
        raise InputError(f"rule '{name}' needs {what}; for {data_kind} data use one of: "
                         f"{', '.join(usable)}", field="--rule")
    if not options:
        return rule
    try:
        return rule.with_options(**options)
    except ValueError as exc:
        raise InputError(str(exc), field="--rule") from None


# -- input ----------------------------------------------------------------------------------
def _location(path: Path, row: int | None) -> dict[str, int]:
    """A 0-based table row as the line (CSV, JSONL) or row (Parquet) users see."""
    if row is None:
        return {}
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return {"line": row + 2}
    if suffix in (".jsonl", ".ndjson"):
        return {"line": row + 1}
    return {"row": row + 1}


@dataclass(frozen=True)
class _Request:
    """How to read one table (the options of `aggregate` that concern the input)."""

    path: Path
    kind: str
    corpus_table: bool
    system_column: str | None
    columns: tuple[str, ...]
    metric: str | None
    weights: dict[str, float]
    lower: tuple[str, ...]
    higher: tuple[str, ...]
    missing: str
    pair_weight: str | None
    winner: str | None
    human_column: str | None
    failed_as: FailedAs = MISSING
    #: Whose registered metrics give a column's direction (None: the installed plugins').
    host: PluginHost | None = None

    def misuse(self, option: str, value: Any, allowed: str) -> None:
        if value:
            raise InputError(f"{option} applies to {allowed} tables; this is read as a "
                             f"{self.kind} table (see --kind)", path=str(self.path),
                             field=option)


def load(path: Path, *, kind: str, system_column: str | None, columns: tuple[str, ...],
         metric: str | None, weights: dict[str, float], lower: tuple[str, ...],
         higher: tuple[str, ...], missing: str, pair_weight: str | None,
         winner: str | None, human_column: str | None,
         failed_as: str | FailedAs | None = None, host: PluginHost | None = None) -> Loaded:
    """Read `path` as a leaderboard, scores or pairwise table (`kind` auto: by its
    columns) into the data the rules rank (`judgebench.tables.voters`)."""
    from meta_eval import aggregation as agg

    table = VoterTable.read(path)
    frame, corpus_table = table.frame, table.corpus_table
    if kind == "auto":
        kind = "leaderboard" if corpus_table else agg.detect_kind(frame.columns)
    convention = parse_failed_as(failed_as, pairwise=kind == "pairwise")
    if convention.kind == "wrong":
        raise InputError("a failed verdict counted wrong needs a human label, and aggregate "
                         "ranks systems by the verdicts alone: use missing or tie",
                         path=str(path), field="--failed-as")
    request = _Request(path, kind, corpus_table, system_column, columns, metric, weights,
                       lower, higher, missing, pair_weight, winner, human_column, convention,
                       host)
    readers = {"leaderboard": _leaderboard, "scores": _scores, "pairwise": _pairwise}
    try:
        return readers[kind](request, table)
    except agg.TableError as exc:
        misspelt = exc.field is not None and exc.field not in frame.columns
        hint = did_you_mean(exc.field, frame.columns) if exc.field and misspelt else ""
        raise InputError(f"{exc}{hint}", path=str(path), **_location(path, exc.row),
                         field=exc.field) from None


def _note(request: _Request, data: Any, unit: str, lower: tuple[str, ...]) -> str:
    n_missing = int((~data.scored).sum())
    what = ("corpus-score table (a leaderboard)" if request.corpus_table
            else f"{request.kind} table")
    return (f"read {request.path} as a {what}: {data.n_systems} systems, {data.n_units} "
            f"{unit}" + (f", {n_missing} missing scores" if n_missing else "")
            + (f"; lower is better: {', '.join(lower)}" if lower else ""))


def _drop_missing(data: Any, missing: str) -> Any:
    from meta_eval import aggregation as agg

    if missing == "keep":
        return data
    return agg.drop_incomplete(data, "systems" if missing == "drop-systems" else "voters")


def _leaderboard(r: _Request, table: VoterTable) -> Loaded:
    from meta_eval import aggregation as agg
    from meta_eval.aggregation.tables import leaderboard_system_column

    r.misuse("--metric", r.metric, "scores")
    r.misuse("--pair-weight", r.pair_weight, "pairwise")
    r.misuse("--winner", r.winner, "pairwise")
    found = None
    if r.corpus_table:  # its status column says which scores failed
        r.misuse("--system-column", r.system_column, "leaderboard (not corpus)")
        (frame, found), system = table.corpus_leaderboard(), "system"
    else:
        system = leaderboard_system_column(table.frame, r.system_column)
        agg.tables.refuse_pairs_in_wide(table.frame, system=system)
        frame = table.leaderboard(system)
    voters = [str(c) for c in (r.columns or frame.columns) if c not in (system, r.human_column)]
    if found is None:
        found = table.failed(frame, voters)
    failed = _counted(found, frame, voters, r.failed_as, r.path)
    lower = table.lower_is_better(frame, voters, lower=r.lower, higher=r.higher, host=r.host)
    if r.human_column is not None and r.human_column not in frame.columns:
        raise agg.TableError(f"no column '{r.human_column}'; columns are "
                             f"{list(frame.columns)}", field=r.human_column)
    data = agg.profile_from_leaderboard(
        frame, system=system, columns=list(r.columns) or None, weights=r.weights,
        lower_is_better=lower, exclude=[r.human_column] if r.human_column else [])
    human = None
    if r.human_column is not None:
        values = agg.tables.numeric_column(frame, r.human_column)
        human = (r.human_column, {s: float(v) for s, v in
                                  zip(frame[system].astype("str").str.strip(), values,
                                      strict=True) if v == v})
    data = _drop_missing(data, r.missing)
    return Loaded(data, human, _note(r, data, "voters (columns)", lower), r.failed_as, failed)


def _scores(r: _Request, table: VoterTable) -> Loaded:
    from meta_eval import aggregation as agg

    r.misuse("--weight", r.weights, "leaderboard")
    r.misuse("--column", r.columns, "leaderboard")
    r.misuse("--system-column", r.system_column, "leaderboard")
    r.misuse("--pair-weight", r.pair_weight, "pairwise")
    r.misuse("--winner", r.winner, "pairwise")
    agg.tables.refuse_pairs_in_wide(table.frame)
    frame = table.units()  # judged turns: each (conversation, turn) is a voter
    candidates = [r.metric] if r.metric else [
        str(c) for c in frame.columns if c not in ("item", "system", r.human_column)
        and not str(c).startswith("human.")]
    found = table.failed(frame, candidates)
    metric = r.metric or _only_metric(frame, r.path, r.human_column)
    failed = _counted(found, frame, [metric], r.failed_as, r.path)
    lower = table.lower_is_better(frame, [metric], lower=r.lower, higher=r.higher,
                                  host=r.host)
    data = agg.profile_from_scores(frame, metric=metric, higher_is_better=metric not in lower)
    human = None
    if r.human_column is not None:
        human = (r.human_column, agg.human_system_scores(frame, column=r.human_column))
    data = _drop_missing(data, r.missing)
    return Loaded(data, human, _note(r, data, f"voters (items, on '{metric}')", lower),
                  r.failed_as, failed)


def _pairwise(r: _Request, table: VoterTable) -> Loaded:
    from meta_eval import aggregation as agg

    frame = table.frame
    for option, value in (("--weight", r.weights), ("--lower-is-better", r.lower),
                          ("--higher-is-better", r.higher), ("--column", r.columns),
                          ("--metric", r.metric), ("--system-column", r.system_column),
                          ("--human", r.human_column)):
        r.misuse(option, value, "leaderboard or scores")
    if r.missing != "keep":
        r.misuse("--missing", r.missing, "leaderboard or scores")
    column = agg.tables.winner_column(frame.columns, r.winner)
    failed = _failed_verdicts(r, table, column)
    data = agg.comparisons_from_pairwise(frame, winner=column, weight=r.pair_weight)
    dropped = agg.tables.pairwise_dropped(frame, column)
    soft = int(((data.outcome > 0) & (data.outcome < 1) & (data.outcome != 0.5)).sum())
    return Loaded(data, None, f"read {r.path} as a pairwise table: {data.n_systems} systems, "
                              f"{len(data.a)} comparisons in {data.n_units} groups, verdicts "
                              f"from '{column}'"
                              + (f" ({soft} soft preferences)" if soft else "")
                              + (f"; {dropped} row(s) without a verdict left out"
                                 if dropped else ""), r.failed_as, failed,
                  frame, column)


def _counted(found: FailedCells, frame: pd.DataFrame, columns: list[str],
             failed_as: FailedAs, where: Path) -> dict[str, dict[str, Any]]:
    """Apply `failed_as` to the failed cells of numeric `columns` (judgebench.tables.failed)."""
    from judgebench.tables.columns import numeric_columns

    present = [c for c in columns if c in frame.columns]
    if failed_as.kind != "missing":
        numeric_columns(frame, [c for c in present if found.count(c)], str(where))
    return apply_numeric(frame, found, present, failed_as)


def _failed_verdicts(r: _Request, table: VoterTable, column: str
                     ) -> dict[str, dict[str, Any]]:
    """The failed cells of the verdict column, read as ties under `tie` (in place)."""
    import numpy as np

    frame = table.frame
    base = column[:-3]
    judges = ({base: [base, f"{base}.ab", f"{base}.ba"]}
              if column.endswith((".ab", ".ba")) and base in frame.columns else {})
    wanted = [column, *(c for cs in judges.values() for c in cs)]
    found = table.failed(frame, wanted, judges=judges)
    mask = found.masks.get(column)
    counted = "dropped"
    if mask is not None and r.failed_as.kind == "tie":
        numeric = frame[column].dtype.kind in "fiu"
        frame[column] = np.where(mask, 0.5 if numeric else "tie",
                                 frame[column].astype(float if numeric else object))
        counted = "tie"
    return {column: found.info(column, r.failed_as, counted)}


def _only_metric(frame: pd.DataFrame, path: Path, human_column: str | None) -> str:
    numeric = metric_columns(frame, exclude=[human_column] if human_column else [])
    if len(numeric) != 1:
        raise InputError(f"give --metric COL: the scores table has {len(numeric)} metric "
                         f"columns {numeric}", path=str(path), field="--metric")
    return numeric[0]
