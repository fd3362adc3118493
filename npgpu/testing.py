"""``np.testing`` for legacy code: NumPy's testing functions (they accept npgpu device arrays,
which convert themselves to host arrays).

npgpu's own differential test harness lives apart, in npgpu/_harness.py.
"""

from __future__ import annotations

from typing import Any

import numpy
from numpy.testing import *  # noqa: F403  (legacy `np.testing.assert_*` calls)


def __getattr__(name: str) -> Any:
    return getattr(numpy.testing, name)


# The harness's names, for code written before it moved to npgpu/_harness.py.
from ._harness import ALL_BACKENDS, RTOL, assert_same, backend_context, check, differential  # noqa: E402, F401
