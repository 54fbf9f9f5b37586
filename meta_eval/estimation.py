"""Estimates of a mean (a pass rate, a win rate) from a judge that scored every item and human
labels on a subset, with their intervals.

Items: `judge` has a score for every item; `human` has the human label where one was collected
and NaN elsewhere (NaN means "not labelled", nothing else). A judge score that is NaN or
infinite is refused (`EstimationError` naming the item): an item the judge failed on is not
an item it scored, and dropping it silently would change the population being estimated.

The estimators (z = the normal quantile of the two-sided `confidence`; n labelled items with
labels Y_i and judge scores f_i; N_u unlabelled items with judge scores f~_j; N = n + N_u):

human_only_mean   Y_bar +- z s_Y / sqrt(n), s_Y the standard deviation with divisor n (the
                  classical CLT interval; `ppi_py.classical_mean_ci`).
judge_only_mean   the judge's mean over every item, +- z s_f / sqrt(N): the biased number, its
                  interval covers the judge's mean, not the truth.
ppi_mean          PPI++ (Angelopoulos, Duchi, Zrnic 2023, "PPI++: Efficient Prediction-Powered
                  Inference", arXiv:2311.01453, Example 6.1):
                      theta = lam mean(f~) + mean(Y - lam f),
                      se^2  = lam^2 var(f~) / N_u + var(Y - lam f) / n,
                      lam   = clip(cov(Y, f) / ((1 + n / N_u) var(f u f~)), 0, 1),
                  cov and the first variances with divisor n (N_u), var(f u f~) over the
                  judge scores of all N items with divisor N - 1, exactly as the authors'
                  package `ppi_py.ppi_mean_ci` (labelled and unlabelled sets disjoint).
                  Every item labelled (N_u = 0): lam = 0, the human-only interval.
stratified_ppi_mean  Stratified PPI (Fisch et al. 2024, "Stratified Prediction-Powered
                  Inference for Hybrid Language Model Evaluation"): labels sampled uniformly
                  within each stratum h at its own rate; PPI++ per stratum (its own lam_h),
                  theta = sum_h w_h theta_h, se^2 = sum_h w_h^2 se_h^2, w_h = N_h / N.
weighted_ppi_mean Inverse-probability-weighted PPI++ for labels sampled with known inclusion
                  probabilities pi_i (Zrnic and Candes 2024, "Active Statistical Inference",
                  ICML): with xi_i = 1 where item i is labelled,
                      Z_i = lam f_i + (Y_i - lam f_i) xi_i / pi_i   (Y_i xi_i = 0 unlabelled),
                      theta = mean(Z), se = sd(Z) / sqrt(N) (divisor N),
                      lam = clip(-cov(A, B) / var(B), 0, 1), A = Y xi / pi, B = f (1 - xi / pi),
                  the lam minimising var(Z) = var(A + lam B). lam = 0 gives Horvitz-Thompson,
                  its human-only counterpart.
hajek_ppi_mean    The same design, centred: theta = lam mean(f) + the Hajek mean of Y - lam f
                  (weights 1 / pi scaled to sum to N), se from its linearisation with each
                  residual centred on the weighted mean, lam minimising that se (see the
                  function). A judge's constant offset from people no longer counts as error,
                  as it does in weighted_ppi_mean's Z (1.5-1.8x PPI++'s variance on a judge
                  offset by 0.75 at uniform sampling: benchmarks/README.md).

Every `Estimate` carries `effective_labels`: how many human labels alone (the human-only
estimator of the same design) would give the same standard error, n se_human^2 / se^2; the
judge was worth `effective_labels - labels` labels. `labels_to_reach(estimate=, target_width=)`
says how many more labels bring the interval to a target width, from the split
se^2 = labelled_variance / n + fixed_variance (the judge-only term of PPI++ does not shrink with
labels; the weighted form's whole variance is taken to shrink as 1 / n, an approximation).
`active_label_priority` is the per-item quantity an active sampler labels by (Zrnic and Candes
2024: the variance-optimal inclusion probability is proportional to
sqrt(E[(Y - lam f)^2 | item])), estimated here by binning the judge score.

Magnitudes: each estimator scales the scores by one power of two (exact) before any square,
so values from 1e-300 to 1e300 neither overflow nor underflow, and every result scales back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Hashable, Sequence

    from meta_eval.arrays import ArrayLike, BoolArray, FloatArray, IntArray


class EstimationError(ValueError):
    """An estimate that cannot be given, with the sentence that says why (the CLI prints it)."""


@dataclass(frozen=True)
class Estimate:
    """One estimate of a mean with its interval.

    method: human-only, judge-only, ppi++, stratified-ppi++, weighted-ppi++, hajek-ppi++,
    paired-ppi++, win-rate-ppi++, rogan-gladen.
    labels: human labels used; items: items the judge scored. lam: the power-tuning weight
    (None where no judge enters the estimate). labelled_variance, fixed_variance: the split
    se^2 = labelled_variance / labels + fixed_variance that `labels_to_reach` extrapolates.
    """

    method: str
    point: float
    lower: float
    upper: float
    standard_error: float
    confidence: float
    labels: int
    items: int
    lam: float | None
    effective_labels: float
    labelled_variance: float
    fixed_variance: float

    @property
    def labels_worth(self) -> float:
        """How many human labels the judge was worth beyond those collected."""
        return self.effective_labels - self.labels


def two_sided_z(confidence: float) -> float:
    """Phi^-1(1/2 + confidence/2): the normal quantile of a two-sided interval."""
    from scipy.stats import norm

    if not 0.0 < confidence < 1.0:
        raise EstimationError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    return float(norm.ppf(0.5 + confidence / 2.0))


def _scores(*, judge: ArrayLike, human: ArrayLike) -> tuple[FloatArray, FloatArray]:
    f = np.asarray(judge, dtype=float)
    y = np.asarray(human, dtype=float)
    if f.ndim != 1 or y.shape != f.shape:
        raise EstimationError(
            f"judge and human must be 1-D and of one length, got shapes {f.shape} and {y.shape}")
    bad = np.flatnonzero(~np.isfinite(f))
    if bad.size:
        raise EstimationError(
            f"the judge has no finite score for {bad.size} item(s) (first: item {bad[0]}); "
            "score them or leave them out before estimating")
    inf = np.flatnonzero(np.isinf(y))
    if inf.size:
        raise EstimationError(f"human label of item {inf[0]} is infinite")
    return f, y


def _scale(*arrays: FloatArray) -> int:
    """The exponent e with every finite |value| < 2**e (0 when all are 0)."""
    top = max((float(np.nanmax(np.abs(a), initial=0.0)) for a in arrays), default=0.0)
    return int(np.frexp(top)[1])


def _estimate(method: str, *, point: float, se: float, z: float, confidence: float,
              labels: int, items: int, lam: float | None, se_human: float,
              labelled_variance: float, fixed_variance: float, exponent: int) -> Estimate:
    """An Estimate from values computed on data scaled by 2**-exponent, scaled back."""
    if se > 0:
        effective = labels * (se_human / se) ** 2
    else:
        effective = math.inf if se_human > 0 else float(labels)

    def back(value: float, power: int = 1) -> float:
        with np.errstate(over="ignore"):
            return float(np.ldexp(value, power * exponent))

    return Estimate(
        method=method, point=back(point), lower=back(point - z * se),
        upper=back(point + z * se), standard_error=back(se), confidence=confidence,
        labels=labels, items=items, lam=lam, effective_labels=effective,
        labelled_variance=back(labelled_variance, 2), fixed_variance=back(fixed_variance, 2))


def _needs_labels(n: int, least: int, where: str = "") -> None:
    if n < least:
        raise EstimationError(
            f"an estimate needs at least {least} human labels{where}, got {n}")


def human_only_mean(*, human: ArrayLike, confidence: float = 0.95) -> Estimate:
    """The labelled items alone: mean +- z sd / sqrt(n) (sd with divisor n, as
    `ppi_py.classical_mean_ci`); NaN labels are unlabelled items and are left out."""
    z = two_sided_z(confidence)
    y = np.asarray(human, dtype=float).ravel()
    infinite = np.flatnonzero(np.isinf(y))
    if infinite.size:
        raise EstimationError(f"human label of item {infinite[0]} is infinite")
    y = y[np.isfinite(y)]
    n = y.size
    _needs_labels(n, 2)
    e = _scale(y)
    y = np.ldexp(y, -e)
    var = float(y.var())
    se = math.sqrt(var / n)
    return _estimate("human-only", point=float(y.mean()), se=se, z=z, confidence=confidence,
                     labels=n, items=n, lam=None, se_human=se, labelled_variance=var,
                     fixed_variance=0.0, exponent=e)


def judge_only_mean(*, judge: ArrayLike, confidence: float = 0.95) -> Estimate:
    """The judge's mean over every item +- z sd / sqrt(N): biased by the judge's errors; its
    interval is about the judge, not about people (no labels, so effective_labels is 0)."""
    z = two_sided_z(confidence)
    f, _ = _scores(judge=judge, human=np.full(np.shape(judge), np.nan))
    _needs_labels(f.size, 2, " (judge scores)")
    e = _scale(f)
    f = np.ldexp(f, -e)
    se = math.sqrt(float(f.var()) / f.size)
    return _estimate("judge-only", point=float(f.mean()), se=se, z=z, confidence=confidence,
                     labels=0, items=f.size, lam=None, se_human=0.0, labelled_variance=0.0,
                     fixed_variance=se * se, exponent=e)


@dataclass(frozen=True)
class _Parts:
    """PPI++ on scaled data: point, se^2, its split, the human-only se^2, lam, n, N."""

    point: float
    variance: float
    labelled_variance: float
    fixed_variance: float
    human_variance: float
    human_point: float
    lam: float
    n: int
    items: int


def _ppi_parts(y: FloatArray, f: FloatArray, lam: float | None) -> _Parts:
    """PPI++ for the mean on already-scaled arrays (labels NaN where unlabelled)."""
    labelled = np.isfinite(y)
    yl, fl, fu = y[labelled], f[labelled], f[~labelled]
    n, nu = yl.size, fu.size
    if lam is None:
        if nu == 0:
            lam = 0.0
        else:
            cov = float(np.mean((yl - yl.mean()) * (fl - fl.mean())))
            var_all = float(np.var(f, ddof=1))
            lam = 0.0 if var_all == 0 else float(np.clip(cov / ((1 + n / nu) * var_all), 0, 1))
    rect = yl - lam * fl
    labelled_variance = float(rect.var())
    fixed_variance = lam * lam * float(fu.var()) / nu if nu else 0.0
    point = (lam * float(fu.mean()) if nu else 0.0) + float(rect.mean())
    return _Parts(point=point, variance=labelled_variance / n + fixed_variance,
                  labelled_variance=labelled_variance, fixed_variance=fixed_variance,
                  human_variance=float(yl.var()) / n, human_point=float(yl.mean()),
                  lam=lam, n=n, items=f.size)


def ppi_mean(*, judge: ArrayLike, human: ArrayLike, confidence: float = 0.95,
             lam: float | None = None) -> Estimate:
    """PPI++ (power-tuned prediction-powered inference) for the mean, labels sampled uniformly.

    theta = lam mean(f_unlabelled) + mean(Y - lam f_labelled); see the module docstring for
    se and lam (Angelopoulos, Duchi, Zrnic 2023; equal to `ppi_py.ppi_mean_ci`). `lam=None`
    tunes it; lam=1 is plain PPI (Angelopoulos et al. 2023, Science), lam=0 human-only.
    """
    z = two_sided_z(confidence)
    f, y = _scores(judge=judge, human=human)
    _needs_labels(int(np.isfinite(y).sum()), 2)
    e = _scale(f, y)
    parts = _ppi_parts(np.ldexp(y, -e), np.ldexp(f, -e), lam)
    return _estimate("ppi++", point=parts.point, se=math.sqrt(parts.variance), z=z,
                     confidence=confidence, labels=parts.n, items=parts.items, lam=parts.lam,
                     se_human=math.sqrt(parts.human_variance),
                     labelled_variance=parts.labelled_variance,
                     fixed_variance=parts.fixed_variance, exponent=e)


def stratified_ppi_mean(*, judge: ArrayLike, human: ArrayLike, strata: ArrayLike,
                        confidence: float = 0.95) -> Estimate:
    """Stratified PPI++ (Fisch et al. 2024): PPI++ within each stratum (labels sampled
    uniformly within it, at any rate), combined with the strata's shares of items:
    theta = sum_h (N_h / N) theta_h, se^2 = sum_h (N_h / N)^2 se_h^2. Each stratum needs 2
    labels. The human-only counterpart (for effective_labels) is the stratified mean of the
    labels, se^2 = sum_h (N_h / N)^2 s_h^2 / n_h; labels_to_reach assumes new labels keep the
    strata's current shares of labels. The interval is a CLT interval in every stratum: with
    few labels in a stratum it is too narrow (1,000 simulated studies, nominal 0.9: 8 labels in
    the smallest of four strata covered 0.835, 20 or more covered 0.886). `lam` reports the
    strata's mean lam."""
    z = two_sided_z(confidence)
    f, y = _scores(judge=judge, human=human)
    groups = np.asarray(strata)
    if groups.shape != f.shape:
        raise EstimationError(f"strata must have one entry per item, got shape {groups.shape}")
    e = _scale(f, y)
    f, y = np.ldexp(f, -e), np.ldexp(y, -e)
    names, codes = np.unique(groups, return_inverse=True)
    total = f.size
    point = variance = human_variance = labelled = fixed = 0.0
    n = 0
    lams = []
    for code, name in enumerate(names.tolist()):
        member = codes == code
        labelled_here = int(np.isfinite(y[member]).sum())
        _needs_labels(labelled_here, 2, f" in stratum {name!r}")
        parts = _ppi_parts(y[member], f[member], None)
        weight = member.sum() / total
        point += weight * parts.point
        variance += weight**2 * parts.variance
        human_variance += weight**2 * parts.human_variance
        fixed += weight**2 * parts.fixed_variance
        labelled += weight**2 * parts.labelled_variance / parts.n
        n += parts.n
        lams.append(parts.lam)
    return _estimate("stratified-ppi++", point=point, se=math.sqrt(variance), z=z,
                     confidence=confidence, labels=n, items=total,
                     lam=float(np.mean(lams)), se_human=math.sqrt(human_variance),
                     labelled_variance=labelled * n, fixed_variance=fixed, exponent=e)


