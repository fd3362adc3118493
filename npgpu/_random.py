"""npgpu.random: NumPy's random API, with large draws made where the arrays will live (the device).

A seeded source gives NumPy's numbers on every backend: the global generator after ``seed(s)``
(s not None), ``set_state`` or ``set_bit_generator``; ``RandomState(s)``; ``default_rng(s)``; a
``Generator`` built on a bit generator. Its uniform doubles (``random``, ``rand``,
``random_sample``, ``uniform``) from PCG64 and MT19937 are computed on the device bit for bit
where the backend can (npgpu/backends/random_kernels.py), and the generator is moved past them;
its other draws (normals, integers, exponentials, ...: their algorithms take a varying number of
words per value, or host libm) are NumPy's, uploaded: host work plus a transfer in the report,
not a fallback, since nothing was asked of the device that it failed to do. Unseeded sources
(no seed, or ``seed(None)``) draw large arrays from the device's own, faster streams.
``enable(random=...)``: "auto" (the above), "numpy" (NumPy's streams for every source),
"device" (the device's streams for every source: fast, different numbers).
"""

from __future__ import annotations

import math
import operator
import threading
import types
from collections.abc import Callable
from typing import Any

import numpy

from . import _config, _report
from ._array import DeviceArray
from ._namespace import submodule
from ._transfer import upload
from .backends import loaded_backends

_FLOAT64 = numpy.dtype(numpy.float64)
_NumpyRandomState: Any = numpy.random.RandomState
_NumpyGenerator: Any = numpy.random.Generator


# -- sizes ---------------------------------------------------------------------------------------

