"""A third-party sentinel and a third-party probe, each installed with pip from its own
distribution (tests/distributions/), are used by `judgebench audit` exactly like built-ins."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli
from installed import install, on_path
from test_audit_sentinels import synthetic

from judgebench.plugins import build_host


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    target = tmp_path_factory.mktemp("site")
    install("judgebench-test-sentinel", target)
    install("judgebench-test-probe", target)
    with on_path(target):
        yield target


@pytest.fixture(scope="module")
def audited(site: Path, tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    frame, samples = synthetic(n_items=10, n_systems=4, seed=1)
    # Each output is its own reference: token F1 is 1, and any lost word lowers it.
    samples = [s.model_copy(update={"reference": s.output}) for s in samples]
    where = tmp_path_factory.mktemp("audit")
    frame.to_csv(where / "scores.csv", index=False)
    (where / "gen.jsonl").write_text(
        "".join(s.model_dump_json(exclude_none=True) + "\n" for s in samples), encoding="utf-8")

    result = run_cli(
        "audit", str(where / "scores.csv"), "--human", "human.q", "--samples",
        str(where / "gen.jsonl"), "--level", "system", "--bootstrap", "0", "--resamples",
        "50", "--probe", "lexical.token_f1", "--probe-items", "4", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_installed_plugins_register_through_the_hooks(site: Path) -> None:
    host = build_host()
    assert host.sentinels()["sentinel.system-prior"].plugin == "testsentinel"
    assert host.probes()["drop-last-word"].plugin == "testprobe"
    assert {"testsentinel", "testprobe"} <= {row["name"] for row in host.describe()}
    versions = {row["name"]: row["version"] for row in host.describe()}
    assert versions["testsentinel"] == "0.3.0" and versions["testprobe"] == "0.2.0"


def test_a_third_party_sentinel_ranks_with_the_built_in_ones(audited: list[dict]) -> None:
    rows = {r["metric"]: r for r in audited if r["type"] == "correlation"}
    assert {"sentinel.system-prior", "sentinel.random", "sentinel.cand"} <= set(rows)
    mine = rows["sentinel.system-prior"]
    assert isinstance(mine["value"], float) and np.isfinite(mine["value"])
    assert mine["cluster"] is not None and "plugin:testsentinel 0.3.0" in mine["signature"]


def test_a_third_party_probe_runs_with_the_built_in_ones(audited: list[dict]) -> None:
    probes = {r["probe"]: r for r in audited if r["type"] == "probe"}
    assert {"drop-last-word", "identity", "truncation", "batch-order"} <= set(probes)
    mine = probes["drop-last-word"]
    assert mine["expect"] == "lower" and mine["description"] == "the last word removed"
    assert mine["n"] == 16 and mine["skipped"] == 0 and mine["failed"] == 0  # 4 items x 4
    assert mine["rate"] == 1.0 and mine["right"] == 16 and mine["mean_delta"] < 0
    built_in = [name for name in probes if name != "drop-last-word"]
    assert built_in == ["identity", "truncation", "shuffle", "drop-sentence", "unrelated",
                        "repetition", "negation", "numbers", "case", "whitespace",
                        "rename-systems", "batch-order"]
