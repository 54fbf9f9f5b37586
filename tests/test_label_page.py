"""`judgebench label`: the labelling page over HTTP, served by real `judgebench label`
processes on free loopback ports, over SummEval rows with red-team payloads in the item and
system names and an output; and the session it serves (`services.label_session`).

Refusals: a post without this server's token, from another origin or site, not a form, or
too large, writes nothing; a wrong Host is refused; no route but `/save` takes a POST. The
page is blind (no system, judge score or other annotator's label) until the annotator
answered and asks; every text is escaped. Answers, statuses, critiques, a changed answer and
undo are rows of the store as `engine.labels` keeps them; a pair's shown order is drawn per
item and recorded. The browser test is tests/test_label_browser.py.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from conftest import REPO, run_cli, summeval_records, write_jsonl
from label_server import base, post, request, start, stop, token
from markupsafe import escape

from judgebench.engine import labels as L
from judgebench.errors import InputError
from judgebench.services.label_sample import label_sample
from judgebench.services.label_session import label_session, shown_left

ITEM = '<img src=x onerror="window.__pwned=1">'
SYSTEM = '"><script>window.__pwned=2</script>'
TAIL = ' </pre><script>window.__pwned=3</script><a href="javascript:window.__pwned=4">x</a>'
EXAMPLES = REPO / "examples"


def _records() -> list[dict[str, Any]]:
    """16 SummEval rows (one article, 16 systems), the first item and system renamed to
    payloads and one output ending in one."""
    records = summeval_records(32)
    first_item, first_system = records[0]["item"], records[0]["system"]
    for r in records:
        r["item"] = ITEM if r["item"] == first_item else r["item"]
        r["system"] = SYSTEM if r["system"] == first_system else r["system"]
    records[0]["output"] += TAIL
    return records[:16]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A 1-5 scale session over every one of the 16 rows, seeded order."""
    root = tmp_path_factory.mktemp("label")
    data = write_jsonl(root / "in.jsonl", _records())
    store = root / "runs.db"
    proc, url = start(str(data), "--store", str(store), "--criterion", "quality", "--scale",
                      "1-5", "--annotator", "ann", "--description", "Is it <b>good</b>?",
                      "--seed", "3", "--port", "0")
    try:
        yield {"root": root, "store": store, "url": url, "base": base(url), "data": data}
    finally:
        stop(proc)


def _page(root: str, position: int, annotator: str, **query: str) -> str:
    extra = "".join(f"&{k}={v}" for k, v in query.items())
    status, headers, body = request(f"{root}/item/{position}?annotator={annotator}{extra}")
    assert status == 200, body
    assert headers["content-security-policy"].startswith("default-src 'none'; script-src 'self'")
    return body


def _form(root: str, page: str, annotator: str, position: int, **fields: str) -> dict[str, str]:
    return {"token": token(page), "annotator": annotator, "position": str(position), **fields}


def _task(served: dict[str, Any], position: int) -> Any:
    session = label_session(served["data"], store=served["store"], criterion="quality",
                            annotator="ann", seed=3)
    return session.tasks[position - 1]


def test_the_page_is_blind_until_an_answer_and_shows_every_text_as_text(
        served: dict[str, Any]) -> None:
    root = served["base"]
    status, headers, _ = request(served["url"])
    assert status == 303 and headers["location"] == "/item/1?annotator=ann"
    bodies = [_page(root, p, "ann") for p in range(1, 17)]
    for body in bodies:
        assert SYSTEM not in body and str(escape(SYSTEM)) not in body  # no system name
        assert 'id="revealed"' not in body and "lexical" not in body
        assert "<script>window" not in body and "href=\"javascript" not in body
        assert 'Is it &lt;b&gt;good&lt;/b&gt;?' in body  # the description, escaped
    payload = next(i for i, b in enumerate(bodies, 1) if str(escape(TAIL)) in b)
    assert bodies[payload - 1].count("<script") == 1  # /label.js, the page's own
    # asking to reveal before answering shows nothing
    assert 'id="revealed"' not in _page(root, payload, "ann", reveal="1")
    task = _task(served, payload)
    other = post(root, _form(root, bodies[payload - 1], "bob", payload, action="answer",
                             value="2", critique="<i>meh</i>"))
    assert other[0] == 303
    assert "meh" not in _page(root, payload, "ann", reveal="1")  # bob's label stays hidden
    answered = post(root, _form(root, bodies[payload - 1], "ann", payload, action="answer",
                                value="4"))
    assert answered[0] == 303
    shown = _page(root, payload, "ann", reveal="1")
    assert 'id="revealed"' in shown and str(escape(task.system)) in shown
    assert str(escape("<i>meh</i>")) in shown  # bob's critique, as text
    assert 'id="reveal"' not in shown and 'id="reveal"' in _page(root, payload, "ann")