def _weighted_inputs(judge: ArrayLike, human: ArrayLike, inclusion_probability: ArrayLike
                     ) -> tuple[FloatArray, FloatArray, FloatArray, BoolArray, int]:
    """The checked scores scaled by 2^-e, the inclusion probabilities, the labelled mask and
    e, for the inverse-probability-weighted estimators (at least 2 labels)."""
    f, y = _scores(judge=judge, human=human)
    pi = np.asarray(inclusion_probability, dtype=float)
    if pi.shape != f.shape:
        raise EstimationError(
            f"inclusion_probability must have one entry per item, got shape {pi.shape}")
    labelled = np.isfinite(y)
    bad = np.flatnonzero(~((pi >= 0) & (pi <= 1)) | (labelled & ~(pi > 0)))
    if bad.size:
        raise EstimationError(
            f"inclusion probability of item {bad[0]} is {pi[bad[0]]}: it must lie in (0, 1] "
            "for a labelled item and in [0, 1] otherwise")
    _needs_labels(int(labelled.sum()), 2)
    e = _scale(f, y)
    return np.ldexp(f, -e), np.ldexp(y, -e), pi, labelled, e


def weighted_ppi_mean(*, judge: ArrayLike, human: ArrayLike, inclusion_probability: ArrayLike,
                      confidence: float = 0.95, lam: float | None = None) -> Estimate:
    """Inverse-probability-weighted PPI++ (Zrnic and Candes 2024): each item i was labelled
    independently with the known probability pi_i (0 < pi_i <= 1, the sampler's record);
    theta = mean_i [lam f_i + (Y_i - lam f_i) xi_i / pi_i], se = sd / sqrt(N). lam=None tunes
    lam to the smallest variance (clipped to [0, 1]); lam=0 is Horvitz-Thompson, the
    human-only counterpart used for effective_labels. A labelled item needs pi_i > 0; an
    unlabelled item's pi_i is used only through f_i (1 - 0) and may be anything in [0, 1]."""
    z = two_sided_z(confidence)
    f, y, pi, labelled, e = _weighted_inputs(judge, human, inclusion_probability)
    n = int(labelled.sum())
    ratio = np.where(labelled, 1.0 / np.where(labelled, pi, 1.0), 0.0)
    a = np.where(labelled, y, 0.0) * ratio
    b = f * (1.0 - ratio)
    if lam is None:
        var_b = float(b.var())
        cov = float(np.mean((a - a.mean()) * (b - b.mean())))
        lam = 0.0 if var_b == 0 else float(np.clip(-cov / var_b, 0.0, 1.0))
    zs = a + lam * b
    items = f.size
    variance = float(zs.var()) / items
    human_variance = float(a.var()) / items
    return _estimate("weighted-ppi++", point=float(zs.mean()), se=math.sqrt(variance), z=z,
                     confidence=confidence, labels=n, items=items, lam=lam,
                     se_human=math.sqrt(human_variance), labelled_variance=variance * n,
                     fixed_variance=0.0, exponent=e)


