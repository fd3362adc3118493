"""The device array: NumPy's ndarray interface over a backend's native array.

Every method and operator goes through the dispatcher, exactly like the namespace functions.
"""

from __future__ import annotations

import math
import operator
import os
import pickle
import sys
import warnings
from time import perf_counter as _perf_counter
from typing import Any

import numpy
from numpy.lib.mixins import NDArrayOperatorsMixin
from numpy.lib.stride_tricks import as_strided

from . import _bounds, _callsite, _config, _masks, _scalar_reads
from ._hooks import core as _core
from .backends import get_backend, unavailable_reason

_state = _config._state


def _function(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return _core.function(func, args, kwargs)


def _shape_arg(shape: tuple[Any, ...]) -> Any:
    if len(shape) == 1 and not isinstance(shape[0], (int, numpy.integer)):
        return shape[0]
    return shape


_code_kind = _callsite.CODE_KIND  # id(code object) -> 0 NumPy/npgpu internals, 1 library, 2 user code
_caller = _callsite.caller
_called_from_library = _callsite.called_from_library


# Operand types that never need the foreign-array check (the common case, tested by identity).
_OWN_TYPES = frozenset({int, float, complex, bool, numpy.float64, numpy.float32, numpy.int64, numpy.ndarray})


class _Flags:
    """``ndarray.flags`` of a device array: layout computed from shape and strides; ``writeable``
    (attribute or item) reads and sets the array's own flag, as NumPy's does."""

    def __init__(self, array: DeviceArray) -> None:
        self._array = array
        self.c_contiguous = _contiguous(array.shape, array.strides, array.itemsize, reverse=True)
        self.f_contiguous = _contiguous(array.shape, array.strides, array.itemsize, reverse=False)
        self.contiguous = self.c_contiguous
        self.fortran = self.f_contiguous and not self.c_contiguous
        native = array._native
        alignment = array.dtype.alignment
        self.aligned = (array._backend.address(native) % alignment == 0
                        and all(stride % alignment == 0 for n, stride in zip(array.shape, array.strides) if n > 1))
        self.owndata = bool(getattr(native, "base", None) is None)

    _COMPARED = ("C_CONTIGUOUS", "F_CONTIGUOUS", "OWNDATA", "WRITEABLE", "ALIGNED")

    def __eq__(self, other: object) -> bool:
        """Equal to another array's flags (NumPy's or a device array's) when every flag agrees."""
        try:
            same = all(self[k] == other[k] for k in self._COMPARED)  # type: ignore[index]
            return same and (isinstance(other, _Flags) or not other["WRITEBACKIFCOPY"])  # type: ignore[index]
        except (KeyError, TypeError):
            return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    @property
    def writeable(self) -> bool:
        return not self._array._readonly

    @writeable.setter
    def writeable(self, value: Any) -> None:
        self._array.setflags(write=value)

    _KEYS = {"C_CONTIGUOUS": "c_contiguous", "C": "c_contiguous", "CONTIGUOUS": "c_contiguous",
             "F_CONTIGUOUS": "f_contiguous", "F": "f_contiguous", "FORTRAN": "f_contiguous",
             "WRITEABLE": "writeable", "W": "writeable", "ALIGNED": "aligned", "A": "aligned",
             "OWNDATA": "owndata", "O": "owndata"}

    def __getitem__(self, key: str) -> bool:
        return getattr(self, self._KEYS[key.upper()])

    def __setitem__(self, key: str, value: Any) -> None:
        if self._KEYS.get(key.upper()) != "writeable":
            raise KeyError(f"npgpu device arrays can set only the WRITEABLE flag, not {key!r}")
        self.writeable = value

    def __repr__(self) -> str:
        names = ("C_CONTIGUOUS", "F_CONTIGUOUS", "OWNDATA", "WRITEABLE", "ALIGNED")
        return "\n".join(f"  {n} : {self[n]}" for n in names)


def _contiguous(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int, *, reverse: bool) -> bool:
    if 0 in shape:
        return True
    expected = itemsize
    dims = list(zip(shape, strides))
    for n, stride in reversed(dims) if reverse else dims:
        if n != 1 and stride != expected:
            return False
        expected *= n
    return True


def _given(**kwargs: Any) -> dict[str, Any]:
    """Keyword arguments a method was given other than its defaults' None (NumPy's own defaults
    then apply, and a backend sees only what the caller asked for)."""
    return {k: v for k, v in kwargs.items() if v is not None}


class _FlatIter:
    """``a.flat`` of a device array: NumPy's flat iterator over the elements in C order."""

    __slots__ = ("base",)

    def __init__(self, array: DeviceArray) -> None:
        self.base = array

    def _flat(self) -> Any:
        return self.base.reshape(-1)

    def __len__(self) -> int:
        return self.base.size

    def __iter__(self) -> Any:
        return iter(self._flat())

    def _key(self, key: Any, assigning: bool = False) -> Any:
        """``key`` as an index of the flattened array, after NumPy's own flat iterator judged it
        (on a zero-byte stand-in): its errors and warnings for None, tuples, lists of bools or
        floats, 0-d booleans and strings."""
        t = type(key)
        if t is int or t is slice or key is Ellipsis:
            return key
        stand_in = as_strided(numpy.zeros(1, numpy.int8), (self.base.size,), (0,), writeable=assigning)
        probe = key._host_proxy() if t is DeviceArray else key
        if assigning:
            stand_in.flat[probe] = 0
        else:
            stand_in.flat[probe]
        if t is bool or t is numpy.bool_:  # (a 0-d boolean, deprecated: the first element or none)
            return 0 if key else slice(0, 0)
        if t is list:
            index = numpy.asarray(key)
            return index.astype(numpy.intp) if index.dtype.kind in "fb" or index.size == 0 else index
        if t is tuple and len(key) == 1:
            return key[0]
        return key

    def __getitem__(self, key: Any) -> Any:
        return self._flat()[self._key(key)]

    def __setitem__(self, key: Any, value: Any) -> None:
        array = self.base
        if array._readonly:
            raise ValueError("assignment destination is read-only")
        key = self._key(key, assigning=True)
        contiguous = array.flags.c_contiguous
        flat = self._flat() if contiguous else array.flatten()  # (a view when contiguous)
        target = flat[key]
        n = target.size if isinstance(target, DeviceArray) else 1
        values = value if isinstance(value, DeviceArray) else numpy.asarray(value)
        if n and values.size not in (1, n):
            values = _function(numpy.resize, (values, n), {})  # NumPy repeats the values cyclically
        flat[key] = values
        if not contiguous:
            array[...] = flat.reshape(array.shape)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> numpy.ndarray:
        return self._flat().__array__(dtype, copy)

    def copy(self) -> DeviceArray:
        return self.base.flatten()

    def __repr__(self) -> str:
        return f"<npgpu flat iterator over {self.base.shape} {self.base.dtype}>"


#: id(device array) -> its residency ledger (npgpu/_residency.py), for arrays made where data enters
tracked: dict[int, Any] = {}


class DeviceArray(NDArrayOperatorsMixin):
    """An array on a device (CuPy, OpenCL, ...) that behaves like ``numpy.ndarray``."""

    __slots__ = ("_device_data", "_pending", "_backend", "_base", "_readonly", "_views", "__weakref__")
    __array_priority__ = 100
    __hash__ = None  # type: ignore[assignment]  # mutable, like ndarray

    def __init__(self, native: Any, backend: Any, base: DeviceArray | None = None, readonly: bool = False) -> None:
        self._device_data = native
        self._pending = None  # a recorded, not yet computed, elementwise expression
        self._backend = backend
        self._base = base  # the device array whose memory this one views (NumPy's ``base``), or None
        self._readonly = readonly  # writes raise NumPy's ValueError
        # (native, {basic key: the backend's view of it}): views a loop body makes again and again
        # (``_dispatch.basic_getitem``), kept while the array holds that native
        self._views: tuple[Any, dict[Any, Any]] | None = None

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # noqa: D105
        """``numpy.ndarray``, so ``isinstance(x, np.ndarray)`` holds for device arrays (in user code,
        NumPy's testing functions and libraries) as it does for NumPy's; ``type(x)`` is still
        DeviceArray, and NumPy's C code, which checks types, never mistakes it for a host array."""
        return numpy.ndarray

    @classmethod
    def pending(cls, expression: Any, backend: Any) -> DeviceArray:
        """A device array whose value is the recorded ``expression`` (computed on first need)."""
        array = cls.__new__(cls)
        array._device_data = None
        array._pending = expression
        array._backend = backend
        array._base = None
        array._readonly = False
        array._views = None
        return array

    @property
    def _native(self) -> Any:
        """The backend array, computing a pending expression first."""
        if self._device_data is None:
            _core.materialize(self)
        return self._device_data

    @_native.setter
    def _native(self, native: Any) -> None:
        old = self._device_data
        if old is not None and old is not native:
            # (recorded work reads a leaf's native when it runs: it must run on the one it was
            # recorded with, before the array holds another -- ``a.shape = ...``, ``a.resize``)
            _core.before_write(self._backend, old)
        self._device_data = native
        self._pending = None
        self._views = None  # (they view the old native: nothing keeps it alive)

    # -- NumPy protocols ----------------------------------------------------------------------
    def __array_ufunc__(self, ufunc: numpy.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if method == "__call__" and not kwargs and _DIRECT_OPERANDS.issuperset(map(type, inputs)):
            frame = sys._getframe(1)
            if len(inputs) == 1 and inputs[0] is self and _code_kind.get(id(frame.f_code)) == 2:  # np.sqrt(x)
                state = _state.get() or _config._default
                if state.fusion and state.backend is not None:
                    result = _core.record_unary(ufunc, self, frame, _core.loops)
                    if result is not None:
                        return result
            elif len(inputs) == 2 and (inputs[0] is self or inputs[1] is self) and \
                    _code_kind.get(id(frame.f_code)) == 2:
                # np.add(x, y), and a NumPy scalar's operator (``c * x`` of a float64 c: NumPy's
                # scalar calls the ufunc, which calls here)
                reflected = inputs[0] is not self
                other = inputs[0] if reflected else inputs[1]
                state = _state.get() or _config._default
                if type(other) in _RECORDED_OPERANDS and state.fusion and state.backend is not None:
                    result = _core.record_binary(ufunc, self, other, reflected, frame, _core.loops)
                    if result is not None:
                        return result
            result = _direct_call(ufunc, inputs, frame)
            if result is not _LIBRARY:
                return result
            return _core.on_host(ufunc, ufunc, inputs, kwargs)
        for x in (inputs + kwargs.get("out", ()) + (kwargs.get("where"),)) if kwargs else inputs:
            if type(x) not in _OWN_TYPES and hasattr(x, "__array_ufunc__"):
                override = type(x).__array_ufunc__
                if override is not None and not isinstance(x, (DeviceArray, numpy.ndarray, numpy.generic)):
                    return NotImplemented
                if type(x) is not DeviceArray and isinstance(x, numpy.ndarray) and \
                        override is not numpy.ndarray.__array_ufunc__:
                    return NotImplemented  # an ndarray subclass with its own override decides first (NEP 13)
        frame, library = _caller()
        if library:
            return _core.on_host(ufunc, getattr(ufunc, method) if method != "__call__" else ufunc, inputs, kwargs)
        return _core.ufunc(ufunc, method, inputs, kwargs, frame)

    def __array_function__(self, func: Any, types: tuple[type, ...], args: tuple[Any, ...],
                           kwargs: dict[str, Any]) -> Any:
        if not all(issubclass(t, (DeviceArray, numpy.ndarray)) for t in types):
            return NotImplemented
        if _called_from_library():
            return _core.on_host(func, func, args, kwargs)
        return _function(func, args, kwargs)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> numpy.ndarray:
        if copy is False:
            raise ValueError("an npgpu device array can't be viewed as a host array without a copy (copy=False)")
        if tracked:  # (residency: NumPy needed its values: mandelbrot2's ``Xi[I]`` of a device mask)
            moved: list[float] = []
            host = _core.to_host(self, None, moved)
            _core.charge_conversion(self, moved[0] if moved else None)
        else:
            host = _core.to_host(self)
        return host if dtype is None else host.astype(dtype, copy=False)

    def __array_namespace__(self, *, api_version: str | None = None) -> Any:
        return _core.namespace

    def __dlpack__(self, **kwargs: Any) -> Any:
        """DLPack: the native array's own capsule (CuPy: device memory, zero-copy); where the
        backend's arrays have none (OpenCL), a host copy's (kDLCPU), as ``copy=None`` allows."""
        if self._backend.dlpack_native:
            _masks.handed_out()  # (the consumer may write this memory)
            _bounds.handed_out()
            _scalar_reads.handed_out()
            return self._native.__dlpack__(**kwargs)
        if kwargs.get("copy") is False:
            raise BufferError(f"npgpu's {self._backend.name} arrays can't be exported through DLPack without a copy "
                              "(copy=False): they export a host copy")
        device = kwargs.get("dl_device")
        if device is not None and tuple(device) != (1, 0):
            raise BufferError(f"npgpu's {self._backend.name} arrays export DLPack to the CPU (1, 0) only, not {device}")
        return _core.to_host(self).__dlpack__(**{k: v for k, v in kwargs.items() if k not in ("copy", "dl_device")})

    def __dlpack_device__(self) -> tuple[int, int]:
        if self._backend.dlpack_native:
            return self._native.__dlpack_device__()
        return (1, 0)  # kDLCPU: the host copy __dlpack__ exports

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """CUDA's array interface of an array in CUDA memory (the CuPy backend's); other backends'
        arrays have none (an AttributeError, so ``hasattr`` says no)."""
        if not self._backend.cuda_memory:
            raise AttributeError(f"npgpu's {self._backend.name} arrays are not in CUDA memory: "
                                 "no __cuda_array_interface__")
        _masks.handed_out()  # (the consumer may write this memory)
        _bounds.handed_out()
        _scalar_reads.handed_out()
        return self._native.__cuda_array_interface__

    # -- attributes ---------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        pending = self._pending  # (read once: another thread may compute the array meanwhile)
        if pending is not None:
            return pending.shape
        return tuple(self._device_data.shape)

    @shape.setter
    def shape(self, value: Any) -> None:
        warned = _SHAPE_SET_WARNING[0] if _SHAPE_SET_WARNING else _shape_set_warning()
        if warned is not None:  # (NumPy 2.5 deprecates setting shape: its warning, as NumPy gives it)
            warnings.warn(str(warned.message), warned.category, stacklevel=2)
        try:  # (NumPy sets a shape in place only as a view: a copy would leave the data it views)
            reshaped = self.reshape(value, copy=False)
        except ValueError as error:
            if "copy" not in str(error):
                raise
            raise AttributeError("Incompatible shape for in-place modification. Use `.reshape()` to make a "
                                 "copy with the desired shape.") from None
        self._native = reshaped._native

    @property
    def dtype(self) -> numpy.dtype:
        pending = self._pending
        if pending is not None:
            return pending.dtype
        return self._device_data.dtype

    @dtype.setter
    def dtype(self, value: Any) -> None:
        """``a.dtype = t``: the same memory read as ``t`` in place, as ``a.view(t)`` reads it (NumPy's
        rules and errors: the last axis contiguous when the item size changes)."""
        viewed = self.view(value)
        if type(viewed) is not DeviceArray or viewed._backend is not self._backend:
            raise TypeError(f"npgpu: the {self._backend.name} backend holds no arrays of {numpy.dtype(value)}, so "
                            "a device array can't be read as one in place (numpy.asarray(a).view(t): a host copy)")
        self._native = viewed._native

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def strides(self) -> tuple[int, ...]:
        return tuple(self._native.strides)

    @property
    def flags(self) -> _Flags:
        return _Flags(self)

    @property
    def base(self) -> DeviceArray | None:
        """The device array whose memory this one views (None when it owns its memory)."""
        return self._base

    def setflags(self, write: Any = None, align: Any = None, uic: Any = None) -> None:
        """Set the WRITEABLE flag, as ``ndarray.setflags`` does (device memory is always aligned)."""
        if uic is not None:
            raise ValueError("cannot set WRITEBACKIFCOPY flag to True")
        if align is not None and not align:
            raise ValueError("npgpu device arrays are always aligned; ALIGNED can't be cleared")
        if write is None:
            return
        if write and self._readonly and self._base is not None and self._base._readonly:
            raise ValueError("cannot set WRITEABLE flag to True of this array")
        self._readonly = not write

    @property
    def T(self) -> DeviceArray:
        return _function(numpy.transpose, (self,), {})

    @property
    def mT(self) -> DeviceArray:
        if self.ndim < 2:  # (NumPy's error, not swapaxes')
            raise ValueError("matrix transpose with ndim < 2 is undefined")
        return _function(numpy.swapaxes, (self, -1, -2), {})

    @property
    def real(self) -> DeviceArray:
        return _function(numpy.real, (self,), {})

    @real.setter
    def real(self, value: Any) -> None:
        self.real[...] = value

    @property
    def imag(self) -> DeviceArray:
        return _function(numpy.imag, (self,), {})

    @imag.setter
    def imag(self, value: Any) -> None:
        self.imag[...] = value

    @property
    def device(self) -> str:
        return self._backend.name

    # -- shape --------------------------------------------------------------------------------
    def reshape(self, *shape: Any, order: str = "C", copy: bool | None = None) -> DeviceArray:
        kwargs: dict[str, Any] = {"order": order}
        if copy is not None:
            kwargs["copy"] = copy
        return _function(numpy.reshape, (self, _shape_arg(shape)), kwargs)

    def ravel(self, order: str = "C") -> DeviceArray:
        return _function(numpy.ravel, (self,), {"order": order})

    def flatten(self, order: str = "C") -> DeviceArray:
        flat = _function(numpy.ravel, (self,), {"order": order})
        return _function(numpy.copy, (flat,), {}) if isinstance(flat, DeviceArray) else flat

    def transpose(self, *axes: Any) -> DeviceArray:
        if not axes or (len(axes) == 1 and axes[0] is None):  # (by identity: axes may be an array)
            return _function(numpy.transpose, (self,), {})
        return _function(numpy.transpose, (self, _shape_arg(axes)), {})

    def swapaxes(self, axis1: int, axis2: int) -> DeviceArray:
        return _function(numpy.swapaxes, (self, axis1, axis2), {})

    def squeeze(self, axis: Any = None) -> DeviceArray:
        return _function(numpy.squeeze, (self, axis), {})

    # -- conversion ---------------------------------------------------------------------------
    def astype(self, dtype: Any, order: str = "K", casting: str = "unsafe", subok: bool = True,
               copy: bool = True) -> DeviceArray:
        # (only the arguments given other than NumPy's defaults: a fallback's reason names what was asked)
        given = {name: value for name, value, default in (("order", order, "K"), ("casting", casting, "unsafe"),
                                                          ("copy", copy, True)) if value is not default}
        return _function(numpy.ndarray.astype, (self, dtype), given)

    def copy(self, order: str = "C") -> DeviceArray:
        return _function(numpy.copy, (self,), {"order": order})

    def view(self, *args: Any, **kwargs: Any) -> DeviceArray:
        return _function(numpy.ndarray.view, (self, *args), kwargs)

    def fill(self, value: Any) -> None:
        _function(numpy.ndarray.fill, (self, value), {})

    def get(self) -> numpy.ndarray:
        """A host copy (CuPy's spelling; ``numpy.asarray(x)`` does the same)."""
        return self.__array__()

    def item(self, *args: Any) -> Any:
        if not args:
            if self.size != 1:
                raise ValueError("can only convert an array of size 1 to a Python scalar")
            return self.__array__().item()
        if len(args) == 1 and isinstance(args[0], (int, numpy.integer)):
            index = operator.index(args[0])
            if not -self.size <= index < self.size:
                raise IndexError(f"index {index} is out of bounds for size {self.size}")
            key = numpy.unravel_index(index % self.size, self.shape)
        else:
            key = args[0] if len(args) == 1 else args
        return numpy.asarray(self[tuple(key)]).item()

    def tolist(self) -> Any:
        return self.__array__().tolist()

    def tobytes(self, order: str = "C") -> bytes:
        return self.__array__().tobytes(order)

    def _host_proxy(self) -> numpy.ndarray:
        # A zero-cost host array of the same shape and dtype: lets NumPy produce its own error
        # (kept per shape and dtype: broadcast_to takes 10 us, and residency asks at every write).
        key = (self.shape, self.dtype)
        proxy = _PROXIES.get(key)
        if proxy is None:
            proxy = numpy.broadcast_to(numpy.zeros((), self.dtype), self.shape)
            if len(_PROXIES) >= 256:
                _PROXIES.clear()
            _PROXIES[key] = proxy
        return proxy

    def _scalar_value(self) -> numpy.ndarray:
        return self.__array__() if self.size == 1 else self._host_proxy()

    def __float__(self) -> float:
        return float(self._scalar_value())

    def __int__(self) -> int:
        return int(self._scalar_value())

    def __complex__(self) -> complex:
        return complex(self._scalar_value())

    def __bool__(self) -> bool:
        return bool(self._scalar_value())

    def __index__(self) -> int:
        if self.ndim != 0 or self.dtype.kind not in "iub":
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        return operator.index(self.__array__()[()])

    # -- containers ---------------------------------------------------------------------------
    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self) -> Any:
        # Raise here, not lazily inside a generator: `iter(x)` itself must fail for 0-d arrays,
        # as it does for NumPy's (libraries such as matplotlib probe with it).
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        if _called_from_library():  # a library gets host arrays: one download, not one call per item
            return iter(_core.to_host(self))
        return (self[i] for i in range(self.shape[0]))

    def __getitem__(self, key: Any) -> Any:
        if self._pending is None:  # (the short road for views, a[1:, :-1], a[i], a[:, None], and masks: a[m])
            if tracked:  # (residency: what reads of an entry's array cost, _residency.py; an element
                # served from a copy read ahead is charged the time it took)
                started = _perf_counter()
                result = _core.getitem(self, key, sys._getframe(1))
                if result is not NotImplemented:
                    _core.charge_read(self, key, result, _perf_counter() - started)
                    return result
            else:
                result = _core.getitem(self, key, sys._getframe(1))
                if result is not NotImplemented:
                    return result
        result = _function(numpy.ndarray.__getitem__, (self, key), {})
        if tracked:
            _core.charge_read(self, key, result)
        return result

    def __setitem__(self, key: Any, value: Any) -> None:
        if (type(value) is DeviceArray or type(value) in _SCALAR_VALUES) and not self._readonly and \
                self._pending is None:
            # (the short roads: a[1:] -= x writes a[1:] back onto itself; y[:, j] = a * x[:, j] + b
            # can compute its expression straight into y[:, j]; NumPy elides temporaries alike;
            # a[i, j] = 1.5 fills the view)
            temporary = type(value) is DeviceArray and sys.getrefcount(value) <= _TEMPORARY_REFS
            if _core.setitem(self, key, value, sys._getframe(1), temporary) is not NotImplemented:
                if tracked:
                    _core.charge_write(self, key, value)
                return
        _function(numpy.ndarray.__setitem__, (self, key, value), {})
        if tracked:
            _core.charge_write(self, key, value)

    def __contains__(self, value: Any) -> bool:
        return bool((self == value).any())

    # -- reductions and friends (same argument order as the NumPy functions) -------------------
    def sum(self, *args: Any, **kwargs: Any) -> Any:
        return _function(numpy.sum, (self, *args), kwargs)

    def prod(self, *args: Any, **kwargs: Any) -> Any:
        return _function(numpy.prod, (self, *args), kwargs)

    def mean(self, *args: Any, **kwargs: Any) -> Any:
        return _function(numpy.mean, (self, *args), kwargs)

    def std(self, *args: Any, **kwargs: Any) -> Any:
        return _function(numpy.std, (self, *args), kwargs)

    def var(self, *args: Any, **kwargs: Any) -> Any:
        return _function(numpy.var, (self, *args), kwargs)

    def min(self, *args: Any, **kwargs: Any) -> Any:
        return _function(numpy.min, (self, *args), kwargs)

    def max(self, *args: Any, **kwargs: Any) -> Any:
        return _function(numpy.max, (self, *args), kwargs)

    def argmin(self, *args: Any, **kwargs: Any) -> Any:
        return _function(numpy.argmin, (self, *args), kwargs)

    def argmax(self, *args: Any, **kwargs: Any) -> Any:
        return _function(numpy.argmax, (self, *args), kwargs)

    def cumsum(self, *args: Any, **kwargs: Any) -> Any:
        return _function(numpy.cumsum, (self, *args), kwargs)

    def cumprod(self, *args: Any, **kwargs: Any) -> Any:
        return _function(numpy.cumprod, (self, *args), kwargs)

    def any(self, *args: Any, **kwargs: Any) -> Any:
        return _function(numpy.any, (self, *args), kwargs)

    def all(self, *args: Any, **kwargs: Any) -> Any:
        return _function(numpy.all, (self, *args), kwargs)

    def dot(self, b: Any, out: Any = None) -> Any:
        return _function(numpy.dot, (self, b), {} if out is None else {"out": out})

    def clip(self, min: Any = None, max: Any = None, out: Any = None, **kwargs: Any) -> Any:
        # (ndarray.clip's signature: one bound alone is a bound, a.clip(2); numpy.clip needs both)
        return _function(numpy.clip, (self, min, max), kwargs if out is None else {**kwargs, "out": out})

    def round(self, decimals: int = 0, out: Any = None) -> Any:
        return _function(numpy.round, (self, decimals), {} if out is None else {"out": out})

    def conj(self) -> Any:
        return _function(numpy.conj, (self,), {})

    conjugate = conj

    def trace(self, *args: Any, **kwargs: Any) -> Any:
        return _function(numpy.trace, (self, *args), kwargs)

    def diagonal(self, *args: Any, **kwargs: Any) -> Any:
        return _function(numpy.diagonal, (self, *args), kwargs)

    def repeat(self, *args: Any, **kwargs: Any) -> Any:
        return _function(numpy.repeat, (self, *args), kwargs)

    def take(self, *args: Any, **kwargs: Any) -> Any:
        return _function(numpy.take, (self, *args), kwargs)

    def sort(self, axis: int = -1, kind: Any = None, order: Any = None) -> None:
        kwargs = {k: v for k, v in (("kind", kind), ("order", order)) if v is not None}
        _function(numpy.ndarray.sort, (self, axis), kwargs)

    def argsort(self, *args: Any, **kwargs: Any) -> Any:
        return _function(numpy.argsort, (self, *args), kwargs)

    def nonzero(self) -> tuple[Any, ...]:
        return _function(numpy.nonzero, (self,), {})

    def argpartition(self, kth: Any, axis: int = -1, kind: str = "introselect", order: Any = None) -> Any:
        return _function(numpy.argpartition, (self, kth), _given(axis=axis, kind=kind, order=order))

    def partition(self, kth: Any, axis: int = -1, kind: str = "introselect", order: Any = None) -> None:
        """Partition in place (``np.partition`` gives a copy; its result is written back)."""
        if self._readonly:
            raise ValueError("partition array is read-only")
        self[...] = _function(numpy.partition, (self, kth), _given(axis=axis, kind=kind, order=order))

    def choose(self, *choices: Any, out: Any = None, mode: str = "raise") -> Any:
        """``a.choose(choices)``, or as ndarray's method also takes them, ``a.choose(c0, c1, ...)``
        (more than one argument by position: each a choice; out and mode by keyword)."""
        if not choices:
            raise TypeError("choose() missing required argument 'choices' (pos 1)")
        return _function(numpy.choose, (self, choices[0] if len(choices) == 1 else choices), _given(out=out, mode=mode))

    def compress(self, condition: Any, axis: Any = None, out: Any = None) -> Any:
        return _function(numpy.compress, (condition, self), _given(axis=axis, out=out))

    def put(self, indices: Any, values: Any, mode: str = "raise") -> None:
        _function(numpy.put, (self, indices, values), _given(mode=mode))

    def searchsorted(self, v: Any, side: str = "left", sorter: Any = None) -> Any:
        return _function(numpy.searchsorted, (self, v), _given(side=side, sorter=sorter))

    def byteswap(self, inplace: bool = False) -> DeviceArray:
        swapped = _function(numpy.ndarray.byteswap, (self,), {})
        if not inplace:
            return swapped
        self[...] = swapped
        return self

    def getfield(self, dtype: Any, offset: int = 0) -> Any:
        return _function(numpy.ndarray.getfield, (self, dtype, offset), {})

    def setfield(self, val: Any, dtype: Any, offset: int = 0) -> None:
        _function(numpy.ndarray.setfield, (self, val, dtype, offset), {})

    def resize(self, *new_shape: Any, refcheck: bool = True) -> None:
        """Change shape and size in place, as ``ndarray.resize``: new elements are zero. No shape
        (``a.resize()``, ``a.resize(None)``) changes nothing, as NumPy's (a 0-d array before)."""
        if not new_shape or new_shape == (None,):
            return
        shape = _shape_arg(new_shape)
        shape = (shape,) if isinstance(shape, (int, numpy.integer)) else tuple(shape)
        if self._base is not None:
            raise ValueError("cannot resize this array: it does not own its data")
        if self._readonly:
            raise ValueError("cannot resize this array: it is read-only")
        flat = self.reshape(-1)
        grown = _function(numpy.zeros, (tuple(int(n) for n in shape),), {"dtype": self.dtype})
        grown_flat = grown.reshape(-1)
        n = min(grown_flat.size, flat.size)
        if n:
            grown_flat[:n] = flat[:n]
        self._native = grown._native

    @property
    def flat(self) -> _FlatIter:
        """A flat (C-order) iterator over the array: index, slice, assign and iterate it."""
        return _FlatIter(self)

    @flat.setter
    def flat(self, value: Any) -> None:
        _FlatIter(self)[...] = value

    def to_device(self, device: Any, /, *, stream: Any = None) -> Any:
        """The array API's move: ``"cpu"`` gives a host copy; this array's own device gives itself."""
        if stream is not None:
            raise ValueError("npgpu does not take a stream in to_device")
        if device == "cpu":
            return self.__array__()
        if device == self.device:
            return self
        raise ValueError(f"unknown device {device!r}: npgpu arrays are on {self.device!r} or 'cpu'")

    def dumps(self) -> bytes:
        return pickle.dumps(self, protocol=2)

    def dump(self, file: Any) -> None:
        if isinstance(file, (str, os.PathLike)):
            with open(file, "wb") as f:
                pickle.dump(self, f, protocol=2)
        else:
            pickle.dump(self, file, protocol=2)

    def tofile(self, fid: Any, sep: str = "", format: str = "%s") -> None:  # noqa: A002  (NumPy's name)
        self.__array__().tofile(fid, sep, format)

    def __delitem__(self, key: Any) -> None:
        raise ValueError("cannot delete array elements")

    # -- printing, copying, pickling ----------------------------------------------------------
    def __repr__(self) -> str:
        return repr(self.__array__())

    def __str__(self) -> str:
        return str(self.__array__())

    def __format__(self, spec: str) -> str:
        host = self.__array__()
        return format(host[()] if self.ndim == 0 else host, spec)

    def __copy__(self) -> DeviceArray:
        return self.copy(order="K")  # (NumPy's copy.copy keeps the layout, as its a.copy() does not)

    def __deepcopy__(self, memo: dict[int, Any]) -> DeviceArray:
        return self.copy(order="K")

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return _rebuild, (self.__array__(), self._backend.name)


_OWN_TYPES = _OWN_TYPES | {DeviceArray}


def _references_of_a_temporary() -> int:
    """sys.getrefcount of a value that only the statement ``a[k] = <expression>`` holds, as
    DeviceArray.__setitem__ sees it (the interpreter's stack, the argument, getrefcount's own)."""
    seen: list[int] = []

    class Probe:
        def __setitem__(self, key: Any, value: Any) -> None:
            seen.append(sys.getrefcount(value))

    Probe()[0] = object()
    return seen[0]


_TEMPORARY_REFS = _references_of_a_temporary()
#: (shape, dtype) -> a read-only host array of zero strides (DeviceArray._host_proxy)
_PROXIES: dict[tuple[Any, ...], numpy.ndarray] = {}

# Operands an operator can hand straight to the dispatcher: NumPy would pass exactly these to
# __array_ufunc__, so skipping its override protocol (and the mixin) changes nothing but the
# cost, about a microsecond of every recorded call. Anything else takes the mixin's path.
#: NumPy scalars the recorder's short road takes as an operand (as themselves: NumPy's scalars are
#: strong, NEP 50); deriche's and gemver's constants are NumPy float64s (``np.exp(-alpha)``)
RECORDED_SCALARS = frozenset({numpy.float64, numpy.float32, numpy.int64, numpy.int32, numpy.bool_})
_DIRECT_OPERANDS = frozenset({DeviceArray, int, float, complex, bool}) | RECORDED_SCALARS
#: operand types of ``record_binary``: device arrays, Python floats and RECORDED_SCALARS
_RECORDED_OPERANDS = frozenset({DeviceArray, float}) | RECORDED_SCALARS
#: the values ``a[key] = value`` writes by a fill of the view (NumPy converts them: _dispatch.basic_setitem)
_SCALAR_VALUES = (_DIRECT_OPERANDS - {DeviceArray}) | {numpy.complex128}


_LIBRARY = object()  # _direct_call's answer when a library made the call


def _direct_call(uf: numpy.ufunc, inputs: tuple[Any, ...], frame: Any) -> Any:
    """``uf(*inputs)`` of device arrays and plain scalars, called at ``frame``: recorded for
    fusion, or run, at once. _LIBRARY when library code called it (it gets NumPy's answer)."""
    if _code_kind.get(id(frame.f_code)) != 2:  # not known user code: find the user's frame
        frame, library = _caller(frame)
        if library:
            return _LIBRARY
    state = _state.get() or _config._default
    if state.backend is not None:  # the common case (_fast_call declines gufuncs and odd arities)
        result = _core.fast_call(uf, inputs, state.fusion, frame)
        if result is not NotImplemented:
            return result
    return _core.ufunc(uf, "__call__", inputs, {}, frame)


_NoLoop = numpy._core._exceptions._UFuncNoLoopError


def _failed_comparison(array: DeviceArray, other: Any, unequal: bool) -> Any:
    """NumPy's answer to == and != without a loop: all False (all True for !=), broadcast."""
    shape = numpy.broadcast_shapes(array.shape, numpy.shape(other) if not isinstance(other, str) else ())
    if not shape:
        return numpy.bool_(unequal)
    return _function(numpy.full, (shape, unequal), {"dtype": bool})


#: the operator Python tries on the other operand after ours: ``a < b`` then ``b > a``
_MIRRORED = {"__lt__": "__gt__", "__gt__": "__lt__", "__le__": "__ge__", "__ge__": "__le__", "__eq__": "__eq__",
             "__ne__": "__ne__"}


def _defers_to(other: Any, mirrored: str) -> bool:
    """Whether ndarray's operator would return NotImplemented for ``other`` (numpy/_core/src/
    multiarray/binop_override.h), so that Python asks ``other``: an ndarray subclass that defines
    the mirrored operator itself (Python asks it first against an ndarray, not against a device
    array), or an object without ``__array_ufunc__`` whose ``__array_priority__`` is above
    ndarray's (0). An ``__array_ufunc__ = None`` is the mixin's to honour."""
    t = type(other)
    if t is numpy.ndarray or isinstance(other, numpy.generic):
        return False
    if isinstance(other, numpy.ndarray):
        return getattr(t, mirrored, None) is not getattr(numpy.ndarray, mirrored, None)
    if hasattr(t, "__array_ufunc__"):
        return False
    try:
        return float(getattr(other, "__array_priority__", -1e6)) > 0.0
    except (TypeError, ValueError):
        return False


def _direct_binary(uf: numpy.ufunc, name: str) -> Any:
    slow = getattr(NDArrayOperatorsMixin, name)
    reflected = name.startswith("__r")
    mirrored = _MIRRORED.get(name, name.replace("__", "__r", 1))

    def operator_method(self: DeviceArray, other: Any) -> Any:
        t = type(other)
        if t in _DIRECT_OPERANDS:
            frame = sys._getframe(1)
            if t in _RECORDED_OPERANDS and _code_kind.get(id(frame.f_code)) == 2:  # the commonest call
                state = _state.get() or _config._default
                if state.fusion and state.backend is not None:
                    result = _core.record_binary(uf, self, other, reflected, frame, _core.loops)
                    if result is not None:
                        return result
            result = _direct_call(uf, (other, self) if reflected else (self, other), frame)
            if result is not _LIBRARY:
                return result
        elif not reflected and _defers_to(other, mirrored):
            return NotImplemented
        if uf is numpy.equal or uf is numpy.not_equal:
            try:
                return slow(self, other)
            except _NoLoop:  # ndarray's == and != : no loop (a number and a string) means all unequal
                return _failed_comparison(self, other, uf is numpy.not_equal)
        return slow(self, other)

    operator_method.__name__ = name
    operator_method.__qualname__ = f"DeviceArray.{name}"
    operator_method._npgpu_operator = (0, uf)  # type: ignore[attr-defined]  (FastMethod kind, ufunc)
    return operator_method


def _direct_unary(uf: numpy.ufunc, name: str) -> Any:
    slow = getattr(NDArrayOperatorsMixin, name)

    def operator_method(self: DeviceArray) -> Any:
        frame = sys._getframe(1)
        if _code_kind.get(id(frame.f_code)) == 2:
            state = _state.get() or _config._default
            if state.fusion and state.backend is not None:
                result = _core.record_unary(uf, self, frame, _core.loops)
                if result is not None:
                    return result
        result = _direct_call(uf, (self,), frame)
        return slow(self) if result is _LIBRARY else result

    operator_method.__name__ = name
    operator_method.__qualname__ = f"DeviceArray.{name}"
    operator_method._npgpu_operator = (1, uf)  # type: ignore[attr-defined]
    return operator_method


for _name, _uf in (("add", numpy.add), ("sub", numpy.subtract), ("mul", numpy.multiply),
                   ("truediv", numpy.true_divide), ("floordiv", numpy.floor_divide), ("mod", numpy.remainder),
                   ("pow", numpy.power), ("and", numpy.bitwise_and), ("or", numpy.bitwise_or),
                   ("xor", numpy.bitwise_xor)):
    setattr(DeviceArray, f"__{_name}__", _direct_binary(_uf, f"__{_name}__"))
    setattr(DeviceArray, f"__r{_name}__", _direct_binary(_uf, f"__r{_name}__"))
# ndarray's ``**`` takes a short road NumPy's ``power`` doesn't (numpy/_core/src/multiarray/number.c,
# fast_scalar_power): a float or complex array to an exact Python int -1 or 2 or float 0.5 is
# reciprocal, square or sqrt, whose rounding (and signed zeros, infinities) differ from power's.
_FAST_POWER = {(int, -1): numpy.reciprocal, (int, 2): numpy.square, (float, 0.5): numpy.sqrt}
_generic_pow = DeviceArray.__pow__


def _fast_power_ufunc(array: DeviceArray, exponent: Any) -> Any:
    t = type(exponent)
    if t is int or t is float:
        uf = _FAST_POWER.get((t, exponent))
        if uf is not None and array.dtype.kind in "fc":
            return uf
    return None


def __pow__(self: DeviceArray, other: Any) -> Any:  # noqa: N807  (a method, defined for ndarray's short road)
    uf = _fast_power_ufunc(self, other)
    if uf is None:
        return _generic_pow(self, other)
    return uf(self)


def __ipow__(self: DeviceArray, other: Any) -> Any:  # noqa: N807
    uf = _fast_power_ufunc(self, other)
    if uf is None:
        return numpy.power(self, other, out=(self,))
    return uf(self, out=(self,))


DeviceArray.__pow__ = __pow__  # type: ignore[method-assign]
DeviceArray.__ipow__ = __ipow__  # type: ignore[method-assign]
_mixin_matmul = NDArrayOperatorsMixin.__matmul__


def __matmul__(self: DeviceArray, other: Any) -> Any:  # noqa: N807
    """``a @ b`` of two device arrays straight to the dispatcher's call, from the caller's frame:
    the mixin's road (NumPy's override protocol into ``__array_ufunc__``, then a walk from the
    mixin's frame to the user's) took about 1.5 us of a correlation step's product (emulated,
    kernels stubbed: 15.0-15.9 us a product, 13.4-13.9 without it). Anything else takes that road."""
    if type(other) is DeviceArray:
        result = _direct_call(numpy.matmul, (self, other), sys._getframe(1))
        if result is not _LIBRARY:
            return result
    return _mixin_matmul(self, other)


DeviceArray.__matmul__ = __matmul__  # type: ignore[method-assign]


def _references_of_an_operand() -> int:
    """sys.getrefcount of a value that only the statement ``a -= <expression>`` holds, as an
    in-place operator sees it (the interpreter's stack, the argument, getrefcount's own)."""
    seen: list[int] = []

    class Probe:
        def __isub__(self, other: Any) -> Any:
            seen.append(sys.getrefcount(other))
            return self

    probe = Probe()
    probe -= object()
    return seen[0]


_OPERAND_REFS = _references_of_an_operand()


def _direct_inplace(uf: numpy.ufunc, name: str) -> Any:
    """``a -= b`` of a device array and a device array or number from user code, straight to the
    dispatcher's road into ``a`` (what ``uf(a, b, out=(a,))`` takes after NumPy's ufunc call and
    ``__array_ufunc__``), knowing whether only the statement holds ``b``: then its kernel computes
    ``b`` too, also where ``b`` reads ``a`` as that same view (``h[1:] -= 0.5 * h[1:]``). Anything
    else (another operand type, library code, a ResidentArray, a write the road declines) takes
    the mixin's call, which raises NumPy's errors."""
    slow = getattr(NDArrayOperatorsMixin, name)

    def operator_method(self: DeviceArray, other: Any) -> Any:
        t = type(other)
        if type(self) is DeviceArray and t in _DIRECT_OPERANDS:
            frame = sys._getframe(1)
            if _code_kind.get(id(frame.f_code)) == 2:
                temporary = t is DeviceArray and sys.getrefcount(other) <= _OPERAND_REFS
                if _core.inplace(uf, self, other, frame, temporary):
                    return self
        return slow(self, other)

    operator_method.__name__ = name
    operator_method.__qualname__ = f"DeviceArray.{name}"
    return operator_method


for _name, _uf in (("add", numpy.add), ("sub", numpy.subtract), ("mul", numpy.multiply),
                   ("truediv", numpy.true_divide)):
    setattr(DeviceArray, f"__i{_name}__", _direct_inplace(_uf, f"__i{_name}__"))

for _name, _uf in (("lt", numpy.less), ("le", numpy.less_equal), ("gt", numpy.greater),
                   ("ge", numpy.greater_equal), ("eq", numpy.equal), ("ne", numpy.not_equal)):
    setattr(DeviceArray, f"__{_name}__", _direct_binary(_uf, f"__{_name}__"))
for _name, _uf in (("neg", numpy.negative), ("pos", numpy.positive), ("abs", numpy.absolute),
                   ("invert", numpy.invert)):
    setattr(DeviceArray, f"__{_name}__", _direct_unary(_uf, f"__{_name}__"))

# The Python methods that npgpu._speedups.FastMethod can front: name -> (method, kind, ufunc).
_PYTHON_METHODS: dict[str, tuple[Any, int, Any]] = {"__array_ufunc__": (DeviceArray.__array_ufunc__, 2, None),
                                                    # (kind 3: a view the array keeps, _dispatch.basic_getitem's)
                                                    "__getitem__": (DeviceArray.__getitem__, 3, None),
                                                    # (kind 4: that view written back onto itself)
                                                    "__setitem__": (DeviceArray.__setitem__, 4, None)}
for _name in [n for n, m in vars(DeviceArray).items() if getattr(m, "_npgpu_operator", None)]:
    _method = vars(DeviceArray)[_name]
    _PYTHON_METHODS[_name] = (_method, _method._npgpu_operator[0], _method._npgpu_operator[1])


def use_native_methods(speedups: Any) -> None:
    """Front the operators and __array_ufunc__ with the C short road (``speedups``: the
    extension module), or put the Python methods back (None)."""
    for name, (method, kind, uf) in _PYTHON_METHODS.items():
        if speedups is None:
            setattr(DeviceArray, name, method)
            continue
        fast = speedups.FastMethod(kind, uf, name.startswith("__r"), method)
        fast.__name__, fast.__qualname__, fast.__doc__ = method.__name__, method.__qualname__, method.__doc__
        fast.__wrapped__ = method
        setattr(DeviceArray, name, fast)


def _rebuild(host: numpy.ndarray, backend_name: str, scalar: bool = False) -> Any:
    # (``scalar``: pickles made before 0-d results became NumPy scalars; ignored)
    """Unpickle: back onto the same backend when it can run here, else a NumPy array."""
    if unavailable_reason(backend_name) is not None:
        return host
    backend = get_backend(backend_name)
    return DeviceArray(backend.from_host_in_layout(host), backend)  # (a Fortran-ordered array stays so)


# -- arrays whose data moved to the host (npgpu/_residency.py) ---------------------------------

_data_of = vars(DeviceArray)["_device_data"].__get__  # (the slot itself, past ResidentArray's __getattribute__)


def _host_of(x: Any) -> Any:
    """A ResidentArray's host array (inside lists, tuples and dicts too); anything else as it is."""
    t = type(x)
    if t is ResidentArray:
        return _data_of(x)
    # (the same container where nothing in it changed: the dispatcher's "hosted is not args" means
    # a ResidentArray was found, and np.array([d, 2.0]) of a device array d must stay the device's)
    if t is tuple or t is list:
        for item in x:  # (no generator: indexing keys come this way on every statement)
            if type(item) in _HOLDERS:
                items = [_host_of(item) for item in x]
                return t(items) if any(new is not old for new, old in zip(items, x)) else x
        return x
    if t is dict:
        for value in x.values():
            if type(value) in _HOLDERS:
                values = {k: _host_of(v) for k, v in x.items()}
                return values if any(values[k] is not v for k, v in x.items()) else x
        return x
    return x


class ResidentArray(DeviceArray):
    """A device array whose data residency moved to the host: the object the program holds, in
    front of its host array (``_device_data``, a NumPy array), which does all its work: methods,
    attributes, operators, indexing (views of it are NumPy arrays), NumPy's protocols. With device
    arrays, it is host data, as a NumPy array is."""

    __slots__ = ()

    def __getattribute__(self, name: str) -> Any:
        if name[0] == "_":
            return object.__getattribute__(self, name)
        return getattr(_data_of(self), name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name[0] == "_":
            object.__setattr__(self, name, value)
        else:
            setattr(_data_of(self), name, value)

    def __getitem__(self, key: Any) -> Any:
        return _data_of(self)[_host_of(key)]

    def __setitem__(self, key: Any, value: Any) -> None:
        t = type(value)
        _data_of(self)[_host_of(key)] = _data_of(value) if t is ResidentArray else value

    def __array_ufunc__(self, ufunc: numpy.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return getattr(ufunc, method)(*_host_of(inputs), **_host_of(kwargs))

    def __array_function__(self, func: Any, types: tuple[type, ...], args: tuple[Any, ...],
                           kwargs: dict[str, Any]) -> Any:
        return func(*_host_of(args), **_host_of(kwargs))


#: the warning NumPy gives when an array's shape is set (none before NumPy 2.5), once found
_SHAPE_SET_WARNING: list[Any] = []


def _shape_set_warning() -> Any:
    """NumPy's own warning for ``a.shape = ...`` (a ``warnings.WarningMessage``), or None: NumPy
    is asked once, on an empty array, so the message and category are its own in every version."""
    probe = numpy.empty(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        probe.shape = (0,)
    _SHAPE_SET_WARNING[:] = [caught[0] if caught else None]
    return _SHAPE_SET_WARNING[0]


_HOLDERS = (ResidentArray, list, tuple, dict)
_STRUCTURAL = frozenset({"__init__", "__new__", "__class__", "__slots__", "__module__", "__doc__", "__weakref__",
                         "__hash__", "__getattribute__", "__setattr__", "__delattr__", "__dict__", "__qualname__",
                         "__array_priority__", "__init_subclass__", "__subclasshook__", "__array_ufunc__",
                         "__array_function__", "__annotations__", "__dir__", "__sizeof__", "__getstate__",
                         "__setstate__", "__getitem__", "__setitem__"})


_IN_PLACE = frozenset(f"__i{op}__" for op in ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "pow",
                                               "lshift", "rshift", "and", "or", "xor"))


def _forward(name: str) -> Any:
    if name in _IN_PLACE:
        def in_place(self: Any, other: Any) -> Any:  # (``a += 1`` keeps ``a`` the same object, as NumPy's)
            result = getattr(_data_of(self), name)(_host_of(other))
            return self if result is _data_of(self) else result

        in_place.__name__ = name
        in_place.__qualname__ = f"ResidentArray.{name}"
        return in_place

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(_data_of(self), name)(*_host_of(args), **_host_of(kwargs))

    method.__name__ = name
    method.__qualname__ = f"ResidentArray.{name}"
    return method


for _klass in (NDArrayOperatorsMixin, DeviceArray):
    for _name, _member in list(vars(_klass).items()):
        if _name.startswith("__") and _name.endswith("__") and _name not in _STRUCTURAL and callable(_member):
            setattr(ResidentArray, _name, _forward(_name))
ResidentArray.__reduce_ex__ = _forward("__reduce_ex__")  # type: ignore[method-assign]  (pickle: NumPy's array)

_set_class = object.__dict__["__class__"].__set__  # (DeviceArray's __class__ is a property saying ndarray)


#: [arrays moved to the host so far]: the dispatcher looks for ResidentArrays among a call's
#: arguments only once there have been some
MOVED = [0]


def set_class(array: DeviceArray, klass: type) -> None:
    """Make ``array`` an instance of ``klass``, a DeviceArray subclass of the same layout."""
    _set_class(array, klass)
    MOVED[0] += 1
