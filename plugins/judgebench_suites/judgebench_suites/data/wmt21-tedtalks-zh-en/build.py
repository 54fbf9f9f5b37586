"""Rebuild the WMT21 TED talks zh-en MQM suite folder from google/wmt-mqm-human-evaluation.

    python build.py SOURCE_GIT_DIR

SOURCE_GIT_DIR is a clone (its .git) or a bare mirror of
https://github.com/google/wmt-mqm-human-evaluation; `ted/zhen/mqm_ted_zhen.tsv` is read at
wmt21-tedtalks-en-de/build.py's COMMIT with its `show`, and each error is weighted and its
span located with its `weight` and `unmark` (the en-de file's conventions, same source
README). Differences from en-de: the file has no `comment` column; it rates two human
translations, `ref` (ref-A) and `refB` (ref-B); ref-B is the reference of every sample and
ref-A, which the README ranks last, is left out (see SOURCE.md). Writes samples.jsonl.gz,
human.jsonl.gz, spans.jsonl.gz and suite.json beside this script (gzip mtime 0, keys
sorted, rows by segment then system) with each file's sha256 in suite.json.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent / "wmt21-tedtalks-en-de" / "build.py"
TSV = "ted/zhen/mqm_ted_zhen.tsv"
COLUMNS = ["system", "doc", "doc_id", "seg_id", "rater", "source", "target", "category",
           "severity"]
SYSTEM_NAMES = {"ref": "ref-A", "refB": "ref-B"}
REFERENCE = "ref-B"
LEFT_OUT = "ref-A"


def shared() -> Any:
    spec = importlib.util.spec_from_file_location("wmt21_en_de_build", SHARED)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(git_dir: str) -> None:
    en_de = shared()
    reader = csv.reader(io.StringIO(en_de.show(git_dir, TSV)), delimiter="\t",
                        quoting=csv.QUOTE_NONE)
    if next(reader) != COLUMNS:
        raise ValueError(f"{TSV}: unexpected header")
    ratings: dict[tuple[int, str], dict[str, Any]] = {}
    sources: dict[int, str] = {}
    spans: list[dict[str, Any]] = []
    for line, values in enumerate(reader, start=2):
        row = dict(zip(COLUMNS, values, strict=True))
        where = f"{TSV}:{line}"
        system = SYSTEM_NAMES.get(row["system"], row["system"])
        seg = int(row["seg_id"])
        source, in_source = en_de.unmark(row["source"], where)
        target, in_target = en_de.unmark(row["target"], where)
        if sources.setdefault(seg, source) != source:
            raise ValueError(f"{where}: source differs from the segment's other rows")
        rating = ratings.setdefault((seg, system), {
            "doc": row["doc"], "doc_seg": int(row["doc_id"]), "rater": row["rater"],
            "target": target, "penalty": 0.0, "errors": 0})
        if (rating["target"], rating["rater"]) != (target, row["rater"]):
            raise ValueError(f"{where}: target or rater differs from the translation's other rows")
        w = en_de.weight(row["category"], row["severity"])
        rating["penalty"] += w
        if row["severity"] == "No-error":
            if in_source or in_target:
                raise ValueError(f"{where}: a No-error row marks a span")
            continue
        rating["errors"] += 1
        if system == LEFT_OUT:
            continue
        side, span = ("source", in_source) if in_source else ("target", in_target)
        text = source if side == "source" else target
        spans.append({"item": str(seg), "system": system, "rater": row["rater"],
                      "category": row["category"], "severity": row["severity"], "weight": w,
                      "side": side if span else None,
                      "start": span[0] if span else None, "end": span[1] if span else None,
                      "span": text[span[0]:span[1]] if span else None, "comment": None})
    systems = sorted({s for _, s in ratings} - {REFERENCE, LEFT_OUT})
    segments = sorted(sources)
    missing = [(g, s) for g in segments for s in [*systems, REFERENCE] if (g, s) not in ratings]
    if missing:
        raise ValueError(f"{TSV}: translations without a rating, e.g. {missing[:3]}")
    samples, human = [], []
    for seg in segments:
        for system in systems:
            rating = ratings[(seg, system)]
            key = {"item": str(seg), "system": system}
            samples.append({**key, "source": sources[seg], "output": rating["target"],
                            "reference": ratings[(seg, REFERENCE)]["target"],
                            "metadata": {"doc": rating["doc"], "doc_seg": rating["doc_seg"]}})
            human.append({**key, "human.mqm": en_de.score(rating["penalty"]),
                          "rater": rating["rater"], "errors": rating["errors"]})
    spans.sort(key=lambda r: (int(r["item"]), r["system"]))
    files = {"samples.jsonl.gz": en_de.write_gz(HERE / "samples.jsonl.gz", samples),
             "human.jsonl.gz": en_de.write_gz(HERE / "human.jsonl.gz", human),
             "spans.jsonl.gz": en_de.write_gz(HERE / "spans.jsonl.gz", spans)}
    info = en_de.suite_json(files, len(segments), len(systems))
    raters = {r["rater"] for (_, system), r in ratings.items() if system != LEFT_OUT}
    info.update({
        "name": "wmt21-tedtalks-zh-en",
        "title": "WMT21 TED talks Chinese-English, expert MQM",
        "description": (
            f"WMT21 Metrics task TED talks test suite, Chinese to English: {len(systems)} MT "
            f"systems on the {len(segments)} segments the MQM file rates (talks 2, 5, 6, 7 "
            f"and 9), each translation rated by one of {len(raters)} professional "
            "translators (no translation has two ratings, so there is no inter-annotator "
            "ceiling). human.mqm is minus the MQM penalty (Major 5, Minor 1, Minor "
            "Fluency/Punctuation 0.1, Non-translation 25; a Source error by its severity), "
            "as mt-metrics-eval stores it; the rater of each translation is in "
            "human.jsonl.gz's `rater`. The reference is ref-B, the human translation the "
            "source README ranks first, so ref-B is not a scored system; its ratings are in "
            "spans.jsonl.gz. The other human translation, ref-A (ranked last), is left out. "
            "spans.jsonl.gz: one row per error (category, severity, weight, side, [start, "
            "end) in code points of the unmarked text, rater). No published metric number "
            "for TED zh-en was found, so there is no metric baseline: searched were every "
            "file and commit of google/wmt-mqm-human-evaluation (its README prints human "
            "MQM averages only; ted/zhen holds the MQM ratings and their per-segment "
            "averages, avg_seg_scores.tsv, no metric scores) and this suite's vendored data; "
            "the WMT21 metrics-task scores are in mt-metrics-eval's data tarball, not "
            "reachable offline. The source README's system MQM averages are reproduced from "
            "these files in the suite's test (SOURCE.md)."),
    })
    info["source"]["files"] = [TSV]
    (HERE / "suite.json").write_text(json.dumps(info, indent=2, ensure_ascii=False) + "\n",
                                     encoding="utf-8")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build(sys.argv[1])
