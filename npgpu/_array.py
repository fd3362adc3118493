"""The device array: NumPy's ndarray interface over a backend's native array.

Every method and operator goes through the dispatcher, exactly like the namespace functions.
"""

from __future__ import annotations

import math
import operator
import os
import sys
from typing import Any

import numpy
from numpy.lib.mixins import NDArrayOperatorsMixin

from . import _config

#: npgpu._dispatch, set when that module loads (it imports this one, so not the other way round),
#: with the fusion recorder's one-function paths for the commonest calls and the loop cache they read
_dispatch: Any = None
_record_binary: Any = None
_record_unary: Any = None
_LOOPS: dict[Any, Any] = {}
_state = _config._state


def _function(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return _dispatch.function(func, args, kwargs)


def _shape_arg(shape: tuple[Any, ...]) -> Any:
    if len(shape) == 1 and not isinstance(shape[0], (int, numpy.integer)):
        return shape[0]
    return shape


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_NUMPY_DIR = os.path.dirname(os.path.abspath(numpy.__file__))
_LIBRARY_MARKERS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)
_code_kind: dict[Any, int] = {}  # code object -> 0 NumPy/npgpu internals, 1 library, 2 user code


def _kind(code: Any) -> int:
    kind = _code_kind.get(code)
    if kind is None:
        filename = code.co_filename
        if filename.startswith((_PACKAGE_DIR, _NUMPY_DIR)) or filename.startswith("<frozen"):
            kind = 0
        elif any(marker in filename for marker in _LIBRARY_MARKERS):
            kind = 1
        else:
            kind = 2
        _code_kind[code] = kind
    return kind


def _caller(frame: Any = None) -> tuple[Any, bool]:
    """(the first frame outside NumPy and npgpu, whether it belongs to a third-party library),
    looking from ``frame`` (default: the caller's caller) outwards.

    Library code (SciPy, matplotlib, pandas, ...) gets host arrays, as with plain NumPy; the
    frame of user code is where the report counts the call.
    """
    if frame is None:
        frame = sys._getframe(2)
    while frame is not None:
        kind = _code_kind.get(frame.f_code)
        if kind is None:
            kind = _kind(frame.f_code)
        if kind:
            return frame, kind == 1
        frame = frame.f_back
    return None, False


def _called_from_library() -> bool:
    return _caller()[1]


# Operand types that never need the foreign-array check (the common case, tested by identity).
_OWN_TYPES = frozenset({int, float, complex, bool, numpy.float64, numpy.float32, numpy.int64, numpy.ndarray})


class _Flags:
    """The subset of ``ndarray.flags`` legacy code reads, computed from shape and strides."""

    def __init__(self, array: DeviceArray) -> None:
        self.c_contiguous = _contiguous(array.shape, array.strides, array.itemsize, reverse=True)
        self.f_contiguous = _contiguous(array.shape, array.strides, array.itemsize, reverse=False)
        self.contiguous = self.c_contiguous
        self.fortran = self.f_contiguous and not self.c_contiguous
        self.writeable = True
        self.aligned = True
        self.owndata = bool(getattr(array._native, "base", None) is None)

    _KEYS = {"C_CONTIGUOUS": "c_contiguous", "C": "c_contiguous", "CONTIGUOUS": "c_contiguous",
             "F_CONTIGUOUS": "f_contiguous", "F": "f_contiguous", "FORTRAN": "f_contiguous",
             "WRITEABLE": "writeable", "W": "writeable", "ALIGNED": "aligned", "A": "aligned",
             "OWNDATA": "owndata", "O": "owndata"}

    def __getitem__(self, key: str) -> bool:
        return getattr(self, self._KEYS[key.upper()])

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


