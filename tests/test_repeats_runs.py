"""`score --repeats K` against the loopback server answering at random (`--random-scores`):
K draws per sample, each its own judge-cache keys (a rerun replays the same K and sends
nothing), every draw in the store, the table's cell their mean; reliabilities from the store's
draws equal an independent computation (scipy's one-way ANOVA for ICC(1), the `krippendorff`
package for alpha); a judge at temperature 0 is refused before any request; a run killed
mid-way and resumed keeps every draw and pays for none twice."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("aiohttp", reason="the [api] extra is not installed (openai_compat)")

sys.path.insert(0, str(Path(__file__).parent))
from conftest import column, run_cli, summeval_records, write_jsonl
from fault_server import FaultServer

K = 4
N = 12


def spec(server: FaultServer, **options: str) -> str:
    opts = {"backend": "openai_compat", "model": "judge", "api_base": server.url,
            "timeout_s": "5", "max_attempts": "3", "temperature": "1", "protocol": "text",
            **options}
    return "judge.rubric:" + ",".join(f"{k}={v}" for k, v in opts.items())


def score(tmp_path: Path, data: Path, metric: str, *extra: str):
    return run_cli("score", str(data), "-m", metric, "--store", str(tmp_path / "runs.db"),
                   "--cache", str(tmp_path / "cache.sqlite"), "-o", str(tmp_path / "out.csv"),
                   *extra, cwd=tmp_path, env={"JUDGEBENCH_CACHE_DIR": str(tmp_path / "d")})


def draws_of(store: Path) -> pd.DataFrame:
    with sqlite3.connect(store) as conn:
        return pd.read_sql("SELECT item, system, sample_index, value, status FROM scores"
                           " ORDER BY item, system, sample_index", conn)


def matrix(rows: pd.DataFrame) -> np.ndarray:
    wide = rows.pivot_table(index=["item", "system"], columns="sample_index", values="value")
    return wide.to_numpy(dtype=float)


@pytest.fixture
def server(tmp_path: Path):
    with FaultServer("--random-scores", "7", log=tmp_path / "served.jsonl") as srv:
        yield srv


def test_k_draws_are_stored_the_cell_is_their_mean_and_a_rerun_replays_them(server, tmp_path):
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(N))
    metric = spec(server)
    done = score(tmp_path, data, metric, "--repeats", str(K))
    assert done.returncode == 0, done.stderr
    rows = draws_of(tmp_path / "runs.db")
    assert len(rows) == N * K and set(rows.sample_index) == set(range(K))
    assert (rows.status == "ok").all()
    served = len(server.served())
    assert served == N * K, "one call per draw (protocol=text): each draw is its own request"
    draws = matrix(rows)
    assert np.unique(draws).size > 1, "the server answers at random"
    table = pd.read_csv(tmp_path / "out.csv")
    means = rows.groupby(["item", "system"]).value.mean()
    got = table.set_index(["item", "system"])[column(metric)]
    assert np.allclose(got.loc[means.index].to_numpy(), means.to_numpy())
    meta = json.loads((tmp_path / "out.csv.meta.json").read_text())
    assert meta["columns"][column(metric)]["repeats"] == K
    again = score(tmp_path, data, metric, "--repeats", str(K))
    assert again.returncode == 0, again.stderr
    assert len(server.served()) == served, "a rerun replays the K draws from the judge cache"
    assert draws_of(tmp_path / "runs.db").equals(rows)
    more = score(tmp_path, data, metric, "--repeats", str(K + 1), "--resume")
    assert more.returncode == 0, more.stderr
    assert len(server.served()) == served + N, "one more draw is one new call per sample"


def independent_icc(draws: np.ndarray) -> float:
    """ICC(1) of a balanced (units, k) array from scipy's one-way ANOVA F (Shrout and Fleiss
    1979: (F - 1) / (F + k - 1))."""
    from scipy.stats import f_oneway

    k = draws.shape[1]
    f = f_oneway(*draws).statistic  # each unit a group
    return float((f - 1) / (f + k - 1))


def test_meta_eval_reliabilities_of_random_draws_equal_an_independent_computation(
        server, tmp_path):
    import krippendorff
    from scipy.stats import f_oneway, pearsonr

    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(N))
    metric = spec(server)
    done = score(tmp_path, data, metric, "--repeats", str(K))
    assert done.returncode == 0, done.stderr
    rows = draws_of(tmp_path / "runs.db")
    draws = matrix(rows)
    shown = run_cli("meta-eval", str(tmp_path / "out.csv"), "--human", "human.coherence",
                    "--json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    (got,) = [r for r in json.loads(shown.stdout) if r["statistic"] == "repeats"]
    assert got["metric"] == column(metric) and got["n"] == N and got["repeats"] == K
    icc = independent_icc(draws)
    assert got["icc"] == pytest.approx(icc, rel=1e-9, abs=1e-12)
    assert got["icc_mean"] == pytest.approx(K * icc / (1 + (K - 1) * icc), rel=1e-9)
    one_way = f_oneway(*draws)  # the F-test of ICC(1) = 0, each unit a group
    for form, value in (("ICC1", icc), ("ICC1k", got["icc_mean"])):
        test = got["icc_inference"][form]
        assert test["value"] == pytest.approx(value, rel=1e-9, abs=1e-12)
        assert test["f"] == pytest.approx(one_way.statistic, rel=1e-9)
        assert test["p_value"] == pytest.approx(one_way.pvalue, rel=1e-9, abs=1e-300)
        assert test["ci_low"] < value < test["ci_high"]
    alpha = krippendorff.alpha(reliability_data=draws.T, level_of_measurement="interval")
    assert got["alpha"] == pytest.approx(alpha, rel=1e-9, abs=1e-12)
    assert got["spread"] == pytest.approx(float(np.mean(np.std(draws, axis=1, ddof=1))))
    assert got["flip_share"] == pytest.approx(float(np.mean(draws.min(1) != draws.max(1))))
    # the noise ceiling against people: units in the table's order
    table = pd.read_csv(tmp_path / "out.csv")
    index = rows.pivot_table(index=["item", "system"], columns="sample_index",
                             values="value").index
    human = table.set_index(["item", "system"]).loc[index, "human.coherence"].to_numpy()
    r = pearsonr(human, draws.mean(axis=1)).statistic
    noise = got["noise_ceiling"]["human.coherence"]
    assert noise["agreement"] == pytest.approx(r, rel=1e-9)
    rel = K * icc / (1 + (K - 1) * icc)
    if rel > 0:
        assert noise["ceiling"] == pytest.approx(np.sqrt(rel), rel=1e-9)
        assert noise["noise_share"] == pytest.approx(
            min(1.0, max(0.0, (1 - np.sqrt(rel)) / (1 - r))), rel=1e-9)
    else:
        assert noise["ceiling"] is None
    text = run_cli("meta-eval", str(tmp_path / "out.csv"), "--human", "human.coherence",
                   cwd=tmp_path)
    assert text.returncode == 0 and "repeats" in text.stdout and "ICC(1)=" in text.stdout


def test_a_judge_at_temperature_zero_is_refused_unless_greedy_is_allowed(server, tmp_path):
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(3))
    refused = score(tmp_path, data, spec(server, temperature="0"), "--repeats", "2")
    assert refused.returncode == 2, refused.stderr
    assert "temperature 0" in refused.stderr and "--repeats-allow-greedy" in refused.stderr
    assert server.served() == [], "refused before any request"
    allowed = score(tmp_path, data, spec(server, temperature="0"), "--repeats", "2",
                    "--repeats-allow-greedy")
    assert allowed.returncode == 0, allowed.stderr
    assert len(server.served()) == 6


def test_a_killed_run_resumed_keeps_every_draw_and_pays_for_none_twice(tmp_path):
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(N))
    log = tmp_path / "served.jsonl"
    with FaultServer("--random-scores", "3", "--latency", "0.05", log=log) as server:
        metric = spec(server, concurrency="1")
        args = ["score", str(data), "-m", metric, "--store", str(tmp_path / "runs.db"),
                "--cache", str(tmp_path / "cache.sqlite"), "-o", str(tmp_path / "out.csv"),
                "--repeats", str(K)]
        proc = subprocess.Popen([sys.executable, "-m", "judgebench.cli", *args], cwd=tmp_path,
                                env=os.environ.copy(), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        while len(server.served()) < N * K // 2 and proc.poll() is None:
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        while not server.idle():
            time.sleep(0.02)
        before = len(server.served())
        assert before < N * K, "the kill landed mid-run"
        with sqlite3.connect(tmp_path / "cache.sqlite") as conn:
            cached = conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        kept = draws_of(tmp_path / "runs.db")
        assert 0 < len(kept) < N * K
        resumed = score(tmp_path, data, metric, "--repeats", str(K), "--resume")
        assert resumed.returncode == 0, resumed.stderr
        sent = len(server.served()) - before
    assert sent == N * K - cached, "every cached answer is replayed, none asked twice"
    rows = draws_of(tmp_path / "runs.db")
    assert len(rows) == N * K and (rows.status == "ok").all()
    merged = kept.merge(rows, on=["item", "system", "sample_index"], suffixes=("", "_now"))
    assert len(merged) == len(kept) and (merged.value == merged.value_now).all(), \
        "a draw committed before the kill is kept as it was"


def test_the_audit_reports_repeats_and_fails_on_a_flaky_judge(server, tmp_path):
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(N))
    metric = spec(server)
    assert score(tmp_path, data, metric, "--repeats", str(K)).returncode == 0
    flips = float(np.mean(np.ptp(matrix(draws_of(tmp_path / "runs.db")), axis=1) > 0))
    assert flips > 0.1, "random answers flip"
    audited = run_cli("audit", str(tmp_path / "out.csv"), "--human", "human.coherence",
                      "--fail-on", "flaky>0.1", "--report", str(tmp_path / "card.json"),
                      "--report", str(tmp_path / "card.html"), cwd=tmp_path)
    assert audited.returncode == 4, audited.stderr
    assert f"FAIL {column(metric)}: its verdict flips between its {K} draws" in audited.stderr
    assert "## Repeats" in audited.stdout
    assert '<h2 id="repeats">Repeats</h2>' in (tmp_path / "card.html").read_text()
    card = json.loads((tmp_path / "card.json").read_text())
    (row,) = card["repeats"]
    assert row["flip_share"] == pytest.approx(flips) and row["n"] == N
    steady = tmp_path / "steady"
    steady.mkdir()
    with FaultServer(log=steady / "served.jsonl") as same:  # answers per prompt: no flip
        greedy = score(steady, data, spec(same, temperature="0"), "--repeats", str(K),
                       "--repeats-allow-greedy")
        assert greedy.returncode == 0, greedy.stderr
    calm = run_cli("audit", str(steady / "out.csv"), "--human", "human.coherence",
                   "--fail-on", "flaky>0", cwd=steady)
    assert calm.returncode == 0 and "FAIL" not in calm.stderr, calm.stderr


def test_flaky_without_repeats_has_nothing_to_check(tmp_path):
    from judgebench.auditing.checks import Check, _flaky, parse_checks

    assert parse_checks(["flaky>5%"]) == [Check("flaky", "flaky>5%", 0.05)]
    with pytest.raises(Exception, match="share of the items"):
        parse_checks(["flaky>1"])
    (failure,) = _flaky([], Check("flaky", "flaky>0", 0.0), 0.0)
    assert "nothing to check" in failure.message


def test_draw_zero_keeps_its_key_and_each_draw_has_its_own():
    import hashlib

    from judgebench.backends.base import Request

    identity = {"backend": "openai_compat", "model": "judge", "revision": ""}
    first = Request.chat(("user", "rate this"), temperature=1.0)
    old = {name: getattr(first, name) for name in first.__dataclass_fields__
           if name not in ("repeat", "constraint")}
    old |= {"messages": [dict(m) for m in first.messages], "stop": []}
    blob = json.dumps({"backend": dict(sorted(identity.items())), "request": old},
                      sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert first.content_hash(identity) == hashlib.sha256(blob.encode()).hexdigest()
    keys = {first.__class__(**{**first.__dict__, "repeat": r}).content_hash(identity)
            for r in range(5)}
    assert len(keys) == 5


def test_pass_at_k_of_binary_draws_against_brute_force():
    from itertools import combinations

    from judgebench.services.repeats import repeats_row

    rng = np.random.default_rng(5)
    draws = rng.integers(0, 2, size=(30, 5)).astype(float)
    draws[3, 1] = np.nan
    row = repeats_row("j", draws, {})
    for k in range(1, 6):
        at, hat = [], []
        for unit in draws:
            kept = unit[np.isfinite(unit)]
            if kept.size < k:
                continue
            subsets = list(combinations(kept, k))
            at.append(np.mean([max(s) for s in subsets]))
            hat.append(np.mean([min(s) for s in subsets]))
        assert row.pass_at[k] == pytest.approx(np.mean(at))
        assert row.pass_hat[k] == pytest.approx(np.mean(hat))


def test_a_dry_run_estimates_k_draws(server, tmp_path):
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(5))
    estimates = []
    for k in ("1", "3"):
        done = run_cli("score", str(data), "-m", spec(server), "--dry-run", "--json",
                       "--repeats", k, cwd=tmp_path,
                       env={"JUDGEBENCH_CACHE_DIR": str(tmp_path / "cache")})
        assert done.returncode == 0, done.stderr
        estimates.append(json.loads(done.stdout))
    assert server.served() == []
    (one,), (three,) = estimates
    assert three["repeats"] == 3 and "repeats" not in one
    for name in ("calls", "tokens_in", "tokens_out"):
        assert three[name] == 3 * one[name] > 0


def first_majority(values: list) -> object:
    """The most frequent value, the first drawn among equally frequent ones (by hand)."""
    best, best_count = None, 0
    for value in values:
        count = sum(v == value for v in values)
        if count > best_count:
            best, best_count = value, count
    return best


def test_the_majority_cell_of_a_categorical_judge(server, tmp_path):
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(N))
    metric = spec(server)
    done = score(tmp_path, data, metric, "--repeats", "3", "--repeats-cell", "majority")
    assert done.returncode == 0, done.stderr
    rows = draws_of(tmp_path / "runs.db")
    expected = {key: first_majority(list(group.sort_values("sample_index").value))
                for key, group in rows.groupby(["item", "system"])}
    table = pd.read_csv(tmp_path / "out.csv")
    got = {(str(r.item), str(r.system)): float(v) for r, v in
           zip(table.itertuples(), table[column(metric)], strict=True)}
    assert got == expected
    meta = json.loads((tmp_path / "out.csv.meta.json").read_text())
    assert meta["columns"][column(metric)]["repeats_cell"] == "majority"


def test_a_pairwise_judge_s_cells_are_the_majority_verdicts_of_its_draws(tmp_path):
    from judgebench.engine.pairwise_table import verdict_columns

    records = summeval_records(9)
    pairs = [{"item": r["item"], "input": r["input"], "output_a": r["output"],
              "output_b": records[i + 1]["output"], "system_a": r["system"],
              "system_b": records[i + 1]["system"], "human": {"pref": 1.0}}
             for i, r in enumerate(records[:-1])]
    data = write_jsonl(tmp_path / "pairs.jsonl", pairs)
    with FaultServer("--random-scores", "2", reply="Because. [[{choice}]]") as server:
        metric = spec(server).replace("judge.rubric", "judge.pairwise")
        refused = score(tmp_path, data, metric, "--repeats", "3", "--repeats-cell", "mean")
        assert refused.returncode == 2 and "majority" in refused.stderr
        done = score(tmp_path, data, metric, "--repeats", "3")
        assert done.returncode == 0, done.stderr
    with sqlite3.connect(tmp_path / "runs.db") as conn:
        stored = conn.execute("SELECT system, sample_index, extra FROM scores"
                              " ORDER BY system, sample_index").fetchall()
    draws: dict[str, list[dict]] = {}
    for system, _index, extra in stored:
        draws.setdefault(system, []).append(json.loads(extra))
    table = pd.read_csv(tmp_path / "out.csv", dtype=str)
    names = verdict_columns(column(metric))
    for row in table.itertuples(index=False):
        got = dict(zip(table.columns, row, strict=True))
        extras = draws[f"{got['system_a']} vs {got['system_b']}"]
        assert len(extras) == 3
        for field, name in zip(("winner", "verdict_ab", "verdict_ba"), names.values(),
                               strict=True):
            assert got[name] == first_majority([e[field] for e in extras]), (field, extras)
    assert len(table) == len(pairs)
    # meta-eval --pairwise: the judge's verdicts (1 a, 0.5 tie, 0 b) against themselves
    import krippendorff

    by_pair: dict[str, list[float]] = {f"{r.system_a} vs {r.system_b}": []
                                       for r in table.itertuples()}
    with sqlite3.connect(tmp_path / "runs.db") as conn:
        for system, value in conn.execute("SELECT system, value FROM scores"
                                          " ORDER BY sample_index"):
            by_pair[system].append(value)
    verdicts = np.array(list(by_pair.values()), dtype=float)
    shown = run_cli("meta-eval", "pairwise", str(tmp_path / "out.csv"), "--human",
                    "human.pref", "--json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    (row,) = [r for r in json.loads(shown.stdout) if r.get("statistic") == "repeats"]
    assert row["n"] == len(pairs) and row["repeats"] == 3
    assert row["icc"] == pytest.approx(independent_icc(verdicts), rel=1e-9, abs=1e-12)
    alpha = krippendorff.alpha(reliability_data=verdicts.T, level_of_measurement="interval")
    assert row["alpha"] == pytest.approx(alpha, rel=1e-9, abs=1e-12)
    assert row["flip_share"] == pytest.approx(float(np.mean(np.ptp(verdicts, axis=1) > 0)))


def test_the_python_api_draws_k_times_and_meta_eval_reads_them(server, tmp_path,
                                                                monkeypatch):
    import judgebench

    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))

    records = summeval_records(N)
    result = judgebench.score(records, [spec(server)], store=tmp_path / "api.db", repeats=3)
    frame = result.to_frame()
    assert len(server.served()) == 3 * N
    shown = judgebench.meta_eval(frame, humans=["human.coherence"])
    (row,) = shown.repeats
    assert row.repeats == 3 and row.reliability.units == N
    draws = matrix(draws_of(tmp_path / "api.db"))
    assert row.reliability.icc == pytest.approx(independent_icc(draws), rel=1e-9, abs=1e-12)
    with pytest.raises(Exception, match="names no store"):
        judgebench.meta_eval(judgebench.score(records[:3], [spec(server)], repeats=2)
                             .to_frame(), humans=["human.coherence"])


def test_a_seeded_judge_sends_each_draw_with_a_seed_of_its_own(server, tmp_path):
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(4))
    done = score(tmp_path, data, spec(server, seed="7"), "--repeats", "3")
    assert done.returncode == 0, done.stderr
    digests = [entry["digest"] for entry in server.served()]
    assert len(digests) == 12 and len(set(digests)) == 12, "the seed differs per draw"
    unseeded = tmp_path / "unseeded"
    unseeded.mkdir()
    before = len(server.served())
    assert score(unseeded, data, spec(server), "--repeats", "3").returncode == 0
    again = [entry["digest"] for entry in server.served()[before:]]
    assert len(again) == 12 and len(set(again)) == 4, "without a seed the body is the same"


def test_a_panels_members_draw_anew_on_each_repeat(server, tmp_path):
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(N))
    shared = (f"backend=openai_compat,api_base={server.url},timeout_s=5,max_attempts=3,"
              "temperature=1,protocol=text")
    metric = f"judge.panel:models=a;b,{shared}"
    done = score(tmp_path, data, metric, "--repeats", "3")
    assert done.returncode == 0, done.stderr
    # two members, three draws: each draw of each member its own request
    assert len(server.served()) == N * 2 * 3
    draws = matrix(draws_of(tmp_path / "runs.db"))
    assert draws.shape == (N, 3)
    assert not all(np.array_equal(draws[:, 0], draws[:, r]) for r in (1, 2))
