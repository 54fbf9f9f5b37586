"""The services behind the commands, one module per command; `judgebench.api` is their public
face (one function per command, each taking a path, a DataFrame or the result of `score`).

This package exports no functions itself: a function named like its module (`meta_eval` in
`meta_eval.py`) would be shadowed by the module once the module is imported.
"""
