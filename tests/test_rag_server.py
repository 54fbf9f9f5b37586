"""rag.* judges against real loopback OpenAI-compatible servers: a scripted judge
(tests/rag_script.py) on both protocols, every intermediate result in `extra`, parse errors
that name their claim, faults and retries on the fault server, the judge cache and the cost
of every sub-call; then the CLI end to end on the vendored ARES sample: score, meta-eval
against the human labels (checked against scipy), audit and logs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("litellm", reason="the [api] extra is not installed")

sys.path.insert(0, str(Path(__file__).parent))
import rag_script
from conftest import run_cli, write_jsonl
from fault_server import FaultServer
from scripted_judge import ScriptedJudge

from judgebench.engine import runtime
from judgebench.models import Sample, Status
from judgebench.plugins import build_host

ROOT = Path(__file__).resolve().parents[1]
ARES = ROOT / "examples" / "rag-ares.jsonl"
PRICE = {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}
PASSAGES = ["Paris is the capital of France. The Seine flows through Paris.",
            "Bananas are yellow when ripe."]


@pytest.fixture(scope="module")
def scripted():
    with ScriptedJudge(reply=rag_script.reply) as judge:
        yield judge


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("JB_RAG_KEY", "sk-rag-test-key")
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    with runtime.running(runtime.RunSettings(cache_path=tmp_path / "cache")):
        yield


def metric(name: str, url: str, **options):
    opts = {"backend": "litellm", "model": "openai/judge", "api_base": url,
            "api_key_env": "JB_RAG_KEY",
            "timeout_s": 2.0, "max_attempts": 3, **PRICE, **options}
    return build_host().metric(name).build(**opts)


def sample(output: str, **fields) -> Sample:
    base = {"item": "q1", "system": "rag", "input": "What is the capital of France?",
            "context": PASSAGES, "output": output}
    return Sample(**{**base, **fields})


@pytest.mark.parametrize("protocol", ["json", "text"])
def test_faithfulness_keeps_each_claim_verdict_and_evidence(scripted, protocol) -> None:
    m = metric("rag.faithfulness", scripted.url, protocol=protocol)
    before = scripted.calls
    [o] = m.score([sample("Paris is the capital of France. Paris has 90 million people.")])
    assert o.status == Status.OK, o.reason
    assert o.value == 0.5
    claims = o.extra["claims"]
    assert [c["text"] for c in claims] == ["Paris is the capital of France.",
                                           "Paris has 90 million people."]
    assert [c["verdict"] for c in claims] == ["supported", "unsupported"]
    assert all(c["evidence"] == "read it" and c["status"] == "ok" for c in claims)
    assert o.extra["n_claims"] == 2 and o.extra["n_unsupported"] == 1
    assert o.extra["calls"] == 3 and scripted.calls - before == 3  # extraction + 2 verdicts
    assert len(o.extra["request_keys"]) == 3
    assert o.tokens_in > 0 and o.cost_usd == pytest.approx(
        o.tokens_in * 1e-6 + o.tokens_out * 2e-6)
    sig = str(m.signature())
    assert f"protocol:{protocol}" in sig and "rag_claims:" in sig
    again = m.score([sample("Paris is the capital of France. Paris has 90 million people.")])
    assert scripted.calls - before == 3 and again[0].extra["cached"]  # all from the cache


def test_the_counts_are_the_same_calls_from_the_cache(scripted) -> None:
    s = sample("Paris is the capital of France. Paris has 90 million people. Bananas are "
               "yellow when ripe.")
    [f] = metric("rag.faithfulness", scripted.url).score([s])
    before = scripted.calls
    [n] = metric("rag.claims", scripted.url).score([s])
    [u] = metric("rag.unsupported_claims", scripted.url).score([s])
    assert scripted.calls == before
    assert (f.value, n.value, u.value) == (pytest.approx(2 / 3), 3.0, 1.0)
    assert build_host().metric("rag.unsupported_claims").info.higher_is_better is False


def test_a_verdict_that_does_not_parse_is_a_parse_error_naming_the_claim(scripted) -> None:
    for protocol in ("json", "text"):
        m = metric("rag.faithfulness", scripted.url, protocol=protocol)
        [o] = m.score([sample("Paris is the capital of France. BADVERDICT here.")])
        assert o.status == Status.PARSE_ERROR and o.value is None
        assert o.reason.startswith("claim 2 of 2: ")
        assert [c["status"] for c in o.extra["claims"]] == ["ok", "parse_error"]
        assert o.extra["claims"][0]["verdict"] == "supported"
        assert o.tokens_in > 0 and o.extra["calls"] == 3


def test_a_failed_extraction_and_an_answer_without_claims(scripted) -> None:
    m = metric("rag.faithfulness", scripted.url, protocol="text")
    bad, empty = m.score([sample("GARBLE"), sample("")])
    assert bad.status == Status.PARSE_ERROR and bad.reason.startswith("claim extraction:")
    assert empty.status == Status.SKIPPED and "faithfulness is undefined" in empty.reason
    [count] = metric("rag.claims", scripted.url, protocol="text").score([sample("")])
    assert count.status == Status.OK and count.value == 0.0


def test_context_precision_and_recall(scripted) -> None:
    s = sample("Paris.", context=["Bananas are yellow when ripe.",
                                  "Paris is the capital of France.", "Apples are red."],
               reference="Paris is the capital of France. It has the Louvre.")
    [p] = metric("rag.context_precision", scripted.url).score([s])
    assert p.status == Status.OK and p.value == pytest.approx(0.5)  # relevant at rank 2 only
    assert [x["verdict"] for x in p.extra["passages"]] == ["irrelevant", "relevant",
                                                             "irrelevant"]
    assert p.extra["n_relevant"] == 1 and p.extra["calls"] == 3
    [r] = metric("rag.context_recall", scripted.url, protocol="text").score([s])
    assert r.status == Status.OK and r.value == 0.5
    assert [x["text"] for x in r.extra["sentences"]] == ["Paris is the capital of France.",
                                                         "It has the Louvre."]
    assert [x["verdict"] for x in r.extra["sentences"]] == ["attributed", "not_attributed"]


def test_answer_relevance_embeds_the_generated_questions(scripted) -> None:
    m = metric("rag.answer_relevance", scripted.url)
    good, evasive = m.score([sample("the capital of France"), sample("I don't know.")])
    assert good.status == Status.OK, good.reason
    cosines = [q["cosine"] for q in good.extra["questions"]]
    assert len(cosines) == 2 and good.value == pytest.approx(sum(cosines) / 2)
    assert 0.5 < good.value <= 1.0
    cosine = build_host().metric("neural.embedding-cosine").build(against="input")
    direct = cosine.score([Sample(item="a", system="s", output=good.extra["questions"][0]["text"],
                                  input="What is the capital of France?")])
    assert cosines[0] == pytest.approx(direct[0])
    assert evasive.status == Status.OK and evasive.value == 0.0
    assert evasive.extra["noncommittal"] is True
    assert "encoder:all-MiniLM-L6-v2" in str(m.signature())


def test_faults_are_retried_and_persistent_ones_fail_with_a_reason(tmp_path) -> None:
    reply = '{{"claims": ["Paris is the capital of France."], "evidence": "e", ' \
            '"verdict": "SUPPORTED"}}'
    with FaultServer("--retry-after", "0.1", reply=reply, log=tmp_path / "served.jsonl") as srv:
        m = metric("rag.faithfulness", srv.url)
        ok, failed = m.score([sample("Paris. @@fault=500*1@@"),
                              sample("Rome. @@fault=500*9@@")])
        assert ok.status == Status.OK and ok.value == 1.0
        assert failed.status == Status.ERROR and failed.reason
        assert all(entry["schema"] for entry in srv.served())  # every call constrained
        srv.post("/_faults", {"next": ["malformed"] * 3})
        [broken] = m.score([sample("Madrid.")])
        assert broken.status == Status.ERROR, broken.reason


def test_estimate_counts_each_planned_sub_call(scripted) -> None:
    s = sample("One sentence. Two sentences. Three.")
    est = metric("rag.faithfulness", scripted.url).estimate([s])
    assert est["calls"] == 4  # the extraction, then one verdict per sentence of the answer
    est = metric("rag.context_precision", scripted.url).estimate([s])
    assert est["calls"] == 2


def test_cli_score_meta_eval_audit_logs_on_the_ares_sample(scripted, tmp_path) -> None:
    from scipy import stats

    records = [json.loads(line) for line in ARES.read_text().splitlines()][:12]
    data = write_jsonl(tmp_path / "in.jsonl", records)
    base = (f"backend=litellm,model=openai/judge,api_base={scripted.url},protocol=json,"
            "api_key_env=JB_RAG_KEY")
    specs = [f"rag.faithfulness:{base}", f"rag.unsupported_claims:{base}",
             f"rag.context_precision:{base}"]
    env = {"JUDGEBENCH_CACHE_DIR": str(tmp_path / "cache"), "JB_RAG_KEY": "sk-rag-test-key"}
    store = str(tmp_path / "runs.db")
    args = ["score", str(data), "-o", str(tmp_path / "scores.csv"), "--store", store]
    for spec in specs:
        args += ["-m", spec]
    proc = run_cli(*args, cwd=tmp_path, env=env)
    assert proc.returncode in (0, 3), proc.stderr
    import pandas as pd

    table = pd.read_csv(tmp_path / "scores.csv")
    faith = next(c for c in table.columns if c.startswith("rag.faithfulness"))
    assert table[faith].notna().sum() >= 6

    meta = run_cli("meta-eval", str(tmp_path / "scores.csv"), "--human", "human.faithfulness",
                   "--human", "human.context_relevance", "--statistic", "pearson",
                   "--statistic", "kendall", "--json", cwd=tmp_path, env=env)
    assert meta.returncode == 0, meta.stderr
    rows = json.loads(meta.stdout)
    rows = rows if isinstance(rows, list) else rows["rows"]
    found = {(r["metric"], r["human"], r["statistic"]): r["value"] for r in rows}
    both = table[[faith, "human.faithfulness"]].dropna()
    r_ref = stats.pearsonr(both[faith], both["human.faithfulness"]).statistic
    tau_ref = stats.kendalltau(both[faith], both["human.faithfulness"]).statistic
    assert found[(faith, "human.faithfulness", "pearson")] == pytest.approx(r_ref, abs=1e-9)
    assert found[(faith, "human.faithfulness", "kendall")] == pytest.approx(tau_ref, abs=1e-9)

    audit = run_cli("audit", str(tmp_path / "scores.csv"), "--samples", str(data),
                    "--human", "human.faithfulness", "--metric", faith, "--level", "segment",
                    "--grouping", "none", cwd=tmp_path, env=env)
    assert audit.returncode in (0, 1), audit.stderr
    assert "## Verdict" in audit.stdout and faith in audit.stdout
    assert "sentinel.length" in audit.stdout  # the text sentinels read the RAG samples

    logs = run_cli("logs", "--store", store, "--metric", "rag.faithfulness", "-n", "2",
                   cwd=tmp_path, env=env)
    assert logs.returncode == 0, logs.stderr
    assert "claims (" in logs.stdout and "evidence:" in logs.stdout
    assert "call 2 of" in logs.stdout


def test_a_budget_counts_every_sub_call_and_a_resume_pays_only_the_rest(scripted,
                                                                         tmp_path) -> None:
    samples = [sample(f"Paris {k} is a city. Claim {k} is made. Another {k}.",
                      item=f"q{k}") for k in range(8)]
    cache = tmp_path / "budget-cache"
    first = runtime.RunSettings(budget=runtime.Budget(limit_usd=2e-3), cache_path=cache)
    before = scripted.calls
    with runtime.running(first), pytest.raises(runtime.BudgetExceeded):
        metric("rag.faithfulness", scripted.url, concurrency=2).score(samples)
    paid_first = scripted.calls - before
    assert 0 < first.budget.spent_usd <= 2e-3 and paid_first < 8 * 4
    second = runtime.RunSettings(budget=runtime.Budget(limit_usd=1.0), cache_path=cache)
    with runtime.running(second):
        outcomes = metric("rag.faithfulness", scripted.url).score(samples)
    assert all(o.status == Status.OK for o in outcomes)
    assert scripted.calls - before == 8 * 4  # an extraction and 3 verdicts each, paid once
    assert sum(o.extra["calls"] for o in outcomes) == 8 * 4
    assert first.budget.spent_usd + second.budget.spent_usd == pytest.approx(
        sum(o.cost_usd for o in outcomes))


def test_a_refused_passage_and_a_dry_run_keep_their_statuses(tmp_path) -> None:
    reply = '{{"reason": "r", "verdict": "RELEVANT"}}'
    with FaultServer(reply=reply, log=tmp_path / "served.jsonl") as srv:
        m = metric("rag.context_precision", srv.url)
        [o] = m.score([sample("Paris.", context=["Paris is in France.",
                                                 "Refused. @@fault=refuse*9@@"])])
        assert o.status == Status.REFUSED and o.reason.startswith("passage 2 of 2: ")
        assert [p["status"] for p in o.extra["passages"]] == ["ok", "refused"]
        served = len(srv.served())
        with runtime.running(runtime.RunSettings(dry_run=True, cache_path=tmp_path / "dry")):
            dry = metric("rag.faithfulness", srv.url).score([sample("Paris.")])
            precision = metric("rag.context_precision", srv.url).score([sample("Paris.")])
        assert dry[0].status == Status.SKIPPED and precision[0].status == Status.SKIPPED
        assert len(srv.served()) == served
