"""Where the judge cache lives (`--cache PATH`, `RunSettings.cache_path`,
`$JUDGEBENCH_CACHE_DIR`): a leaf that the paths checked before a run
(`judgebench.tables.destinations`) and the cache itself (`judgebench.engine.judge_cache`,
which re-exports both names) share, without loading any backend."""

from __future__ import annotations

import os
from pathlib import Path


def cache_file(path: Path) -> Path:
    """The cache file a `--cache PATH` names: PATH itself when it ends in .sqlite, .sqlite3
    or .db, else ``PATH/judge_cache.sqlite`` (PATH is a directory)."""
    if path.suffix in {".sqlite", ".sqlite3", ".db"}:
        return path
    return path / "judge_cache.sqlite"


def default_cache_path() -> Path:
    """Where the judge cache lives: `RunSettings.cache_path` (a .sqlite/.db file, or a
    directory), else ``$JUDGEBENCH_CACHE_DIR/judge_cache.sqlite``, else
    ``~/.cache/judgebench/judge_cache.sqlite``."""
    from judgebench.engine import runtime

    configured = runtime.current().cache_path
    if configured is not None:
        return cache_file(Path(configured))
    root = os.environ.get("JUDGEBENCH_CACHE_DIR")
    base = Path(root) if root else Path.home() / ".cache" / "judgebench"
    return base / "judge_cache.sqlite"


__all__ = ["cache_file", "default_cache_path"]
