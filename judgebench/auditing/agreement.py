"""The report's "Agreement, error and calibration" section: confusion tables and reliability
diagrams, as data (`scale_section`) and as HTML (`section_html`, with inline SVG) and
Markdown (`section_markdown`).

Computed on the metric columns as they are (never negated: these statistics compare values
with the human scale), over every unit where both are present:

- a confusion table (judge category x human category, `meta_eval.agreement.confusion_table`,
  human scores rounded half up) per human column and metric, when a categorical statistic
  (kappa, kappa-linear, qwk, krippendorff-ordinal, krippendorff-nominal) is asked for;
- a reliability diagram (`meta_eval.reliability.reliability_curve`: per bin, mean predicted
  probability against observed frequency of label 1, with the diagonal of perfect
  calibration) per human column and metric, when brier, ece or ece-mass is asked for: one per
  binning asked (equal-width for brier and ece, equal-mass for ece-mass).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import TYPE_CHECKING, Any

import numpy as np

from judgebench.auditing.svg import Scale, _svg, nice_ticks
from meta_eval.agreement import confusion_table
from meta_eval.reliability import reliability_curve
from meta_eval.statistics import get

if TYPE_CHECKING:
    from meta_eval.arrays import FloatArray


def scale_section(*, matrices: Mapping[str, FloatArray], human: str, metrics: Sequence[str],
                  statistics: Sequence[str]) -> list[dict[str, Any]]:
    """Entries of the section for one human column: `matrices` maps the human column and each
    metric to its raw (items, systems) matrix."""
    specs = [get(s) for s in statistics]
    out: list[dict[str, Any]] = []
    if any(s.categorical for s in specs):
        for name in metrics:
            table = confusion_table(human=matrices[human], metric=matrices[name])
            out.append({"type": "confusion", "human": human, "metric": name,
                        **table.to_dict()})
    binnings = [b for b, wanted in (("width", any(s.name in ("brier", "ece") for s in specs)),
                                    ("mass", any(s.name == "ece-mass" for s in specs)))
                if wanted]
    for name in metrics:
        for binning in binnings:
            curve = reliability_curve(human=matrices[human], metric=matrices[name],
                                      binning=binning)
            out.append({"type": "reliability", "human": human, "metric": name,
                        **curve.to_dict()})
    return out


def _number(value: float) -> str:
    return "n/a" if value is None or not np.isfinite(value) else f"{value:.3f}"


def _confusion_rows(entry: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    header = ["judge \\ human", *(str(h) for h in entry["human_labels"]), "total"]
    rows = [[str(label), *(str(c) for c in counts), str(sum(counts))]
            for label, counts in zip(entry["metric_labels"], entry["counts"], strict=True)]
    totals = [sum(col) for col in zip(*entry["counts"], strict=True)] if entry["counts"] else []
    rows.append(["total", *(str(t) for t in totals), str(entry["n"])])
    return header, rows


def _bin(binning: str, low: float, high: float) -> str:
    """Equal-width bins are [low, high) but the last, [low, 1]; equal-mass ones are named by
    the lowest and highest probability in them."""
    close = "]" if binning == "mass" or high >= 1 else ")"
    return f"[{low:.3g}, {high:.3g}{close}"


def reliability_svg(entry: dict[str, Any], *, width: int = 260, height: int = 260) -> str:
    """The reliability diagram: observed frequency (y) against mean predicted probability
    (x) per bin, dot area by count, with the diagonal of perfect calibration."""
    left, right, top, bottom = 40, 12, 34, 36
    x = Scale(0.0, 1.0, left, width - right)
    y = Scale(0.0, 1.0, height - bottom, top)
    title = f"{entry['metric']} vs {entry['human']} ({entry['binning']} bins)"
    body = [f'<text x="4" y="13" class="t">{escape(title[:44])}</text>',
            f'<text x="4" y="26" class="tick">ECE {_number(entry["ece"])}, Brier '
            f'{_number(entry["brier"])}, n = {entry["n"]}</text>',
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
                    f"<title>bin {_bin(entry['binning'], low, high)}: {count} units, "
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


INTRO = ("Computed on the metric values as they are (not negated). Confusion tables: judge "
         "category (rows) against the human score rounded half up to an integer (columns). "
         "Reliability diagrams: per bin, the mean predicted probability against the share "
         "of label 1; the dashed diagonal is perfect calibration.")


def section_html(entries: Sequence[dict[str, Any]]) -> str:
    """The section as HTML (empty without entries)."""
    if not entries:
        return ""
    parts = ['<h2 id="agreement-error-calibration">Agreement, error and calibration</h2>',
             f'<p class="muted">{escape(INTRO)}</p>']
    for e in (e for e in entries if e["type"] == "confusion"):
        header, rows = _confusion_rows(e)
        head = "".join(f"<th>{escape(h)}</th>" for h in header)
        body = "".join("<tr>" + "".join(f'<td class="num">{escape(c)}</td>' if k else
                                        f"<th>{escape(c)}</th>" for k, c in enumerate(row))
                       + "</tr>" for row in rows)
        parts.append(f"<h3>{escape(e['metric'])} · {escape(e['human'])}: confusion</h3>"
                     f'<div class="scroll"><table class="confusion"><thead><tr>{head}</tr>'
                     f"</thead><tbody>{body}</tbody></table></div>")
    diagrams = [reliability_svg(e) for e in entries if e["type"] == "reliability"]
    if diagrams:
        parts.append('<h3>Reliability</h3><div class="grid" id="reliability-diagrams">'
                     f'{"".join(diagrams)}</div>')
    return "".join(parts)


def section_markdown(entries: Sequence[dict[str, Any]], *, text: Any, table: Any
                     ) -> list[str]:
    """The section as Markdown lines (none without entries); `text` escapes user strings
    and `table` renders a table (judgebench.auditing.markdown's)."""
    if not entries:
        return []
    out = ["## Agreement, error and calibration", "", INTRO, ""]
    for e in (e for e in entries if e["type"] == "confusion"):
        header, rows = _confusion_rows(e)
        out += [f"### {text(e['metric'])} · {text(e['human'])}: confusion", ""]
        out += table(header, rows)
        out.append("")
    for e in (e for e in entries if e["type"] == "reliability"):
        out += [f"### {text(e['metric'])} · {text(e['human'])}: reliability "
                f"({text(e['binning'])} bins)", "",
                f"ECE {_number(e['ece'])}, Brier {_number(e['brier'])}, n = {e['n']}.", ""]
        out += table(["bin", "units", "mean p", "observed"],
                     [[_bin(e["binning"], lo, hi), c, f"{p:.3f}", f"{f:.3f}"]
                      for lo, hi, c, p, f in zip(e["low"], e["high"], e["count"],
                                                 e["mean_probability"], e["frequency"],
                                                 strict=True)])
        out.append("")
    return out
