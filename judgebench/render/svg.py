"""Inline SVG plots for the HTML report: plain strings, no scripts, no external resources.

ci_chart      one row per metric/sentinel: the statistic, its CI bar, coloured by
              significance cluster; sentinels hollow; the gate verdict at the right.
scatter       metric against human: system means (dots) over a sample of segments (grey).
margin_chart  per metric and setting: statistic minus the best sentinel's, green where the
              gate passed and red where it failed.
reliability_svg  a reliability diagram: observed frequency against mean predicted
              probability per bin, with the diagonal of perfect calibration.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from typing import Any, TypeGuard

from judgebench.render.card import bin_label, number

PALETTE = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d",
           "#1f78b4", "#b2df8a", "#fb9a99")
FAIL, PASS, GREY = "#c0392b", "#1e8449", "#9aa0a6"


def cluster_colour(cluster: int | None) -> str:
    return GREY if cluster is None else PALETTE[(cluster - 1) % len(PALETTE)]


def _finite(x: object) -> TypeGuard[float]:
    return isinstance(x, int | float) and math.isfinite(x)


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About `count` round tick values covering [low, high]."""
    if not (_finite(low) and _finite(high)) or high <= low:
        return [low] if _finite(low) else [0.0]
    raw = (high - low) / max(count - 1, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    start = math.floor(low / step) * step
    ticks, value = [], start
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    return ticks


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _padded(low: float, high: float, share: float = 0.04) -> tuple[float, float]:
    pad = (high - low) * share
    return low - pad, high + pad


def _label(value: float) -> str:
    return f"{value:.3g}" if value != 0 else "0"


class Scale:
    def __init__(self, low: float, high: float, start: float, end: float) -> None:
        if not high > low:
            low, high = low - 0.5, high + 0.5
        self.low, self.high, self.start, self.end = low, high, start, end

    def __call__(self, value: float) -> float:
        return self.start + (value - self.low) / (self.high - self.low) * (self.end - self.start)


def _svg(width: float, height: float, body: list[str], title: str) -> str:
    return (f'<svg viewBox="0 0 {width:.0f} {height:.0f}" '
            f'width="{width:.0f}" height="{height:.0f}" role="img" '
            f'aria-label="{escape(title)}"><title>{escape(title)}</title>'
            + "".join(body) + "</svg>")


def ci_chart(rows: Sequence[dict[str, Any]], *, title: str, width: int = 640) -> str:
    """rows: label, value, ci_low, ci_high, cluster, kind ("metric"/"sentinel"), gate
    (True/False/None)."""
    left, right, top, row_h = 190, 56, 26, 20
    height = top + row_h * max(len(rows), 1) + 34
    values = [v for r in rows for v in (r.get("value"), r.get("ci_low"), r.get("ci_high"))
              if _finite(v)]
    low, high = (min([*values, 0.0]), max([*values, 0.0])) if values else (0.0, 1.0)
    ticks = nice_ticks(low, high)
    x = Scale(min(ticks[0], low), max(ticks[-1], high), left, width - right)
    body = [f'<text x="{left}" y="15" class="t">{escape(title)}</text>']
    axis_y = top + row_h * max(len(rows), 1) + 4
    for t in ticks:
        body.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{top - 4}" y2="{axis_y}" '
                    f'class="{"zero" if t == 0 else "grid"}"/>')
        body.append(f'<text x="{x(t):.1f}" y="{axis_y + 14}" class="tick" '
                    f'text-anchor="middle">{_label(t)}</text>')
    for i, r in enumerate(rows):
        y = top + row_h * i + row_h / 2
        colour = cluster_colour(r.get("cluster"))
        sentinel = r.get("kind") == "sentinel"
        name = escape(str(r["label"]))
        body.append(f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end" '
                    f'class="{"lab s" if sentinel else "lab"}">{name}</text>')
        if _finite(r.get("ci_low")) and _finite(r.get("ci_high")):
            dash = ' stroke-dasharray="3 2"' if sentinel else ""
            body.append(f'<line x1="{x(r["ci_low"]):.1f}" x2="{x(r["ci_high"]):.1f}" '
                        f'y1="{y:.1f}" y2="{y:.1f}" stroke="{colour}" stroke-width="2"{dash}/>')
        if _finite(r.get("value")):
            cx = x(r["value"])
            if sentinel:
                body.append(f'<path d="M{cx:.1f} {y - 5:.1f}l5 5l-5 5l-5 -5z" fill="#fff" '
                            f'stroke="{colour}" stroke-width="2"/>')
            else:
                body.append(f'<circle cx="{cx:.1f}" cy="{y:.1f}" r="4.5" fill="{colour}"/>')
            cluster = r.get("cluster")
            body.append(f'<text x="{width - right + 6}" y="{y + 4:.1f}" class="tick">'
                        f'{"c" + str(cluster) if cluster is not None else ""}</text>')
        else:
            body.append(f'<text x="{left + 4}" y="{y + 4:.1f}" class="tick">undefined</text>')
        gate = r.get("gate")
        if gate is not None:
            mark, colour = ("✓", PASS) if gate else ("✗", FAIL)
            body.append(f'<text x="{width - 14}" y="{y + 4:.1f}" fill="{colour}" '
                        f'class="mark">{mark}</text>')
    return _svg(width, height, body, title)


