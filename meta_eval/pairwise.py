"""Agreement of a pairwise judge with people, with position bias made visible.

Each pair compares output A with output B. A label (a human preference or a judge verdict)
is "a", "b" or "tie" (any case), or a number in [0, 1]: the probability that A is better
(a soft preference, e.g. AlpacaEval's weighted annotator; 0.5 = tie). Missing values (None,
NaN, "") drop the pair from the measures that need them; anything else is an error naming
the row. `preferences` reads labels as P(A better) ("a" = 1, "b" = 0, "tie" = 0.5);
`hard_labels` turns P into +1 (P > 0.5: A), -1 (P < 0.5: B) or 0 (P = 0.5: tie), the labels
every accuracy-type statistic compares.

Credit of a verdict v against a human label h (both hard labels), under a tie policy (a
failed verdict counted as its own value, `FAILED`, earns 0 under every policy):

    drop   h = tie: not scored; otherwise [v == h] (a judge tie on a decided pair is wrong)
    class  [v == h], tie a third class (MT-Bench setup S1, Zheng et al. 2023, Table 2)
    half   1 - |v - h| / 2: 1 for the same label, 0.5 when exactly one of them is a tie
           (a tie is half a win, as in Chatbot Arena and AlpacaEval win rates), 0 for
           opposite labels; symmetric in v and h, so a rater pair has one value.

Statistics of a judge with verdicts in both orders (ab: A shown first, ba: B shown first,
both naming the original A and B), after Zheng et al. 2023, "Judging LLM-as-a-Judge",
Sec. 3.3 and Zeng et al. 2024, "Evaluating Large Language Models at Evaluating Instruction
Following" (LLMBar), Sec. 4:

    accuracy-ab    mean credit of ab over the pairs it scores; accuracy-ba likewise
    accuracy       (accuracy-ab + accuracy-ba) / 2 (one order only: that order's accuracy):
                   LLMBar's "Acc." (`correct_average` in its statistics.json); a judge
                   that always names the first output shown scores 0.5
    accuracy-combined
                   mean credit of the combined verdict (the judge's own, else the orders'
                   common verdict, a tie where they disagree, as judge.pairwise combines
                   them): under `drop` a judge tie on a decided pair is wrong, so the
                   always-first judge scores 0; `compare-judges` reports this one
                   (`accuracy-combined_a`, `_b`); MT-Bench (Zheng et al. 2023) calls the
                   share of equal labels "agreement" (FastChat's compute_agreement.py)
    accuracy-vote  mean credit of the orders' vote, sign(ab + ba): a decided order and a
                   tie count as the decided one, opposite orders as a tie (wrong under
                   `drop`); JudgeBench's rule (Tan et al. 2024, "JudgeBench", Sec. 4: a pair
                   judged in both orders is combined before a tie counts wrong); one order
                   or a combined column: that verdict
    both-correct   mean of min(credit ab, credit ba) over pairs scored in both orders
                   (drop/class: right in both orders)
    consistency    share of pairs with both verdicts where ab == ba (LLMBar's positional
                   agreement; no human label needed)
    tie-rate       share of verdicts that are ties, both orders pooled
    kappa-orders   Cohen's kappa between ab and ba (three classes)
    kappa          Cohen's kappa of the combined verdict against the human label (drop:
                   pairs people called a tie are left out; class/half: tie is a class)

Cohen's kappa from the confusion counts C over the observed classes, n = sum C:
p_o = trace(C) / n, p_e = sum_k C_k. C_.k / n^2, kappa = (p_o - p_e) / (1 - p_e),
undefined when p_e = 1 (one class), as scikit-learn's cohen_kappa_score.

`paired_sign_test` compares two judges' per-pair credit: H1 "judge A earns more credit".
Under H0 each pair's difference d = credit_a - credit_b is as likely to have either sign.
Where every non-zero |d| is the same (binary credit: right/wrong) the sign-flip null is
exactly the binomial of the discordant pairs, i.e. the exact McNemar test (McNemar 1947),
p = P(Binomial(n_discordant, 1/2) >= n_a_only), computed with scipy.stats.binomtest;
otherwise (credits averaged over two orders, half credit) the signs are flipped at random
`resamples` times, p = #{sum(flipped d) >= sum(d)} / resamples.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from meta_eval.results import Comparison, _clean

if TYPE_CHECKING:
    import pandas as pd

    from meta_eval.arrays import AnyArray, BoolArray, FloatArray

WORDS = {"a": 1.0, "b": 0.0, "tie": 0.5}
TIE_POLICIES = ("drop", "half", "class")
#: The default tie policy of every reader of human pairwise labels (LLMBar and RewardBench
#: have no ties in their gold labels; MT-Bench's "without tie" setup drops them too).
DEFAULT_TIES = "drop"

#: The hard label of a failed verdict counted as its own value (`--failed-as wrong`): never
#: a human label (credit 0), equal only to another failed verdict, a class of its own in
#: a kappa.
FAILED = 2.0
#: How a pair is named where one system name stands for it ("M0 vs M1", the store's key).
PAIR_NAME = re.compile(r".+\s+vs\.?\s+.+", re.IGNORECASE | re.DOTALL)


def names_pairs(names: Sequence[Any]) -> bool:
    """Whether every one of `names` (at least one) reads "X vs Y": system names that stand
    for compared pairs, a pairwise table in the wide shape."""
    present = [str(n).strip() for n in names if n is not None and n == n]
    return bool(present) and all(PAIR_NAME.fullmatch(n) for n in present)


class LabelError(ValueError):
    """A value that is not a label; `row` is its 0-based position."""

    def __init__(self, message: str, row: int):
        super().__init__(message)
        self.row = row


def preferences(values: Sequence[Any] | AnyArray | pd.Series, *, name: str = "label"
                ) -> FloatArray:
    """Labels to P(A is better) in [0, 1], NaN for missing; LabelError at the first value
    that is neither a, b, tie (any case) nor a number in [0, 1]."""
    import pandas as pd

    series = values if isinstance(values, pd.Series) else pd.Series(
        np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values)
    series = series.reset_index(drop=True)
    if pd.api.types.is_bool_dtype(series):
        raise LabelError(f"{name} row 0: {series.iloc[0]!r} is a boolean, not a label", 0)
    if pd.api.types.is_numeric_dtype(series):
        out = series.to_numpy(dtype=float)
        _check_range(out, name, series)
        return out
    if pd.api.types.infer_dtype(series, skipna=True) not in ("string", "empty"):
        flag = series.map(lambda v: isinstance(v, (bool, np.bool_)))
        if flag.any():
            row = int(flag.to_numpy().argmax())
            raise LabelError(f"{name} row {row}: {series.iloc[row]!r} is a boolean, not a "
                             "label", row)
    # Each distinct value is read once: a column of a/b/tie has three.
    codes, uniques = pd.factorize(series)
    parsed = np.array([_one_label(v) for v in uniques], dtype=float)
    bad = np.flatnonzero(np.isinf(parsed))
    if bad.size:
        row = int(np.isin(codes, bad).argmax())
        raise LabelError(f"{name} row {row}: unknown label {series.iloc[row]!r}; use a, b, tie "
                         "or a number in [0, 1] (P(A is better))", row)
    out = np.where(codes >= 0, parsed[np.maximum(codes, 0)] if parsed.size else np.nan, np.nan)
    _check_range(out, name, series)
    return out


def _one_label(value: Any) -> float:
    """P(A better) of one value; NaN for an empty cell, inf for what is not a label."""
    if isinstance(value, str):
        word = value.strip().lower()
        if word in WORDS:
            return WORDS[word]
        if word == "":
            return float("nan")
        try:
            return float(word) if word not in ("inf", "-inf", "+inf", "infinity") else 2.0
        except ValueError:
            return float("inf")
    if isinstance(value, (int, float, np.integer, np.floating)):
        number = float(value)
        return number if np.isfinite(number) or np.isnan(number) else 2.0
    return float("inf")


def _check_range(p: FloatArray, name: str, series: Any) -> None:
    outside = ~np.isnan(p) & ~((p >= 0) & (p <= 1))
    if outside.any():
        row = int(outside.argmax())
        raise LabelError(f"{name} row {row}: {series.iloc[row]!r} is not in [0, 1]; a number "
                         "is P(A is better) (0.5 = tie)", row)


def hard_labels(p: FloatArray) -> FloatArray:
    """P(A better) to +1 (P > 0.5), -1 (P < 0.5), 0 (P = 0.5), NaN (missing)."""
    return np.sign(np.asarray(p, dtype=float) - 0.5)


def normalise_labels(values: Sequence[Any], *, name: str = "label") -> FloatArray:
    """Labels to +1 (A wins), -1 (B wins), 0 (tie), NaN (missing); see `preferences`."""
    return hard_labels(preferences(values, name=name))


def credit(*, human: FloatArray, verdict: FloatArray, ties: str = "drop") -> FloatArray:
    """Per-pair credit of hard-label `verdict` against `human` under the tie policy (module
    docstring); NaN where the pair is not scored."""
    if ties not in TIE_POLICIES:
        raise ValueError(f"unknown tie policy {ties!r}; use one of {TIE_POLICIES}")
    h, v = np.asarray(human, dtype=float), np.asarray(verdict, dtype=float)
    scored = np.isfinite(h) & np.isfinite(v)
    if ties == "drop":
        scored &= h != 0
    value = 1.0 - np.abs(v - h) / 2 if ties == "half" else (v == h).astype(float)
    return np.where(scored, np.where(v == FAILED, 0.0, value), np.nan)


def kappa_from_counts(counts: FloatArray) -> FloatArray:
    """Cohen's kappa of confusion counts (..., k, k); NaN where n = 0 or p_e = 1."""
    c = np.asarray(counts, dtype=float)
    n = c.sum(axis=(-1, -2))
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = np.trace(c, axis1=-2, axis2=-1) / n
        chance = (c.sum(axis=-1) * c.sum(axis=-2)).sum(axis=-1) / n**2
        kappa = (observed - chance) / (1.0 - chance)
    return np.where((n > 0) & (chance < 1.0), kappa, np.nan)


