"""Dask arrays of npgpu chunks: DeviceArray as a Dask chunk type, and the ``"npgpu"`` array backend.

Imported when Dask is (``npgpu._integrations``, or Dask's ``dask.sizeof`` entry point of an
installed npgpu); ``import npgpu`` never imports Dask. ``register()`` (idempotent) tells Dask:

- DeviceArray is a chunk type: Dask wraps it and never defers to it in arithmetic, so
  ``dask_array + device_array`` and ``np.sin(dask_array)`` build Dask graphs;
- the lookups Dask makes per chunk type: concatenate, take, tensordot, einsum, empty, divide,
  percentile, numel/nannumel (results on the device), to_numpy (one download per chunk);
- ``sizeof`` (the device bytes, for a worker's memory accounting) and tokens (a device array
  is never read back to be hashed: each ``from_array`` of one gets a fresh name);
- the ``"npgpu"`` array backend: under ``dask.config.set({"array.backend": "npgpu"})`` creation
  functions (ones, zeros, empty, full, arange) make device chunks and ``da.random.RandomState``
  draws with npgpu's generator; ``x.to_backend("npgpu")`` moves a Dask array's chunks onto the
  device and ``x.to_backend("numpy")`` back.

Chunks are made on the device of the backend in force where the task runs: in a worker, the
process default (``NPGPU_BACKEND``; the threads of Dask's threaded scheduler see it too, not
a ``with npgpu.enable()`` block of the thread that called ``compute``).
"""

from __future__ import annotations

import os
import threading
import uuid
from typing import Any

import dask
import dask.array as da
import numpy
from dask.array import backends as _backends
from dask.array import chunk_types
from dask.array import dispatch as _lookups
from dask.sizeof import sizeof
from dask.tokenize import normalize_token
from dask.utils import Dispatch

import npgpu as _np

from . import _config, _report, _transfer
from ._array import DeviceArray
from .dask_hooks import register_sizeof

__all__ = ["NpgpuBackendEntrypoint", "register", "to_device", "to_npgpu_dispatch", "worker_plugin"]

#: chunk -> the same values in a device array (``to_backend("npgpu")``); numpy arrays and anything
#: NumPy can read are uploaded.
to_npgpu_dispatch = Dispatch("to_npgpu_dispatch")

_lock = threading.Lock()
_registered = False


def to_device(data: Any, **kwargs: Any) -> Any:
    """``data``'s values in a device array of the backend in force, whatever their size (an
    explicit move: the placement threshold does not apply); host data where no backend is on
    or the device can't hold its dtype."""
    if type(data) is DeviceArray:
        return data
    host = numpy.asarray(data, **kwargs)
    backend = _config.current().backend
    if backend is None or backend.name == "numpy" or not backend.supports_dtypes((host.dtype,)):
        return host
    native = _transfer.upload(host, backend, to_device)
    _report.record(to_device, "device")
    return DeviceArray(native, backend)


def _to_numpy(data: Any, **kwargs: Any) -> numpy.ndarray:
    return _np.asnumpy(data)


def _numel(x: Any, **kwargs: Any) -> Any:
    """How many elements a reduction over ``x`` counts (per kept position), in a device array."""
    axis = kwargs.get("axis")
    keepdims = kwargs.get("keepdims", False)
    dtype = kwargs.get("dtype", numpy.float64)
    ndim = len(x.shape)
    axes = range(ndim) if axis is None else [a % ndim for a in ((axis,) if isinstance(axis, int) else axis)]
    count = 1
    for a in axes:
        count *= x.shape[a]
    if axis is None and not keepdims:
        return numpy.prod(x.shape, dtype=dtype)  # a scalar, as for NumPy chunks
    shape = tuple(1 if a in axes else n for a, n in enumerate(x.shape) if keepdims or a not in axes)
    return _np.full_like(x, count, shape=shape, dtype=dtype)


def _nannumel(x: Any, **kwargs: Any) -> Any:
    return _np.sum(~_np.isnan(x), **kwargs)


def _token(x: DeviceArray) -> tuple[str, str]:
    return ("npgpu.DeviceArray", uuid.uuid4().hex)