def scatter(*, human: Sequence[float], metric: Sequence[float], labels: Sequence[str],
            segment_human: Sequence[float] = (), segment_metric: Sequence[float] = (),
            title: str, subtitle: str = "", x_label: str, y_label: str, width: int = 230,
            height: int = 200) -> str:
    """Metric (y) against human (x): system means as dots over grey segment points."""
    left, right, top, bottom = 40, 10, 34, 34
    xs = [v for v in (*human, *segment_human) if _finite(v)]
    ys = [v for v in (*metric, *segment_metric) if _finite(v)]
    body = [f'<text x="4" y="13" class="t">{escape(_shorten(title, 34))}</text>']
    if subtitle:
        body.append(f'<text x="4" y="26" class="tick">{escape(subtitle)}</text>')
    if not xs or not ys:
        body.append(f'<text x="{left}" y="{height / 2:.0f}" class="tick">no data</text>')
        return _svg(width, height, body, title)
    x = Scale(*_padded(min(xs), max(xs)), left, width - right)
    y = Scale(*_padded(min(ys), max(ys)), height - bottom, top)
    body.append(f'<rect x="{left}" y="{top}" width="{width - left - right}" '
                f'height="{height - top - bottom}" class="frame"/>')
    for t in nice_ticks(min(xs), max(xs), 4):
        if x.low <= t <= x.high:
            body.append(f'<text x="{x(t):.1f}" y="{height - bottom + 12}" class="tick" '
                        f'text-anchor="middle">{_label(t)}</text>')
    for t in nice_ticks(min(ys), max(ys), 4):
        if y.low <= t <= y.high:
            body.append(f'<text x="{left - 3}" y="{y(t) + 3:.1f}" class="tick" '
                        f'text-anchor="end">{_label(t)}</text>')
    for h, m in zip(segment_human, segment_metric, strict=True):
        if _finite(h) and _finite(m):
            body.append(f'<circle cx="{x(h):.1f}" cy="{y(m):.1f}" r="1.6" class="seg"/>')
    for h, m, name in zip(human, metric, labels, strict=True):
        if _finite(h) and _finite(m):
            body.append(f'<circle cx="{x(h):.1f}" cy="{y(m):.1f}" r="3.5" class="sys">'
                        f'<title>{escape(str(name))}: human {h:.3g}, metric {m:.3g}</title>'
                        '</circle>')
    body.append(f'<text x="{(left + width - right) / 2:.0f}" y="{height - 6}" class="tick" '
                f'text-anchor="middle">{escape(_shorten(x_label, 40))}</text>')
    body.append(f'<text x="10" y="{(top + height - bottom) / 2:.0f}" class="tick" '
                f'text-anchor="middle" transform="rotate(-90 10 '
                f'{(top + height - bottom) / 2:.0f})">{escape(_shorten(y_label, 24))}</text>')
    return _svg(width, height, body, title)


