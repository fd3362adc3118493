"""npgpu: NumPy's namespace, accelerated. ``import npgpu as np`` is NumPy until ``np.enable()``.

With acceleration on, work runs on a GPU through CuPy or OpenCL and falls back to NumPy,
counted, for what the device can't do. Importing npgpu imports no GPU library.
"""

from __future__ import annotations

from typing import Any

import numpy as _numpy

from . import _namespace, _random
from ._array import DeviceArray
from ._config import current_backend, disable, enable
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
from ._report import Report, report

globals().update(_namespace.mirror(_numpy, "npgpu", _namespace.numpy_dispatched()))
ndarray = _numpy.ndarray  # NumPy's own classes: subclassing, views and type checks are NumPy's
ufunc = _numpy.ufunc
linalg = _namespace.submodule("npgpu.linalg", _numpy.linalg)
fft = _namespace.submodule("npgpu.fft", _numpy.fft)
random = _random.build()
native_wrappers = _namespace.native_wrappers

__version__ = "0.1.0"
__all__ = [  # npgpu's own names; NumPy's are added to the module namespace above
    "BackendUnavailableError", "DeviceArray", "DeviceLostError", "DeviceMemoryError", "FallbackError",
    "FallbackWarning", "KernelBuildError", "PerformanceWarning", "Report", "StagingTimeoutError",
    "asnumpy", "current_backend", "disable", "enable", "native_wrappers", "report", "routed_functions", "sync",
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
    from . import _fperr
    from .backends import _instances  # (already imported: a module attribute lookup, not an import)
    from .lazy import materialize as lazy

    if lazy._pending:
        lazy.flush_thread()
    for backend in list(_instances.values()):
        backend.sync()
        _fperr.deliver(backend)  # floating-point warnings of the work that ran


def routed_functions(backend: str = "cupy") -> list[str]:
    """Names of the NumPy functions and ufuncs that run on ``backend``'s device (others fall back)."""
    from .backends import get_backend

    instance = get_backend(backend)
    names = []
    for func in instance.functions:
        module = getattr(func, "__module__", "") or ""
        prefix = next((p + "." for p in ("linalg", "fft", "random") if module.startswith("numpy." + p)), "")
        qualname = getattr(func, "__qualname__", func.__name__)
        names.append(prefix + (qualname if qualname.startswith("ndarray.") else func.__name__))
    for name in dir(_numpy):
        uf = getattr(_numpy, name)
        if isinstance(uf, _numpy.ufunc) and name == uf.__name__ and _routes_ufunc(instance, uf):
            names.append(name)
    return sorted(set(names))


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


from . import _config  # noqa: E402  (after the namespace exists, so a backend import can use it)

_config.enable_from_environment()
