"""judge.prometheus / judge.prometheus_relative: prompts byte-identical to prometheus-eval's
(its template strings, stored with provenance in tests/data/prometheus_eval/prompts.json,
formatted as prometheus-eval formats them), its parser's outcomes (the cases of its own
tests/test_parser.py), the rubric library, and end-to-end runs against a scripted
Prometheus on a real loopback server."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
import conftest
from conftest import run_cli, write_jsonl
from judgebench_judges.parsing import ParseError
from judgebench_judges.prometheus import absolute_result, relative_result
from judgebench_judges.prometheus_rubrics import RUBRICS, rubric
from scripted_judge import ScriptedJudge

from judgebench.errors import InputError
from judgebench.models import Sample
from judgebench.plugins import build_host

UPSTREAM = json.loads((Path(__file__).parent / "data" / "prometheus_eval" / "prompts.json")
                      .read_text(encoding="utf-8"))["strings"]
KEY_ENV = {"JB_PROMETHEUS_KEY": "not-a-secret"}
# Values with what a template engine could mangle: braces, tags, edge whitespace, newlines.
INSTRUCTION = "Summarise the text below in one sentence.\n\nInput: {the} <response>cat</response>"
RESPONSE = "  A cat sat.\n### not a header {x} "
REFERENCE = "The cat sat on the mat.\n"


def build(name: str, **options: object):
    return build_host().metric(name).build(backend="openai_compat", model="judge",
                                         api_base="http://127.0.0.1:9/v1", **options)


def sample(**fields: Any) -> Sample:
    return Sample(**{"item": "d1", "system": "s", "input": INSTRUCTION, **fields})


def messages(system: str, user: str) -> tuple[dict[str, str], ...]:
    return ({"role": "system", "content": system}, {"role": "user", "content": user})


# -- prompts ------------------------------------------------------------------------------------
def test_absolute_prompt_is_prometheus_evals_byte_for_byte() -> None:
    judge = build("judge.prometheus", rubric="helpfulness")
    with_reference = judge.first_request(sample(output=RESPONSE, reference=REFERENCE))
    assert with_reference.messages == messages(
        UPSTREAM["ABS_SYSTEM_PROMPT"],
        UPSTREAM["ABSOLUTE_PROMPT"].format(instruction=INSTRUCTION, response=RESPONSE,
                                           reference_answer=REFERENCE,
                                           rubric=UPSTREAM["HELPFULNESS_RUBRIC"]))
    without = judge.first_request(sample(output=RESPONSE))
    assert without.messages == messages(
        UPSTREAM["ABS_SYSTEM_PROMPT"],
        UPSTREAM["ABSOLUTE_PROMPT_WO_REF"].format(instruction=INSTRUCTION, response=RESPONSE,
                                                  rubric=UPSTREAM["HELPFULNESS_RUBRIC"]))
    assert without.max_tokens == 1024 and not without.stop and without.json_schema is None
    unused = build("judge.prometheus", use_reference="false").first_request(
        sample(output=RESPONSE, reference=REFERENCE))
    assert unused.messages == without.messages


def test_relative_prompt_is_prometheus_evals_byte_for_byte() -> None:
    judge = build("judge.prometheus_relative", rubric="honesty")
    pair = sample(output_a=RESPONSE, output_b="B's answer {y}", system_a="x", system_b="y")
    criteria = UPSTREAM["HONESTY_RUBRIC"].split("\n")[0]  # prometheus-eval's load_rubric
    [request] = judge.planned_requests(pair)
    assert request.messages == messages(
        UPSTREAM["REL_SYSTEM_PROMPT"],
        UPSTREAM["RELATIVE_PROMPT_WO_REF"].format(instruction=INSTRUCTION, response_A=RESPONSE,
                                                  response_B="B's answer {y}", rubric=criteria))
    both = build("judge.prometheus_relative", rubric="honesty", both_orders="true")
    first, swapped = both.planned_requests(pair.model_copy(update={"reference": REFERENCE}))
    assert swapped.messages == messages(
        UPSTREAM["REL_SYSTEM_PROMPT"],
        UPSTREAM["RELATIVE_PROMPT"].format(instruction=INSTRUCTION, response_A="B's answer {y}",
                                           response_B=RESPONSE, reference_answer=REFERENCE,
                                           rubric=criteria))
    assert first.messages != swapped.messages


# -- rubrics ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, upstream", [
    ("helpfulness", "HELPFULNESS_RUBRIC"), ("harmlessness", "HARMLESSNESS_RUBRIC"),
    ("honesty", "HONESTY_RUBRIC"), ("factual_validity", "FACTUAL_VALIDITY_RUBRIC"),
    ("factual_grounding", "FACTUAL_VALIDITY_RUBRIC"), ("reasoning", "REASONING_RUBRIC")])
def test_prometheus_evals_rubrics_word_for_word(name: str, upstream: str) -> None:
    assert RUBRICS[name].text() == UPSTREAM[upstream]


def test_rubric_library_by_name_and_a_custom_rubric_in_the_rubric_template() -> None:
    for name in ("summary_relevance", "summary_coherence", "summary_consistency",
                 "summary_fluency"):
        text = build("judge.prometheus", rubric=name).score_rubric.text()
        lines = text.split("\n")
        assert re.fullmatch(r"\[How well does the summary meet \w+: .+\]", lines[0]), lines[0]
        assert [line[:8] for line in lines[1:]] == [f"Score {i}:" for i in range(1, 6)]
    levels = [f"level {i}" for i in range(1, 6)]
    custom = rubric("ignored", criteria="Is it concise?", levels=levels)
    assert custom.text() == UPSTREAM["SCORE_RUBRIC_TEMPLATE"].format(
        criteria="Is it concise?", **{f"score{i}_description": f"level {i}"
                                      for i in range(1, 6)})
    with pytest.raises(InputError, match=r"no rubric 'kindness'.*summary_fluency"):
        build("judge.prometheus", rubric="kindness")
    with pytest.raises(InputError, match="five descriptions"):
        build("judge.prometheus", criteria="Is it concise?", levels=["a", "b"])


# -- parsing: the outcomes of prometheus-eval's tests/test_parser.py ----------------------------
ABSOLUTE_CASES = [
    ("Reference (Score 5) two results [RESULT] 3", 3),
    ("Reference (Score 5) not results", None),
    ("Excellent. [RESULT] 5 out of 5", 5),
    ("Poor performance. [RESULT] score of 1", 1),
    ("Good job. [Result] 3", 3),
    ("Needs improvement. [Result] Score: 2", 2),
    ("Well done. [Result] Result: 4", 4),
    ("Average. [Result] 4/5", 4),
    ("Excellent. [Result] 5 out of 5", 5),
    ("Poor performance. [Result] score of 1", 1),
    ("Good job. (Score 5)", 5),
    ("Good job. [Score 4]", 4),
    ("Good job. score: 3", 3),
    ("Good job. Score: 3", 3),
    ("Good job. score of 1", 1),
    ("Good job. [RESULT] (5)", 5),
    ("The score is definitely not 3.", None),
    ("I rate this a perfect 10!", None),
    ("Score: 2.5", None),
    ("Result: A", None),
    ("", None),
]
RELATIVE_CASES = [
    ("[Response B is not better. [RESULT] A", "A"),
    ("Result A or B, not results", None),
    ("Response A is better. [RESULT] A", "A"),
    ("Prefer Response B. [RESULT] B", "B"),
    ("Feedback: Both responses are similar... [Response B]", "B"),
    ("Feedback: Both responses are clear... [Result] Response B", "B"),
    ("Feedback: Both responses are clear... Response B Response A", None),
    ("Feedback: Both responses are clear... [RESULT: B]", "B"),
    ("Feedback: Both responses are clear... [Result: B]", "B"),
    ("Feedback: Both responses are clear...Response A. [RESULT] B", "B"),
    ("After careful consideration, I select Response B.", None),
    ("Both responses have their merits.", None),
    ("Response C is clearly superior.", None),
    ("The better response is obviously B... or is it A? It's hard to decide.", None),
    ("", None),
]


@pytest.mark.parametrize("text, expected", ABSOLUTE_CASES)
def test_absolute_parsing_follows_prometheus_eval(text: str, expected: int | None) -> None:
    if expected is None:
        with pytest.raises(ParseError):
            absolute_result(text)
    else:
        assert absolute_result(text)[0] == expected


@pytest.mark.parametrize("text, expected", RELATIVE_CASES)
def test_relative_parsing_follows_prometheus_eval(text: str, expected: str | None) -> None:
    if expected is None:
        with pytest.raises(ParseError):
            relative_result(text)
    else:
        assert relative_result(text)[0] == expected


def test_parsed_feedback_and_out_of_range_scores() -> None:
    assert absolute_result("Feedback: Clear and correct. [RESULT] 4\n") == (
        4, "Clear and correct.")
    with pytest.raises(ParseError, match=r"outside 1\.\.5"):
        absolute_result("Too good. [RESULT] 7")
    assert relative_result("Feedback: A is closer. [RESULT] a") == ("A", "A is closer.")


# -- end to end: a scripted Prometheus on a loopback server -------------------------------------
def _quality(text: str) -> int:
    found = re.search(r"q=(\d)", text)
    return int(found.group(1)) if found else 0


def prometheus_script(system: str, user: str) -> str:
    """Answers as Prometheus 2 does: absolute -> the response's q=N; relative -> the higher q
    (A on equal q: a judge biased to the first); GARBLE -> an answer with no result."""
    if "###Response A:" in user:
        a = user.split("###Response A:\n", 1)[1].split("\n\n###Response B:", 1)[0]
        b = user.split("###Response B:\n", 1)[1].split("\n\n###", 1)[0]
        if "GARBLE" in a:
            return "Feedback: Both are fine and I cannot decide."
        return f"Feedback: Compared both. [RESULT] {'B' if _quality(b) > _quality(a) else 'A'}"
    response = user.split("###Response to evaluate:\n", 1)[1].split("\n\n###", 1)[0]
    if "GARBLE" in response:
        return "Feedback: It is a summary."
    return f"Feedback: Judged against the rubric. [RESULT] {_quality(response)}"


def spec(name: str, url: str, **options: str) -> str:
    extra = "".join(f",{k}={v}" for k, v in options.items())
    return (f"{name}:backend=openai_compat,model=prometheus-7b-v2.0,api_base={url},"
            f"api_key_env=JB_PROMETHEUS_KEY{extra}")


def test_absolute_end_to_end_through_the_cli(tmp_path: Path) -> None:
    records = [{"item": f"d{n}", "system": f"S{s}", "source": f"Article {n}.",
                "output": f"summary {n} of S{s} q={1 + (n + s) % 5}", "reference": f"Gold {n}."}
               for n in range(4) for s in range(3)]
    records[5]["output"] = "GARBLE"
    data = write_jsonl(tmp_path / "in.jsonl", records)
    with ScriptedJudge(reply=prometheus_script) as server:
        column = spec("judge.prometheus", server.url, rubric="summary_coherence")
        proc = run_cli("score", str(data), "-m", column, "-o", str(tmp_path / "s.csv"),
                       "--store", str(tmp_path / "runs.db"), cwd=tmp_path,
                       env={**KEY_ENV, "JUDGEBENCH_CACHE_DIR": str(tmp_path / "cache")})
        assert proc.returncode == 3, proc.stderr  # finished, with one failed score
        assert "parse_error" in proc.stderr
        table = pd.read_csv(tmp_path / "s.csv")
        expected = [float(_quality(r["output"])) if r["output"] != "GARBLE" else None
                    for r in records]
        got = [None if pd.isna(v) else v for v in table[conftest.column(column)]]
        assert got == expected
        assert server.calls == len(records)
        user = server.prompts[0][1]["content"]
        assert "###Reference Answer (Score 5):\nGold " in user
        assert "[How well does the summary meet coherence:" in user
        assert user.startswith("###Task Description:") and user.endswith("###Feedback: ")


def test_relative_end_to_end_writes_the_pairwise_verdict_columns(tmp_path: Path) -> None:
    pairs = [("x q=4", "y q=2", "a"), ("x q=1", "y q=3", "b"), ("x q=2", "y q=2", "a"),
             ("GARBLE", "y q=1", None)]
    records = [{"item": f"p{n}", "input": f"Question {n}?", "system_a": "X", "system_b": "Y",
                "output_a": a, "output_b": b} for n, (a, b, _) in enumerate(pairs)]
    data = write_jsonl(tmp_path / "pairs.jsonl", records)
    env = {**KEY_ENV, "JUDGEBENCH_CACHE_DIR": str(tmp_path / "cache")}
    with ScriptedJudge(reply=prometheus_script) as server:
        once = spec("judge.prometheus_relative", server.url)
        both = spec("judge.prometheus_relative", server.url, both_orders="true")
        proc = run_cli("score", str(data), "-m", once, "-m", both, "-o",
                       str(tmp_path / "pairs.csv"), "--store", str(tmp_path / "runs.db"),
                       "--allow-failures", cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr
        table = pd.read_csv(tmp_path / "pairs.csv")

        once, both = conftest.column(once), conftest.column(both)

        def cells(column: str) -> list[str | None]:
            return [None if pd.isna(v) else v for v in table[column]]

        assert cells(once) == [p[2] for p in pairs]  # one call per pair, as prometheus-eval
        assert cells(f"{once}.ab") == [p[2] for p in pairs]
        assert cells(f"{once}.ba") == [None] * len(pairs)
        # Both orders: the biased tie (q=2 vs q=2: "A" both times) becomes a tie; the swapped
        # GARBLE pair parses in the b-a order only, and the pair fails.
        assert cells(f"{both}.ab") == ["a", "b", "a", None]
        assert cells(f"{both}.ba") == ["a", "b", "b", "b"]
        assert cells(both) == ["a", "b", "tie", None]
        # the a-b order of both_orders is the same request as the single order's: cached
        assert server.calls == len(pairs) * 2


def test_an_answer_that_does_not_parse_is_sampled_again_with_parse_retries(
        tmp_path: Path, monkeypatch) -> None:
    """prometheus-eval samples again when an answer does not parse; parse_retries does too, each
    retry a new sample in the judge cache (a rerun replays them without calling)."""
    seen: dict[str, int] = {}

    def first_garbled(system: str, user: str) -> str:
        seen[user] = seen.get(user, 0) + 1
        return "No verdict yet." if seen[user] == 1 else prometheus_script(system, user)

    monkeypatch.setenv("JB_PROMETHEUS_KEY", "not-a-secret")
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    data = [sample(output="fine q=4", item="d1"), sample(output="good q=5", item="d2")]
    with ScriptedJudge(reply=first_garbled) as server:
        def judge(**options: object):
            return build_host().metric("judge.prometheus").build(
                backend="openai_compat", model="prometheus", api_base=server.url,
                api_key_env="JB_PROMETHEUS_KEY", temperature=1.0, top_p=0.9, **options)

        [once] = judge().score(data[:1])
        assert once.status == "parse_error" and "does not end with '[RESULT]" in once.reason
        retried = judge(parse_retries=2).score(data)
        assert [o.value for o in retried] == [4.0, 5.0]
        assert [o.extra["attempts"] for o in retried] == [2, 2]
        # d1: its first answer came from the cache, then one retry; d2: two calls
        assert sorted(seen.values()) == [2, 2] and server.calls == 4
        calls = server.calls
        assert [o.value for o in judge(parse_retries=2).score(data)] == [4.0, 5.0]
        assert server.calls == calls  # the retries are in the cache