def margin_chart(rows: Sequence[dict[str, Any]], *, settings: Sequence[str], title: str,
                 width: int = 640) -> str:
    """rows: metric, and per setting label a dict with margin (metric minus best sentinel)
    and passed (bool or None)."""
    left, right, top = 190, 20, 40
    band = 12 * max(len(settings), 1) + 8
    height = top + band * max(len(rows), 1) + 30
    margins = [cell["margin"] for r in rows for s in settings
               if _finite((cell := r.get(s) or {}).get("margin"))]
    low, high = (min([*margins, 0.0]), max([*margins, 0.0])) if margins else (-1.0, 1.0)
    ticks = nice_ticks(low, high)
    x = Scale(min(ticks[0], low), max(ticks[-1], high), left, width - right)
    body = [f'<text x="4" y="15" class="t">{escape(title)}</text>']
    for k, s in enumerate(settings):  # legend: bar order within each metric
        body.append(f'<text x="{4 + 125 * k}" y="31" class="tick">{k + 1}: '
                    f'{escape(s)}</text>')
    axis_y = top + band * max(len(rows), 1)
    for t in ticks:
        body.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{top - 2}" y2="{axis_y}" '
                    f'class="{"zero" if t == 0 else "grid"}"/>')
        body.append(f'<text x="{x(t):.1f}" y="{axis_y + 14}" class="tick" '
                    f'text-anchor="middle">{_label(t)}</text>')
    zero = x(0.0)
    for i, r in enumerate(rows):
        y0 = top + band * i + 4
        body.append(f'<text x="{left - 8}" y="{y0 + band / 2:.1f}" text-anchor="end" '
                    f'class="lab">{escape(str(r["metric"]))}</text>')
        for k, s in enumerate(settings):
            cell = r.get(s) or {}
            margin = cell.get("margin")
            y = y0 + 12 * k
            if not _finite(margin):
                body.append(f'<text x="{zero + 3:.1f}" y="{y + 9:.1f}" class="tick">'
                            f'{k + 1}: n/a</text>')
                continue
            colour = GREY if cell.get("passed") is None else (PASS if cell["passed"] else FAIL)
            x1, x2 = sorted((zero, x(margin)))
            body.append(f'<rect x="{x1:.1f}" y="{y:.1f}" width="{max(x2 - x1, 1):.1f}" '
                        f'height="10" fill="{colour}"><title>{escape(s)}: '
                        f'{margin:+.3f} vs {escape(str(cell.get("sentinel")))}</title></rect>')
    return _svg(width, height, body, title)


def reliability_svg(entry: dict[str, Any], *, width: int = 260, height: int = 260) -> str:
    """The reliability diagram: observed frequency (y) against mean predicted probability
    (x) per bin, dot area by count, with the diagonal of perfect calibration."""
    left, right, top, bottom = 40, 12, 34, 36
    x = Scale(0.0, 1.0, left, width - right)
    y = Scale(0.0, 1.0, height - bottom, top)
    title = f"{entry['metric']} vs {entry['human']} ({entry['binning']} bins)"
    body = [f'<text x="4" y="13" class="t">{escape(title[:44])}</text>',
            f'<text x="4" y="26" class="tick">ECE {number(entry["ece"])}, Brier '
            f'{number(entry["brier"])}, n = {entry["n"]}</text>',
            f'<rect x="{left}" y="{top}" width="{width - left - right}" '
            f'height="{height - top - bottom}" class="frame"/>',
            f'<line x1="{x(0):.1f}" y1="{y(0):.1f}" x2="{x(1):.1f}" y2="{y(1):.1f}" '
            'class="zero" stroke-dasharray="4 3"/>']
    for t in nice_ticks(0.0, 1.0, 5):
        body.append(f'<text x="{x(t):.1f}" y="{height - bottom + 12}" class="tick" '
                    f'text-anchor="middle">{t:g}</text>')
        body.append(f'<text x="{left - 3}" y="{y(t) + 3:.1f}" class="tick" '
                    f'text-anchor="end">{t:g}</text>')
    biggest = max(entry["count"], default=1)
    points = []
    for low, high, count, p, f in zip(entry["low"], entry["high"], entry["count"],
                                      entry["mean_probability"], entry["frequency"],
                                      strict=True):
        radius = 2.5 + 5.5 * (count / biggest) ** 0.5
        points.append(f"{x(p):.1f},{y(f):.1f}")
        body.append(f'<circle cx="{x(p):.1f}" cy="{y(f):.1f}" r="{radius:.1f}" class="sys">'
                    f"<title>bin {bin_label(entry['binning'], low, high)}: {count} units, "
                    f"mean p {p:.3f}, observed {f:.3f}</title></circle>")
    if len(points) > 1:
        body.insert(4, f'<polyline points="{" ".join(points)}" fill="none" stroke="#1f6feb" '
                       'stroke-width="1.2"/>')
    body.append(f'<text x="{(left + width - right) / 2:.0f}" y="{height - 6}" class="tick" '
                'text-anchor="middle">mean predicted probability</text>')
    middle = (top + height - bottom) / 2
    body.append(f'<text x="10" y="{middle:.0f}" class="tick" text-anchor="middle" '
                f'transform="rotate(-90 10 {middle:.0f})">observed frequency</text>')
    return _svg(width, height, body, title)