def test_a_post_needs_this_servers_token_and_origin_and_nothing_else_writes(
        served: dict[str, Any]) -> None:
    root = served["base"]
    page = _page(root, 2, "eve")
    good = _form(root, page, "eve", 2, action="answer", value="3")
    before = L.label_history(served["store"], annotator="eve")
    for fields, headers, status in [
        ({**good, "token": ""}, {}, 403),
        ({**good, "token": good["token"][:-1] + "x"}, {}, 403),
        ({k: v for k, v in good.items() if k != "token"}, {}, 403),
        (good, {"Origin": "http://evil.test"}, 403),
        (good, {"Origin": "null"}, 403),
        (good, {"Sec-Fetch-Site": "cross-site"}, 403),
        (good, {"Sec-Fetch-Site": "same-site"}, 403),
        (good, {"Content-Type": "application/json"}, 415),
        (good, {"Content-Type": "multipart/form-data; boundary=x"}, 415),
        ({**good, "critique": "x" * 300_000}, {}, 413),
    ]:
        got, _, body = post(root, fields, headers=headers)
        assert got == status, (headers, body)
    assert L.label_history(served["store"], annotator="eve") == before == []
    assert request(root + "/save", method="POST", data=b"x", headers={
        "Host": "evil.test", "Content-Type": "application/x-www-form-urlencoded"})[0] == 400
    assert request(root + "/item/1?annotator=ann", headers={"Host": "evil.test"})[0] == 400
    for path in ("/", "/item/1", "/agreement", "/done", "/label.js"):
        assert request(root + path, method="POST", data=b"")[0] == 405, path
    for method in ("PUT", "DELETE", "PATCH"):
        assert request(root + "/save", method=method, data=b"")[0] == 405
    assert post(root, good)[0] == 303  # the same form, as the page sends it
    assert [lab.value for lab in L.label_history(served["store"], annotator="eve")] == [3.0]
    status, headers, body = request(root + "/label.js")
    assert status == 200 and headers["content-type"].startswith("text/javascript")
    assert "requestSubmit" in body


