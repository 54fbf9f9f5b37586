"""Every command's output, one module per format; each takes plain data (the typed results
of judgebench.services, their dicts, a Table) and returns the text a command prints or
writes. Commands only choose the renderer.

table     Table (plain rows), the tables a command's results make, render(table, fmt)
text      the terminal: each command's readable output; a Table as aligned columns
json      --json (a result's to_dict()); a Table as an array of objects
csv       a Table as RFC 4180 CSV, every digit kept
markdown  a Table as a pipe table; the audit's report card
latex     a Table as a booktabs tabular
html      the audit's report card as one self-contained page
svg       the inline plots of the HTML card
card      the report card's cells, shared by its Markdown and HTML renderers
"""