def hajek_ppi_mean(*, judge: ArrayLike, human: ArrayLike, inclusion_probability: ArrayLike,
                   confidence: float = 0.95, lam: float | None = None) -> Estimate:
    """Centred (Hajek-normalised) inverse-probability-weighted PPI++ for the mean: labels drawn
    with known inclusion probabilities pi_i (any design of `meta_eval.sampling`), the
    rectifier averaged with weights that sum to N, so a judge offset from people costs
    nothing.

    With xi_i = 1 where item i is labelled, w_i = 1 / pi_i and v_i = N w_i / sum_j xi_j w_j
    (the weights scaled to sum to N over the labelled items: Hajek's estimated population
    size sum xi w in place of N), over all N items:

        theta = lam mean(f) + mu_r,   mu_r = sum xi w (Y - lam f) / sum xi w,

    the judge's mean over every item plus the Hajek (ratio) mean of the rectifier
    r = Y - lam f (Hajek 1971; Sarndal, Swensson and Wretman 1992, "Model Assisted Survey
    Sampling", ch. 5: the weighted mean of a ratio and its Taylor linearisation). Its
    linearisation, with every residual centred on the weighted mean,

        psi_i = lam (f_i - mean(f)) + xi_i v_i (r_i - mu_r),   se^2 = sum_i psi_i^2 / N^2,

    estimates (Var(Y) + E[(1 / pi - 1) (r - E r)^2]) / N, the variance of Zrnic and Candes
    (2024, "Active Statistical Inference", ICML, Theorem 1) with the rectifier centred:
    there, E[(1 / pi - 1) r^2] counts the judge's mean offset from people r_bar as error,
    here only the spread of r around r_bar does (`weighted_ppi_mean` is their uncentred
    form). psi sums to 0 exactly. Power tuning as PPI++ (Angelopoulos, Duchi and Zrnic
    2023, arXiv:2311.01453) does it: psi = A + lam B with A_i = xi_i v_i (Y_i - mu_Y),
    B_i = (f_i - mean(f)) - xi_i v_i (f_i - mu_f) (mu_Y, mu_f the Hajek means of the
    labelled Y and f), and lam = clip(-sum A B / sum B^2, 0, 1) minimises the estimated
    variance (0 where B is 0: every item labelled at pi = 1). lam = 0 is the Hajek mean of
    the labels, the human-only counterpart of effective_labels.

    The variance is Poisson sampling's (independent draws); on the fixed-size designs of
    `meta_eval.sampling` it is Hajek's approximation, close because the residuals are
    centred. Identities: every item labelled at pi = 1 gives the human-only mean and
    interval (as `ppi_mean`); equal pi with lam = 0 gives the labels' mean and
    var(Y) / n (as `ppi_mean(lam=0)`); equal pi with a given lam gives `ppi_mean`'s point
    with every item's judge score in the judge's mean (its se^2 adds
    2 lam cov(f, r) / N over the labelled items, the labelled items being in that mean).
    labels_to_reach: the labelled term sum xi v^2 (r - mu_r)^2 / N^2 shrinks as 1 / n,
    the rest is fixed. A labelled item needs pi_i > 0; an unlabelled item's pi_i is not
    used (it must lie in [0, 1]). Refused where the weights leave fewer than 2 effective
    labels, (sum w)^2 / sum w^2 < 2 (Kish 1965): the linearisation then says 0 for one
    dominant label (the samplers' uniform share keeps every pi_i >= about u n / N)."""
    z = two_sided_z(confidence)
    f, y, pi, labelled, e = _weighted_inputs(judge, human, inclusion_probability)
    n = int(labelled.sum())
    items = f.size
    p = pi[labelled]
    w = float(p.min()) / p  # 1 / pi up to one factor, in (0, 1]: no overflow for tiny pi
    kish = float(w.sum()) ** 2 / float(w @ w)
    if kish < 2:
        raise EstimationError(
            f"the inclusion probabilities leave {kish:.3g} effective labels of the {n} "
            "(Kish: (sum 1/pi)^2 / sum 1/pi^2): one label's weight outweighs all the others, "
            "and the estimate would be that one label with no interval; an estimate needs at "
            "least 2")
    v = items * (w / float(w.sum()))
    yl, fl = y[labelled], f[labelled]
    mean_y, mean_f = float(v @ yl) / items, float(v @ fl) / items
    f_bar = float(f.mean())
    a = np.zeros(items)
    a[labelled] = v * (yl - mean_y)
    b = f - f_bar
    b[labelled] -= v * (fl - mean_f)
    if lam is None:
        bb = float(b @ b)
        spread = float((f - f_bar) @ (f - f_bar))
        lam = 0.0 if bb <= 1e-20 * spread else float(np.clip(-float(a @ b) / bb, 0.0, 1.0))
    psi = a + lam * b
    variance = float(psi @ psi) / items**2
    residual = v * ((yl - mean_y) - lam * (fl - mean_f))
    fixed = max(variance - float(residual @ residual) / items**2, 0.0)
    return _estimate("hajek-ppi++", point=lam * f_bar + mean_y - lam * mean_f,
                     se=math.sqrt(variance), z=z, confidence=confidence, labels=n,
                     items=items, lam=lam, se_human=math.sqrt(float(a @ a)) / items,
                     labelled_variance=(variance - fixed) * n, fixed_variance=fixed,
                     exponent=e)