def test_answers_statuses_critiques_changes_and_undo_are_rows_of_the_store(
        served: dict[str, Any]) -> None:
    root, store = served["base"], served["store"]
    page = _page(root, 5, "cat")
    saved = post(root, _form(root, page, "cat", 5, action="answer", value="5",
                             critique="  clear  "))
    assert saved[0] == 303 and saved[1]["location"] == "/item/6?annotator=cat"
    assert post(root, _form(root, page, "cat", 6, action="cant_tell"))[1]["location"] \
        == "/item/7?annotator=cat"
    assert post(root, _form(root, page, "cat", 7, action="skip"))[0] == 303
    assert post(root, _form(root, page, "cat", 5, action="answer", value="2"))[1][
        "location"] == "/item/8?annotator=cat"  # the next one not labelled yet
    bad = post(root, _form(root, page, "cat", 8, action="answer", value="7"))
    assert bad[0] == 400 and "outside the scale" in bad[2] and 'id="error"' in bad[2]
    assert post(root, _form(root, page, "cat", 8, action="answer", value=""))[0] == 400
    assert post(root, _form(root, page, "cat", 99, action="answer", value="1"))[0] == 400
    assert post(root, _form(root, page, "cat", 8, action="bogus"))[0] == 400
    tasks = {p: _task(served, p) for p in (5, 6, 7)}
    rows = L.label_history(store, annotator="cat")
    assert [(r.item, r.system, r.value, r.status, r.critique, r.source) for r in rows] == [
        (tasks[5].item, tasks[5].system, 5.0, "answered", "clear", "browser"),
        (tasks[6].item, tasks[6].system, None, "cant_tell", None, "browser"),
        (tasks[7].item, tasks[7].system, None, "skipped", None, "browser"),
        (tasks[5].item, tasks[5].system, 2.0, "answered", None, "browser")]
    assert all(r.sample_id is None and r.inclusion_probability is None for r in rows)
    shown = _page(root, 5, "cat")
    assert 'value="2.0" data-key="2" checked' in shown and 'id="current"' in shown
    undone = post(root, _form(root, page, "cat", 8, action="undo"))
    assert undone[1]["location"] == "/item/5?annotator=cat&said=undone"
    assert post(root, _form(root, page, "cat", 8, action="undo"))[1]["location"] \
        == "/item/7?annotator=cat&said=undone"
    current = L.current_labels(store, criterion="quality", annotator="cat")
    assert [(c.item, c.status) for c in current] == [(tasks[6].item, "cant_tell")]
    assert [r.status for r in L.label_history(store, annotator="cat")][-2:] == [
        "withdrawn", "withdrawn"]
    post(root, _form(root, page, "cat", 8, action="undo"))
    nothing = post(root, _form(root, page, "cat", 8, action="undo"))
    assert nothing[1]["location"] == "/item/8?annotator=cat&said=nothing"
    assert L.current_labels(store, criterion="quality", annotator="cat") == []


def test_the_agreement_page_refreshes_and_says_how_its_numbers_were_made(
        served: dict[str, Any]) -> None:
    status, headers, body = request(served["base"] + "/agreement")
    assert status == 200 and "script-src" not in headers["content-security-policy"]
    assert '<meta http-equiv="refresh" content="5">' in body
    assert "labels.stats@1|criterion:quality|alpha:interval" in body
    assert "<script" not in body


@pytest.fixture(scope="module")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("pairs")
    store = root / "runs.db"
    proc, url = start(str(EXAMPLES / "pairs-sample.jsonl"), "--store", str(store),
                      "--criterion", "better", "--pairwise", "--annotator", "ann", "--sample",
                      "12", "--seed", "5", "--port", "0")
    try:
        yield {"store": store, "url": url, "base": base(url)}
    finally:
        stop(proc)


def test_a_pairs_order_is_drawn_per_item_recorded_and_answered_by_side(
        pairs: dict[str, Any]) -> None:
    root, store = pairs["base"], pairs["store"]
    (sample,) = L.samples(store)
    assert sample.strategy == "random" and len(sample.items) == 12
    records = {(r["item"], r["system_a"], r["system_b"]): r for r in
               map(json.loads, (EXAMPLES / "pairs-sample.jsonl").read_text().splitlines())}
    orders = []
    for position, drawn in enumerate(sample.items, start=1):
        page = _page(root, position, "ann")
        assert page == _page(root, position, "ann")  # the same order on every visit
        pair = drawn.system
        assert isinstance(pair, tuple)
        left = shown_left(5, "ann", drawn.item, pair)
        record = records[(drawn.item, *pair)]
        text_left = record["output_a"] if left == pair[0] else record["output_b"]
        assert str(escape(text_left)).split("\n")[0] in page.split('id="left"')[1].split(
            'id="right"')[0]
        assert pair[0] not in page.split("<main>")[1] and pair[1] not in page.split(
            "<main>")[1]
        order = "ab" if left == pair[0] else "ba"
        assert f'name="order" value="{order}"' in page
        orders.append(order)
        side = ("left", "right", "tie")[position % 3]
        assert post(root, _form(root, page, "ann", position, action="answer", value=side,
                                order=order))[0] == 303
        label = L.current_labels(store, criterion="better", annotator="ann")[-1]
        better = {"left": left, "right": pair[1] if left == pair[0] else pair[0]}.get(side)
        assert label.value == (0.5 if side == "tie" else 1.0 if better == pair[0] else 0.0)
        assert label.shown_left == left and label.sample_id == sample.id
        assert label.inclusion_probability == drawn.inclusion_probability == 12 / 24
    assert {"ab", "ba"} <= set(orders)
    page = _page(root, 1, "ann", reveal="1")
    revealed = page.split('id="revealed"')[1]
    first = sample.items[0].system
    assert isinstance(first, tuple)
    left = shown_left(5, "ann", sample.items[0].item, first)
    assert f'id="revealed-left">{escape(left)}<' in revealed
    bad = post(root, _form(root, page, "ann", 1, action="answer", value="a", order="ab"))
    assert bad[0] == 400 and "left, right or tie" in bad[2]
    assert post(root, _form(root, page, "ann", 1, action="answer", value="tie",
                            order="xy"))[0] == 400


