"""Builds npgpu's mirror of NumPy: every public name of numpy, numpy.linalg, numpy.fft, numpy.random.

Functions and ufuncs become thin wrappers that call NumPy directly while acceleration is off
and go through the dispatcher when it is on; types, dtypes and constants are NumPy's own.
"""

from __future__ import annotations

import functools
import math
import sys
import types
from collections.abc import Callable
from typing import Any

import numpy

from . import _config, _dispatch, _hooks, _native, _ops, _report

_state_get = _config._state.get
_FUNCTION_TYPES = (types.FunctionType, types.BuiltinFunctionType, type(numpy.sum))


_ndarray = numpy.ndarray
_HOST_SCALARS = frozenset(_ops.HOST_SCALARS)
# Functions whose placement depends on more than their array arguments' sizes.
_SIZE_DECIDES = frozenset(_ops.CREATIONS) | _ops.CONSTRUCTORS | frozenset(_ops.EXPANDING) | _ops.GRIDS

# The wrappers' per-call check in C (npgpu/_speedups.c, configured by _native), when it was built:
# the same decisions as the Python wrappers below, which stay the reference and the fallback
# (NPGPU_PURE_PYTHON=1).
_speedups: Any = _native.speedups


def _cell(native: bool) -> Any:
    """A small-call counter cell: the C wrappers count in a Counter, the Python ones in a list."""
    return _speedups.Counter() if native and _speedups is not None else [0]


def native_wrappers() -> bool:
    """Whether npgpu's C extension (npgpu._speedups) is in use: the functions' small-call check
    and the fusion recorder's hot paths in C, rather than their Python versions."""
    return _speedups is not None


def small_host_call(args: Any, kwargs: dict[str, Any] | None, limit: int, ndarray_type: type = _ndarray,
                    plain: frozenset[type] = _HOST_SCALARS) -> bool:
    """THE small-call predicate: whether a call's arguments are all host data (NumPy arrays,
    plain values of _ops.HOST_SCALARS, dtypes, lists and tuples of those) whose arrays together
    stay below ``limit`` bytes, so that NumPy runs it at once (counted per function, without a
    call site). Anything else goes to the dispatcher, which places it.

    Every wrapper below asks it (for a creation, the question is the request's size instead,
    read by _ops.CREATIONS' rule); npgpu/_speedups.c mirrors it (host_bytes, small_host_call),
    configured with the same _ops.HOST_SCALARS."""
    # (one function, its loop inlined: it is what small-array code pays on every call)
    nbytes = 0
    for x in (*args, *kwargs.values()) if kwargs else args:
        t = type(x)
        if t is ndarray_type:
            nbytes += x.nbytes
        elif t not in plain:
            if t is not tuple and t is not list:
                if isinstance(x, numpy.dtype):  # dtype=numpy.dtype("f4")
                    continue
                return False  # a device array, an unknown type: the dispatcher decides
            if not x or type(x[0]) in plain:  # numbers: data or a shape, not operands (the first item tells)
                continue
            for item in x:  # the arrays of concatenate, stack, ...
                if type(item) is ndarray_type:
                    nbytes += item.nbytes
                elif type(item) not in plain:
                    return False
    return nbytes < limit


def _on() -> bool:
    state = _state_get() or _config._default
    return state.backend is not None


# Positional parameter names of the ufunc methods, so the namespace door hands the
# dispatcher the same (inputs, kwargs) split that NumPy's __array_ufunc__ protocol does.
_METHOD_PARAMS = {
    "reduce": (1, ("axis", "dtype", "out", "keepdims", "initial", "where")),
    "accumulate": (1, ("axis", "dtype", "out")),
    "reduceat": (2, ("axis", "dtype", "out")),
}


