"""`judgebench label SAMPLES_OR_SCORES --store S --criterion NAME --annotator NAME`: label in
the browser (`judgebench.services.label_session` prepares the items, `judgebench.view.label_app`
serves the page on 127.0.0.1 with the viewer's stack)."""

from __future__ import annotations

from pathlib import Path

import click

from judgebench.commands.examples import examples
from judgebench.commands.labels.import_labels import criterion_kind, parse_scale, parse_step
from judgebench.commands.options import criterion_options, finite_float, seed_option

DEFAULT_PORT = 7732


@click.command("label", epilog=examples(
    ("label the relevance (1-5) of 10 random summaries of the SummEval sample "
     "[serves until Ctrl-C]",
     "judgebench label examples/summeval-sample.jsonl --store runs.db --criterion relevance "
     "--scale 1-5 --annotator ann --sample 10 --strategy random --seed 1 --port 0"),
    ("24 rows stratified by chrF's score, the texts from the samples, the judges' scores "
     "revealed from the start [serves until Ctrl-C]",
     "judgebench label examples/summeval-scores.csv --samples examples/summeval-sample.jsonl "
     "--store runs.db --criterion relevance --scale 1-5 --annotator ann --sample 24 "
     "--strategy stratified --judge lexical.chrf --bins 2 --no-by-system --reveal --port 0"),
    ("which of two summaries is better, on the bundled pairs [serves until Ctrl-C]",
     "judgebench label examples/pairs-sample.jsonl --store runs.db --criterion preferred "
     "--pairwise --annotator ann --port 0"),
))
@click.argument("source", metavar="SAMPLES_OR_SCORES", type=click.Path(path_type=Path))
@click.option("--store", "store_path", required=True,
              type=click.Path(path_type=Path, writable=True),
              help="The store the labels go into (created, or upgraded in place).")
@click.option("--criterion", required=True, metavar="NAME",
              help="What is labelled (no dots or colons in the name).")
@click.option("--annotator", required=True, metavar="NAME",
              help="Who labels (the page's default; a page with ?annotator=NAME labels as "
                   "NAME).")
@click.option("--samples", "samples_path", type=click.Path(path_type=Path),
              help="The samples the scores table was scored from (their texts are shown); "
                   "without it SAMPLES_OR_SCORES is a samples file.")
@criterion_options("Whether the page shows the item's reference.")
@click.option("--sample", "sample_n", type=click.IntRange(min=1), metavar="N",
              help="Label N items drawn by --strategy (never one this annotator labelled); "
                   "default: every item, in a seeded order.")
@click.option("--strategy", type=click.Choice(("random", "stratified", "disagreement",
                                               "active")),
              default="random", show_default=True, help="How --sample draws.")
@seed_option("Seed of the draw and of the order (and of a pair's sides).")
@click.option("--judge", metavar="COL",
              help="stratified: the column binned; disagreement: the judge whose repeats "
                   "or orders disagree; active: the judge whose errors the labels measure.")
@click.option("--judges", "judges", multiple=True, metavar="COL[,COL...]",
              help="disagreement: the judge columns whose disagreement draws (repeatable).")
@click.option("--bins", type=click.IntRange(min=1), default=4, show_default=True,
              help="stratified: quantile bins of --judge.")
@click.option("--by-system/--no-by-system", default=True, show_default=True,
              help="stratified: strata by system (crossed with the bins).")
@click.option("--allocation", type=click.Choice(("proportional", "equal")),
              default="proportional", show_default=True, help="stratified: allocation.")
@click.option("--minimum", type=click.IntRange(min=1), default=2, show_default=True,
              help="stratified, active on binary verdicts: items per stratum at least.")
@click.option("--disagreement", type=click.Choice(("judges", "repeats", "orders")),
              help="disagreement: between judges, a judge's repeats or its two orders "
                   "(default: inferred).")
@click.option("--uniform-share", type=finite_float(0, 1), default=0.2, show_default=True,
              help="disagreement, active: the share of the design spread uniformly.")
