"""What every Python API function returns: a result with the command's numbers.

`to_dict()` is what the command prints with `--json`; `to_json()` that text; `to_pandas()`
the result as a DataFrame (a result whose natural table is something else, such as the
scores table of `score`, says so in its own `to_frame`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd


class Result:
    """The mixin of every result class of `judgebench.api`."""

    def to_dict(self) -> Any:
        raise NotImplementedError

    def to_json(self, *, indent: int | None = 2) -> str:
        """`to_dict()` as the command's `--json` prints it."""
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def to_pandas(self) -> pd.DataFrame:
        """The result as a DataFrame: `to_frame()` where the class has one, else one row per
        record of `to_dict()`."""
        import pandas as pd

        to_frame = getattr(self, "to_frame", None)
        if to_frame is not None:
            frame: pd.DataFrame = to_frame()
            return frame
        records = self.to_dict()
        return pd.DataFrame(records if isinstance(records, list) else [records])
