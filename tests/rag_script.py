"""A scripted RAG judge for `scripted_judge.ScriptedJudge`: it answers each rag.* prompt by
rules over the text between the prompt's tags, in JSON when the prompt asks for JSON and in
the text format otherwise.

- claims: each sentence of the answer is a claim (``GARBLE`` in the answer: no list at all);
- a claim's verdict: SUPPORTED when the claim, lower-cased without its final stop, is in the
  passages; a claim with ``BADVERDICT`` gets an answer without a verdict (a parse error);
- a passage: RELEVANT when it shares a word of 5 letters or more with the question;
- a reference sentence: ATTRIBUTED when it is in the passages (as for claims);
- questions: the answer's words turned into "What is ...?" (two of them), noncommittal when
  the answer says "I don't know".
"""

from __future__ import annotations

import json
import re

_TAG = r"<{0}>\n(.*?)\n</{0}>"


def tagged(text: str, tag: str, nth: int = 0) -> str:
    found = re.findall(_TAG.format(tag), text, flags=re.DOTALL)
    return found[nth] if len(found) > nth else ""


def _plain(text: str) -> str:
    return re.sub(r"\[\d+\] ", "", text).lower()


def _in(sentence: str, passages: str) -> bool:
    return sentence.lower().rstrip(".").strip() in _plain(passages)


def split(answer: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=\.)\s+", answer.strip()) if s.strip()]


def reply(system: str, user: str) -> str:
    as_json = "JSON object" in user
    if "List the claims" in user:
        answer = tagged(user, "response")
        if "GARBLE" in answer:
            return "I would rather not."
        claims = split(answer)
        if as_json:
            return json.dumps({"claims": claims})
        return "\n".join(f"- {c}" for c in claims) or "NONE"
    if "Claim:" in user:
        passages, claim = tagged(user, "source"), tagged(user, "response")
        if "BADVERDICT" in claim:
            return "Hmm." if not as_json else '{"evidence": "x"}'
        return verdict(as_json, "evidence", "SUPPORTED" if _in(claim, passages)
                       else "UNSUPPORTED")
    if "Passage:" in user:
        question, passage = tagged(user, "question"), tagged(user, "source").lower()
        words = {w for w in re.findall(r"[a-z]{5,}", question.lower())}
        good = any(w in passage for w in words)
        return verdict(as_json, "reason", "RELEVANT" if good else "IRRELEVANT")
    if "Sentence of the reference answer:" in user:
        passages, sentence = tagged(user, "source"), tagged(user, "reference")
        return verdict(as_json, "evidence", "ATTRIBUTED" if _in(sentence, passages)
                       else "NOT_ATTRIBUTED")
    if "questions that this answer answers" in user:
        answer = tagged(user, "response")
        noncommittal = "i don't know" in answer.lower()
        questions = [f"What is {answer.rstrip('.')}?", f"Which is {answer.rstrip('.')}?"]
        if as_json:
            return json.dumps({"questions": questions, "noncommittal": noncommittal})
        return "\n".join(f"- {q}" for q in questions) + (
            f"\nNoncommittal: {'yes' if noncommittal else 'no'}")
    return "I do not know this prompt."


def verdict(as_json: bool, key: str, label: str) -> str:
    if as_json:
        return json.dumps({key: "read it", "verdict": label})
    return f"read it\nVerdict: {label}"
