"""Host or device? Work on host inputs moves to the device only where it pays.

Below a size threshold (bytes, measured per backend, overridable with enable(threshold=...))
it stays in NumPy; device inputs always stay on the device.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy

from ._config import State


def threshold_bytes(state: State) -> int:
    """The size from which arrays made from nothing (zeros, arange, random) are made on the device."""
    if state.threshold is not None:
        return state.threshold
    return int(getattr(state.backend, "default_threshold_bytes", 1 << 20))


def upload_threshold_bytes(state: State) -> int:
    """The size of host inputs from which work moves them to the device (the upload must pay)."""
    if state.threshold is not None:
        return state.threshold
    return int(getattr(state.backend, "upload_threshold_bytes", 16 << 20))


def _shape_size(shape: Any) -> int:
    if shape is None:
        return 1
    if isinstance(shape, (int, numpy.integer)):
        return max(int(shape), 0)
    return math.prod(max(operator.index(s), 0) for s in shape)


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str, default: Any = None) -> Any:
    if len(args) > index:
        return args[index]
    return kwargs.get(name, default)


def _arange_size(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    start, stop, step = _arg(args, kwargs, 0, "start", 0), _arg(args, kwargs, 1, "stop"), _arg(args, kwargs, 2, "step")
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    if not all(isinstance(v, (int, float, numpy.integer, numpy.floating)) for v in (start, stop, step)) or not step:
        return 0
    return max(0, math.ceil((stop - start) / step))


def _eye_size(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    n = _arg(args, kwargs, 0, "N")
    m = _arg(args, kwargs, 1, "M")
    return operator.index(n) * operator.index(n if m is None else m)


#: Creation function -> (number of elements it makes, index of its positional dtype argument).
CREATION_SIZE: dict[Callable[..., Any], tuple[Callable[[tuple[Any, ...], dict[str, Any]], int], int | None]] = {
    numpy.zeros: (lambda a, k: _shape_size(_arg(a, k, 0, "shape")), 1),
    numpy.ones: (lambda a, k: _shape_size(_arg(a, k, 0, "shape")), 1),
    numpy.empty: (lambda a, k: _shape_size(_arg(a, k, 0, "shape")), 1),
    numpy.full: (lambda a, k: _shape_size(_arg(a, k, 0, "shape")), 2),
    numpy.arange: (_arange_size, 3),
    numpy.linspace: (lambda a, k: operator.index(_arg(a, k, 2, "num", 50)), 5),
    numpy.logspace: (lambda a, k: operator.index(_arg(a, k, 2, "num", 50)), 5),
    numpy.eye: (_eye_size, 3),
    numpy.identity: (lambda a, k: operator.index(_arg(a, k, 0, "n")) ** 2, 1),
    numpy.tri: (_eye_size, 3),
}


def creation_request(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[int, Any]:
    """(bytes, dtype argument or None) that a creation function call asks for; (-1, None) if unknown."""
    size_of, dtype_index = CREATION_SIZE[func]
    try:
        n = size_of(args, kwargs)
    except TypeError:
        return -1, None  # an argument NumPy will reject or interpret itself: leave it to NumPy
    dtype = _arg(args, kwargs, dtype_index, "dtype") if dtype_index is not None else kwargs.get("dtype")
    return n * 8, dtype
