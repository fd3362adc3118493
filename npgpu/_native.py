"""npgpu._speedups, the optional C extension, when it was built and not turned off.

``speedups`` is the module, or None: not built (no C compiler at install), or
``NPGPU_PURE_PYTHON=1``. Its users keep Python implementations of everything it does, which
stay the reference (tests/test_speedups.py compares the two).
"""

from __future__ import annotations

import os
from typing import Any

speedups: Any = None
if not os.environ.get("NPGPU_PURE_PYTHON"):
    try:
        from . import _speedups as speedups
    except ImportError:  # a source tree or an install without a C compiler
        speedups = None
