"""Functions of complex values on the device: conj as a function, angle, iscomplex, isreal.

The arithmetic itself is the ufunc table's (npgpu/kernels/ufuncs.py, kernels/complexmath.py);
these are NumPy's definitions over the real and imaginary parts (views of the array's memory).
"""

from __future__ import annotations

import math
from typing import Any

import numpy

from ... import _fperr
from ...kernels import ufuncs as _table
from ..base import Backend
from .array import CLArray, _native_or_device, _part
from .routing import implements


def _arrays(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """A device array of at least one dimension (a 0-d one's answer is NumPy's scalar)."""
    return bool(args) and _native_or_device(args[0]) and args[0].ndim > 0


def _device_array(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """A device array, 0-d ones too (the core turns a 0-d result into NumPy's scalar)."""
    return bool(args) and _native_or_device(args[0])


@implements(numpy.conjugate, kwargs=(), complex_values=True, accepts=_arrays)
def _conjugate(self: Backend, x: CLArray) -> CLArray:
    return self.ufunc_call(numpy.conjugate, (x,), errstate=_fperr.current())


def _angle_accepted(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """angle of complex arrays, and of real ones whose arctan2 loop the device has (8-bit integers
    and bools give float16)."""
    if not _arrays(args, kwargs):
        return False
    if args[0].dtype.kind == "c":
        return True
    return _table.supports_loop(numpy.arctan2, tuple(numpy.arctan2.resolve_dtypes((int, args[0].dtype, None))))


@implements(numpy.angle, kwargs=("deg",), complex_values=True, accepts=_angle_accepted)
def _angle(self: Backend, z: CLArray, deg: bool = False) -> CLArray:
    """NumPy's angle: arctan2(z.imag, z.real) (a real z: arctan2(0, z)), times 180/pi for degrees."""
    state = _fperr.current()
    imag, real = (_part(z, 1), _part(z, 0)) if z.dtype.kind == "c" else (0, z)
    a = self.ufunc_call(numpy.arctan2, (imag, real), errstate=state)
    if deg:
        self.ufunc_call(numpy.multiply, (a, 180 / math.pi), out=a, errstate=state)
    return a


@implements(numpy.iscomplex, kwargs=(), complex_values=True, accepts=_device_array)
def _iscomplex(self: Backend, x: CLArray) -> CLArray:
    if x.dtype.kind == "c":
        return self.ufunc_call(numpy.not_equal, (_part(x, 1), 0))
    return self.zeros(x.shape, bool)


@implements(numpy.isreal, kwargs=(), complex_values=True, accepts=_device_array)
def _isreal(self: Backend, x: CLArray) -> CLArray:
    if x.dtype.kind == "c":
        return self.ufunc_call(numpy.equal, (_part(x, 1), 0))
    return self.full(x.shape, True, bool)
