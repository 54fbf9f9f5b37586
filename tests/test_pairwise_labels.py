"""judge.pairwise's `labels=` option (ab | 12 | random-ids): only the responses' labels in
the prompt and the verdict tokens the parser reads change (a metamorphic check of the
prompt), the default's prompt and signature are as before, and each protocol (text, json,
two-stage) reads the verdict under each scheme from a scripted backend."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from judgebench.backends import Request, Response
from judgebench.models import Sample, Status

sys.path.insert(0, str(Path(__file__).parent))
from judgebench_judges import parsing
from judgebench_judges.pairwise import ID_ALPHABET
from test_judges_protocols import Scripted, judge, last, text

PAIR = Sample(item="q", system="x vs y", system_a="x", system_b="y", input="Which is 2+2?",
              output_a="4 q=2", output_b="5 q=1")
SCHEMES = ("ab", "12", "random-ids")
_LABEL = re.compile(r"^Response (\S+):\n<response_([ab])>\n(.*?)\n</response_\2>",
                    re.DOTALL | re.MULTILINE)
_QUALITY = re.compile(r"q=(\d+)")


def shown(user: str) -> tuple[dict[str, str], dict[str, str]]:
    """The label and the text of the response shown first (a) and second (b)."""
    found = _LABEL.findall(user)
    return {side: label for label, side, _ in found}, {side: t for _, side, t in found}


def better(user: str) -> tuple[str, str]:
    """(the label of the response with the higher q=N, the tie token the prompt names)."""
    labels, texts = shown(user)
    quality = {side: int(found.group(1)) if (found := _QUALITY.search(t)) else 0
               for side, t in texts.items()}
    tie = re.search(r'"\[\[(\w+)\]\]" for a tie', user)
    return labels["a" if quality["a"] > quality["b"] else "b"], tie.group(1) if tie else "tie"


def user_of(request: Request) -> str:
    return next(m["content"] for m in request.messages if m["role"] == "user")


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("protocol", ["text", "json", "two_stage"])
def test_each_protocol_reads_the_verdict_under_each_label_scheme(scheme: str,
                                                                 protocol: str) -> None:
    def answer(req: Request) -> Response:
        label, _ = better(user_of(req))
        if protocol == "json":
            return text(json.dumps({"explanation": "read", "verdict": label}))
        if last(req).endswith("Verdict: [["):
            return text(f"{label}]]")
        return text(f"Read both. [[{label}]]" if protocol == "text" else " Read both.")

    backend = Scripted(answer, prefill=protocol == "two_stage", json_schema=protocol == "json")
    options = {} if scheme == "ab" else {"labels": scheme}
    outcome = judge("judge.pairwise", backend, protocol=protocol, **options).score([PAIR])[0]
    assert outcome.status == Status.OK, outcome
    # output_a (q=2) wins in both orders, whatever its label
    assert (outcome.value, outcome.extra["verdict_ab"], outcome.extra["verdict_ba"]) == (
        1.0, "a", "a")
    firsts = [req for req in backend.sent if not last(req).endswith("Verdict: [[")]
    labels = [shown(user_of(req))[0] for req in firsts]
    if scheme == "ab":
        assert labels == [{"a": "A", "b": "B"}] * 2
    elif scheme == "12":
        assert labels == [{"a": "1", "b": "2"}] * 2
    else:
        for pair in labels:
            assert pair["a"] != pair["b"]
            assert all(len(x) == 5 and set(x) <= set(ID_ALPHABET) for x in pair.values())
        assert labels[0] != labels[1]  # drawn per presentation (the texts are swapped)
    if protocol == "json":
        enums = [(req.json_schema or {})["properties"]["verdict"]["enum"] for req in firsts]
        assert enums == [[p["a"], p["b"], "tie"]
                         for p in labels]
    if protocol == "two_stage":
        follows = [req for req in backend.sent if last(req).endswith("Verdict: [[")]
        assert [req.constraint.choices if req.constraint else () for req in follows] == [
            ("A", "B", "C") if scheme == "ab" else (p["a"], p["b"], "tie") for p in labels]


def test_only_the_labels_change_in_the_prompt() -> None:
    """Metamorphic: the 12 and random-ids prompts, their labels put back to A/B/C, are the
    default prompt byte for byte, in every message and protocol."""
    for protocol in ("text", "json", "two_stage"):
        sent = {}
        for scheme in SCHEMES:
            backend = Scripted(lambda r: text("[[A]]"), prefill=protocol == "two_stage",
                               json_schema=protocol == "json")
            options = {} if scheme == "ab" else {"labels": scheme}
            metric = judge("judge.pairwise", backend, protocol=protocol, **options)
            sent[scheme] = [metric.order_request(PAIR, "4 q=2", "5 q=1"),
                            metric.order_request(PAIR, "5 q=1", "4 q=2")]
        for scheme in ("12", "random-ids"):
            for default, labelled in zip(sent["ab"], sent[scheme], strict=True):
                a, b = shown(user_of(labelled))[0].values()
                restored = []
                for message in labelled.messages:
                    content = message["content"]
                    for old, new in ((f"Response {a}:", "Response A:"),
                                     (f"Response {b}:", "Response B:")):
                        assert content.count(old) == (1 if message["role"] == "user" else 0)
                        content = content.replace(old, new)
                    restored.append({**message, "content": content})
                default_format = default.messages[1]["content"].split("\n\n")[-1]
                labelled_format = restored[1]["content"].split("\n\n")[-1]
                if protocol == "json":
                    assert labelled_format == default_format.replace(
                        '"A"', f'"{a}"').replace('"B"', f'"{b}"').replace(
                        "response A", f"response {a}").replace("response B", f"response {b}")
                else:
                    assert labelled_format == default_format.replace(
                        "[[A]]", f"[[{a}]]").replace("[[B]]", f"[[{b}]]").replace(
                        "[[C]]", "[[tie]]").replace("response A", f"response {a}").replace(
                        "response B", f"response {b}")
                restored[1]["content"] = restored[1]["content"].replace(
                    labelled_format, default_format)
                assert tuple(restored) == default.messages


def test_the_default_signature_and_prompt_are_as_before_and_others_say_their_labels(
        ) -> None:
    backend = Scripted(lambda r: text("[[A]]"), prefill=False)
    default = judge("judge.pairwise", backend, protocol="text")
    explicit = judge("judge.pairwise", backend, protocol="text", labels="ab")
    assert str(default.signature()) == str(explicit.signature())
    fields = default.signature().fields
    assert "labels" not in fields and fields["template"].startswith("pairwise:")
    assert "Response A:\n<response_a>" in user_of(default.order_request(PAIR, "x", "y"))
    for scheme in ("12", "random-ids"):
        other = judge("judge.pairwise", backend, protocol="text", labels=scheme).signature()
        assert other.fields["labels"] == scheme
        assert other.fields["template"].startswith("pairwise_labels:")


def test_random_ids_are_the_same_for_the_same_presentation_and_differ_otherwise() -> None:
    backend = Scripted(lambda r: text("[[A]]"), prefill=False)
    one = judge("judge.pairwise", backend, protocol="text", labels="random-ids")
    two = judge("judge.pairwise", backend, protocol="text", labels="random-ids")
    drawn = {one.shown_labels(PAIR, f"text {k}", "other") for k in range(200)}
    assert one.shown_labels(PAIR, "x", "y") == two.shown_labels(PAIR, "x", "y")
    assert len(drawn) == 200 and all(a != b and t == "tie" for a, b, t in drawn)


@pytest.mark.parametrize(("answer", "labels", "expected"), [
    ("so [[1]]", ("1", "2", "tie"), "A"), ("[[ 2 ]] it is", ("1", "2", "tie"), "B"),
    ("[[tie]]", ("1", "2", "tie"), "C"), ("[[K7Q2M]] wins", ("K7Q2M", "Z9ABC", "tie"), "A"),
    ("[[Z9ABC]]", ("K7Q2M", "Z9ABC", "tie"), "B")])
def test_the_labelled_parser_maps_labels_to_letters(answer: str, labels: tuple[str, str, str],
                                                    expected: str) -> None:
    assert parsing.labelled_verdict(answer, labels) == expected
    assert parsing.leading_labelled_verdict(answer.split("[[")[-1], labels) == expected


@pytest.mark.parametrize("answer", ["[[A]]", "[[1]] or [[2]]", "no verdict", "[[12]]"])
def test_the_labelled_parser_refuses_other_tokens_and_conflicts(answer: str) -> None:
    with pytest.raises(parsing.ParseError):
        parsing.labelled_verdict(answer, ("1", "2", "tie"))


def test_labels_with_a_conversation_are_refused() -> None:
    from judgebench.errors import InputError

    with pytest.raises(InputError, match="labels= applies to mode=response"):
        judge("judge.pairwise", Scripted(lambda r: text("x"), prefill=False),
              mode="conversation", labels="12")