def _dims(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return args if args else None  # rand(): a Python float


def _size_at(index: int) -> Callable[[tuple[Any, ...], dict[str, Any]], Any]:
    def size(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return args[index] if len(args) > index else kwargs.get("size")

    return size


# Legacy functions placed by size: name -> how to find the requested size.
_LEGACY = {
    "rand": _dims, "randn": _dims, "random": _size_at(0), "random_sample": _size_at(0), "ranf": _size_at(0),
    "sample": _size_at(0), "standard_normal": _size_at(0), "uniform": _size_at(2), "normal": _size_at(2),
    "randint": _size_at(2), "exponential": _size_at(1), "standard_exponential": _size_at(0),
}
# Generator methods placed by size: name -> index of ``size``.
_GENERATOR = {"random": 0, "standard_normal": 0, "normal": 2, "uniform": 2, "integers": 2, "exponential": 1}

_INTS = frozenset({int})


def _elements(size: Any) -> int:
    """Elements a draw of ``size`` makes (0: a scalar, or a size NumPy will reject)."""
    if type(size) is tuple and _INTS.issuperset(map(type, size)):  # rand(3, 4), size=(3, 4): the common case
        return math.prod(size) if size and min(size) >= 0 else int(not size)
    if size is None:
        return 0
    if isinstance(size, (int, numpy.integer)):
        return max(int(size), 0)
    try:
        dims = [operator.index(s) for s in size]
    except TypeError:
        return 0
    return math.prod(dims) if all(d >= 0 for d in dims) else 0


def _shape(size: Any) -> tuple[int, ...] | None:
    """``size`` as a shape where it is a plain one (an int, a sequence of ints), else None."""
    if isinstance(size, (int, numpy.integer)) and not isinstance(size, bool):
        size = (size,)
    if not isinstance(size, (tuple, list)):
        return None
    try:
        shape = tuple(operator.index(s) for s in size)
    except TypeError:
        return None
    return shape if all(s >= 0 for s in shape) else None


# -- which stream a draw takes ------------------------------------------------------------------

#: Whether NumPy's global generator was seeded through npgpu (seed(s), set_state, set_bit_generator).
_global_seeded = False


def _numpy_streams(state: _config.State, seeded: bool) -> bool:
    mode = state.random
    return mode == "numpy" or (mode == "auto" and seeded)


def _large(state: _config.State, size: Any) -> bool:
    """Whether a draw of ``size`` is made on the device (as arrays made from nothing are)."""
    backend = state.backend
    if backend is None or backend.is_host or _inside_numpy():
        return False
    n = _elements(size)
    return n > 0 and n * 8 >= state.create_limit


# NumPy's own methods call other methods of the same object (choice calls random, rand calls
# random_sample, multivariate_normal calls standard_normal): inside them, npgpu's overrides are
# NumPy's, so that NumPy's code gets the host arrays it expects.
_local = threading.local()


def _inside_numpy() -> bool:
    return getattr(_local, "depth", 0) > 0


def _as_numpy(method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    depth = getattr(_local, "depth", 0)
    _local.depth = depth + 1
    try:
        return method(*args, **kwargs)
    finally:
        _local.depth = depth


# -- NumPy's streams on the device --------------------------------------------------------------

_KINDS = {numpy.random.PCG64: "PCG64", numpy.random.MT19937: "MT19937"}
_REALS = (int, float, numpy.integer, numpy.floating)
_UNIFORM_LEGACY = frozenset({"random", "random_sample", "ranf", "sample"})


def _is_float64(dtype: Any) -> bool:
    try:
        return numpy.dtype(dtype) == _FLOAT64
    except TypeError:
        return False  # NumPy says what is wrong with it


def _bounds(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, float, float] | None:
    """(size, low, high - low) of ``uniform(low, high, size)`` with finite scalar bounds, else None."""
    names = ("low", "high", "size")
    if len(args) > 3 or not set(names).issuperset(kwargs) or any(n in kwargs for n in names[: len(args)]):
        return None
    low = args[0] if args else kwargs.get("low", 0.0)
    high = args[1] if len(args) > 1 else kwargs.get("high", 1.0)
    if not (isinstance(low, _REALS) and isinstance(high, _REALS)) or not _uniform_is_two_roundings():
        return None
    try:
        low, high = float(low), float(high)
    except OverflowError:
        return None  # (an int beyond float's range: NumPy raises)
    span = high - low
    if not math.isfinite(span):
        return None  # NumPy raises OverflowError
    return (args[2] if len(args) > 2 else kwargs.get("size")), low, span


def _uniform(name: str, args: tuple[Any, ...], kwargs: dict[str, Any],
             generator: bool) -> tuple[tuple[int, ...], float, float] | None:
    """(shape, low, high - low) when the draw is NumPy's low + (high - low) * random(shape) in
    float64, which the device can compute; None for anything else."""
    if name == "uniform":
        found = _bounds(args, kwargs)
        if found is None or (generator and found[2] < 0):
            return None  # (Generator.uniform refuses high < low: NumPy's draw raises its ValueError)
        size, low, span = found
    elif generator and name == "random":  # Generator.random(size=None, dtype=float64, out=None)
        if len(args) > 2 or not {"size", "dtype", "out"}.issuperset(kwargs) or kwargs.get("out") is not None:
            return None
        if not _is_float64(args[1] if len(args) > 1 else kwargs.get("dtype", _FLOAT64)):
            return None
        size, low, span = (args[0] if args else kwargs.get("size")), 0.0, 1.0
    elif not generator and name == "rand":
        if kwargs or not args or not all(isinstance(a, (int, numpy.integer)) for a in args):
            return None
        size, low, span = args, 0.0, 1.0
    elif not generator and name in _UNIFORM_LEGACY:
        if len(args) > 1 or not {"size"}.issuperset(kwargs) or (args and kwargs):
            return None
        size, low, span = (args[0] if args else kwargs.get("size")), 0.0, 1.0
    else:
        return None
    shape = _shape(size)
    return None if shape is None else (shape, low, span)


_two_roundings: list[bool] = []


def _uniform_is_two_roundings() -> bool:
    """Whether NumPy's ``uniform`` rounds low + span * u twice, as device kernels do (FP_CONTRACT
    OFF, --fmad=false); a build of NumPy that fuses it into one FMA would differ in the last bit.
    Checked once, on 256 draws of each kind of generator."""
    if not _two_roundings:
        same = True
        for make in (lambda: _NumpyGenerator(numpy.random.PCG64(0)), lambda: _NumpyRandomState(0)):
            drawn, reference = make().uniform(0.1, 0.7, 256), make().random(256)
            same = same and numpy.array_equal(drawn, numpy.add(0.1, numpy.multiply(0.7 - 0.1, reference)))
        _two_roundings.append(bool(same))
    return _two_roundings[0]


def _on_device(backend: Any, bit_generator: Any, shape: tuple[int, ...], low: float, span: float) -> Any:
    """NumPy's uniform draw computed on the device, the generator moved past it; None when the
    backend can't compute this generator's stream."""
    kind = _KINDS.get(type(bit_generator))
    if kind is None or kind not in backend.random_streams or not backend.supports_dtypes((_FLOAT64,)):
        return None
    with bit_generator.lock:  # NumPy's draws on other threads take the same lock
        native, after = backend.random_doubles(bit_generator.state, shape)
        bit_generator.state = after
    values = DeviceArray(native, backend)
    if low == 0.0 and span == 1.0:
        return values
    return numpy.add(low, numpy.multiply(span, values))


def _numpy_stream(state: _config.State, bit_generator: Any, request: Any, host: Callable[[], Any], func: Any) -> Any:
    """A large draw of NumPy's stream: on the device when it can compute it, else NumPy's draw,
    which is host data: uploaded from the upload threshold, as any host data entering."""

    backend = state.backend
    if request is not None:
        made = _on_device(backend, bit_generator, *request)
        if made is not None:
            _report.record(func, "device")
            return made
    drawn = _as_numpy(host)
    if isinstance(drawn, numpy.ndarray):
        _report.record(func, "host")
        if drawn.nbytes >= state.host_limit and backend.supports_dtypes((drawn.dtype,)):
            return DeviceArray(upload(drawn, backend, func), backend)
    return drawn


# -- the legacy API: module functions (NumPy's global generator) and RandomState ------------------

def _legacy_draw(name: str, host: Callable[..., Any], func: Any, counter: list[int], source: Any,
                 seeded: bool, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    state = _config.current()
    if state.backend is None:
        return host(*args, **kwargs)
    if not _large(state, _LEGACY[name](args, kwargs)):
        counter[0] += 1
        return host(*args, **kwargs)
    backend = state.backend
    if not _numpy_streams(state, seeded) and backend.supports_random(name, args, kwargs):
        _report.record(func, "device")
        return DeviceArray(backend.random_call(name, args, kwargs), backend)
    return _numpy_stream(state, source._bit_generator, _uniform(name, args, kwargs, generator=False),
                         lambda: host(*args, **kwargs), func)


def _legacy_function(name: str) -> Callable[..., Any]:
    numpy_func = getattr(numpy.random, name)
    counter = _report.host_counter(numpy_func)  # draws NumPy makes, counted per function

    def draw(*args: Any, **kwargs: Any) -> Any:
        return _legacy_draw(name, numpy_func, numpy_func, counter, numpy.random.mtrand._rand, _global_seeded,
                            args, kwargs)

    draw.__name__ = draw.__qualname__ = name
    draw.__doc__ = numpy_func.__doc__
    draw.__module__ = "npgpu.random"
    return draw


def _shuffling(shuffle: Callable[..., Any], position: int, name: str) -> Callable[..., Any]:
    """NumPy's ``shuffle`` (the array at ``position``) that shuffles a device array as NumPy
    shuffles an ndarray: NumPy shuffles a host copy (the generator's stream moves as it would for
    the ndarray), then the copy is written back. Given the device array itself, NumPy would take
    it for a sequence: a UserWarning, and a Python swap per element, each a device round trip."""
    counter = _report.host_counter(shuffle)

    def shuffled(*args: Any, **kwargs: Any) -> Any:
        if len(args) <= position or not isinstance(args[position], DeviceArray):
            return shuffle(*args, **kwargs)
        x = args[position]
        host = numpy.array(x, copy=True)
        host.flags.writeable = not x._readonly  # (a read-only array: NumPy's own error)
        counter[0] += 1
        shuffle(*args[:position], host, *args[position + 1:], **kwargs)
        x[...] = host
        return None

    shuffled.__name__ = "shuffle"
    shuffled.__qualname__ = name
    shuffled.__doc__ = shuffle.__doc__
    return shuffled


def seed(seed: Any = None) -> None:
    """Seed NumPy's global generator (and the device generators of loaded backends): from then on
    its draws are NumPy's numbers, on the device too; ``seed(None)`` makes it unseeded again."""
    global _global_seeded
    numpy.random.seed(seed)
    _global_seeded = seed is not None
    for backend in loaded_backends():
        backend.random_seed(seed)


def set_state(state: Any) -> None:
    """NumPy's ``set_state``; the global generator counts as seeded after it."""
    global _global_seeded
    numpy.random.set_state(state)
    _global_seeded = True


def set_bit_generator(bitgen: Any) -> None:
    """NumPy's ``set_bit_generator``; the global generator counts as seeded after it."""
    global _global_seeded
    numpy.random.set_bit_generator(bitgen)
    _global_seeded = True


def _legacy_method(name: str) -> Callable[..., Any]:
    unbound = getattr(_NumpyRandomState, name)
    counter = _report.host_counter(unbound)

    def method(self: RandomState, *args: Any, **kwargs: Any) -> Any:
        return _legacy_draw(name, unbound.__get__(self), unbound, counter, self, self._npgpu_seeded, args, kwargs)

    method.__name__ = name
    method.__qualname__ = f"RandomState.{name}"
    method.__doc__ = unbound.__doc__
    return method


def _numpy_method(cls: Any, name: str) -> Callable[..., Any]:
    """NumPy's method ``name`` of ``cls``, run as NumPy (see ``_as_numpy``)."""
    unbound = getattr(cls, name)

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return _as_numpy(unbound, self, *args, **kwargs)

    method.__name__ = name
    method.__qualname__ = f"{cls.__name__}.{name}"
    method.__doc__ = unbound.__doc__
    return method


#: NumPy methods that draw through other methods of their object (found by
#: tests/test_random.py::test_numpy_methods_that_call_back_are_listed).
_CALLS_BACK = {
    "RandomState": ("bytes", "choice", "multivariate_normal", "random_integers"),
    "Generator": ("bytes", "choice", "multivariate_normal"),
}


class RandomState(_NumpyRandomState):  # type: ignore[misc]
    """NumPy's ``RandomState``; large draws land on the device (NumPy's numbers once seeded)."""

    def __init__(self, seed: Any = None) -> None:
        super().__init__(seed)
        self._npgpu_seeded = seed is not None

    def seed(self, seed: Any = None) -> None:
        super().seed(seed)
        self._npgpu_seeded = seed is not None

    def set_state(self, state: Any) -> None:
        super().set_state(state)
        self._npgpu_seeded = True

    def __reduce__(self) -> Any:
        return type(self), (self._bit_generator,), self.get_state(legacy=False)


for _name in _LEGACY:
    if hasattr(_NumpyRandomState, _name):
        setattr(RandomState, _name, _legacy_method(_name))
for _name in _CALLS_BACK["RandomState"]:
    setattr(RandomState, _name, _numpy_method(_NumpyRandomState, _name))
RandomState.shuffle = _shuffling(_NumpyRandomState.shuffle, 1, "RandomState.shuffle")  # type: ignore[method-assign]


# -- Generator ------------------------------------------------------------------------------------

class Generator(_NumpyGenerator):  # type: ignore[misc]
    """NumPy's ``Generator``; large draws land on the device (NumPy's numbers once seeded: a
    generator from ``default_rng(s)`` or built on a bit generator)."""

    def __init__(self, bit_generator: Any) -> None:
        super().__init__(bit_generator)
        self._npgpu_seeded = True
        self._device_seed: Any = _FROM_SEED_SEQUENCE
        self._device: dict[str, Any] = {}

    def _device_generator(self, backend: Any) -> Any:
        """This generator's own stream on ``backend`` (unseeded, or ``random="device"``)."""
        gen = self._device.get(backend.name)
        if gen is None:
            seed = self._device_seed
            if seed is _FROM_SEED_SEQUENCE:
                seed = _seed_material(self.bit_generator)
            gen = self._device[backend.name] = backend.random_generator(seed)
        return gen

    def __reduce__(self) -> Any:
        return type(self), (self.bit_generator,)


_FROM_SEED_SEQUENCE = object()


def _seed_material(bit_generator: Any) -> Any:
    """A seed for a device stream from the bit generator's SeedSequence (its stream untouched)."""
    seed_seq = getattr(bit_generator, "seed_seq", None)
    if not isinstance(seed_seq, numpy.random.SeedSequence):
        return None
    return int(seed_seq.generate_state(1, numpy.uint64)[0])


def _draw_into(unbound: Callable[..., Any], generator: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``generator.method(..., out=device_array)``: NumPy draws into a host array laid out as NumPy
    requires of ``out`` where the device array is (C-contiguous and writable, or not: then NumPy
    raises its own error), and the draw is written into the device array, which is returned.
    NumPy given the device array itself refuses it ("Supplied output array must be contiguous")."""
    out = kwargs["out"]
    if out.flags.c_contiguous:
        host = numpy.empty(out.shape, out.dtype)
    else:  # (a stand-in of the same shape that is not contiguous either)
        host = numpy.empty((*out.shape, 2), out.dtype)[..., 0]
    host.flags.writeable = not out._readonly
    unbound(generator, *args, **{**kwargs, "out": host})
    out[...] = host
    return out


def _generator_method(name: str) -> Callable[..., Any]:
    unbound = getattr(_NumpyGenerator, name)
    counter = _report.host_counter(unbound)
    index = _GENERATOR[name]

    def method(self: Generator, *args: Any, **kwargs: Any) -> Any:
        state = _config.current()
        if state.backend is None:
            return unbound(self, *args, **kwargs)
        if isinstance(kwargs.get("out"), DeviceArray):
            counter[0] += 1
            return _draw_into(unbound, self, args, kwargs)
        if kwargs.get("out") is not None or not _large(state, args[index] if len(args) > index else kwargs.get("size")):
            counter[0] += 1
            return unbound(self, *args, **kwargs)
        backend = state.backend
        if not _numpy_streams(state, self._npgpu_seeded) and backend.supports_generator(name, args, kwargs):
            _report.record(unbound, "device")
            return DeviceArray(getattr(self._device_generator(backend), name)(*args, **kwargs), backend)
        return _numpy_stream(state, self.bit_generator, _uniform(name, args, kwargs, generator=True),
                             lambda: unbound(self, *args, **kwargs), unbound)

    method.__name__ = name
    method.__qualname__ = f"Generator.{name}"
    method.__doc__ = unbound.__doc__
    return method


for _name in _GENERATOR:
    setattr(Generator, _name, _generator_method(_name))
for _name in _CALLS_BACK["Generator"]:
    setattr(Generator, _name, _numpy_method(_NumpyGenerator, _name))
Generator.shuffle = _shuffling(_NumpyGenerator.shuffle, 1, "Generator.shuffle")  # type: ignore[method-assign]


def default_rng(seed: Any = None) -> Any:
    """Like ``numpy.random.default_rng``: an npgpu ``Generator``; ``default_rng()`` (no seed) is
    unseeded, so its large draws may come from the device's own stream."""
    if isinstance(seed, _NumpyGenerator):
        return seed  # NumPy returns a Generator as it is
    if isinstance(seed, numpy.random.BitGenerator):
        return Generator(seed)
    rng = Generator(numpy.random.PCG64(seed))
    rng._npgpu_seeded = seed is not None
    if seed is None or isinstance(seed, int):
        rng._device_seed = seed  # the device generator seeded alike (random="device")
    return rng


def build() -> types.ModuleType:
    extra: dict[str, Any] = {name: _legacy_function(name) for name in _LEGACY}
    extra.update(seed=seed, set_state=set_state, set_bit_generator=set_bit_generator, default_rng=default_rng,
                 RandomState=RandomState, Generator=Generator,
                 shuffle=_shuffling(numpy.random.shuffle, 0, "shuffle"))
    return submodule("npgpu.random", numpy.random, extra)
