"""lc-win-rate's note gives each reason a system has no score once, with the systems."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from conftest import run_cli


def aggregate(path: Path, *args: str) -> dict[str, dict]:
    proc = run_cli("aggregate", str(path), *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return {o["rule"]: o for o in json.loads(proc.stdout)}


def test_lc_note_gives_each_reason_once(tmp_path: Path) -> None:
    rows = []
    for item in range(6):
        for system in ("s1", "s2", "s3", "s4"):
            rows.append({"item": f"i{item}", "system_a": "base", "system_b": system,
                         "winner": "b" if (item + len(system)) % 2 else "a",
                         "length_a": 10, "length_b": 12})  # one length difference each
    path = tmp_path / "pairs.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    spec = "lc-win-rate:baseline=base"
    note = aggregate(path, "-r", spec)[spec]["note"]
    reason = "no spread in length differences"
    assert note.count(reason) == 1, note
    assert "s1, s2, s3 and s4 (no spread in length differences)" in note