class Ufunc:
    """npgpu's face of one NumPy ufunc: same attributes, routed calls and methods."""

    __slots__ = ("_ufunc", "_id", "__name__", "__qualname__", "_small_calls")

    def __init__(self, uf: numpy.ufunc) -> None:
        self._ufunc = uf
        self._id = id(uf)
        self.__name__ = uf.__name__
        self.__qualname__ = uf.__name__
        self._small_calls = _report.host_counter(uf)

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]
        return self._ufunc.__doc__

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # noqa: D105
        """``numpy.ufunc``: ``isinstance(npgpu.matmul, np.ufunc)`` holds, as it does in NumPy
        (``type()`` still tells the wrapper apart)."""
        return numpy.ufunc

    @property
    def __wrapped__(self) -> numpy.ufunc:
        return self._ufunc

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        state = _state_get() or _config._default
        if state.backend is None:
            return self._ufunc(*args, **kwargs)
        if small_host_call(args, kwargs, state.host_limit):  # NumPy's own call, counted
            self._small_calls[0] += 1
            return self._ufunc(*args, **kwargs)
        return _dispatch.ufunc(self._ufunc, "__call__", args, kwargs, sys._getframe(1))

    def _method(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not _on():
            return getattr(self._ufunc, method)(*args, **kwargs)
        if method in _METHOD_PARAMS:
            n_inputs, names = _METHOD_PARAMS[method]
            extra = args[n_inputs:]
            if len(extra) > len(names):
                limit = n_inputs + len(names)
                raise TypeError(f"{self.__name__}.{method}() takes at most {limit} positional arguments")
            kwargs = {**dict(zip(names, extra)), **kwargs}
            args = args[:n_inputs]
        return _dispatch.ufunc(self._ufunc, method, args, kwargs)

    def reduce(self, *args: Any, **kwargs: Any) -> Any:
        return self._method("reduce", args, kwargs)

    def accumulate(self, *args: Any, **kwargs: Any) -> Any:
        return self._method("accumulate", args, kwargs)

    def reduceat(self, *args: Any, **kwargs: Any) -> Any:
        return self._method("reduceat", args, kwargs)

    def outer(self, *args: Any, **kwargs: Any) -> Any:
        return self._method("outer", args, kwargs)

    def at(self, *args: Any, **kwargs: Any) -> Any:
        return self._method("at", args, kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ufunc, name)

    def __repr__(self) -> str:
        return f"<ufunc '{self.__name__}'>"

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return _ufunc_by_name, (self.__name__,)  # by name, like NumPy's ufuncs


class Grid:
    """npgpu's face of ``numpy.mgrid`` or ``numpy.ogrid``: NumPy builds the grid; with acceleration
    on, its arrays are placed as arrays made from nothing (on the device from the creation threshold)."""

    __slots__ = ("_grid", "_name")

    def __init__(self, grid: Any, name: str) -> None:
        self._grid = grid
        self._name = name

    def __getitem__(self, key: Any) -> Any:
        grid = self._grid[key]
        state = _state_get() or _config._default
        if state.backend is None:
            return grid
        return _dispatch.place_grid(self._name, grid, state)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._grid, name)

    def __repr__(self) -> str:
        return repr(self._grid)


def _ufunc_by_name(name: str) -> Any:
    return getattr(_hooks.core.namespace, name)


def wrap_function(func: Callable[..., Any], module: str = "npgpu", native: bool = True) -> Callable[..., Any]:
    """A function that is ``func`` while acceleration is off and dispatched while it is on.

    With acceleration on, a call whose operands are NumPy arrays and plain values that together
    stay below the upload threshold goes straight to NumPy (the check is inlined: it is what
    small-array code pays per call; the report counts such calls per function, without their
    call site). Larger host operands,
    device arrays and anything else go to the dispatcher, which places them.
    """

    fast = func not in _SIZE_DECIDES
    # closure cells load faster than module globals: this runs on every small-array call
    state_get, config, small = _state_get, _config, small_host_call
    # Operands found to be NumPy arrays and plain values can't override anything, so NumPy's
    # __array_function__ dispatch would only call this: calling it directly repays the check.
    impl = getattr(func, "_implementation", func)
    small_calls = _report.host_counter(func, _cell(native))
    if native and _speedups is not None:
        wrapper = _speedups.Wrapper(_speedups.FUNCTION, func, impl, func, small_calls, fast=fast)
        return _finish(wrapper, func, module)

    def routed(*args: Any, **kwargs: Any) -> Any:
        state = state_get()
        if state is None:  # no enable()/disable() in this context: the process default (NPGPU_BACKEND)
            state = config._default
        if state.backend is None:
            return func(*args, **kwargs)
        if fast and small(args, kwargs, state.host_limit) and not (kwargs and "device" in kwargs):
            small_calls[0] += 1
            return impl(*args, **kwargs)
        return _dispatch.function(func, args, kwargs)  # (device=: the dispatcher places the result)

    return _finish(routed, func, module)


