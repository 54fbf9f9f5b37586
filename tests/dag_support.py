"""A five-node compound judge (judge.dag) and a loopback judge that answers it by script.

Each sample's output carries its answers as tags (``on=1 cites=0 coh=4 flu=2 ok=1
overall=3``); every node's rubric definition names its tag (``QUESTION=on``); the scripted
judge answers a node's question with the tag's value, and the verifier (``check``) answers 1
only when its tag is 1 and the ensemble's verdict is shown to it. `expected` walks the graph
directly from the tags: the path and the score the DAG must give."""

from __future__ import annotations

import random
import re
from pathlib import Path

DAG = """\
start = "on-topic"

[defaults]
protocol = "text"

[nodes.on-topic]
judge = "judge.rubric"
criterion = "on topic"
definition = "QUESTION=on does the summary stay on the article's topic?"
min = 0
max = 1
human = "human.on_topic"
routes = [{ when = ">= 1", goto = "cites-source" }, { when = "else", score = 1 }]

[nodes.cites-source]
judge = "judge.rubric"
criterion = "cites source"
definition = "QUESTION=cites does every claim come from the article?"
min = 0
max = 1
human = "human.cites"
routes = [{ when = "== 1", goto = "quality" }, { when = "else", score = 2 }]

[nodes.quality]
kind = "ensemble"
members = ["judge.rubric:criterion=coherence,definition=QUESTION=coh how coherent?",
           "judge.rubric:criterion=fluency,definition=QUESTION=flu how fluent?"]
combine = "mean"
routes = [{ when = "else", goto = "check" }]

[nodes.check]
judge = "judge.rubric"
criterion = "verdict check"
definition = "QUESTION=ok is the verdict appended to the summary right?"
min = 0
max = 1
sees = "quality"
routes = [{ when = ">= 1", score = "quality" }, { when = "else", goto = "second-opinion" }]

[nodes.second-opinion]
judge = "judge.rubric"
criterion = "overall"
definition = "QUESTION=overall how good is it overall?"
"""

TAGS = ("on", "cites", "coh", "flu", "ok", "overall")
_QUESTION = re.compile(r"QUESTION=(\w+)")


def write_dag(folder: Path, text: str = DAG) -> Path:
    path = folder / "dag.toml"
    path.write_text(text, encoding="utf-8")
    return path


def draw_tags(rng: random.Random) -> dict[str, int]:
    return {"on": int(rng.random() < 0.8), "cites": int(rng.random() < 0.7),
            "coh": rng.randint(1, 5), "flu": rng.randint(1, 5), "ok": int(rng.random() < 0.5),
            "overall": rng.randint(1, 5)}


def tagged(output: str, tags: dict[str, int]) -> str:
    return f"{output} " + " ".join(f"{k}={tags[k]}" for k in TAGS)


def tags_of(text: str) -> dict[str, int]:
    return {k: int(v) for k, v in re.findall(r"\b(" + "|".join(TAGS) + r")=(\d)\b", text)}


def reply(system: str, user: str) -> str:
    """The scripted judge's answer to one node's rubric prompt."""
    question = _QUESTION.search(user)
    assert question is not None, user
    tags = tags_of(user)
    value = tags[question.group(1)]
    if question.group(1) == "ok" and "[The verdict of judge 'quality': " not in user:
        value = 0
    return f"Feedback: read. [RESULT] {value}"


def expected(tags: dict[str, int]) -> tuple[list[str], float, int]:
    """The path, the score and the number of judge calls, walked from the tags by hand."""
    if tags["on"] < 1:
        return ["on-topic"], 1.0, 1
    if tags["cites"] != 1:
        return ["on-topic", "cites-source"], 2.0, 2
    quality = (tags["coh"] + tags["flu"]) / 2
    if tags["ok"] >= 1:
        return ["on-topic", "cites-source", "quality", "check"], quality, 5
    return (["on-topic", "cites-source", "quality", "check", "second-opinion"],
            float(tags["overall"]), 6)