def labels_to_reach(*, estimate: Estimate, target_width: float) -> int | None:
    """How many more human labels bring the interval's full width (upper - lower) to at most
    `target_width`, from se^2(n') = labelled_variance / n' + fixed_variance with the variances
    held at their current estimates: the smallest m >= 0 with
    2 z se(labels + m) <= target_width. None when no number of labels reaches it (the target
    is below the judge-only term, or the estimate uses no labels)."""
    if not target_width > 0:
        raise EstimationError(f"target width must be positive, got {target_width}")
    if estimate.labels == 0:
        return None
    half = target_width / (2.0 * two_sided_z(estimate.confidence))
    room = half * half - estimate.fixed_variance
    if room <= 0:
        return None
    if estimate.upper - estimate.lower <= target_width:
        return 0
    needed = math.ceil(estimate.labelled_variance / room)
    return max(needed - estimate.labels, 0)


def active_label_priority(*, judge: ArrayLike, human: ArrayLike, lam: float,
                          bins: int | None = None, centre: bool = False) -> FloatArray:
    """Per item, how much labelling it would help: sqrt(E[(Y - lam f)^2 | f]), the quantity the
    variance-optimal inclusion probability is proportional to (Zrnic and Candes 2024, "Active
    Statistical Inference", Theorem 1 with the rectifier of PPI++). The conditional mean is
    estimated by cutting the judge score into `bins` quantile bins (default
    max(1, floor(sqrt(n)))) and averaging (Y - lam f)^2 over each bin's labelled items; a bin
    without labels takes the overall mean. Labelled items get NaN (already labelled). To sample
    a budget of B labels: pi_i = min(1, B * priority_i / sum(priority)) over unlabelled items.
    `centre=True`: sqrt(E[(Y - lam f - r_bar)^2 | f]), r_bar the labels' mean of Y - lam f
    (unweighted: the labels are taken as a uniform draw), the priority of the centred
    estimator `hajek_ppi_mean`, for which a judge's constant offset is no error."""
    f, y = _scores(judge=judge, human=human)
    labelled = np.isfinite(y)
    n = int(labelled.sum())
    _needs_labels(n, 2)
    e = _scale(f, y)
    f, y = np.ldexp(f, -e), np.ldexp(y, -e)
    count = bins if bins is not None else max(1, math.isqrt(n))
    edges = np.unique(np.quantile(f[labelled], np.linspace(0, 1, count + 1)[1:-1]))
    where = np.searchsorted(edges, f, side="right")
    residual = y - lam * f
    if centre:
        residual = residual - float(residual[labelled].mean())
    squared = residual**2
    sums = np.bincount(where[labelled], weights=squared[labelled], minlength=edges.size + 1)
    counts = np.bincount(where[labelled], minlength=edges.size + 1)
    overall = float(squared[labelled].mean())
    means = np.where(counts > 0, sums / np.maximum(counts, 1), overall)
    priority = np.ldexp(np.sqrt(means[where]), e)
    return np.where(labelled, np.nan, priority)


