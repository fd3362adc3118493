"""Whose code made a call: the user's, a third-party library's, or NumPy's and npgpu's own.

The one place that looks at the caller's frames. Three questions are asked today, each with its
own rule (kept as they were when they lived in _array, _report and _fperr; issues #16/#17 make
them one rule that also knows the standard library):

- ``caller``: the first frame outside npgpu and NumPy, and whether it is a third-party
  library's (library code gets host arrays, as with plain NumPy);
- ``report_site``: the (file, line) where the report counts a call (outside npgpu and the
  directory NumPy is installed in, frozen modules too);
- ``outside_npgpu``: the first frame outside npgpu (where floating-point warnings point).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_PACKAGE_PREFIX = os.path.dirname(__file__) + os.sep
_NUMPY_DIR = os.path.dirname(os.path.abspath(numpy.__file__))
_NUMPY_PARENT = os.path.dirname(_NUMPY_DIR)  # (the report's rule: everything installed beside NumPy)
_LIBRARY_MARKERS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)

#: code object -> 0 NumPy/npgpu internals, 1 library, 2 user code (read by the C operators too)
CODE_KIND: dict[Any, int] = {}
INTERNAL, LIBRARY, USER = 0, 1, 2


def kind(code: Any) -> int:
    """INTERNAL, LIBRARY or USER: who wrote ``code`` (remembered per code object)."""
    found = CODE_KIND.get(code)
    if found is None:
        filename = code.co_filename
        if filename.startswith((_PACKAGE_DIR, _NUMPY_DIR)) or filename.startswith("<frozen"):
            found = INTERNAL
        elif any(marker in filename for marker in _LIBRARY_MARKERS):
            found = LIBRARY
        else:
            found = USER
        CODE_KIND[code] = found
    return found


def caller(frame: Any = None) -> tuple[Any, bool]:
    """(the first frame outside NumPy and npgpu, whether it belongs to a third-party library),
    looking from ``frame`` (default: the caller's caller) outwards.

    Library code (SciPy, matplotlib, pandas, ...) gets host arrays, as with plain NumPy; the
    frame of user code is where the report counts the call.
    """
    if frame is None:
        frame = sys._getframe(2)
    while frame is not None:
        found = CODE_KIND.get(frame.f_code)
        if found is None:
            found = kind(frame.f_code)
        if found:
            return frame, found == LIBRARY
        frame = frame.f_back
    return None, False


def called_from_library() -> bool:
    """Whether the caller's caller was called by a third-party library (through NumPy or npgpu)."""
    return caller(sys._getframe(1))[1]


_REPORT_INTERNAL: dict[Any, bool] = {}


def _report_internal(code: Any) -> bool:
    internal = _REPORT_INTERNAL.get(code)
    if internal is None:
        internal = code.co_filename.startswith((_PACKAGE_DIR, _NUMPY_PARENT, "<frozen"))
        _REPORT_INTERNAL[code] = internal
    return internal


def report_site() -> tuple[str, int]:
    """(file, line) of the innermost frame outside npgpu and NumPy, looking from the caller's
    caller outwards: the user's code, where the report counts a call."""
    frame = sys._getframe(2)
    known = _REPORT_INTERNAL
    while frame is not None:
        code = frame.f_code
        internal = known.get(code)
        if internal is None:
            internal = _report_internal(code)
        if not internal:
            return code.co_filename, frame.f_lineno
        frame = frame.f_back
    return "<unknown>", 0


def outside_npgpu(frame: Any) -> tuple[Any, int]:
    """(the first frame outside npgpu from ``frame`` outwards or None, how many frames were passed)."""
    steps = 0
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_PREFIX):
        frame = frame.f_back
        steps += 1
    return frame, steps
