"""Rebuild this folder's files (samples.jsonl.gz, human.jsonl.gz, suite.json) byte for byte.

    python build.py /path/to/UniEval.git [commit]

reads a git mirror of maszhongming/UniEval (default commit d33e7b6): the meta-evaluation
set `reproduce/data/<task>/<set>.json` (texts and human scores) and UniEval's predictions
on it, `reproduce/unieval_predict/<task>/<set>_result.json` (the same rows with
`predict_scores`), which become the stored scores `unieval.<criterion>`. The published
numbers are the correlations reproduce/README.md prints (scipy's pearsonr, spearmanr and
kendalltau over every row, `reproduce/correlation.py`), to its 6 decimals. The other
UniEval sets (sfhot, sfres, qags-cnndm, qags-xsum) are built by their folders' build.py with
this file's `build` (`SETS`). gzip is written with mtime 0 and no file name.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent.parent
COMMIT = "d33e7b6cfebe97b2bafe435adbd818230d5a416a"
REPOSITORY = "https://github.com/maszhongming/UniEval"
STATISTICS = ("pearson", "spearman", "kendall")
UNIEVAL_CITATION = """@inproceedings{zhong2022unieval,
  title = {Towards a Unified Multi-Dimensional Evaluator for Text Generation},
  author = {Zhong, Ming and Liu, Yang and Yin, Da and Mao, Yuning and Jiao, Yizhu and
            Liu, Pengfei and Zhu, Chenguang and Ji, Heng and Han, Jiawei},
  booktitle = {Proceedings of the 2022 Conference on Empirical Methods in Natural
               Language Processing},
  pages = {2023--2038},
  year = {2022}
}"""
#: reproduce/README.md's tables for UniEval: criterion -> (Pearson, Spearman, Kendall)
README = {
    "topical-chat": {"naturalness": (0.443666, 0.513986, 0.373973),
                     "coherence": (0.595143, 0.612942, 0.465915),
                     "engagingness": (0.55651, 0.604739, 0.455941),
                     "groundedness": (0.536209, 0.574954, 0.451533),
                     "understandability": (0.380038, 0.467807, 0.360741),
                     "overall": (0.632796, 0.662583, 0.487272)},
    "sfres": {"naturalness": (0.367252, 0.333399, 0.247094),
              "informativeness": (0.282079, 0.224918, 0.169297),
              "overall": (0.370815, 0.291593, 0.214708)},
    "sfhot": {"naturalness": (0.397428, 0.319813, 0.237635),
              "informativeness": (0.357353, 0.249329, 0.191217),
              "overall": (0.406425, 0.320721, 0.236024)},
    "qags-xsum": {"consistency": (0.461376, 0.48792, 0.399218)},
    "qags-cnndm": {"consistency": (0.681681, 0.662255, 0.531636)},
}
SETS: dict[str, dict[str, Any]] = {
    "topical-chat": {
        "path": "dialogue/topical_chat", "level": "turn",
        "criteria": ["overall", "naturalness", "coherence", "engagingness", "groundedness",
                     "understandability"],
        "title": "Topical-Chat (knowledge-grounded dialogue responses, USR ratings)",
        "description": (
            "60 Topical-Chat dialogue contexts, each continued by 6 responses (the original "
            "human turn, a new human turn, and a Transformer's argmax and nucleus p = 0.3, "
            "0.5, 0.7 decodings): 360 responses rated by 3 annotators (Mehri and Eskenazi "
            "2020, USR) on naturalness (1-3), coherence (1-3), engagingness (1-3), "
            "groundedness (0-1), understandability (0-1) and overall (1-5); the human "
            "columns are the mean of the 3 (the per-annotator ratings are not in UniEval's "
            "copy, so there is no human ceiling). Each sample is a conversation: the "
            "context's turns as alternating user and assistant messages and the judged "
            "response as the last assistant message (`turn`), with the knowledge snippet "
            "as `context`. Text is lowercased and tokenised as published. UniEval's stored "
            "scores are in the human table (unieval.<criterion>)."),
        "licence": ("CDLA-Sharing-1.0 (conversations); CC BY-NC-ND 4.0 (Washington Post "
                    "snippets, non-commercial); MIT (UniEval's copy)"),
        "licence_url": "https://github.com/alexa/Topical-Chat/blob/master/DATALICENSE",
        "citation": UNIEVAL_CITATION + """