def paired_difference(*, judge_a: ArrayLike, judge_b: ArrayLike, human_a: ArrayLike,
                      human_b: ArrayLike, confidence: float = 0.95) -> Estimate:
    """System A minus system B on the same items: PPI++ on the per-item differences
    d = Y_a - Y_b (labelled where both systems carry a human label) with judge differences
    f_a - f_b, so the interval is the difference's, with the pairing's correlation in it."""
    fa, ya = _scores(judge=judge_a, human=human_a)
    fb, yb = _scores(judge=judge_b, human=human_b)
    if fa.shape != fb.shape:
        raise EstimationError(
            f"both systems must be scored on the same items, got {fa.size} and {fb.size}")
    estimate = ppi_mean(judge=fa - fb, human=ya - yb, confidence=confidence)
    return _renamed(estimate, "paired-ppi++")


def _renamed(estimate: Estimate, method: str) -> Estimate:
    return replace(estimate, method=method)


@dataclass(frozen=True)
class OrientedPair:
    """The rows comparing systems a and b (a sorted before b by repr), each value oriented
    towards a: P(a better), a value of a row with a second turned to 1 - value."""

    a: Hashable
    b: Hashable
    rows: IntArray
    judge: FloatArray
    human: FloatArray


def oriented_pairs(*, first: Sequence[Hashable], second: Sequence[Hashable],
                   judge: ArrayLike, human: ArrayLike) -> list[OrientedPair]:
    """Each unordered pair of systems compared in some row, its rows oriented towards the
    system sorted first by repr; pairs in that order. Row k compares `first[k]` with
    `second[k]`; judge[k] and human[k] are P(first better) in [0, 1] (1 win, 0 loss, 0.5
    tie), human NaN where unlabelled. A verdict outside [0, 1], or a system compared with
    itself, is refused naming the row."""
    f, y = _scores(judge=judge, human=human)
    left, right = list(first), list(second)
    if len(left) != f.size or len(right) != f.size:
        raise EstimationError("first, second, judge and human must have one entry per row")
    outside = np.flatnonzero((f < 0) | (f > 1) | (np.isfinite(y) & ((y < 0) | (y > 1))))
    if outside.size:
        raise EstimationError(
            f"row {outside[0]}: a pairwise verdict must be P(first better) in [0, 1]")
    pairs: dict[tuple[Hashable, Hashable], list[int]] = {}
    for k, (a, b) in enumerate(zip(left, right, strict=True)):
        if a == b:
            raise EstimationError(f"row {k} compares system {a!r} with itself")
        key = (a, b) if repr(a) <= repr(b) else (b, a)
        pairs.setdefault(key, []).append(k)
    out = []
    for (a, b), rows in sorted(pairs.items(), key=lambda kv: repr(kv[0])):
        index = np.asarray(rows, dtype=np.int64)
        flip = np.asarray([left[k] != a for k in rows])
        out.append(OrientedPair(a, b, index, np.where(flip, 1.0 - f[index], f[index]),
                                np.where(flip, 1.0 - y[index], y[index])))
    return out