def test_a_drawn_sample_is_recorded_with_its_probabilities_and_resumed(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    scores, texts = EXAMPLES / "summeval-scores.csv", EXAMPLES / "summeval-sample.jsonl"
    options: dict[str, Any] = {"strategy": "stratified", "n": 12, "seed": 4,
                               "judge": "lexical.chrf", "bins": 2, "by_system": False}
    session = label_session(scores, samples=texts, store=store, criterion="rel",
                            annotator="ann", kind="scale", low=1, high=5, sample=12,
                            strategy="stratified", seed=4, judge="lexical.chrf", bins=2,
                            by_system=False)
    expected = label_sample(scores, **options)
    assert session.sample is not None and session.signature == expected.signature
    assert [(t.item, t.system, t.inclusion_probability) for t in session.tasks] == [
        (r.item, r.system, r.inclusion_probability) for r in expected.rows]
    assert L.get_sample(store, session.sample.id).probabilities() == {
        (r.item, r.system): r.inclusion_probability for r in expected.rows}
    table = pd.read_csv(scores).set_index(["item", "system"])
    first = session.tasks[0]
    assert dict(first.scores)["lexical.chrf"] == table.loc[(first.item, first.system),
                                                           "lexical.chrf"]
    assert first.output and first.input and not first.conversation
    for task in session.tasks[:5]:
        L.save_label(store, criterion="rel", annotator="ann", item=task.item,
                     system=task.system, value=3, sample_id=session.sample.id)
    again = label_session(scores, samples=texts, store=store, criterion="rel",
                          annotator="ann", sample=12, strategy="random", seed=4)
    assert not {t.key for t in again.tasks} & {t.key for t in session.tasks[:5]}
    assert all(t.inclusion_probability == 12 / (64 - 5) for t in again.tasks)
    resumed = label_session(texts, store=store, criterion="rel", annotator="bob",
                            sample_id=session.sample.id)
    assert [t.key for t in resumed.tasks] == [t.key for t in session.tasks]
    assert resumed.sample is not None and resumed.sample.id == session.sample.id
    assert len(L.samples(store)) == 2
    every = label_session(texts, store=store, criterion="rel", annotator="ann", seed=9)
    assert sorted(t.key for t in every.tasks) == sorted(
        zip(table.index.get_level_values(0), table.index.get_level_values(1), strict=True))
    assert [t.key for t in every.tasks] != sorted(t.key for t in every.tasks)
    assert [t.key for t in every.tasks] == [t.key for t in label_session(
        texts, store=store, criterion="rel", annotator="ann", seed=9).tasks]


def test_a_conversation_shows_its_turns_so_far_and_a_criterion_its_reference(
        tmp_path: Path) -> None:
    session = label_session(EXAMPLES / "fed-turns.jsonl", store=tmp_path / "s.db",
                            criterion="engaging", annotator="ann", kind="binary")
    records = [json.loads(line) for line in
               (EXAMPLES / "fed-turns.jsonl").read_text().splitlines()]
    assert len(session.tasks) == len(records)
    by_key = {(f"{r['item']} #{r['turn']}", r["system"]): r for r in records}
    for task in session.tasks:
        record = by_key[task.key]
        turn = record["turn"]
        assert [t.text for t in task.conversation] == [m["content"] for m in
                                                       record["messages"][:turn]]
        assert task.output == record["messages"][turn]["content"]
    rag = label_session(EXAMPLES / "rag-ares.jsonl", store=tmp_path / "s.db",
                        criterion="faithful", annotator="ann", kind="choices",
                        choices=("yes", "partly", "no"), show_reference=True)
    assert rag.criterion.show_reference and all(t.contexts for t in rag.tasks)


def test_the_command_refuses_bad_input_before_writing_the_store(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    scores, texts = str(EXAMPLES / "summeval-scores.csv"), str(EXAMPLES / "summeval-sample.jsonl")
    common = ("--store", str(store), "--criterion", "rel", "--annotator", "ann", "--port", "0")
    for args, message in [
        ((scores, "--scale", "1-5"), "give the samples it was scored from with --samples"),
        ((texts, "--scale", "1-5", "--sample", "5", "--strategy", "active", "--judge",
          "lexical.chrf"), "a samples file has none"),
        ((texts,), "give its kind"),
        ((texts, "--pairwise"), "a pairwise criterion labels pairs"),
        ((texts, "--scale", "1-5", "--sample", "3", "--sample-id", "1"), "give one"),
        ((texts, "--scale", "1-5", "--sample", "500"), "--sample"),
        ((scores, "--samples", str(EXAMPLES / "pairs-sample.jsonl"), "--scale", "1-5"),
         "is scale"),
    ]:
        proc = run_cli("label", *args, *common)
        assert proc.returncode == 2, (args, proc.stderr)
        assert message in proc.stderr, (args, proc.stderr)
        assert "Traceback" not in proc.stderr
        assert not store.exists(), args
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = run_cli("label", texts, "--scale", "1-5", *common[:-2], "--port", str(port))
    assert proc.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in proc.stderr
    assert not store.exists()


def test_on_every_interface_it_warns_and_still_checks_the_host(tmp_path: Path) -> None:
    proc, url = start(str(EXAMPLES / "summeval-sample.jsonl"), "--store",
                      str(tmp_path / "runs.db"), "--criterion", "rel", "--binary",
                      "--annotator", "ann", "--host", "0.0.0.0", "--port", "0")
    try:
        port = url.split(":")[2].split("/")[0]
        local = f"http://127.0.0.1:{port}"
        assert request(local + "/item/1", headers={"Host": f"evil.test:{port}"})[0] == 400
        assert request(local + "/item/1?annotator=x")[0] == 200
    finally:
        err = stop(proc)
    assert "listening on 0.0.0.0, not loopback: whoever reaches this machine can read the " \
           "outputs and write labels as anyone" in err


def test_each_strategy_draws_as_the_sampling_service_and_a_pair_is_keyed_as_the_store(
        tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    scores, texts = EXAMPLES / "summeval-scores.csv", EXAMPLES / "summeval-sample.jsonl"
    table = pd.read_csv(scores)
    L.define_criterion(store, "rel", kind="scale", low=1, high=5)
    people = {(i, s): float(round(v)) for i, s, v in
              zip(table["item"], table["system"], table["human.relevance"], strict=True)}
    L.save_labels(store, [L.NewLabel("rel", "experts", i, s, v)
                          for (i, s), v in list(people.items())[:12]])
    cases: list[tuple[str, dict[str, Any]]] = [
        ("disagreement", {"judges": ["lexical.chrf", "lexical.rougeL"]}),
        ("active", {"judge": "lexical.rougeL"})]
    for strategy, options in cases:
        session = label_session(scores, samples=texts, store=store, criterion="rel",
                                annotator="ann", sample=10, strategy=strategy, seed=6,
                                **options)
        known = dict(list(people.items())[:12]) if strategy == "active" else None
        expected = label_sample(scores, strategy=strategy, n=10, seed=6, labels=known,
                                **options)
        assert session.signature == expected.signature
        assert [(t.item, t.system, t.inclusion_probability) for t in session.tasks] == [
            (r.item, r.system, r.inclusion_probability) for r in expected.rows]
    texts_of_pairs = [json.loads(line) for line in
                      (EXAMPLES / "pairs-sample.jsonl").read_text().splitlines()]
    wanted = {(r["item"], r["system_a"], r["system_b"]) for r in texts_of_pairs}
    verdicts = pd.read_csv(EXAMPLES / "summeval-pairs.csv")
    verdicts = verdicts[[(i, a, b) in wanted for i, a, b in zip(
        verdicts["item"], verdicts["system_a"], verdicts["system_b"], strict=True)]]
    pairs_table = tmp_path / "pairs.csv"
    verdicts.to_csv(pairs_table, index=False)
    pair_options: dict[str, Any] = {"strategy": "disagreement", "seed": 2,
                                    "judges": ["lexical.chrf", "lexical.rougeL"]}
    drawn = label_session(pairs_table, samples=EXAMPLES / "pairs-sample.jsonl", store=store,
                          criterion="better", kind="pairwise", annotator="ann", sample=8,
                          **pair_options)
    expected = label_sample(pairs_table, n=8, **pair_options)
    assert [(t.item, t.system, t.inclusion_probability) for t in drawn.tasks] == [
        (r.item, tuple(r.system.split(" vs ")), r.inclusion_probability)
        for r in expected.rows]
    assert drawn.sample is not None
    assert all(isinstance(s.system, tuple) for s in L.get_sample(store, drawn.sample.id).items)
    first = drawn.tasks[0]
    L.save_label(store, criterion="better", annotator="ann", item=first.item,
                 system=first.system, value="a")
    again = label_session(pairs_table, samples=EXAMPLES / "pairs-sample.jsonl", store=store,
                          criterion="better", annotator="ann", sample=8, **pair_options)
    assert first.key not in {t.key for t in again.tasks}
    assert again.candidates == 24 and len(again.tasks) == 8


@pytest.mark.parametrize(("kind", "options", "keys", "answers"), [
    ("scale", {"low": 1, "high": 5}, ["1", "2", "3", "4", "5"], [1.0, 2.0, 3.0, 4.0, 5.0]),
    ("scale", {"low": 0, "high": 1, "step": 0.25}, ["1", "2", "3", "4", "5"],
     [0.0, 0.25, 0.5, 0.75, 1.0]),
    ("scale", {"low": 0, "high": 10}, [None] * 11, [float(v) for v in range(11)]),
    ("scale", {"low": 1, "high": 7, "step": None}, [], []),
    ("binary", {}, ["y", "n"], [1.0, 0.0]),
    ("choices", {"choices": ("calm", "rude", "odd")}, ["1", "2", "3"], [0.0, 1.0, 2.0]),
])
def test_each_kind_of_criterion_offers_its_answers_on_keys_and_saves_them(
        tmp_path: Path, kind: str, options: dict[str, Any], keys: list[str | None],
        answers: list[float]) -> None:
    from judgebench.view import label_pages

    store = tmp_path / "s.db"
    session = label_session(EXAMPLES / "summeval-sample.jsonl", store=store, criterion="c",
                            annotator="ann", kind=kind, **options)
    found, free = label_pages.options(session.criterion, None)
    assert [o.key for o in found] == keys and free == (not keys and not answers)
    for position, (option, answer) in enumerate(zip(found, answers, strict=True), start=1):
        saved = label_pages.save(session, annotator="ann", position=position,
                                 action="answer", value=option.value, critique=None,
                                 order=None)
        assert saved.value == answer and saved.status == "answered"
        page = label_pages.item_page(session, annotator="ann", position=position)
        assert [o.checked for o in page.options] == [o is option for o in found]
        assert page.current_text == label_pages.answer_text(session.criterion, saved)
    if free:
        saved = label_pages.save(session, annotator="ann", position=1, action="answer",
                                 value="2.375", critique=None, order=None)
        assert saved.value == 2.375
        assert label_pages.item_page(session, annotator="ann", position=1).current_answer \
            == "2.375"
        with pytest.raises(InputError, match="outside the scale"):
            label_pages.save(session, annotator="ann", position=2, action="answer",
                             value="7.5", critique=None, order=None)
