"""The array types meta_eval's annotations use (and judgebench's, where it passes arrays).

FloatArray and BoolArray are arrays of float64 and bool, IntArray of any integer dtype (counts
are int64, np.frexp exponents int32, indices intp); AnyArray one whose dtype varies with its
input (labels of any kind, an object column). ArrayLike: what `np.asarray` takes, for the
public functions that convert their input (a list of lists is a matrix).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.integer[Any]]
BoolArray = npt.NDArray[np.bool_]
AnyArray = npt.NDArray[Any]
ArrayLike = npt.ArrayLike