def pairwise_win_rates(*, first: Sequence[Hashable], second: Sequence[Hashable],
                       judge: ArrayLike, human: ArrayLike, confidence: float = 0.95
                       ) -> dict[tuple[Hashable, Hashable], Estimate]:
    """The win rate of each system against each other one from a pairwise judge, PPI++
    corrected. Row k compares `first[k]` with `second[k]`; judge[k] and human[k] are
    P(first better) in [0, 1] (1 win, 0 loss, 0.5 tie), human NaN where unlabelled. For each
    unordered pair {a, b} (a sorted before b by repr), rows are oriented towards a (a value v
    of a row with a second becomes 1 - v; `oriented_pairs`) and ppi_mean gives a's win rate
    over b (a tie counts a half); the result has (a, b) and (b, a) = 1 - that (same
    interval, mirrored)."""
    out: dict[tuple[Hashable, Hashable], Estimate] = {}
    for pair in oriented_pairs(first=first, second=second, judge=judge, human=human):
        try:
            won = _renamed(ppi_mean(judge=pair.judge, human=pair.human, confidence=confidence),
                           "win-rate-ppi++")
        except EstimationError as error:
            raise EstimationError(f"{pair.a!r} against {pair.b!r}: {error}") from None
        out[(pair.a, pair.b)] = won
        out[(pair.b, pair.a)] = mirrored(won)
    return out


def mirrored(estimate: Estimate) -> Estimate:
    """The estimate of 1 - the mean (the other side of a win rate): the interval mirrored,
    the standard error and labels unchanged."""
    return replace(estimate, point=1.0 - estimate.point, lower=1.0 - estimate.upper,
                   upper=1.0 - estimate.lower)