@click.option("--sample-id", type=click.IntRange(min=1), metavar="ID",
              help="Serve a sample recorded earlier again (resume it), not a new one.")
@click.option("--reveal", is_flag=True,
              help="Show the system, the judges' scores and the others' labels from the "
                   "start (a calibration session); default: only after answering, on "
                   "asking.")
@click.option("--bootstrap", type=click.IntRange(min=0), default=200, show_default=True,
              help="Resamples of the agreement page's intervals (0: none).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (anything but loopback lets others read the "
                   "outputs and write labels).")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              help="Another name or address browsers reach the page by (as `view`); "
                   "repeatable.")
@click.option("--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT,
              show_default=True, help="Port to listen on; 0 picks a free one.")
def command(source: Path, store_path: Path, criterion: str, annotator: str,
            samples_path: Path | None, scale: str | None, step: str, binary: bool,
            choices: str | None, pairwise: bool, description: str | None,
            show_reference: bool | None, sample_n: int | None, strategy: str, seed: int,
            judge: str | None, judges: tuple[str, ...], bins: int, by_system: bool,
            allocation: str, minimum: int, disagreement: str | None, uniform_share: float,
            sample_id: int | None, reveal: bool, bootstrap: int, host: str,
            allow_hosts: tuple[str, ...], port: int) -> None:
    """Label SAMPLES_OR_SCORES in the browser: one item at a time, blind to the system, the
    judges and the other annotators, keyboard first; every answer saved at once in the
    store. Prints the page's address and serves it until Ctrl-C."""
    from judgebench.extras import require

    require("judgebench label", "view", "starlette", "jinja2", "uvicorn", "psutil")
    from judgebench.display import safe
    from judgebench.services.label_session import label_session
    from judgebench.tables import destinations
    from judgebench.view.label_app import make_label_app, stop_label_requests
    from judgebench.view.serve import address, check_allow_hosts, listen, serve

    destinations.check([destinations.read("SAMPLES_OR_SCORES", source),
                        *([destinations.read("--samples", samples_path)]
                          if samples_path is not None else []),
                        destinations.database("--store", store_path)])
    check_allow_hosts(allow_hosts)
    kind = criterion_kind(scale, binary, choices, pairwise)
    low, high = parse_scale(scale) if scale is not None else (None, None)
    sock = listen(host, port)  # a taken port is refused before the store is written
    try:
        session = label_session(
            source, store=store_path, criterion=criterion, annotator=annotator, kind=kind,
            description=description, low=low, high=high, step=parse_step(step),
            choices=tuple(c.strip() for c in choices.split(",")) if choices else (),
            show_reference=show_reference, samples=samples_path, sample=sample_n,
            strategy=strategy, seed=seed, judge=judge,
            judges=[c.strip() for given in judges for c in given.split(",") if c.strip()],
            bins=bins, by_system=by_system, allocation=allocation, minimum=minimum,
            disagreement=disagreement, uniform_share=uniform_share, sample_id=sample_id,
            log=lambda note: click.echo(f"judgebench label: {safe(note)}", err=True))
    except BaseException:
        sock.close()
        raise
    if session.sample is not None:
        click.echo(f"judgebench label: sample {session.sample.id}, {len(session.tasks)} of "
                   f"{session.candidates} items ({safe(session.signature)}); serve it again "
                   f"with --sample-id {session.sample.id}", err=True)
    app = make_label_app(session, host=host, allow=allow_hosts, default_annotator=annotator,
                         reveal=reveal, bootstrap=bootstrap)
    from judgebench.view.app import url

    link = address(host, sock).rstrip("/") + url("/", annotator=annotator)
    serve(app, sock, name="judgebench label", host=host, allow=allow_hosts,
          exposed="can read the outputs and write labels as anyone",
          ready=f"judgebench label: {safe(session.criterion.name)} "
                f"({safe(session.criterion.describe())}), {len(session.tasks)} item(s), at "
                f"{link} (Ctrl-C stops)", stop=stop_label_requests)