@inproceedings{mehri2020usr,
  title = {{USR}: An Unsupervised and Reference Free Evaluation Metric for Dialog
           Generation},
  author = {Mehri, Shikib and Eskenazi, Maxine},
  booktitle = {Proceedings of the 58th Annual Meeting of the Association for
               Computational Linguistics},
  pages = {681--707},
  year = {2020}
}
@inproceedings{gopalakrishnan2019topicalchat,
  title = {{Topical-Chat}: Towards Knowledge-Grounded Open-Domain Conversations},
  author = {Gopalakrishnan, Karthik and Hedayatnia, Behnam and Chen, Qinlang and
            Gottardi, Anna and Kwatra, Sanjeev and Venkatesh, Anu and Gabriel, Raefer
            and Hakkani-T{\\"u}r, Dilek},
  booktitle = {Proc. Interspeech 2019},
  pages = {1891--1895},
  year = {2019}
}""",
    },
    "sfhot": {
        "path": "data2text/sfhot", "level": "sample",
        "criteria": ["overall", "naturalness", "informativeness"],
        "title": "SFHOT (data-to-text, hotel dialogue acts)",
        "description": (
            "875 utterances generated from 398 San Francisco hotel dialogue acts (Wen et al. "
            "2015) by three NLG systems (RNNLG, TGen, LOLS; UniEval's copy does not say "
            "which, so every row's system is `unnamed`), with one human reference each, "
            "rated 1-6 by crowd workers on naturalness, informativeness and overall quality "
            "(Novikova et al. 2017; UniEval's copy holds the aggregate). The dialogue act is "
            "`source`. UniEval's stored scores are in the human table "
            "(unieval.<criterion>)."),
        "licence": "MIT (Novikova et al.'s ratings; UniEval's copy)",
        "licence_url": "https://github.com/jeknov/EMNLP_17_submission/blob/master/LICENSE.md",
        "citation": UNIEVAL_CITATION + """
@inproceedings{novikova2017why,
  title = {Why We Need New Evaluation Metrics for {NLG}},
  author = {Novikova, Jekaterina and Du{\\v{s}}ek, Ond{\\v{r}}ej and Cercas Curry,
            Amanda and Rieser, Verena},
  booktitle = {Proceedings of the 2017 Conference on Empirical Methods in Natural
               Language Processing},
  pages = {2241--2252},
  year = {2017}
}""",
    },
    "sfres": {
        "path": "data2text/sfres", "level": "sample",
        "criteria": ["overall", "naturalness", "informativeness"],
        "title": "SFRES (data-to-text, restaurant dialogue acts)",
        "description": (
            "1,181 utterances generated from 580 San Francisco restaurant dialogue acts (Wen "
            "et al. 2015) by three NLG systems (RNNLG, TGen, LOLS; UniEval's copy does not "
            "say which, so every row's system is `unnamed`), with one human reference each, "
            "rated 1-6 by crowd workers on naturalness, informativeness and overall quality "
            "(Novikova et al. 2017; UniEval's copy holds the aggregate). The dialogue act is "
            "`source`. UniEval's stored scores are in the human table "
            "(unieval.<criterion>)."),
        "licence": "MIT (Novikova et al.'s ratings; UniEval's copy)",
        "licence_url": "https://github.com/jeknov/EMNLP_17_submission/blob/master/LICENSE.md",
        "citation": "",  # sfhot's (set below)
    },
    "qags-cnndm": {
        "path": "fact/qags_cnndm", "level": "sample", "criteria": ["consistency"],
        "title": "QAGS-CNNDM (factual consistency of CNN/DailyMail summaries)",
        "description": (
            "235 CNN/DailyMail articles, each with one model summary (the source's system 0), "
            "judged for factual consistency by 3 crowd workers per summary sentence (Wang et "
            "al. 2020, QAGS): `human.consistency` is the share of the summary's sentences the "
            "majority found consistent with the article (`source`). No reference is kept "
            "(UniEval's copy repeats the article as the reference). UniEval's stored scores "
            "are in the human table (unieval.consistency)."),
        "licence": "MIT (UniEval's copy); articles (c) their publishers, for research use",
        "licence_url": "https://github.com/maszhongming/UniEval/blob/main/LICENSE",
        "citation": "",  # set below
    },
    "qags-xsum": {
        "path": "fact/qags_xsum", "level": "sample", "criteria": ["consistency"],
        "title": "QAGS-XSum (factual consistency of XSum summaries)",
        "description": (
            "239 XSum (BBC) articles, each with one model summary (the source's system 0), "
            "judged for factual consistency by 3 crowd workers (Wang et al. 2020, QAGS): "
            "`human.consistency` is 1 when the majority found the one-sentence summary "
            "consistent with the article (`source`), else 0. No reference is kept (UniEval's "
            "copy repeats the article as the reference). UniEval's stored scores are in the "
            "human table (unieval.consistency)."),
        "licence": "MIT (UniEval's copy); articles (c) the BBC, for research use",
        "licence_url": "https://github.com/maszhongming/UniEval/blob/main/LICENSE",
        "citation": "",  # set below
    },
}
SETS["sfres"]["citation"] = SETS["sfhot"]["citation"]
QAGS_CITATION = UNIEVAL_CITATION + """
@inproceedings{wang2020qags,
  title = {Asking and Answering Questions to Evaluate the Factual Consistency of
           Summaries},
  author = {Wang, Alex and Cho, Kyunghyun and Lewis, Mike},
  booktitle = {Proceedings of the 58th Annual Meeting of the Association for
               Computational Linguistics},
  pages = {5008--5020},
  year = {2020}
}"""
SETS["qags-cnndm"]["citation"] = SETS["qags-xsum"]["citation"] = QAGS_CITATION


def show(git_dir: str, commit: str, path: str) -> Any:
    text = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{commit}:{path}"],
                          check=True, capture_output=True, text=True).stdout
    return json.loads(text)


def gz(rows: list[dict[str, Any]]) -> bytes:
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as f:
        for row in rows:
            f.write((json.dumps(row, ensure_ascii=False) + "\n").encode())
    return buffer.getvalue()


def conversation(history: str, response: str) -> list[dict[str, str]]:
    """The context's turns as alternating messages ending with the judged response: the
    responder is the assistant, so the turn before the response is the user's."""
    turns = [line.strip() for line in history.split("\n") if line.strip()]
    n = len(turns)
    messages = [{"role": "user" if (n - k) % 2 else "assistant", "content": text}
                for k, text in enumerate(turns)]
    return [*messages, {"role": "assistant", "content": response.strip()}]


def rows_of(name: str, data: list[dict[str, Any]], predicted: list[dict[str, Any]]
            ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    criteria = SETS[name]["criteria"]
    samples, human = [], []
    dialogues: dict[str, str] = {}
    for x, p in zip(data, predicted, strict=True):
        assert {k: v for k, v in p.items() if k != "predict_scores"} == x
        if name == "topical-chat":
            item = dialogues.setdefault(x["source"], f"d{len(dialogues)}")
            system = x["system_id"]
            messages = conversation(x["source"], x["system_output"])
            sample = {"item": item, "system": system, "messages": messages,
                      "turn": len(messages) - 1, "context": x["context"]}
        elif name.startswith("qags"):
            assert x["reference"] == x["source"]
            item, system = str(x["doc_id"]), str(x["system_id"])
            sample = {"item": item, "system": system, "source": x["source"],
                      "output": x["system_output"]}
        else:
            item, system = str(x["doc_id"]), "unnamed"
            sample = {"item": item, "system": system, "source": x["source"],
                      "output": x["system_output"], "reference": x["reference"]}
        samples.append(sample)
        human.append({"item": item, "system": system,
                      **{f"human.{c}": x["scores"][c] for c in criteria},
                      **{f"unieval.{c}": p["predict_scores"][c] for c in criteria}})
    return samples, human


def build(name: str, git_dir: str, commit: str = COMMIT) -> None:
    config = SETS[name]
    data = show(git_dir, commit, f"reproduce/data/{config['path']}.json")
    predicted = show(git_dir, commit, f"reproduce/unieval_predict/{config['path']}_result.json")
    samples, human = rows_of(name, data, predicted)
    level = config["level"]
    protocols, published = [], []
    for c in config["criteria"]:
        protocols.append({"name": f"{level}-{c}", "criterion": c, "level": "global",
                          "grouping": None, "statistics": list(STATISTICS),
                          "human": f"human.{c}", "ties": None, "failed_as": None,
                          "by": None})
        for statistic, value in zip(STATISTICS, README[name][c], strict=True):
            published.append({"metric": "UniEval", "spec": None, "protocol": f"{level}-{c}",
                              "statistic": statistic, "value": value, "precision": 6,
                              "table": "Zhong et al. 2022 (UniEval), reproduce/README.md "
                                       f"({level}-level correlations)",
                              "verdicts_column": f"unieval.{c}"})
    folder = DATA / name
    files = {}
    for file, rows in (("samples.jsonl.gz", samples), ("human.jsonl.gz", human)):
        blob = gz(rows)
        (folder / file).write_bytes(blob)
        files[file] = "sha256:" + hashlib.sha256(blob).hexdigest()
    info = {
        "name": name, "title": config["title"], "description": config["description"],
        "kind": "pointwise", "criteria": list(config["criteria"]), "annotators": {},
        "subsets": {}, "protocols": protocols, "published": published,
        "licence": config["licence"], "licence_url": config["licence_url"],
        "citation": config["citation"],
        "source": {"repository": REPOSITORY, "commit": commit,
                   "files": [f"reproduce/data/{config['path']}.json",
                             f"reproduce/unieval_predict/{config['path']}_result.json",
                             "reproduce/README.md"]},
        "files": files,
    }
    (folder / "suite.json").write_text(json.dumps(info, indent=1, ensure_ascii=False) + "\n",
                                       encoding="utf-8")


if __name__ == "__main__":
    build("topical-chat", *sys.argv[1:])
