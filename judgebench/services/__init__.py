"""The services behind the commands, one module per command: internal.

`judgebench.api` (re-exported at `judgebench`) is their public face: one function per
command, each taking a path, a DataFrame or the result of `score`. The modules here, their
functions and their signatures are the host's own and may change in any release; guides and
user code call `judgebench.api`.

This package exports no functions itself: a function named like its module (`meta_eval` in
`meta_eval.py`) would be shadowed by the module once the module is imported.
"""
