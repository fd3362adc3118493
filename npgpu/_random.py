"""npgpu.random: NumPy's legacy global API and ``default_rng``, drawing on the device when large.

Device streams differ from NumPy's: the same seed gives different numbers on the device.
"""

from __future__ import annotations

import math
import operator
import types
from typing import Any

import numpy

from . import _config, _report
from ._array import DeviceArray
from ._namespace import submodule


def _dims(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return args


def _size_at(index: int) -> Any:
    def size(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return args[index] if len(args) > index else kwargs.get("size")

    return size


# Legacy functions routed to the device: name -> how to find the requested shape.
_LEGACY = {
    "rand": _dims, "randn": _dims, "random": _size_at(0), "random_sample": _size_at(0), "ranf": _size_at(0),
    "sample": _size_at(0), "standard_normal": _size_at(0), "uniform": _size_at(2), "normal": _size_at(2),
    "randint": _size_at(2), "exponential": _size_at(1), "standard_exponential": _size_at(0),
}
# Generator methods routed to the device: name -> index of ``size``.
_GENERATOR = {"random": 0, "standard_normal": 0, "normal": 2, "uniform": 2, "integers": 2, "exponential": 1}


_INTS = frozenset({int})


def _elements(shape: Any) -> int:
    if type(shape) is tuple and _INTS.issuperset(map(type, shape)):  # rand(3, 4), size=(3, 4): the common case
        return math.prod(shape) if shape else 1
    if shape is None:
        return 0
    if isinstance(shape, (int, numpy.integer)):
        return max(int(shape), 0)
    if isinstance(shape, tuple) and len(shape) == 1 and not isinstance(shape[0], (int, numpy.integer)):
        shape = shape[0]
    try:
        return math.prod(operator.index(s) for s in shape)
    except TypeError:
        return 0


def _device_backend(state: _config.State, nelements: int) -> Any:
    backend = state.backend
    if backend is None or backend.is_host:
        return None
    if not hasattr(backend, "random_call") and state.random != "numpy":
        return None
    if nelements * 8 < state.create_limit or nelements == 0:
        return None
    return backend


def _legacy(name: str) -> Any:
    numpy_func = getattr(numpy.random, name)
    shape_of = _LEGACY[name]
    small_calls = _report.host_counter(numpy_func)  # draws NumPy makes, counted per function

    def draw(*args: Any, **kwargs: Any) -> Any:
        state = _config.current()
        if state.backend is None:
            return numpy_func(*args, **kwargs)
        backend = _device_backend(state, _elements(shape_of(args, kwargs)))
        if backend is not None and state.random == "numpy":
            return _uploaded(numpy_func(*args, **kwargs), backend, numpy_func)
        if backend is None or not backend.supports_random(name, args, kwargs):
            small_calls[0] += 1
            return numpy_func(*args, **kwargs)
        _report.record(numpy_func, "device")
        return DeviceArray(backend.random_call(name, args, kwargs), backend)

    draw.__name__ = draw.__qualname__ = name
    draw.__doc__ = numpy_func.__doc__
    draw.__module__ = "npgpu.random"
    return draw


def _uploaded(host: Any, backend: Any, func: Any) -> Any:
    """NumPy's draw, moved to the device (``enable(random="numpy")``: NumPy's exact stream)."""
    from ._dispatch import upload

    if not isinstance(host, numpy.ndarray) or not backend.supports_dtypes((host.dtype,)):
        return host
    _report.record(func, "host")
    return DeviceArray(upload(host, backend, func), backend)


def seed(seed: Any = None) -> None:
    """Seed NumPy's global generator and the device generators of loaded backends."""
    from .backends import loaded_backends

    numpy.random.seed(seed)
    for backend in loaded_backends():
        if hasattr(backend, "random_seed"):
            backend.random_seed(seed)


class Generator:
    """``default_rng()``'s generator: NumPy's for small draws, the device's for large ones."""

    def __init__(self, seed: Any = None) -> None:
        self._seed = seed
        self._host = numpy.random.default_rng(seed)
        self._device: dict[str, Any] = {}

    @property
    def bit_generator(self) -> Any:
        return self._host.bit_generator

    def _device_generator(self, backend: Any) -> Any:
        gen = self._device.get(backend.name)
        if gen is None:
            gen = self._device[backend.name] = backend.random_generator(self._seed)
        return gen

    def __getattr__(self, name: str) -> Any:
        host_method = getattr(self._host, name)
        if name not in _GENERATOR:
            return host_method
        index = _GENERATOR[name]

        def draw(*args: Any, **kwargs: Any) -> Any:
            state = _config.current()
            size = args[index] if len(args) > index else kwargs.get("size")
            backend = _device_backend(state, _elements(size))
            if backend is not None and state.random == "numpy":
                return _uploaded(host_method(*args, **kwargs), backend, host_method)
            if backend is None or not backend.supports_generator(name, args, kwargs):
                return host_method(*args, **kwargs)
            _report.record(host_method, "device")
            return DeviceArray(getattr(self._device_generator(backend), name)(*args, **kwargs), backend)

        draw.__name__ = name
        setattr(self, name, draw)  # made once: the next rng.<name> is an attribute, not __getattr__
        return draw

    def __repr__(self) -> str:
        return f"npgpu.random.Generator({self._host.bit_generator.__class__.__name__})"


def default_rng(seed: Any = None) -> Generator:
    """Like ``numpy.random.default_rng``; large draws happen on the device when acceleration is on."""
    if isinstance(seed, numpy.random.Generator):
        seed = seed.bit_generator
    return Generator(seed)


def build() -> types.ModuleType:
    extra: dict[str, Any] = {name: _legacy(name) for name in _LEGACY}
    extra.update(seed=seed, default_rng=default_rng)
    return submodule("npgpu.random", numpy.random, extra)
