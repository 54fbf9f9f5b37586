"""The human-judgment data vendored in this repository (see each folder's SOURCE.md).

Files are stored gzip-compressed; `unpacked(NAME)` gives a plain JSONL copy, written once per
content (the checksum is in its name and verified), so tests, benchmarks and the README's
commands read the same bytes on every machine without anything beside the clone.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: name -> (compressed file, sha256 of the uncompressed bytes, as SOURCE.md records it)
FILES = {
    "summeval": (HERE / "summeval" / "summeval.jsonl.gz",
                 "c1d5d1067a222edea8f3a8d05eea3295f363cfbe022d14f89fd143e382ab7e84"),
    "fed": (HERE / "fed" / "fed.jsonl.gz",
            "e73880a32dabc8102853dda2082d2a2247b30e7ccdf1b2398727b1450d4fdc1c"),
}


def unpacked(name: str, directory: Path | None = None) -> Path:
    """The uncompressed JSONL of the vendored file `name`, in `directory` (default: the
    system's temporary folder). Written atomically; an existing copy is reused only when its
    checksum matches."""
    source, digest = FILES[name]
    folder = directory or Path(tempfile.gettempdir()) / "judgebench-data"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{name}-{digest[:12]}.jsonl"
    if target.exists() and _sha256(target.read_bytes()) == digest:
        return target
    data = gzip.decompress(source.read_bytes())
    if _sha256(data) != digest:
        raise RuntimeError(f"{source}: checksum mismatch (expected sha256 {digest})")
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.replace(tmp, target)
    return target


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
