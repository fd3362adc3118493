"""Whose code made a call: the user's, a third-party library's, or code working on their behalf.

The one place that looks at the caller's frames, with one rule (``kind``) for every question:

- INTERNAL: npgpu's own files, NumPy's, and Python's standard library (frozen modules
  included). None of these is where a call "comes from": the standard library runs the user's
  code (``concurrent/futures/thread.py``, ``threading.py``, ``runpy.py``) or the user's code
  calls it (``copy``, ``functools``, ``typing``), so the caller is further out.
- LIBRARY: an installed third-party package (a ``site-packages`` or ``dist-packages``
  directory). Library code gets host arrays, as with plain NumPy.
- ARRAY_LIBRARY: an installed package that is generic over array types (Dask, xarray: they call
  NumPy's functions on whatever chunks they hold and want the same kind of array back). Their
  calls are passed over like npgpu's own, so work they do on device arrays stays on the device;
  the list is ``array_libraries()``, changed by ``set_array_libraries`` or
  ``NPGPU_ARRAY_LIBRARIES`` (names replace the list; ``+name``/``-name`` add to or take from it).
- USER: everything else: the user's scripts, notebooks, ``python -c``.

Questions asked:

- ``caller``: the first frame that is neither INTERNAL nor an array library's, and whether it is
  a library's (where there is none, the first array library's frame, not a library's call);
- ``report_site``/``user_frame``: the user's frame (the report's call site, where fallback
  warnings point): the first USER frame; where none is on the stack (a Dask worker's task), the
  first library frame (array libraries' included);
- ``outside_npgpu``: the first frame outside npgpu, where floating-point warnings point, as
  NumPy's point at the line that called the NumPy function (that rule is NumPy's, not ours).
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Iterable
from typing import Any

import numpy

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_PACKAGE_PREFIX = os.path.dirname(__file__) + os.sep
_NUMPY_DIR = os.path.dirname(os.path.abspath(numpy.__file__))
_LIBRARY_MARKERS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)


def _standard_library_dirs() -> tuple[str, ...]:
    found = []
    for key in ("stdlib", "platstdlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            found += [os.path.join(path, ""), os.path.join(os.path.realpath(path), "")]
    return tuple(dict.fromkeys(found))


#: Python's standard library (site-packages lies inside it: libraries are told apart first).
_STDLIB_DIRS = _standard_library_dirs()

#: id(code object) -> 0 internals (npgpu, NumPy, the standard library), 1 library, 2 user code,
#: 3 an array library's code (read by the C operators too: they record a call at once only where
#: the frame is user code). Keyed by id: a code object's hash is computed afresh at each lookup,
#: from its constants and names (about 1 us for a large function, and every call walks frames)
CODE_KIND: dict[int, int] = {}
#: the code objects CODE_KIND classified, kept alive with it so that their ids stay theirs
_CLASSIFIED: list[Any] = []
INTERNAL, LIBRARY, USER, ARRAY_LIBRARY = 0, 1, 2, 3
#: Installed packages generic over array types: their NumPy calls on device arrays stay on the
#: device (top-level package names; the README lists which libraries are which).
DEFAULT_ARRAY_LIBRARIES = ("dask", "distributed", "dask_cuda", "xarray", "array_api_compat",
                           "toolz", "tlz", "cytoolz")  # (toolz: the functional helpers Dask calls through)


def _from_environment(text: str) -> frozenset[str]:
    names = set(DEFAULT_ARRAY_LIBRARIES)
    items = [item.strip() for item in text.split(",") if item.strip()]
    if any(not item.startswith(("+", "-")) for item in items):
        names = set()  # a plain name replaces the list
    for item in items:
        name = item.lstrip("+-").strip()
        if not name.isidentifier():
            raise ValueError(f"NPGPU_ARRAY_LIBRARIES must be package names separated by commas "
                             f"(each may start with + or -), not {text!r}")
        (names.discard if item.startswith("-") else names.add)(name)
    return frozenset(names)


_array_libraries = _from_environment(os.environ.get("NPGPU_ARRAY_LIBRARIES", ""))


def array_libraries() -> tuple[str, ...]:
    """The installed packages whose NumPy calls on device arrays stay on the device (sorted)."""
    return tuple(sorted(_array_libraries))


def set_array_libraries(names: Iterable[str]) -> tuple[str, ...]:
    """Make ``names`` (top-level package names) the array libraries; returns the previous list.

    Other installed packages are libraries that get host arrays, as with plain NumPy."""
    global _array_libraries
    if isinstance(names, str):
        raise TypeError("set_array_libraries takes an iterable of package names, not one string")
    new = frozenset(names)
    bad = [name for name in new if not isinstance(name, str) or not name.isidentifier()]
    if bad:
        raise ValueError(f"array libraries are top-level package names, not {bad!r}")
    previous = array_libraries()
    _array_libraries = new
    CODE_KIND.clear()  # every code object is classified again (under the new list)
    _CLASSIFIED.clear()
    return previous


def _package_of(filename: str, marker: str) -> str:
    """The top-level package (or module) of a file under a site-packages directory."""
    rest = filename[filename.index(marker) + len(marker):]
    first = rest.split(os.sep, 1)[0]
    return first[:-3] if first.endswith(".py") else first
#: The call site of a call with neither user nor library code on the stack (``executor.submit(np.sin, x)``
#: runs np.sin from the standard library's worker thread, with no line of the user's below it)
NO_USER_SITE = "<no user code on the stack>"


def kind_of_file(filename: str) -> int:
    """INTERNAL, LIBRARY or USER for a source file name (the one rule)."""
    if filename.startswith((_PACKAGE_DIR, _NUMPY_DIR, "<frozen")):
        return INTERNAL
    for marker in _LIBRARY_MARKERS:
        if marker in filename:
            return ARRAY_LIBRARY if _package_of(filename, marker) in _array_libraries else LIBRARY
    if filename.startswith(_STDLIB_DIRS):
        return INTERNAL
    return USER


def kind(code: Any) -> int:
    """INTERNAL, LIBRARY or USER: who wrote ``code`` (remembered per code object)."""
    found = CODE_KIND.get(id(code))
    if found is None:
        found = kind_of_file(code.co_filename)
        _CLASSIFIED.append(code)  # (before its id is a key: alive for as long as the entry)
        CODE_KIND[id(code)] = found
    return found


def caller(frame: Any = None) -> tuple[Any, bool]:
    """(the first frame outside NumPy, npgpu, the standard library and the array libraries,
    whether it belongs to a third-party library), looking from ``frame`` (default: the caller's
    caller) outwards; where there is none, (the first array library's frame or None, False).

    Library code (SciPy, matplotlib, pandas, ...) gets host arrays, as with plain NumPy; array
    libraries (Dask, xarray) are passed over, so what they do for the user stays on the device;
    the frame of user code is where the report counts the call.
    """
    if frame is None:
        frame = sys._getframe(2)
    generic = None
    while frame is not None:
        found = CODE_KIND.get(id(frame.f_code))
        if found is None:
            found = kind(frame.f_code)
        if found == ARRAY_LIBRARY:
            if generic is None:
                generic = frame
        elif found:
            return frame, found == LIBRARY
        frame = frame.f_back
    return generic, False


def called_from_library() -> bool:
    """Whether the caller's caller was called by a third-party library (through NumPy or npgpu)."""
    return caller(sys._getframe(1))[1]


def user_frame(frame: Any) -> tuple[Any, int]:
    """(the user's frame from ``frame`` outwards, how many frames were passed to reach it).

    The first USER frame; where there is none (a library's own thread), the first library
    frame; where there is neither, (None, 0)."""
    steps = 0
    library: tuple[Any, int] = (None, 0)
    known = CODE_KIND
    while frame is not None:
        found = known.get(id(frame.f_code))
        if found is None:
            found = kind(frame.f_code)
        if found == USER:
            return frame, steps
        if found != INTERNAL and library[0] is None:  # (a library's or an array library's)
            library = (frame, steps)
        frame = frame.f_back
        steps += 1
    return library


def report_site() -> tuple[str, int]:
    """(file, line) of the user's frame (see ``user_frame``), looking from the caller's caller
    outwards: where the report counts a call."""
    frame = sys._getframe(2)
    code = frame.f_code
    if CODE_KIND.get(id(code)) != USER:
        frame, _ = user_frame(frame)
        if frame is None:
            return NO_USER_SITE, 0
    return frame.f_code.co_filename, frame.f_lineno


def user_stacklevel(frame: Any) -> int:
    """The ``stacklevel`` that makes a ``warnings.warn`` called in ``frame``'s function point at
    the user's line (1 where no user or library frame is found)."""
    found, steps = user_frame(frame)
    return 1 + steps if found is not None else 1


def outside_npgpu(frame: Any) -> tuple[Any, int]:
    """(the first frame outside npgpu from ``frame`` outwards or None, how many frames were passed)."""
    steps = 0
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_PREFIX):
        frame = frame.f_back
        steps += 1
    return frame, steps