def register() -> None:
    """Tell Dask about device arrays (see the module's docstring); safe to call again."""
    global _registered
    with _lock:
        if _registered:
            return
        chunk_types.register_chunk_type(DeviceArray)
        _lookups.concatenate_lookup.register(DeviceArray, _np.concatenate)
        _lookups.take_lookup.register(DeviceArray, _np.take)
        _lookups.tensordot_lookup.register(DeviceArray, _np.tensordot)
        _lookups.einsum_lookup.register(DeviceArray, _np.einsum)
        _lookups.empty_lookup.register(DeviceArray, _np.empty)
        _lookups.divide_lookup.register(DeviceArray, _np.divide)
        _lookups.percentile_lookup.register(DeviceArray, _backends.percentile)
        _lookups.numel_lookup.register(DeviceArray, _numel)
        _lookups.nannumel_lookup.register(DeviceArray, _nannumel)
        _lookups.to_numpy_dispatch.register(DeviceArray, _to_numpy)
        to_npgpu_dispatch.register(object, to_device)
        register_sizeof(sizeof)
        normalize_token.register(DeviceArray, _token)
        creation = _backends.array_creation_dispatch
        if "npgpu" not in creation._lookup:  # (an installed npgpu's entry point may have made it)
            creation.register_backend("npgpu", NpgpuBackendEntrypoint())
        _registered = True


def worker_plugin(**environment: str) -> Any:
    """A ``distributed`` worker plugin that sets npgpu's process default in every worker from
    its environment, after setting ``environment`` there (``NPGPU_BACKEND="opencl"``,
    ``NPGPU_THRESHOLD="0"``, ``NPGPU_OPENCL_DEVICE="1"``...): ``client.register_plugin(
    npgpu.dask.worker_plugin(NPGPU_BACKEND="opencl"))``. Needed where a worker imported npgpu
    before its environment was set: ``LocalCluster(env=...)`` sets it after the spawned process
    has imported the script's modules (set it in ``os.environ`` before starting the cluster, or
    in Dask's ``distributed.nanny.pre-spawn-environ``, to do without the plugin)."""
    from distributed import WorkerPlugin

    bad = [name for name, value in environment.items() if not name.startswith("NPGPU_") or not isinstance(value, str)]
    if bad:
        raise ValueError(f"worker_plugin takes NPGPU_* environment variables with string values, not {bad!r}")

    class NpgpuSettings(WorkerPlugin):
        name = "npgpu-settings"

        def __init__(self, env: dict[str, str]) -> None:
            self.env = env

        def setup(self, worker: Any) -> None:
            os.environ.update(self.env)
            _config.enable_from_environment()

    return NpgpuSettings(dict(environment))


def _device_meta(ndim: int, dtype: Any, meta: Any = None) -> Any:
    """An empty array standing for device chunks (what Dask reads the chunk type and dtype from;
    it has the chunks' ndim: Dask makes a 0-d meta of another ndim in NumPy)."""
    if meta is not None:
        return meta
    return to_device(numpy.empty((0,) * ndim, dtype=dtype))


class NpgpuBackendEntrypoint(_backends.ArrayBackendEntrypoint):
    """``"array.backend": "npgpu"``: Dask arrays whose chunks are npgpu device arrays."""

    @classmethod
    def to_backend_dispatch(cls) -> Dispatch:
        return to_npgpu_dispatch

    @classmethod
    def to_backend(cls, data: da.Array, **kwargs: Any) -> da.Array:
        if type(data._meta) is DeviceArray:
            return data
        meta = _device_meta(data.ndim, data.dtype)
        return data.map_blocks(to_npgpu_dispatch, meta=meta, **kwargs)

    @property
    def RandomState(self) -> type:  # noqa: N802  (Dask's name)
        return _np.random.RandomState

    @property
    def default_bit_generator(self) -> type:
        return numpy.random.PCG64

    @staticmethod
    def _on_device(name: str, *args: Any, meta: Any = None, **kwargs: Any) -> da.Array:
        with dask.config.set({"array.backend": "numpy"}):
            host = getattr(da, name)(*args, **kwargs)
        return host.map_blocks(to_device, meta=_device_meta(host.ndim, host.dtype, meta))

    @staticmethod
    def ones(*args: Any, **kwargs: Any) -> da.Array:
        return NpgpuBackendEntrypoint._on_device("ones", *args, **kwargs)

    @staticmethod
    def zeros(*args: Any, **kwargs: Any) -> da.Array:
        return NpgpuBackendEntrypoint._on_device("zeros", *args, **kwargs)

    @staticmethod
    def empty(*args: Any, **kwargs: Any) -> da.Array:
        return NpgpuBackendEntrypoint._on_device("empty", *args, **kwargs)

    @staticmethod
    def full(*args: Any, **kwargs: Any) -> da.Array:
        return NpgpuBackendEntrypoint._on_device("full", *args, **kwargs)

    @staticmethod
    def arange(*args: Any, like: Any = None, **kwargs: Any) -> da.Array:
        return NpgpuBackendEntrypoint._on_device("arange", *args, **kwargs)


register()
