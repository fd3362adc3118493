"""npgpu: NumPy's namespace, accelerated. ``import npgpu as np`` is NumPy until ``np.enable()``.

With acceleration on, work runs on a GPU through CuPy or OpenCL and falls back to NumPy,
counted, for what the device can't do. Importing npgpu imports no GPU library.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as _numpy

from . import (
    _array,
    _callsite,
    _config,
    _dispatch,
    _fperr,
    _hooks,
    _integrations,
    _namespace,
    _native,
    _ops,
    _random,
    _report,
    _residency,
    _transfer,
)
from ._array import DeviceArray
from ._callsite import array_libraries, set_array_libraries
from ._config import current_backend, disable, enable
from ._dispatch import report
from ._errors import (
    BackendUnavailableError,
    DeviceLostError,
    DeviceMemoryError,
    FallbackError,
    FallbackWarning,
    KernelBuildError,
    PerformanceWarning,
    StagingTimeoutError,
)
from ._explain import explain
from ._report import Report
from .backends import _instances as _backends
from .backends import get_backend as _get_backend
from .lazy import materialize as _materialize
from .lazy import recorder as _recorder
from .lazy import registry as _registry

# The composition root: the one inversion (DeviceArray reaching the dispatcher) and the C
# extension's configuration, each installed once, here (docs/ARCHITECTURE.md).
_hooks.install(namespace=sys.modules[__name__], loops=_dispatch._LOOPS, function=_dispatch.function,
               ufunc=_dispatch.ufunc, fast_call=_dispatch._fast_call, getitem=_dispatch.basic_getitem,
               inplace=_dispatch.inplace, setitem=_dispatch.basic_setitem,
               on_host=_dispatch.on_host,
               to_host=_transfer.to_host, materialize=_materialize.materialize,
               before_write=_materialize.before_write,
               record_binary=_recorder.record_binary, record_unary=_recorder.record_unary,
               charge_read=_residency.charge_read, charge_write=_residency.charge_write,
               charge_conversion=_residency.charge_conversion,
               charge_kernel=_residency.charge_kernel)
_native.configure(_native.Parts(
    state_var=_config._state, config_globals=vars(_config), ndarray=_numpy.ndarray, dtype=_numpy.dtype,
    host_scalars=_ops.HOST_SCALARS, dispatch_function=_dispatch.function,
    place_constructed=_dispatch.place_constructed, array_type=DeviceArray, pending_type=_registry.Pending,
    scalar_type=_registry.ScalarArg, ref_type=_registry._Ref, forget=_registry._forget, refs=_registry._refs,
    recorder_globals=vars(_recorder), materialize=_materialize.materialize, errstate_var=_fperr._EXTOBJ,
    errstate_cache=_fperr.CACHE, warnings_globals=_fperr._WARNINGS, code_kind=_callsite.CODE_KIND,
    tracked=_array.tracked, report_local=_report._local, getitem=_dispatch._GETITEM,
    setitem=_dispatch._SETITEM,
    record_binary=_recorder.record_binary, record_unary=_recorder.record_unary, use_walk=_materialize.use_walk,
    front_methods=_array.use_native_methods))

globals().update(_namespace.mirror(_numpy, "npgpu", _namespace.numpy_dispatched()))
mgrid = _namespace.Grid(_numpy.mgrid, "mgrid")  # (placed as creations are: npgpu/_dispatch.py, place_grid)
ogrid = _namespace.Grid(_numpy.ogrid, "ogrid")
ndarray = _numpy.ndarray  # NumPy's own classes: subclassing, views and type checks are NumPy's
ufunc = _numpy.ufunc
linalg = _namespace.submodule("npgpu.linalg", _numpy.linalg)
fft = _namespace.submodule("npgpu.fft", _numpy.fft)
random = _random.build()
native_wrappers = _namespace.native_wrappers
__array_namespace_info__ = _namespace.ArrayNamespaceInfo  # the array API's devices: "cpu" and the backend in force

__version__ = "0.1.0"
__all__ = [  # npgpu's own names; NumPy's are added to the module namespace above
    "BackendUnavailableError", "DeviceArray", "DeviceLostError", "DeviceMemoryError", "FallbackError",
    "FallbackWarning", "KernelBuildError", "PerformanceWarning", "Report", "StagingTimeoutError",
    "array_libraries", "asnumpy", "current_backend", "disable", "enable", "explain", "native_wrappers", "report",
    "routed_functions", "set_array_libraries", "sync",
]
__all__ += [name for name in _numpy.__all__ if name not in __all__]  # `from npgpu import *` is NumPy's star
__numpy_version__ = _numpy.__version__


def asnumpy(x: Any) -> _numpy.ndarray:
    """A host ``numpy.ndarray`` with ``x``'s values (copies device arrays to the host)."""
    if isinstance(x, DeviceArray):
        return x.__array__()
    return _numpy.asarray(x)


def sync() -> None:
    """Run the fused work this thread has recorded, then wait until all device work queued so far
    (by any thread) has finished: for timing, before reading clocks. Other threads' recorded
    (not yet queued) work stays theirs to run."""
    if _materialize._pending:
        _materialize.flush_thread()
    for backend in list(_backends.values()):
        backend.sync()
        _fperr.deliver(backend)  # floating-point warnings of the work that ran


def routed_functions(backend: str = "cupy") -> list[str]:
    """Names of the NumPy functions and ufuncs that run on ``backend``'s device (others fall back)."""
    instance = _get_backend(backend)
    names = [_function_name(func) for func in instance.functions]
    for name in dir(_numpy):
        uf = getattr(_numpy, name)
        if isinstance(uf, _numpy.ufunc) and name == uf.__name__ and _routes_ufunc(instance, uf):
            names.append(name)
    return sorted(set(names))


def _function_name(func: Any) -> str:
    """How ``routed_functions`` spells a NumPy function: ``sum``, ``linalg.svd``, ``ndarray.sort``."""
    module = getattr(func, "__module__", "") or ""
    prefix = next((p + "." for p in ("linalg", "fft", "random") if module.startswith("numpy." + p)), "")
    qualname = getattr(func, "__qualname__", func.__name__)
    return prefix + (qualname if qualname.startswith("ndarray.") else func.__name__)


def _routes_ufunc(backend: Any, uf: _numpy.ufunc) -> bool:
    """Whether ``backend`` runs ``uf`` for float64 or int64 operands (the common case)."""
    for kind in (_numpy.float64, _numpy.int64, _numpy.bool_):
        try:
            loop = uf.resolve_dtypes((_numpy.dtype(kind),) * uf.nin + (None,) * uf.nout)
        except TypeError:  # NumPy has no loop for this kind; try the next
            continue
        return bool(backend.supports_ufunc(uf, "__call__", tuple(loop), {}))
    return False


def __getattr__(name: str) -> Any:
    # Lazily loaded NumPy submodules and anything NumPy resolves on first access.
    return getattr(_numpy, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(dir(_numpy)))


_config.enable_from_environment()  # (last: a backend imported here finds the namespace complete)
# Dask learns about device arrays when (and only if) dask.array is imported: npgpu.dask registers them
_integrations.after_import("dask.array", "npgpu.dask")