def paired_sign_test(*, credit_a: FloatArray, credit_b: FloatArray, resamples: int = 1000,
                     seed: int = 0, statistic: str = "accuracy") -> Comparison:
    """One-sided test of H1: judge A earns more credit than judge B on the same pairs (exact
    McNemar where credit is binary, else a sign-flip permutation test; module docstring).
    Pairs missing either credit are left out."""
    import scipy.stats

    a, b = np.asarray(credit_a, dtype=float), np.asarray(credit_b, dtype=float)
    both = np.isfinite(a) & np.isfinite(b)
    d = a[both] - b[both]
    n = int(both.sum())
    value_a = float(a[both].mean()) if n else float("nan")
    value_b = float(b[both].mean()) if n else float("nan")
    moved = d[d != 0]
    if moved.size == 0:
        return Comparison(statistic, "mcnemar", value_a, value_b, 0.0, 1.0, n, 0)
    size = np.abs(moved)
    if np.all(size == size[0]):
        wins = int((moved > 0).sum())
        p = float(scipy.stats.binomtest(wins, moved.size, 0.5, alternative="greater").pvalue)
        return Comparison(statistic, "mcnemar", value_a, value_b, value_a - value_b, p, n, 0)
    observed = float(moved.sum())
    rng = np.random.default_rng(seed)
    hits = 0
    step = max(1, (1 << 22) // moved.size)
    for start in range(0, resamples, step):
        k = min(step, resamples - start)
        flips = rng.integers(0, 2, size=(k, moved.size), dtype=np.int8).astype(float)
        flipped = observed - 2.0 * (flips @ moved)
        hits += int((flipped >= observed - 1e-9 * max(1.0, abs(observed))).sum())
    return Comparison(statistic, "sign-flip", value_a, value_b, value_a - value_b,
                      hits / resamples, n, resamples)


@dataclass(frozen=True)
class PairwiseAgreement:
    n: int  # rows with a human label and at least one verdict
    accuracy_ab: float
    accuracy_ba: float
    accuracy_both: float
    consistency: float
    judge_tie_rate: float
    human_tie_rate: float
    n_ab: int
    n_ba: int
    n_both: int

    def to_dict(self) -> dict[str, Any]:
        return {k: _clean(v) for k, v in asdict(self).items()}


def _share(mask: BoolArray, among: BoolArray) -> float:
    return float(mask[among].mean()) if among.any() else float("nan")


def pairwise_agreement(*, human: Sequence[Any], verdict_ab: Sequence[Any],
                       verdict_ba: Sequence[Any], ba_positional: bool = False
                       ) -> PairwiseAgreement:
    """Accuracy per order (ties a class), in both orders, positional consistency and tie
    shares of one judge. By default `verdict_ba` names outputs, not positions; with
    `ba_positional=True` its "a"/"b" mean the first/second position and are mapped back
    (first position = output B)."""
    h = normalise_labels(human, name="human")
    ab = normalise_labels(verdict_ab, name="verdict_ab")
    ba = normalise_labels(verdict_ba, name="verdict_ba")
    if not len(h) == len(ab) == len(ba):
        raise ValueError("human, verdict_ab and verdict_ba must have one length")
    if ba_positional:
        ba = -ba
    has_h, has_ab, has_ba = np.isfinite(h), np.isfinite(ab), np.isfinite(ba)
    with_ab, with_ba, with_all = has_h & has_ab, has_h & has_ba, has_h & has_ab & has_ba
    verdicts = np.r_[ab[has_ab], ba[has_ba]]
    return PairwiseAgreement(
        n=int((has_h & (has_ab | has_ba)).sum()),
        accuracy_ab=_share(ab == h, with_ab),
        accuracy_ba=_share(ba == h, with_ba),
        accuracy_both=_share((ab == h) & (ba == h), with_all),
        consistency=_share(ab == ba, has_ab & has_ba),
        judge_tie_rate=float((verdicts == 0).mean()) if verdicts.size else float("nan"),
        human_tie_rate=_share(h == 0, has_h),
        n_ab=int(with_ab.sum()), n_ba=int(with_ba.sum()), n_both=int(with_all.sum()),
    )
