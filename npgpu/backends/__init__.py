"""The explicit backend registry: names to lazily imported classes.

Importing this module imports no GPU library; a backend's module is imported the
first time that backend is asked for.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import threading
from typing import Any

from .._errors import BackendUnavailableError
from .base import Backend

#: name -> "module:Class"; the module is imported only when the backend is used.
_REGISTRY: dict[str, str] = {
    "numpy": "npgpu.backends.numpy_backend:NumpyBackend",
    "cupy": "npgpu.backends.cupy.backend:CupyBackend",
    "opencl": "npgpu.backends.opencl:OpenCLBackend",
    # Runs the device code path (device arrays, transfers, the CuPy routing table) on the
    # host with NumPy standing in for CuPy: how the core is tested without a GPU.
    "emulated": "npgpu.backends.emulated:EmulatedBackend",
}
#: The backends a user picks from; "emulated" is for tests.
BACKEND_NAMES: tuple[str, ...] = ("numpy", "cupy", "opencl")
_REQUIRES = {"cupy": "cupy", "opencl": "pyopencl"}
_INSTALL_HINT = {
    "cupy": "pip install 'npgpu[cuda12]' (or [cuda13], matching your CUDA driver)",
    "opencl": "pip install 'npgpu[opencl]'",
}

_instances: dict[tuple[str, tuple[tuple[str, Any], ...]], Backend] = {}
_lock = threading.Lock()
#: Backends whose device context this process's parent made before ``os.fork()``: they can't run
#: here (Backend.survives_fork), and asking for them says so instead of hanging.
_forked_away: set[str] = set()


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.Lock()  # (another thread of the parent may have held it at the fork)
    for key, backend in list(_instances.items()):
        if not backend.survives_fork:
            _forked_away.add(key[0])
            del _instances[key]


os.register_at_fork(after_in_child=_after_fork_in_child)


def _backend_class(name: str) -> type[Backend]:
    if name not in _REGISTRY:
        choices = ", ".join(("auto", *BACKEND_NAMES))
        raise ValueError(f"unknown npgpu backend {name!r}; choose one of {choices}")
    module_name, _, class_name = _REGISTRY[name].partition(":")
    return getattr(importlib.import_module(module_name), class_name)


def unavailable_reason(name: str, **options: Any) -> str | None:
    """None when backend ``name`` can run here, else a sentence saying why not."""
    if name in _forked_away:
        return (f"this process was forked from one that had used the {name} device, whose context does not "
                "come to a child process: start workers with multiprocessing's 'spawn' or 'forkserver'")
    package = _REQUIRES.get(name)
    if package is not None and importlib.util.find_spec(package) is None:
        return f"the {name} backend needs the Python package {package!r}, which is not installed: {_INSTALL_HINT[name]}"
    return _backend_class(name).unavailable_reason(**options)


def get_backend(name: str, **options: Any) -> Backend:
    """The (shared) backend instance for ``name``; raises BackendUnavailableError saying why."""
    key = (name, tuple(sorted(options.items())))
    backend = _instances.get(key)
    if backend is not None:
        return backend
    with _lock:
        backend = _instances.get(key)
        if backend is None:
            reason = unavailable_reason(name, **options)
            if reason is not None:
                raise BackendUnavailableError(f"npgpu backend {name!r} can't run here: {reason}")
            backend = _backend_class(name)(**options)
            _instances[key] = backend
    return backend


def loaded_backends() -> list[Backend]:
    """Backends instantiated so far in this process."""
    return list(_instances.values())


def resolve_auto() -> str:
    """CuPy when a CUDA GPU is usable, else an OpenCL GPU, else NumPy; never raises."""
    if unavailable_reason("cupy") is None:
        return "cupy"
    if importlib.util.find_spec("pyopencl") is not None:
        cls = _backend_class("opencl")
        if cls.has_gpu() and unavailable_reason("opencl") is None:
            return "opencl"
    return "numpy"


__all__ = ["BACKEND_NAMES", "Backend", "get_backend", "loaded_backends", "resolve_auto", "unavailable_reason"]
