"""`judgebench audit`: is a metric trustworthy on this data?

sentinels  compute the registered sentinel metrics on a scores table, per human column
blocks     agreement with people per (human, statistic, level, grouping), significance
           clusters of metrics and sentinels together (meta_eval), and the sentinel gate
gate       the gate rule and what a good-looking sentinel means
probes     metamorphic probes of any metric (changed outputs, renamed systems, batch order)
bias       judge-bias probes of a pairwise judge (position, verbosity, self-preference,
           prompt sensitivity, injection, test-retest)
run        the pipeline: table (+ generations) -> sentinels -> blocks -> Report; probes
report     the report card as data; JSON and the flat `--json` results
verdict    the answer a report opens with: per human column, who passes the gate where, and why
checks     `--fail-on`: gate, parse-rate>X and cluster-drop findings for CI

The report's renderers (Markdown, one self-contained HTML page with inline SVG plots) are in
judgebench.render.
"""