def _finish(wrapper: Callable[..., Any], func: Callable[..., Any], module: str) -> Callable[..., Any]:
    if not hasattr(type(func), "__get__") and type(wrapper) is types.FunctionType:
        # (np.array, np.zeros: C functions, which a class attribute does not bind; a Python
        # function would: ``class T: array = np.array`` then ``self.array(x)``. A partial binds
        # not; the C Wrapper binds as its NumPy function does.)
        wrapper = functools.partial(wrapper)
    wrapper.__name__ = getattr(func, "__name__", "function")
    wrapper.__qualname__ = wrapper.__name__
    wrapper.__doc__ = getattr(func, "__doc__", None)
    wrapper.__module__ = module
    wrapper.__wrapped__ = func  # type: ignore[attr-defined]
    return wrapper


_INTS = frozenset({int})


def wrap_creation(func: Callable[..., Any], module: str = "npgpu", native: bool = True) -> Callable[..., Any]:
    """``wrap_function(func)`` for an array made from nothing, with a short road for small ones.

    ``zeros(10)``, ``ones((3, 3))``, ``arange(100)``, ``linspace(0, 1, 50)``: when the request
    (counted, as the dispatcher does, at 8 bytes an element) stays below the creation threshold
    NumPy makes it at once, counted per function. Anything else goes to the dispatcher.
    """
    routed = wrap_function(func, module, native)
    state_get, config, ints = _state_get, _config, _INTS
    quick = _ops.CREATIONS[func].quick
    shape_first, num_third = quick == _ops.QUICK_SHAPE_FIRST, quick == _ops.QUICK_NUM_THIRD
    is_arange, is_square = quick == _ops.QUICK_ARANGE, quick == _ops.QUICK_SQUARE
    small_calls = _report.host_counter(func, _cell(native))
    if native and _speedups is not None:
        wrapper = _speedups.Wrapper(_speedups.CREATION, func, func, routed, small_calls, size_mode=quick)
        return _finish(wrapper, func, module)

    def create(*args: Any, **kwargs: Any) -> Any:
        state = state_get()
        if state is None:
            state = config._default
        if state.backend is None:
            return func(*args, **kwargs)
        n = -1
        if args:
            first = args[0]
            if shape_first:
                if type(first) is int:
                    n = first
                elif type(first) is tuple and ints.issuperset(map(type, first)):
                    n = math.prod(first)
            elif is_arange:
                if len(args) == 1 and type(first) is int:
                    n = first
                elif 1 < len(args) <= 3 and all(type(v) is int for v in args):
                    step = args[2] if len(args) == 3 else 1
                    if step:
                        n = max(0, -((first - args[1]) // step))  # ceil((stop - start) / step)
            elif is_square:
                if len(args) == 1 and type(first) is int:
                    n = first * first
            elif num_third:
                num = args[2] if len(args) > 2 else kwargs.get("num", 50)
                if type(num) is int:
                    n = num
        if 0 <= n * 8 < state.short_create_limit and not (kwargs and "device" in kwargs):
            small_calls[0] += 1
            return func(*args, **kwargs) if kwargs else func(*args)
        return routed(*args, **kwargs)

    return _finish(create, func, module)


def wrap_constructor(func: Callable[..., Any], module: str = "npgpu", native: bool = True) -> Callable[..., Any]:
    """``wrap_function(func)`` for ``asarray``/``array``/...: a short road for host data.

    A NumPy array, a flat list or tuple of numbers, or a number: NumPy makes the array (as the
    dispatcher would); a small one is returned at once, counted per function, and a large one
    goes where the dispatcher puts it (uploaded from the upload threshold). Device arrays,
    nested lists (which may hold device arrays) and other objects go to the dispatcher.
    """
    routed = wrap_function(func, module, native)
    state_get, config, ndarray_type, plain, small = _state_get, _config, _ndarray, _HOST_SCALARS, small_host_call
    small_calls = _report.host_counter(func, _cell(native))
    if native and _speedups is not None:
        wrapper = _speedups.Wrapper(_speedups.CONSTRUCTOR, func, func, routed, small_calls)
        return _finish(wrapper, func, module)

    def construct(*args: Any, **kwargs: Any) -> Any:
        state = state_get()
        if state is None:
            state = config._default
        if state.backend is None or not args:
            return func(*args, **kwargs)
        if kwargs:
            if "device" in kwargs:
                return routed(*args, **kwargs)
            for value in kwargs.values():
                if type(value) not in plain and not isinstance(value, numpy.dtype):
                    return routed(*args, **kwargs)
        data = args[0]
        t = type(data)
        if t is ndarray_type:
            if small((data,), None, state.host_limit):
                small_calls[0] += 1
                return func(*args, **kwargs) if kwargs else func(*args)
            return routed(*args, **kwargs)
        if t in plain or ((t is list or t is tuple) and (not data or type(data[0]) in plain)):
            host = func(*args, **kwargs)
            if type(host) is not ndarray_type or small((host,), None, state.host_limit) or state.backend.is_host:
                small_calls[0] += 1
                return host
            return _dispatch.place_constructed(func, host, state.backend, state)
        return routed(*args, **kwargs)

    return _finish(construct, func, module)


def wrap_reduction(
    func: Callable[..., Any], uf: numpy.ufunc, dtype: type | None, module: str = "npgpu", native: bool = True
) -> Callable[..., Any]:
    """``wrap_function(func)`` with a shorter road for the commonest small call.

    ``sum(a)``, ``max(a, axis)`` and the like on a small NumPy array call the ufunc reduction
    that NumPy's implementation would end in, without its Python layers: the same values and
    errors, from the same NumPy code, for less than NumPy's own call costs. This pays for the
    placement check on small-array code. Anything else takes the ordinary wrapper.
    """
    routed = wrap_function(func, module, native)
    state_get, config, ndarray_type, plain_axis = _state_get, _config, _ndarray, _ops.plain_axis
    reduce = uf.reduce
    small_calls = _report.host_counter(func, _cell(native))
    if native and _speedups is not None:
        wrapper = _speedups.Wrapper(_speedups.REDUCTION, func, func, routed, small_calls, reduce=reduce, rdtype=dtype)
        return _finish(wrapper, func, module)

    def reduction(*args: Any, **kwargs: Any) -> Any:
        n = len(args)
        if n == 1:
            if kwargs:
                axis = kwargs.get("axis", routed)  # routed: a sentinel, never an axis
                if len(kwargs) != 1 or not plain_axis(axis):
                    return routed(*args, **kwargs)
            else:
                axis = None
        elif n == 2 and not kwargs and plain_axis(args[1]):
            axis = args[1]
        else:
            return routed(*args, **kwargs)
        a = args[0]
        if type(a) is ndarray_type:
            state = state_get()
            if state is None:
                state = config._default
            # small_host_call((a,), None, limit) for one exact ndarray, inlined (this road exists for its cost)
            if state.backend is not None and a.nbytes < state.host_limit:
                small_calls[0] += 1
                return reduce(a, axis, dtype)
        return routed(*args, **kwargs)

    return _finish(reduction, func, module)


def _wrapper(func: Any, module: str, native: bool = True) -> Callable[..., Any]:
    """npgpu's face of NumPy function ``func``: the general wrapper or one with a shorter road
    (``native=False``: the Python implementation even where the C one is built)."""
    reduction = _ops.REDUCTIONS.get(func)
    if reduction is not None and reduction.small_call:
        return wrap_reduction(func, reduction.ufunc, reduction.small_dtype, module, native=native)
    if func in _ops.CREATIONS:
        return wrap_creation(func, module, native)
    if func in _ops.IN_MEMORY_CONSTRUCTORS:
        return wrap_constructor(func, module, native)
    return wrap_function(func, module, native)


class ArrayNamespaceInfo(numpy.__array_namespace_info__):  # type: ignore[misc,name-defined]
    """``npgpu.__array_namespace_info__()``: NumPy's answers, with npgpu's devices. A device is
    what ``x.device`` says: ``"cpu"`` (NumPy's arrays) or the name of the device backend in
    force (``"opencl"``, ``"cupy"``); creation functions take either as ``device=``."""

    def devices(self) -> list[str]:
        backend = _config.current().backend
        return ["cpu"] if backend is None or backend.is_host else ["cpu", backend.name]

    def default_device(self) -> str:
        return self.devices()[-1]  # (npgpu places by size: large arrays go to the device in force)

    def default_dtypes(self, *, device: Any = None) -> dict[str, Any]:
        _host_device(device)
        return super().default_dtypes()

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict[str, Any]:
        backend = _host_device(device)
        found = super().dtypes(kind=kind)
        if backend is None:
            return found
        return {name: dtype for name, dtype in found.items() if backend.supports_dtypes((numpy.dtype(dtype),))}


def _host_device(device: Any) -> Any:
    """None for the host ("cpu", None); the device backend named by ``device``; else NumPy's ValueError."""
    if device is None or (isinstance(device, str) and device == "cpu"):
        return None
    backend = _config.device_backend(device)
    if backend is None:
        raise ValueError(f"Device not understood. npgpu's devices are {_config_devices()}, but received: {device}")
    return backend


def _config_devices() -> list[str]:
    return ArrayNamespaceInfo().devices()


def numpy_dispatched() -> frozenset[Any]:
    """NumPy objects that npgpu exposes unwrapped: NumPy's ufuncs, except compute-heavy ones.

    NumPy hands device arrays to ``DeviceArray.__array_ufunc__`` (the dispatcher) and runs
    NumPy arrays itself, at NumPy's own speed: a ufunc call on small arrays pays nothing. Large
    host arrays reach the device where they are made or through npgpu's functions (which
    upload large host operands), not through a ufunc.
    """
    return frozenset(obj for name in dir(numpy) if isinstance(obj := getattr(numpy, name), numpy.ufunc)
                     and obj not in _ops.HEAVY_UFUNCS)


def mirror(source: Any, module: str, unwrapped: frozenset[Any] = frozenset()) -> dict[str, Any]:
    """Public names of ``source`` as npgpu exposes them (``unwrapped``: NumPy objects kept as they are)."""
    names: dict[str, Any] = {}
    for name in dir(source):
        if name.startswith("_"):
            continue
        obj = getattr(source, name)
        if isinstance(obj, numpy.ufunc):
            names[name] = obj if obj in unwrapped else Ufunc(obj)
        elif isinstance(obj, _FUNCTION_TYPES) and not isinstance(obj, type):
            names[name] = _wrapper(obj, module)
        else:
            names[name] = obj
    return names


def submodule(name: str, source: types.ModuleType, extra: dict[str, Any] | None = None) -> types.ModuleType:
    """A module object mirroring ``source`` (numpy.linalg, numpy.fft, ...)."""
    module = types.ModuleType(name, source.__doc__)
    module.__dict__.update(mirror(source, name))
    if extra:
        module.__dict__.update(extra)

    def __getattr__(attr: str) -> Any:  # noqa: N807  (module-level __getattr__ hook)
        return getattr(source, attr)

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    return module
