"""Judges that always answer in form: on the bundled example (examples/summeval-sample.jsonl),
the README's judges on the CPU default (SmolLM2-135M-Instruct, backend transformers, no
model option) give no `parse_error`, because the backend enforces the score's choices while
decoding (llguidance). Before constrained decoding, `judge.rubric:criterion=relevance` gave
6 of 6 parse errors here. The judges may still be poor; they are in form.

Each judgement runs the real 135M model on CPU (~15-30 s on 2 shared cores), so only the
first samples of the example are scored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the [local] extra is not installed")
pytest.importorskip("llguidance", reason="the [local] extra is not installed")

from conftest import run_cli

pytestmark = pytest.mark.slow  # runs the local SmolLM2 judge

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "summeval-sample.jsonl"


def statuses(tmp_path: Path, data: Path, spec: str, limit: int, cache: Path
             ) -> tuple[dict, dict]:
    """(status counts, column summary) of `judgebench score DATA -m SPEC --limit N` with
    the judgebench cache `cache`."""
    out = tmp_path / "scores.csv"
    env = {"JUDGEBENCH_CACHE_DIR": str(cache)}
    proc = run_cli("score", str(data), "-m", spec, "--limit", str(limit), "-o", str(out),
                   "--allow-failures", env=env)
    assert proc.returncode == 0, proc.stderr
    meta = json.loads(Path(f"{out}.meta.json").read_text())
    column = meta["columns"][spec]
    return column["statuses"], column


@pytest.mark.parametrize("spec", ["judge.rubric:criterion=relevance", "judge.reference"])
def test_direct_judges_on_the_example_never_fail_to_parse(tmp_path, model_cache, spec) -> None:
    found, column = statuses(tmp_path, EXAMPLE, spec, limit=3, cache=model_cache)
    assert found == {"ok": 3}, found
    assert "constrained:choice" in column["signature"]
    assert "model:SmolLM2-135M-Instruct" in column["signature"]


def test_the_json_protocol_on_the_local_model_closes_its_json(tmp_path, model_cache) -> None:
    spec = "judge.rubric:criterion=relevance,protocol=json"
    found, column = statuses(tmp_path, EXAMPLE, spec, limit=2, cache=model_cache)
    assert found == {"ok": 2}, found
    assert "constrained:json" in column["signature"]


def pairs_from_the_example(path: Path, n: int) -> Path:
    """`n` pairs: two systems' outputs for the same article, from the example."""
    rows = [json.loads(line) for line in EXAMPLE.read_text().splitlines() if line.strip()]
    by_item: dict[str, list[dict]] = {}
    for row in rows:
        by_item.setdefault(row["item"], []).append(row)
    pairs = []
    for item, group in list(by_item.items())[:n]:
        a, b = group[0], group[1]
        pairs.append({"item": item, "input": "Summarize the article:\n" + a["input"],
                      "output_a": a["output"], "output_b": b["output"],
                      "system_a": a["system"], "system_b": b["system"]})
    path.write_text("".join(json.dumps(p) + "\n" for p in pairs))
    return path


def test_pairwise_on_pairs_from_the_example_never_fails_to_parse(tmp_path, model_cache) -> None:
    data = pairs_from_the_example(tmp_path / "pairs.jsonl", 2)
    found, column = statuses(tmp_path, data, "judge.pairwise", limit=2, cache=model_cache)
    assert found == {"ok": 2}, found
    assert "constrained:choice" in column["signature"]


def test_the_listwise_judge_picks_one_candidate_on_the_local_model(tmp_path, model_cache
                                                                   ) -> None:
    """judge.listwise on the CPU default: 3 items of the bundled listwise example, each
    answered in form (the pick's label constrained while decoding), one pick per item."""
    import pandas as pd

    example = EXAMPLE.parent / "listwise-samples.jsonl"
    spec = "judge.listwise:feedback_tokens=16"
    found, column = statuses(tmp_path, example, spec, limit=3, cache=model_cache)
    assert found == {"ok": 3}, found
    assert "constrained:choice" in column["signature"]
    assert "model:SmolLM2-135M-Instruct" in column["signature"]
    table = pd.read_csv(tmp_path / "scores.csv")
    assert len(table) == 12
    assert table.groupby("item")[spec].sum().tolist() == [1.0, 1.0, 1.0]