class DeviceArray(NDArrayOperatorsMixin):
    """An array on a device (CuPy, OpenCL, ...) that behaves like ``numpy.ndarray``."""

    __slots__ = ("_data", "_pending", "_backend", "_scalar", "__weakref__")
    __array_priority__ = 100
    __hash__ = None  # type: ignore[assignment]  # mutable, like ndarray

    def __init__(self, native: Any, backend: Any, scalar: bool = False) -> None:
        self._data = native
        self._pending = None  # a recorded, not yet computed, elementwise expression
        self._backend = backend
        self._scalar = scalar  # a 0-d result where NumPy would have returned a scalar

    @classmethod
    def pending(cls, expression: Any, backend: Any) -> DeviceArray:
        """A device array whose value is the recorded ``expression`` (computed on first need)."""
        array = cls.__new__(cls)
        array._data = None
        array._pending = expression
        array._backend = backend
        array._scalar = len(expression.shape) == 0
        return array

    @property
    def _native(self) -> Any:
        """The backend array, computing a pending expression first."""
        if self._data is None:
            from .fusion.lazy import materialize

            materialize(self)
        return self._data

    @_native.setter
    def _native(self, native: Any) -> None:
        self._data = native
        self._pending = None

    # -- NumPy protocols ----------------------------------------------------------------------
    def __array_ufunc__(self, ufunc: numpy.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if method == "__call__" and not kwargs and _DIRECT_OPERANDS.issuperset(map(type, inputs)):
            frame = sys._getframe(1)
            if len(inputs) == 1 and inputs[0] is self and _code_kind.get(frame.f_code) == 2:  # np.sqrt(x)
                state = _state.get() or _config._default
                if state.fusion and state.backend is not None:
                    result = _record_unary(ufunc, self, frame, _LOOPS)
                    if result is not None:
                        return result
            result = _direct_call(ufunc, inputs, frame)
            if result is not _LIBRARY:
                return result
            return _dispatch.on_host(ufunc, ufunc, inputs, kwargs)
        for x in inputs + kwargs.get("out", ()) if kwargs else inputs:
            if type(x) not in _OWN_TYPES and hasattr(x, "__array_ufunc__"):
                if type(x).__array_ufunc__ is not None and not isinstance(x, (DeviceArray, numpy.ndarray,
                                                                              numpy.generic)):
                    return NotImplemented
        frame, library = _caller()
        if library:
            return _dispatch.on_host(ufunc, getattr(ufunc, method) if method != "__call__" else ufunc, inputs, kwargs)
        return _dispatch.ufunc(ufunc, method, inputs, kwargs, frame)

    def __array_function__(self, func: Any, types: tuple[type, ...], args: tuple[Any, ...],
                           kwargs: dict[str, Any]) -> Any:
        if not all(issubclass(t, (DeviceArray, numpy.ndarray)) for t in types):
            return NotImplemented
        if _called_from_library():
            return _dispatch.on_host(func, func, args, kwargs)
        return _function(func, args, kwargs)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> numpy.ndarray:
        if copy is False:
            raise ValueError("an npgpu device array can't be viewed as a host array without a copy (copy=False)")
        from ._dispatch import to_host

        host = to_host(self)
        return host if dtype is None else host.astype(dtype, copy=False)

    def __array_namespace__(self, *, api_version: str | None = None) -> Any:
        import npgpu

        return npgpu

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._native.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._native.__dlpack_device__()

    # -- attributes ---------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        pending = self._pending  # (read once: another thread may compute the array meanwhile)
        if pending is not None:
            return pending.shape
        return tuple(self._data.shape)

    @shape.setter
    def shape(self, value: Any) -> None:
        self._native = self.reshape(value)._native

    @property
    def dtype(self) -> numpy.dtype:
        pending = self._pending
        if pending is not None:
            return pending.dtype
        return self._data.dtype

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
    def T(self) -> DeviceArray:
        return _function(numpy.transpose, (self,), {})

    @property
    def mT(self) -> DeviceArray:
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
        return _function(numpy.ravel, (self, order), {})

    def flatten(self, order: str = "C") -> DeviceArray:
        return _function(numpy.copy, (_function(numpy.ravel, (self, order), {}),), {})

    def transpose(self, *axes: Any) -> DeviceArray:
        if not axes or axes == (None,):
            return _function(numpy.transpose, (self,), {})
        return _function(numpy.transpose, (self, _shape_arg(axes)), {})

    def swapaxes(self, axis1: int, axis2: int) -> DeviceArray:
        return _function(numpy.swapaxes, (self, axis1, axis2), {})

    def squeeze(self, axis: Any = None) -> DeviceArray:
        return _function(numpy.squeeze, (self, axis), {})

    # -- conversion ---------------------------------------------------------------------------
    def astype(self, dtype: Any, order: str = "K", casting: str = "unsafe", subok: bool = True,
               copy: bool = True) -> DeviceArray:
        return _function(numpy.ndarray.astype, (self, dtype), {"order": order, "casting": casting, "copy": copy})

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
        # A zero-cost host array of the same shape and dtype: lets NumPy produce its own error.
        return numpy.broadcast_to(numpy.zeros((), self.dtype), self.shape)

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
        return (self[i] for i in range(self.shape[0]))

    def __getitem__(self, key: Any) -> Any:
        return _function(numpy.ndarray.__getitem__, (self, key), {})

    def __setitem__(self, key: Any, value: Any) -> None:
        _function(numpy.ndarray.__setitem__, (self, key, value), {})

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

    def ptp(self, *args: Any, **kwargs: Any) -> Any:
        return _function(numpy.ptp, (self, *args), kwargs)

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

    def clip(self, *args: Any, **kwargs: Any) -> Any:
        return _function(numpy.clip, (self, *args), kwargs)

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

    # -- printing, copying, pickling ----------------------------------------------------------
    def __repr__(self) -> str:
        host = self.__array__()
        return repr(host[()]) if self._scalar else repr(host)

    def __str__(self) -> str:
        return str(self.__array__())

    def __format__(self, spec: str) -> str:
        host = self.__array__()
        return format(host[()] if self.ndim == 0 else host, spec)

    def __copy__(self) -> DeviceArray:
        return self.copy()

    def __deepcopy__(self, memo: dict[int, Any]) -> DeviceArray:
        return self.copy()

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return _rebuild, (self.__array__(), self._backend.name, self._scalar)


_OWN_TYPES = _OWN_TYPES | {DeviceArray}

# Operands an operator can hand straight to the dispatcher: NumPy would pass exactly these to
# __array_ufunc__, so skipping its override protocol (and the mixin) changes nothing but the
# cost, about a microsecond of every recorded call. Anything else takes the mixin's path.
_DIRECT_OPERANDS = frozenset({DeviceArray, int, float, complex, bool, numpy.float64, numpy.float32, numpy.int64,
                              numpy.int32, numpy.bool_})


_LIBRARY = object()  # _direct_call's answer when a library made the call


def _direct_call(uf: numpy.ufunc, inputs: tuple[Any, ...], frame: Any) -> Any:
    """``uf(*inputs)`` of device arrays and plain scalars, called at ``frame``: recorded for
    fusion, or run, at once. _LIBRARY when library code called it (it gets NumPy's answer)."""
    if _code_kind.get(frame.f_code) != 2:  # not known user code: find the user's frame
        frame, library = _caller(frame)
        if library:
            return _LIBRARY
    state = _state.get() or _config._default
    if state.backend is not None:  # the common case (_fast_call declines gufuncs and odd arities)
        result = _dispatch._fast_call(uf, inputs, state.fusion, frame)
        if result is not NotImplemented:
            return result
    return _dispatch.ufunc(uf, "__call__", inputs, {}, frame)


def _direct_binary(uf: numpy.ufunc, name: str) -> Any:
    slow = getattr(NDArrayOperatorsMixin, name)
    reflected = name.startswith("__r")

    def operator_method(self: DeviceArray, other: Any) -> Any:
        t = type(other)
        if t in _DIRECT_OPERANDS:
            frame = sys._getframe(1)
            if (t is DeviceArray or t is float) and _code_kind.get(frame.f_code) == 2:  # the commonest call
                state = _state.get() or _config._default
                if state.fusion and state.backend is not None:
                    result = _record_binary(uf, self, other, reflected, frame, _LOOPS)
                    if result is not None:
                        return result
            result = _direct_call(uf, (other, self) if reflected else (self, other), frame)
            if result is not _LIBRARY:
                return result
        return slow(self, other)

    operator_method.__name__ = name
    operator_method.__qualname__ = f"DeviceArray.{name}"
    operator_method._npgpu_operator = (0, uf)  # type: ignore[attr-defined]  (FastMethod kind, ufunc)
    return operator_method


def _direct_unary(uf: numpy.ufunc, name: str) -> Any:
    slow = getattr(NDArrayOperatorsMixin, name)

    def operator_method(self: DeviceArray) -> Any:
        frame = sys._getframe(1)
        if _code_kind.get(frame.f_code) == 2:
            state = _state.get() or _config._default
            if state.fusion and state.backend is not None:
                result = _record_unary(uf, self, frame, _LOOPS)
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
for _name, _uf in (("lt", numpy.less), ("le", numpy.less_equal), ("gt", numpy.greater),
                   ("ge", numpy.greater_equal), ("eq", numpy.equal), ("ne", numpy.not_equal)):
    setattr(DeviceArray, f"__{_name}__", _direct_binary(_uf, f"__{_name}__"))
for _name, _uf in (("neg", numpy.negative), ("pos", numpy.positive), ("abs", numpy.absolute),
                   ("invert", numpy.invert)):
    setattr(DeviceArray, f"__{_name}__", _direct_unary(_uf, f"__{_name}__"))

# The Python methods that npgpu._speedups.FastMethod can front: name -> (method, kind, ufunc).
_PYTHON_METHODS: dict[str, tuple[Any, int, Any]] = {"__array_ufunc__": (DeviceArray.__array_ufunc__, 2, None)}
for _name in [n for n, m in vars(DeviceArray).items() if getattr(m, "_npgpu_operator", None)]:
    _method = vars(DeviceArray)[_name]
    _PYTHON_METHODS[_name] = (_method, _method._npgpu_operator[0], _method._npgpu_operator[1])


def use_native_methods(speedups: Any) -> None:
    """Front the operators and __array_ufunc__ with the C short road (``speedups``: the
    extension module), or put the Python methods back (None)."""
    if speedups is not None:
        speedups.configure_methods(_code_kind, globals())
    for name, (method, kind, uf) in _PYTHON_METHODS.items():
        if speedups is None:
            setattr(DeviceArray, name, method)
            continue
        fast = speedups.FastMethod(kind, uf, name.startswith("__r"), method)
        fast.__name__, fast.__qualname__, fast.__doc__ = method.__name__, method.__qualname__, method.__doc__
        fast.__wrapped__ = method
        setattr(DeviceArray, name, fast)


def _rebuild(host: numpy.ndarray, backend_name: str, scalar: bool = False) -> Any:
    """Unpickle: back onto the same backend when it can run here, else a NumPy array."""
    from .backends import get_backend, unavailable_reason

    if unavailable_reason(backend_name) is not None:
        return host
    backend = get_backend(backend_name)
    return DeviceArray(backend.from_host(host), backend, scalar)
