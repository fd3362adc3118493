"""The OpenCL backend: NumPy semantics on any OpenCL device (GPUs, or the CPU through PoCL).

Kernels are generated from npgpu.kernels.ufuncs; this is the only module importing pyopencl.
"""

from __future__ import annotations

import atexit
import builtins
import inspect
import math
import os
import threading
import warnings
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any, ClassVar, NoReturn

import numpy
from numpy.lib.array_utils import normalize_axis_tuple
from numpy.lib.stride_tricks import as_strided

from .. import _fperr
from .._errors import DeviceLostError, DeviceMemoryError, KernelBuildError
from ..kernels import codegen, ir
from ..kernels import ufuncs as _table
from .base import Backend, dtype_argument

_PY_SCALARS = (bool, int, float, complex)
_NO_BYTES = numpy.dtype([])  # items of zero bytes: NumPy works out shapes on them without memory
#: compiled kernels kept per backend (each holds a built program)
KERNEL_CACHE_SIZE = 512


class CLArray:
    """A strided view of an OpenCL buffer: NumPy's layout (byte strides, byte offset).

    Views share ``data``; ``base`` keeps the array whose buffer this views (None for owners).
    """

    __slots__ = ("data", "shape", "dtype", "strides", "offset", "base", "backend", "__weakref__")

    def __init__(
        self,
        backend: OpenCLBackend,
        data: Any,
        shape: tuple[int, ...],
        dtype: numpy.dtype,
        strides: tuple[int, ...] | None = None,
        offset: int = 0,
        base: CLArray | None = None,
    ):
        self.backend = backend
        self.data = data
        self.shape = tuple(int(s) for s in shape)
        self.dtype = numpy.dtype(dtype)
        self.strides = tuple(strides) if strides is not None else _c_strides(self.shape, self.dtype.itemsize)
        self.offset = int(offset)
        self.base = base

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
    def c_contiguous(self) -> bool:
        return _is_c_contiguous(self.shape, self.strides, self.dtype.itemsize)

    @property
    def T(self) -> CLArray:  # noqa: N802 - NumPy's name
        return self.view(self.shape[::-1], self.strides[::-1], self.offset)

    def view(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> CLArray:
        return CLArray(self.backend, self.data, shape, self.dtype, strides, offset, self.base or self)

    def get(self) -> numpy.ndarray:
        return self.backend.to_host(self)

    def __repr__(self) -> str:
        return f"CLArray(shape={self.shape}, dtype={self.dtype}, strides={self.strides}, offset={self.offset})"



#: held while a program builds with CompilerWarning silenced (see OpenCLBackend._build)
_BUILD_LOCK = threading.Lock()

def _like(a: CLArray, dtype: Any, order: str, shape: Any) -> tuple[Any, Any, str, CLArray | None]:
    """(shape, dtype, order, prototype) of a ``*_like`` call, NumPy's rules for a new ``shape``:
    'A' follows the prototype's contiguity, 'K' its axes when the number of dimensions is the same."""
    dtype = a.dtype if dtype is None else dtype
    if shape is None:
        return a.shape, dtype, order, a
    shape = (int(shape),) if isinstance(shape, (int, numpy.integer)) else tuple(shape)
    if order == "A":
        order = "F" if _is_f_contiguous(a) and not a.c_contiguous else "C"
    elif order == "K" and len(shape) != a.ndim:
        order = "C"
    return shape, dtype, order, a if order == "K" else None


def _memory_axes(shape: tuple[int, ...], order: str, like: CLArray | None) -> tuple[int, ...] | None:
    """The axes from outermost to innermost in memory for NumPy's ``order``; None for C order."""
    ndim = len(shape)
    if ndim < 2 or order == "C" or (order in ("A", "K") and like is None):
        return None
    if order == "F" or (order == "A" and _is_f_contiguous(like) and not like.c_contiguous):
        return tuple(reversed(range(ndim)))
    if order == "K":
        moving = [abs(s) for n, s in zip(like.shape, like.strides, strict=True) if n > 1]
        if all(moving[i] >= moving[i + 1] for i in range(len(moving) - 1)):
            return None
        return tuple(sorted(range(ndim), key=lambda axis: -abs(like.strides[axis]) if like.shape[axis] > 1 else 0))
    if order == "A":
        return None
    raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")


def _is_f_contiguous(a: CLArray) -> bool:
    return _is_c_contiguous(a.shape[::-1], a.strides[::-1], a.dtype.itemsize)


def _c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides = []
    acc = itemsize
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


def _is_c_contiguous(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> bool:
    if 0 in shape:  # (NumPy's flags: an empty array is contiguous whatever its strides)
        return True
    acc = itemsize
    for n, s in zip(reversed(shape), reversed(strides), strict=True):
        if n == 0:
            return True
        if n != 1 and s != acc:
            return False
        acc *= n
    return True


def _span(a: CLArray) -> tuple[int, int]:
    """Lowest and one-past-highest byte touched by the view (relative to the buffer)."""
    lo = hi = a.offset
    for n, s in zip(a.shape, a.strides, strict=True):
        if n == 0:
            return a.offset, a.offset
        if s < 0:
            lo += (n - 1) * s
        else:
            hi += (n - 1) * s
    return lo, hi + a.itemsize


def _collapse(shape: tuple[int, ...], strides: list[tuple[int, ...]]) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
    """Drop extent-1 dims and merge dims that are contiguous for every operand."""
    keep = [d for d in range(len(shape)) if shape[d] != 1]
    shp = [shape[d] for d in keep]
    sts = [[s[d] for d in keep] for s in strides]
    d = len(shp) - 1
    while d > 0:
        if all(st[d - 1] == st[d] * shp[d] for st in sts):
            shp[d - 1] *= shp[d]
            for st in sts:
                st[d - 1] = st[d]
            del shp[d]
            for st in sts:
                del st[d]
        d -= 1
    return tuple(shp), [tuple(st) for st in sts]


def _broadcast_strides(a: CLArray, shape: tuple[int, ...]) -> tuple[int, ...]:
    pad = len(shape) - a.ndim
    out = [0] * pad
    for n, s in zip(a.shape, a.strides, strict=True):
        out.append(0 if n == 1 else s)
    return tuple(out)


def _weak_type(x: Any) -> Any:
    """What NumPy's dtype resolution takes for an operand (Python scalars stay weak)."""
    if isinstance(x, CLArray):
        return x.dtype
    if type(x) is bool:  # (a Python bool is NumPy's bool, not a weak scalar)
        return numpy.dtype(bool)
    if type(x) in _PY_SCALARS:  # NEP 50: only Python scalars are weak (numpy.float64 subclasses float)
        return type(x)
    return numpy.asarray(x).dtype


def _scalar_value(x: Any, dtype: numpy.dtype) -> numpy.generic:
    """A scalar converted the way NumPy converts it for a loop (OverflowError for bad Python ints)."""
    if not isinstance(x, (*_PY_SCALARS, numpy.generic)):
        # the core converts array data (lists, host arrays) to device arrays before a call: anything
        # else here is a bug that must not turn into a kernel argument made of its first element
        raise TypeError(f"opencl backend: a scalar operand was expected, not {type(x).__name__}")
    if isinstance(x, int) and not isinstance(x, bool) and dtype.kind in "iu":
        info = numpy.iinfo(dtype)
        if not info.min <= x <= info.max:
            raise OverflowError(f"Python integer {x} out of bounds for {dtype}")
    with warnings.catch_warnings():
        # NumPy's own loops convert silently (e.g. 1e300 into float32 is inf)
        warnings.simplefilter("ignore", RuntimeWarning)
        return numpy.asarray(x).astype(dtype)[()]


_BASIC_KEY_TYPES = (int, slice, type(None), type(Ellipsis), numpy.integer)


def _is_basic_key(key: Any) -> bool:
    parts = key if isinstance(key, tuple) else (key,)
    return all(isinstance(p, _BASIC_KEY_TYPES) and not isinstance(p, bool) for p in parts)


def _compiler_errors(message: str) -> str:
    """The compiler's error lines from PyOpenCL's build-failure message (all of it if it has none)."""
    lines = [" ".join(line.split()) for line in message.splitlines()]
    errors = [line for line in lines if "error" in line.lower() and "BUILD_PROGRAM_FAILURE" not in line]
    return "; ".join(errors) if errors else " ".join(message.split())


# Queued commands must finish before the interpreter frees the host memory and buffers they use:
# a process that exited with a fill still running on PoCL crashed (SIGSEGV) after its last line.
_LIVE_BACKENDS: weakref.WeakSet[OpenCLBackend] = weakref.WeakSet()


@atexit.register
def _finish_queues() -> None:
    for backend in list(_LIVE_BACKENDS):
        backend.queue.finish()


class OpenCLBackend(Backend):
    """NumPy on an OpenCL device through generated kernels.

    ``device``: an index into all devices or a substring of a device name (default:
    env ``NPGPU_OPENCL_DEVICE``, else the first GPU, else the first device).
    ``fp64``: override the device's float64 capability (False simulates a device
    without cl_khr_fp64: float64 work then goes to NumPy).
    """

    name = "opencl"
    is_host = False
    functions: ClassVar[dict[Callable[..., Any], Callable[..., Any]]] = {}
    # GPUs: the base values (not measured here).  CPU devices (PoCL) set their own in __init__.
    default_threshold_bytes: int = 1 << 20
    upload_threshold_bytes: int = 16 << 20

    def __init__(self, device: int | str | None = None, fp64: bool | None = None, local_size: int | None = None):
        import pyopencl as cl

        self._cl = cl
        self.device = _choose_device(cl, device)
        context = self._probe_contexts.pop(self.device.int_ptr, None)
        self.context = context if context is not None else cl.Context([self.device])
        self.queue = cl.CommandQueue(self.context)
        has_fp64 = "cl_khr_fp64" in self.device.extensions
        self.fp64 = has_fp64 if fp64 is None else (bool(fp64) and has_fp64)
        self.is_cpu = bool(self.device.type & cl.device_type.CPU)
        self.unified_memory = bool(self.device.host_unified_memory)
        #: buffers in NumPy-allocated host memory (USE_HOST_PTR): CPU devices, where device memory is host memory
        self.host_backed = self.is_cpu and self.unified_memory
        # Device buffers are plain clCreateBuffer allocations, released when their last array dies.
        # (PyOpenCL's MemoryPool is not safe under threads: a pooled buffer returns to the pool from
        # whichever thread drops it last, while another thread allocates from it with the GIL released;
        # on NVIDIA's OpenCL that crashed the process in tests/test_threads.py. OpenCL's own object
        # creation and release are thread-safe.)
        # NumPy's float32 division and sqrt are correctly rounded; OpenCL allows 2.5-3 ulp unless
        # asked (NVIDIA takes the liberty), so ask wherever the device offers it.
        rounded = cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT
        self._build_options = ["-w"] + (
            ["-cl-fp32-correctly-rounded-divide-sqrt"] if self.device.single_fp_config & rounded else []
        )
        if self.is_cpu:
            # Measured on PoCL, 2 cores, float64, one op (`tools/measure_opencl.py placement`,
            # 2026-11-30, with the vector kernels). Device arrays against NumPy: at 1e6 elements
            # add 1.15 vs 0.59 ms, sum 0.71 vs 0.24, sin 6.4 vs 10.8; at 2e6 add even (1.84 vs
            # 1.82), sum 2x slower, sin 2.7x faster; at 1e7 add 1.7x, sin 3.8x faster, sum even.
            # So arrays are made on the device from 16 MiB (2M float64). An upload costs about
            # 20 ms per 80 MB, more than a memory-bound op saves: upload + add at 1e7 took 28.7 ms
            # against NumPy's 14.5, upload + sum 19.5 vs 3.0 (upload + sin: 47.7 vs 140). Host
            # inputs move only from 512 MiB (ufuncs on NumPy arrays are NumPy's own calls anyway).
            self.default_threshold_bytes = 16 << 20
            self.upload_threshold_bytes = 512 << 20
        self._retired: deque[numpy.ndarray] = deque()
        self._spare: dict[int, list[numpy.ndarray]] = {}
        self._spare_bytes = 0
        self._in_flight: deque[tuple[Any, list[numpy.ndarray]]] = deque()
        # Measured on PoCL (2 cores): 256-1024 work-items per group are equally fast and
        # far faster than PyOpenCL's default launch; GPUs like 256.
        self.local_size = int(local_size or min(256, self.device.max_work_group_size))
        # reductions: parts per output row; enough work-items to fill every compute unit
        self.parallelism = self.device.max_compute_units * (512 if self.is_cpu else 2048)
        #: accumulators per work-item of a reduction on a CPU device (codegen.ReduceLayout.unroll)
        self.reduce_unroll = 8
        #: work-group size of chunked elementwise launches on CPU devices (0: one element per work-item)
        self.chunk_local_size = 1
        #: chunked launches of eligible float graphs compute in OpenCL vector types (see codegen.vector_width)
        self.vectorize = True
        self._kernels: OrderedDict[Any, Any] = OrderedDict()
        #: Guards what threads share here: launches (a kernel's arguments), the kernel cache, the
        #: memory pool and the recycling of host memory (reentrant: a collection that a lock holder
        #: triggers may free buffers, whose finalizers only append to _retired, but stay safe if not)
        self._lock = threading.RLock()
        #: The most bytes one array may take (CL_DEVICE_MAX_MEM_ALLOC_SIZE); larger requests raise
        #: DeviceMemoryError before anything is allocated. Tests lower it to stand for a smaller device.
        self.max_alloc_bytes = int(self.device.max_mem_alloc_size)
        self._error_hosts: dict[int, numpy.ndarray] = {}  # host memory of flag buffers (error_buffer)
        self.compile_seconds = 0.0
        self.kernels_built = 0
        _LIVE_BACKENDS.add(self)

    # -- NumPy's PCG64 (and, on GPUs, MT19937) doubles computed on the device (random_kernels.py) --
    @property
    def random_streams(self) -> frozenset[str]:
        from . import random_kernels

        return random_kernels.opencl_streams(self)

    def random_doubles(self, state: dict[str, Any], shape: tuple[int, ...]) -> tuple[Any, dict[str, Any]]:
        from . import random_kernels

        return random_kernels.opencl_doubles(self, state, shape)

    def prefers_host(self, func: Any) -> bool:
        """True for functions this device runs slower than NumPy: on CPU devices, matmul/dot/tensordot.

        Measured on PoCL (2 cores), float64 n x n: 64: 0.84 ms vs NumPy 0.013; 256: 21.5 ms vs 0.47;
        512: 138 ms vs 3.2 (the local-memory tiled kernel suits GPUs; OpenBLAS wins on a CPU).
        Placement keeps such calls on the host when their inputs are there.
        """
        return self.is_cpu and func in _HOST_ON_CPU

    # -- availability -------------------------------------------------------
    @classmethod
    def _devices(cls) -> tuple[list[Any], str | None]:
        """All OpenCL devices, or ([], why there are none); never raises for a missing platform."""
        try:
            import pyopencl as cl
        except ImportError:
            return [], "the opencl backend needs pyopencl: pip install 'npgpu[opencl]'"
        try:
            platforms = cl.get_platforms()
        except cl.Error as exc:  # the ICD loader raises when no platform is installed
            return [], f"no OpenCL platform found ({exc}); install an OpenCL driver or PoCL (pocl-binary-distribution)"
        if not platforms:
            return [], "no OpenCL platform found; install an OpenCL driver or PoCL (pocl-binary-distribution)"
        devices = []
        for p in platforms:
            try:
                devices.extend(p.get_devices())
            except cl.Error:  # a platform with no device raises DEVICE_NOT_FOUND
                continue
        if not devices:
            names = ", ".join(p.name.strip() for p in platforms)
            return [], f"OpenCL is installed (platforms: {names}) but reports no device"
        return devices, None

    @classmethod
    def unavailable_reason(cls, **options: Any) -> str | None:
        devices, reason = cls._devices()
        if reason is not None:
            return reason
        device = options.get("device")
        if device is None:
            device = os.environ.get("NPGPU_OPENCL_DEVICE") or None
        if device is None:
            return cls._build_failure(None)
        names = ", ".join(f"{i}: {d.name.strip()}" for i, d in enumerate(devices))
        if isinstance(device, int) or (isinstance(device, str) and device.isdigit()):
            if not 0 <= int(device) < len(devices):
                return f"OpenCL device index {int(device)} is out of range: there are {len(devices)} ({names})"
            return cls._build_failure(int(device))
        if not any(str(device).lower() in d.name.lower() for d in devices):
            return f"no OpenCL device name contains {device!r} (devices: {names})"
        return cls._build_failure(device)

    #: A kernel every OpenCL C compiler builds: if it fails, the device's compiler can't work here.
    _PROBE_SOURCE = "__kernel void npgpu_probe(__global float *a) { a[get_global_id(0)] += 1.0f; }"
    _probed: ClassVar[dict[Any, str | None]] = {}
    #: the probe's context per device, handed to the first backend made for it (a context costs
    #: about a second on NVIDIA's OpenCL)
    _probe_contexts: ClassVar[dict[Any, Any]] = {}

    @classmethod
    def _build_failure(cls, device: int | str | None) -> str | None:
        """Why the chosen device can't build a trivial kernel, or None; once per device.

        PoCL 3.0's bundled LLVM 14 fails every build on CPUs it doesn't know (seen on an AMD
        EPYC: "unknown target CPU 'generic'"); that is a backend that can't run here, said as
        such, rather than a failure at the first array operation.
        """
        import pyopencl as cl

        chosen = _choose_device(cl, device)
        key = chosen.int_ptr
        if key not in cls._probed:
            try:
                context = cl.Context([chosen])
                with warnings.catch_warnings():  # (a compiler's chatter about the probe is no news)
                    warnings.simplefilter("ignore", cl.CompilerWarning)
                    cl.Program(context, cls._PROBE_SOURCE).build(options=["-w"])
                cls._probed[key] = None
                cls._probe_contexts[key] = context
            except cl.Error as exc:  # the build (or context) failed; the message holds its log
                log = " ".join(str(exc).split())
                cls._probed[key] = (f"the OpenCL device {chosen.name.strip()!r} can't build kernels here: "
                                    f"{log[:300]}")
        return cls._probed[key]

    @classmethod
    def has_gpu(cls) -> bool:
        """True when any OpenCL GPU device exists here (``npgpu.enable("auto")`` asks); never raises."""
        import importlib.util

        if importlib.util.find_spec("pyopencl") is None:
            return False
        devices, _ = cls._devices()
        import pyopencl as cl

        return any(d.type & cl.device_type.GPU for d in devices)

    def describe(self) -> dict[str, Any]:
        d = self.device
        return {
            "backend": self.name,
            "device": d.name.strip(),
            "vendor": d.vendor.strip(),
            "platform": d.platform.name.strip(),
            "memory_bytes": int(d.global_mem_size),
            "fp64": self.fp64,
            "compute_units": int(d.max_compute_units),
            "unified_memory": self.unified_memory,
        }

    # -- memory -------------------------------------------------------------
    def is_native(self, obj: Any) -> bool:
        return isinstance(obj, CLArray)

    def empty(self, shape: Any, dtype: Any = float) -> CLArray:
        shape = (int(shape),) if isinstance(shape, (int, numpy.integer)) else tuple(int(s) for s in shape)
        dtype = numpy.dtype(dtype)
        nbytes = max(math.prod(shape) * dtype.itemsize, 1)
        if nbytes > self.max_alloc_bytes:  # refused before anything is allocated (or overcommitted)
            raise self._no_memory(nbytes)
        cl = self._cl
        mf = cl.mem_flags
        try:
            if self.host_backed:
                # Host memory from NumPy's allocator (huge pages for large arrays) used in place by
                # the device: measured on PoCL at 1e7 float64, add into a new array 35 -> 12 ms,
                # upload 45 -> 12 ms, download 32 -> 8.5 ms.  The buffer keeps the host array alive.
                # The memory must outlive queued commands that use it: when the buffer dies its host
                # array is retired, and freed once a marker enqueued after it has completed.
                with self._lock:
                    self._collect()
                    owner = self._reuse(nbytes)
                # (the buffer holds a view, which dies with it; the finalizer holds the owner)
                view = owner[:]
                buf = cl.Buffer(self.context, mf.READ_WRITE | mf.USE_HOST_PTR, hostbuf=view)
                weakref.finalize(view, self._retired.append, owner)
                del view
            else:
                buf = cl.Buffer(self.context, mf.READ_WRITE, nbytes)
        except MemoryError as exc:  # NumPy's: the host memory a CPU device computes in is exhausted
            raise self._no_memory(nbytes, str(exc)) from exc
        except cl.Error as exc:
            self._raise_fault(exc, "an allocation", nbytes)
        return CLArray(self, buf, shape, dtype)

    def empty_ordered(self, shape: Any, dtype: Any = float, order: str = "C", like: CLArray | None = None) -> CLArray:
        """``empty`` with NumPy's memory order: "C", "F", or for ``*_like``/copies "A" (F when
        ``like`` is Fortran-contiguous) and "K" (``like``'s order of axes in memory)."""
        shape = (int(shape),) if isinstance(shape, (int, numpy.integer)) else tuple(int(s) for s in shape)
        axes = _memory_axes(shape, order, like)
        if axes is None:
            return self.empty(shape, dtype)
        owner = self.empty(tuple(shape[axis] for axis in axes), dtype)
        where = numpy.argsort(axes)
        return CLArray(self, owner.data, shape, owner.dtype, tuple(owner.strides[k] for k in where), owner.offset)

    def from_host(self, array: numpy.ndarray) -> CLArray:
        # (numpy.ascontiguousarray would turn a 0-d array into a 1-d one)
        host = array if array.flags.c_contiguous else numpy.ascontiguousarray(array).reshape(array.shape)
        out = self.empty(host.shape, host.dtype)
        if host.size:
            # The caller's own memory is copied before this returns: a copy still queued would read
            # whatever the caller writes there next (NumPy's asarray copies at once). A private
            # contiguous copy can go on in the background.
            try:
                self._cl.enqueue_copy(self.queue, out.data, host, is_blocking=host is array)
            except self._cl.Error as exc:
                self._raise_fault(exc, "an upload", host.nbytes)
        return out

    def to_host(self, native: CLArray) -> numpy.ndarray:
        a = native
        result = numpy.empty(a.shape, a.dtype)
        if a.size == 0:
            return result
        cl = self._cl
        try:
            if a.c_contiguous:
                cl.enqueue_copy(self.queue, result, a.data, src_offset=a.offset, is_blocking=True)
                return result
            lo, hi = _span(a)
            if hi - lo <= 2 * a.nbytes:
                # copy the touched span and let NumPy gather it: cheaper than a kernel + copy
                raw = numpy.empty(hi - lo, numpy.uint8)
                cl.enqueue_copy(self.queue, raw, a.data, src_offset=lo, is_blocking=True)
                result[...] = numpy.ndarray(a.shape, a.dtype, buffer=raw, offset=a.offset - lo, strides=a.strides)
                return result
        except cl.Error as exc:
            self._raise_fault(exc, "a download")
        return self.to_host(self.copy(a))

    def write(self, native: CLArray, host: numpy.ndarray) -> None:
        """Overwrite ``native`` with ``host``'s values: a contiguous one with one copy and no kernel
        (a fallback writes its result back this way also where kernels can't be built)."""
        if not (native.c_contiguous and host.shape == native.shape and host.dtype == native.dtype):
            super().write(native, host)
            return
        src = numpy.ascontiguousarray(host)
        if src.size:
            try:
                self._cl.enqueue_copy(self.queue, native.data, src, dst_offset=native.offset, is_blocking=True)
            except self._cl.Error as exc:
                self._raise_fault(exc, "an upload", src.nbytes)

    #: Host memory of freed buffers kept for reuse (bytes): memory the kernels already touched
    #: costs no page faults again (a fresh 80 MB result paid 20-40 ms of them on PoCL).
    recycle_bytes = 512 << 20

    # Host memory of CPU devices moves retired -> in flight (behind a marker) -> spare -> reused.
    # _retired is appended to by finalizers, which run in whatever thread drops a buffer, at any
    # time (also inside a locked section: a deque's append needs no lock); everything else is
    # read and changed under self._lock only. Memory is reused only once a marker enqueued after
    # its retirement has completed: every command that used it was queued before that marker.

    def _reuse(self, nbytes: int) -> numpy.ndarray:
        """Host memory of ``nbytes`` for a new buffer (with ``self._lock`` held)."""
        spare = self._spare.get(nbytes)
        if spare:
            self._spare_bytes -= nbytes
            return spare.pop()
        return numpy.empty(nbytes, numpy.uint8)

    def _recycle(self, owners: list[numpy.ndarray]) -> None:
        """Keep host memory that no queued command uses any more, up to ``recycle_bytes`` (lock held)."""
        for owner in owners:
            if self._spare_bytes + owner.nbytes <= self.recycle_bytes:
                self._spare.setdefault(owner.nbytes, []).append(owner)
                self._spare_bytes += owner.nbytes

    def _collect(self) -> None:
        """Recycle retired host memory that no queued command can still use (lock held)."""
        retired = self._retired
        if retired:
            batch = []
            while retired:
                batch.append(retired.popleft())
            self._in_flight.append((self._cl.enqueue_marker(self.queue), batch))
        complete = self._cl.command_execution_status.COMPLETE
        in_flight = self._in_flight
        while in_flight and in_flight[0][0].command_execution_status == complete:
            self._recycle(in_flight.popleft()[1])

    def sync(self) -> None:
        cl = self._cl
        try:
            with self._lock:
                self._collect()  # what was retired so far goes behind a marker that finish() waits for
            self.queue.finish()
            with self._lock:
                self._collect()
        except cl.Error as exc:
            self._raise_fault(exc, "waiting for the device")

    # -- faults: PyOpenCL's errors at this boundary, translated into npgpu's (npgpu._errors) ---------
    #: Codes meaning the device (or its driver) stopped working; -9999 is NVIDIA's for a kernel that
    #: faulted (an illegal address), after which its context is unusable.
    _LOST_CODES = frozenset({-1, -2, -33, -34, -36, -9999})  # DEVICE_NOT_FOUND/AVAILABLE, INVALID_DEVICE/CONTEXT/QUEUE
    #: MEM_OBJECT_ALLOCATION_FAILURE, OUT_OF_HOST_MEMORY, INVALID_BUFFER_SIZE; OUT_OF_RESOURCES (-5)
    #: counts as memory where the command allocates (NVIDIA allocates buffers at first use).
    _MEMORY_CODES = frozenset({-4, -6, -61})

    def _no_memory(self, nbytes: int, detail: str = "") -> DeviceMemoryError:
        return DeviceMemoryError(f"OpenCL device {self.device.name.strip()!r}", nbytes or None,
                                 per_array=self.max_alloc_bytes, total=int(self.device.global_mem_size), detail=detail)

    def _raise_fault(self, exc: Any, doing: str, nbytes: int = 0) -> NoReturn:
        """Raise ``exc`` (a PyOpenCL error met while ``doing``) as npgpu's error where it is one."""
        code = getattr(exc, "code", None)
        if code in self._MEMORY_CODES or (code == -5 and nbytes):
            raise self._no_memory(nbytes, " ".join(str(exc).split())[:200]) from exc
        if code in self._LOST_CODES or code == -5:
            raise DeviceLostError(
                f"npgpu: the OpenCL device {self.device.name.strip()!r} stopped working during {doing} "
                f"({' '.join(str(exc).split())[:200]}). Arrays on it are lost; restart the process, or enable "
                "another backend (npgpu.enable('numpy')) to go on without it.") from exc
        raise exc

    def shares_memory(self, a: Any, b: Any) -> bool:
        if not (isinstance(a, CLArray) and isinstance(b, CLArray)) or a.data is not b.data:
            return False
        if a.size == 0 or b.size == 0:
            return False
        la, ha = _span(a)
        lb, hb = _span(b)
        return la < hb and lb < ha

    # -- kernels --------------------------------------------------------------
    def _build(self, key: Any, make_source: Callable[[], codegen.KernelSource]) -> Any:
        with self._lock:
            kernel = self._kernels.get(key)
            if kernel is not None:
                self._kernels.move_to_end(key)
                return kernel
        import time

        ks = make_source()
        t0 = time.perf_counter()
        # (built outside the lock, which launches need: a build takes 0.1-0.5 s on PoCL; two threads
        # building the same kernel at once both build it, and the first one stored is kept)
        # -w: generated code legitimately holds what compilers warn about (x > x when an operand
        # repeats). PyOpenCL turns any non-empty build log into a CompilerWarning, and some drivers
        # log on success whatever the options (NVIDIA: "overriding noinline attribute"): a build
        # that succeeded is not the user's concern, so that one warning is silenced here.
        # warnings.catch_warnings is not thread-safe (it saves and restores the process's filter list):
        # builds take turns, so one thread's restore never drops another's filter mid-build (NVIDIA,
        # tests/test_threads.py: a reader thread's build warned into pytest's "error" filter).
        cl = self._cl
        try:
            with _BUILD_LOCK, warnings.catch_warnings():
                warnings.simplefilter("ignore", cl.CompilerWarning)
                program = cl.Program(self.context, ks.source).build(options=self._build_options)
        except cl.RuntimeError as exc:
            if exc.code != cl.status_code.BUILD_PROGRAM_FAILURE:
                self._raise_fault(exc, "a kernel build")
            raise KernelBuildError("OpenCL", _compiler_errors(str(exc))) from exc
        kernel = getattr(program, ks.name)
        with self._lock:
            self.compile_seconds += time.perf_counter() - t0
            self.kernels_built += 1
            kernel = self._kernels.setdefault(key, kernel)
            while len(self._kernels) > KERNEL_CACHE_SIZE:
                self._kernels.popitem(last=False)
        return kernel

    def cache_info(self) -> dict[str, Any]:
        return {
            "kernels": len(self._kernels),
            "max": KERNEL_CACHE_SIZE,
            "built": self.kernels_built,
            "compile_seconds": self.compile_seconds,
        }

    def _launch(self, kernel: Any, n: int, args: list[Any]) -> None:
        ls = self.local_size
        self._enqueue(kernel, (-(-n // ls) * ls,), (ls,), args)

    def _enqueue(self, kernel: Any, global_size: tuple[int, ...], local_size: tuple[int, ...], args: list[Any]) -> None:
        """Set ``kernel``'s arguments and enqueue it, as one step: a built kernel is shared by every
        thread, and its arguments are state of the kernel object (OpenCL's clSetKernelArg is not
        thread-safe). Two threads setting them at once ran each other's buffers (wrong sums) or
        crashed PoCL."""
        cl = self._cl
        try:
            with self._lock:
                kernel.set_args(*args)
                cl.enqueue_nd_range_kernel(self.queue, kernel, global_size, local_size)
        except cl.Error as exc:  # (the bytes of its buffers: what a device that allocates at first use needed)
            self._raise_fault(exc, "a kernel launch", sum(a.size for a in args if isinstance(a, cl.MemoryObjectHolder)))

    def run_elementwise(
        self,
        graph: ir.Graph,
        inputs: list[CLArray],
        outputs: list[CLArray],
        scalars: list[Any],
        where: CLArray | None = None,
        errors: _fperr.Launch | None = None,
    ) -> None:
        """Run ``graph`` over broadcast ``inputs`` into ``outputs`` (all of the outputs' shape).

        The entry point fusion uses too: inputs broadcast against outputs[0].shape. ``errors``:
        what the graph's floating-point error flags report (see npgpu/_fperr.py).
        """
        shape = outputs[0].shape
        n = math.prod(shape)
        if n == 0:
            return
        arrays = list(inputs) + list(outputs) + ([where] if where is not None else [])
        strides = [_broadcast_strides(a, shape) for a in arrays]
        cshape, cstrides = _collapse(shape, strides)
        contiguous = len(cshape) <= 1 and all(
            (len(st) == 0 or st[0] == a.itemsize) and a.offset % a.itemsize == 0
            for a, st in zip(arrays, cstrides, strict=True)
        )
        # CPUs (PoCL): a contiguous run of elements per work-item measured 2-3x faster than one
        # element per work-item; GPUs: one element per work-item.
        chunk = self._chunk(n) if self.is_cpu and self.chunk_local_size else 0
        big = max(n + chunk * self.chunk_local_size, max(_span(a)[1] for a in arrays)) >= 2**31 - 1
        # CPUs: contiguous float graphs of plain arithmetic and math builtins run in vector types
        vector = codegen.vector_width(graph) if chunk and contiguous and where is None and self.vectorize else 0
        # a chunk whose output overwrites an input can't be computed again to look for its errors
        inline_errors = bool(graph.error_nodes) and any(a.data is o.data for a in inputs for o in outputs)
        layout = codegen.Layout(len(cshape), contiguous, index64=big, where=where is not None, chunked=chunk > 0,
                                vector=vector, inline_errors=inline_errors)
        kernel = self._build(("ew", graph, layout), lambda: codegen.elementwise(graph, layout, "opencl"))
        it = numpy.int64 if big else numpy.int32
        args: list[Any] = []
        for a in arrays:
            args.append(a.data)
            args.append(it(a.offset // a.itemsize if contiguous else a.offset))
        for value, dt in zip(scalars, graph.scalars, strict=True):
            args.append(_scalar_value(value, dt) if dt.kind != "b" else numpy.uint8(bool(value)))
        args.append(it(n))
        if chunk:
            args.append(it(chunk))
        if not contiguous:
            args.extend(it(d) for d in cshape)
            for st in cstrides:
                args.extend(it(s) for s in st)
        if graph.error_nodes:
            args += self._error_arguments(graph, errors, it)
        if chunk:
            ls = self.chunk_local_size
            items = -(-n // chunk)
            self._enqueue(kernel, (-(-items // ls) * ls,), (ls,), args)
        else:
            self._launch(kernel, n, args)

    # -- floating-point error flags (npgpu/_fperr.py) -------------------------------------------
    # On a CPU device (host_backed) the flags are host memory the kernels write in place: read
    # once the queue has run (a download waits for it anyway), with no OpenCL command, which
    # on PoCL costs 25-45 us each (measured 2026-12-01); elsewhere they are copied back.
    def error_buffer(self, nbytes: int) -> Any:
        """A zeroed device buffer of ``nbytes`` flag bytes."""
        flags = self._cl.mem_flags
        host = numpy.zeros(nbytes, numpy.uint8)
        if self.host_backed:
            buffer = self._cl.Buffer(self.context, flags.READ_WRITE | flags.USE_HOST_PTR, hostbuf=host)
            self._error_hosts[buffer.int_ptr] = host  # (the buffer and its memory live as long as the backend)
            return buffer
        return self._cl.Buffer(self.context, flags.READ_WRITE | flags.COPY_HOST_PTR, hostbuf=host)

    def read_errors(self, buffer: Any, nbytes: int) -> numpy.ndarray:
        """The first ``nbytes`` flag bytes, once every command queued so far has run."""
        host = self._error_hosts.get(buffer.int_ptr)
        if host is not None:
            self.queue.finish()
            return host[:nbytes].copy()
        host = numpy.empty(nbytes, numpy.uint8)
        self._cl.enqueue_copy(self.queue, host, buffer, is_blocking=True)
        return host

    def read_errors_later(self, buffer: Any, nbytes: int) -> numpy.ndarray:
        """A host array holding the first ``nbytes`` flag bytes once the queue has run up to here
        (the in-order queue: by the end of any blocking transfer queued after)."""
        host = self._error_hosts.get(buffer.int_ptr)
        if host is not None:
            return host[:nbytes]
        host = numpy.empty(nbytes, numpy.uint8)
        self._cl.enqueue_copy(self.queue, host, buffer, is_blocking=False)
        return host

    def clear_errors(self, buffer: Any, nbytes: int) -> None:
        """Zero the flags (called once they were read: no queued kernel writes them)."""
        host = self._error_hosts.get(buffer.int_ptr)
        if host is not None:
            host[:nbytes] = 0
        else:
            self._cl.enqueue_fill_buffer(self.queue, buffer, numpy.uint8(0), 0, nbytes)

    def _error_arguments(self, graph: ir.Graph, errors: _fperr.Launch | None, it: Any,
                         slot_offset: int = 0) -> list[Any]:
        """The flag buffer and byte offset arguments of a kernel whose graph reports errors
        (under the errstate in force here when no ``errors`` says otherwise)."""
        if errors is None:
            errors = _fperr.call_launch(graph, _fperr.current())
        buffer, base = _fperr.reserve(self, errors)
        return [buffer, it(base + slot_offset)]

    def _chunk(self, n: int) -> int:
        """Elements per work-item on a CPU: enough work-items for every core, at least 1024 elements each."""
        return max(1024, -(-n // (self.device.max_compute_units * 32)))

    def supports_dtypes(self, dtypes: tuple[numpy.dtype, ...]) -> bool:
        for dt in dtypes:
            if isinstance(dt, type):
                continue
            dt = numpy.dtype(dt)
            if not _storable(dt):
                return False
            if dt in (numpy.float64, numpy.complex128) and not self.fp64:
                return False
        return True

    # -- ufuncs ---------------------------------------------------------------
    def supports_ufunc(self, ufunc: numpy.ufunc, method: str, dtypes: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        if method == "__call__":
            if set(kwargs) - {"out", "where", "casting", "dtype", "signature"}:
                return False
            if kwargs.get("signature") is not None:
                return False
            if ufunc.signature is not None:
                return False
            where = kwargs.get("where", True)
            if not (where is True or _array_operand(where)):
                return False
            if _array_operand(where) and where.dtype != numpy.bool_:
                return False
            if len(dtypes) == ufunc.nin + ufunc.nout and all(isinstance(d, numpy.dtype) for d in dtypes):
                loop = tuple(dtypes)
            else:
                try:
                    loop = self._resolve(ufunc, dtypes, kwargs)
                except (TypeError, ValueError):
                    return False
            for o in _outs(kwargs):
                if o is not None and not (self.supports_dtypes((o.dtype,)) and _table.is_supported_dtype(o.dtype)):
                    return False
            return self.supports_dtypes(loop) and _table.supports_loop(ufunc, loop)
        if method == "reduce":
            if ufunc.__name__ not in _UFUNC_REDUCE or set(kwargs) - {
                "axis",
                "dtype",
                "out",
                "keepdims",
                "initial",
                "where",
            }:
                return False
            dts = tuple(d for d in dtypes if isinstance(d, numpy.dtype))
            return self.supports_dtypes(dts) and all(_table.is_supported_dtype(d) for d in dts)
        return False

    @staticmethod
    def _resolve(ufunc: numpy.ufunc, dtypes: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[numpy.dtype, ...]:
        extra: dict[str, Any] = {"casting": kwargs.get("casting", "same_kind")}
        if kwargs.get("dtype") is not None:
            extra["signature"] = (None,) * ufunc.nin + (numpy.dtype(kwargs["dtype"]),) * ufunc.nout
        loop = ufunc.resolve_dtypes(tuple(dtypes[: ufunc.nin]) + (None,) * ufunc.nout, **extra)
        return tuple(loop)

    def call_ufunc(self, ufunc: numpy.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if method == "reduce":
            if "where" in kwargs:
                kwargs = {**kwargs, "where": _unwrap(kwargs["where"])}
            return self._ufunc_reduce(ufunc, inputs[0], **kwargs)
        if method != "__call__":
            raise NotImplementedError(f"opencl backend: {ufunc.__name__}.{method}")
        return self.ufunc_call(
            ufunc,
            inputs,
            out=kwargs.get("out"),
            where=_unwrap(kwargs.get("where", True)),
            casting=kwargs.get("casting", "same_kind"),
            dtype=kwargs.get("dtype"),
            errstate=_fperr.current(),
        )

    def ufunc_call(
        self,
        ufunc: numpy.ufunc,
        inputs: tuple[Any, ...],
        out: Any = None,
        where: Any = True,
        casting: str = "same_kind",
        dtype: Any = None,
        errstate: _fperr.ErrState | None = None,
    ) -> Any:
        """``ufunc(*inputs, out=, where=, casting=, dtype=)`` with NumPy's result dtypes; with
        ``errstate`` (a user's call), its floating-point errors are reported as that state asks."""
        if len(inputs) != ufunc.nin:
            raise TypeError(f"{ufunc.__name__} takes {ufunc.nin} inputs, got {len(inputs)}")
        outs = (
            list(out)
            if isinstance(out, (tuple, list))
            else [out] * (1 if ufunc.nout == 1 else 0) or [None] * ufunc.nout
        )
        if len(outs) < ufunc.nout:
            outs += [None] * (ufunc.nout - len(outs))
        kinds = []
        for x in inputs:
            kinds.append("array" if isinstance(x, CLArray) else "scalar")
        types = tuple(_weak_type(x) for x in inputs)
        loop = self._resolve(ufunc, types, {"dtype": dtype, "casting": casting})
        if ufunc.__name__ in _COMPARISONS:
            loop, types = _comparison_loop(ufunc, inputs, loop, types)
        for x, dt in zip(inputs, loop):  # (NumPy's OverflowError also when there are no elements to compute)
            if type(x) is int:
                _scalar_value(x, dt)
        nin = ufunc.nin
        for k, o in enumerate(outs):
            if o is not None and not numpy.can_cast(loop[nin + k], o.dtype, casting):
                raise numpy._core._exceptions._UFuncOutputCastingError(ufunc, casting, loop[nin + k], o.dtype, k)
        shapes = [x.shape for x in inputs if isinstance(x, CLArray)]
        shapes += [numpy.shape(x) for x in inputs if not isinstance(x, CLArray)]
        shape = numpy.broadcast_shapes(*shapes)
        if ufunc is numpy.power and loop[0].kind in "iu" and loop[1].kind == "i" and math.prod(shape):
            self._check_int_power(inputs[1])  # (NumPy raises only where it computes an element)
        for o in outs:
            if o is not None:
                if numpy.broadcast_shapes(shape, o.shape) != o.shape:
                    msg = f"non-broadcastable output operand with shape {o.shape} doesn't match the broadcast shape"
                    raise ValueError(f"{msg} {shape}")
                shape = o.shape
        if isinstance(where, CLArray):
            shape = numpy.broadcast_shapes(shape, where.shape) if all(o is None for o in outs) else shape
        results = [o if o is not None else self.empty(shape, loop[nin + k]) for k, o in enumerate(outs)]
        arrays = [x for x in inputs if isinstance(x, CLArray)]
        # an output partially overlapping an input (a[1:] += a[:-1]) needs the input copied first
        for i, a in enumerate(arrays):
            for r in results:
                if self.shares_memory(a, r) and not (
                    a.offset == r.offset and _broadcast_strides(a, shape) == r.strides
                ):
                    arrays[i] = self.copy(a)
        scalars = [x for x in inputs if not isinstance(x, CLArray)]
        operand_dtypes = tuple(x.dtype if isinstance(x, CLArray) else loop[i] for i, x in enumerate(inputs))
        check = 0 if errstate is None else errstate.check
        key = ("ufunc", ufunc, loop, tuple(kinds), operand_dtypes, tuple(r.dtype for r in results), check)
        graph = self._graphs.get(key)
        if graph is None:
            graph = ir.ufunc_graph(ufunc, loop, tuple(kinds), operand_dtypes, tuple(r.dtype for r in results), check)
            self._graphs[key] = graph
        if where is False or (not isinstance(where, CLArray) and not where):
            return results[0] if ufunc.nout == 1 else tuple(results)
        mask = where if isinstance(where, CLArray) else None
        launch = _fperr.call_launch(graph, errstate) if graph.error_nodes and errstate is not None else None
        self.run_elementwise(graph, arrays, results, scalars, mask, launch)
        if launch is not None:
            _fperr.launched(self, launch)
        return results[0] if ufunc.nout == 1 else tuple(results)

    _graphs: ClassVar[dict[Any, ir.Graph]] = {}

    def copy(self, a: CLArray, dtype: Any = None) -> CLArray:
        """A new C-contiguous array with ``a``'s values (converted to ``dtype``)."""
        dtype = a.dtype if dtype is None else numpy.dtype(dtype)
        out = self.empty(a.shape, dtype)
        self.copy_into(out, a)
        return out

    def copy_into(self, dst: CLArray, src: CLArray) -> None:
        """``dst[...] = src`` (broadcast, C conversion; NumPy's unsafe astype for supported pairs)."""
        if dst.dtype.kind == "c" or src.dtype.kind == "c":
            self._copy_complex(dst, src)
            return
        key = ("cast", src.dtype, dst.dtype)
        graph = self._graphs.get(key)
        if graph is None:
            graph = self._graphs[key] = ir.cast_graph(src.dtype, dst.dtype)
        if self.shares_memory(src, dst):
            src = self.copy(src)
        self.run_elementwise(graph, [src], [dst], [])

    def _copy_complex(self, dst: CLArray, src: CLArray) -> None:
        # complex values are stored (not computed on): copies go through the (real, imag) parts
        if dst.dtype.kind != "c":
            raise NotImplementedError("opencl backend: complex to real conversion")
        if self.shares_memory(src, dst):
            src = self.copy(src)
        if src.dtype.kind == "c":
            self.copy_into(_pairs(dst), _pairs(src))
            return
        self.copy_into(_part(dst, 0), src)
        self.fill(_part(dst, 1), 0)

    def _check_int_power(self, exponent: Any) -> None:
        if isinstance(exponent, CLArray):
            if exponent.dtype.kind == "i" and exponent.size and self.to_host(self.reduce_op("minimum", exponent)) < 0:
                raise ValueError("Integers to negative integer powers are not allowed.")
        elif numpy.asarray(exponent) < 0:
            raise ValueError("Integers to negative integer powers are not allowed.")

    # -- reductions -------------------------------------------------------------
    def map_reduce(
        self,
        graph: ir.Graph,
        inputs: list[CLArray],
        scalars: list[Any],
        op: str,
        axes: tuple[int, ...],
        acc_dtype: numpy.dtype,
        initial: Any,
        shape: tuple[int, ...],
        errors: _fperr.Launch | None = None,
        reduce_check: int = 0,
    ) -> tuple[CLArray, CLArray | None]:
        """Reduce ``graph`` (evaluated over ``inputs`` broadcast to ``shape``) along ``axes`` with ``op``.

        Returns the result (kept dims of ``shape``, C order, ``acc_dtype``) and, for
        argmax/argmin, the int64 positions (flat index within the reduced dims).
        The entry point fusion uses for a reduction of a pending graph. ``errors``: what the
        graph's error flags and, with ``reduce_check`` (codegen.map_reduce), the reduction's own
        report (in the slot after the graph's).
        """
        acc_dtype = numpy.dtype(acc_dtype)
        kept = [d for d in range(len(shape)) if d not in axes]
        out_shape = tuple(shape[d] for d in kept)
        m = math.prod(out_shape)
        k = math.prod(shape[d] for d in axes)
        if initial is None:  # the identity: a float sum starts from -0.0, which keeps the sign of
            # negative zeros, and a sum of nothing is NumPy's identity, +0.0
            initial = _identity(op, acc_dtype) if k or op != "add" else acc_dtype.type(0)
        result = self.empty(out_shape, acc_dtype)
        index = self.empty(out_shape, numpy.int64) if op in codegen.ARG_REDUCTIONS else None
        if m == 0:
            return result, index
        strides = [_broadcast_strides(a, shape) for a in inputs]
        oshape, ostrides = _collapse(out_shape, [tuple(st[d] for d in kept) for st in strides])
        ishape, istrides = _collapse(tuple(shape[d] for d in axes), [tuple(st[d] for d in axes) for st in strides])
        min_chunk = 4096 if self.is_cpu else 64
        parts = 1 if m >= self.parallelism else max(1, min(-(-self.parallelism // m), -(-k // min_chunk)))
        init_final = initial
        init_first = initial if parts == 1 else _identity(op, acc_dtype)
        stage_out = result if parts == 1 else self.empty((m * parts,), acc_dtype)
        stage_idx = index if parts == 1 else (self.empty((m * parts,), numpy.int64) if index is not None else None)
        flags = None
        if graph.error_nodes or reduce_check:
            if errors is None:
                errors = _fperr.call_launch(graph if graph.error_nodes else None, _fperr.current(),
                                            ("reduce",) if reduce_check else ())
            flags = _fperr.reserve(self, errors)
        self._run_reduce(
            graph,
            inputs,
            scalars,
            op,
            acc_dtype,
            init_first,
            m,
            k,
            parts,
            oshape,
            ishape,
            ostrides,
            istrides,
            stage_out,
            stage_idx,
            index_input=False,
            flags=flags,
            reduce_check=reduce_check,
        )
        if parts > 1:
            g2 = self._graphs.get(("id", acc_dtype))
            if g2 is None:
                g2 = self._graphs[("id", acc_dtype)] = ir.cast_graph(acc_dtype, acc_dtype)
            ins = [stage_out] + ([stage_idx] if stage_idx is not None else [])
            st_o = [(parts * acc_dtype.itemsize,)] + ([(parts * 8,)] if stage_idx is not None else [])
            st_i = [(acc_dtype.itemsize,)] + ([(8,)] if stage_idx is not None else [])
            self._run_reduce(
                g2,
                ins,
                [],
                op,
                acc_dtype,
                init_final,
                m,
                parts,
                1,
                (m,),
                (parts,),
                st_o,
                st_i,
                result,
                index,
                index_input=stage_idx is not None,
                # (the second stage reports in the first's reduction slot)
                flags=None if flags is None or not reduce_check else
                (flags[0], flags[1] + _fperr.SLOT_BYTES * len(graph.error_nodes)),
                reduce_check=reduce_check,
            )
        return result, index

    def _run_reduce(
        self,
        graph,
        inputs,
        scalars,
        op,
        acc_dtype,
        init,
        m,
        k,
        parts,
        oshape,
        ishape,
        ostrides,
        istrides,
        out,
        idx_out,
        index_input,
        flags=None,
        reduce_check=0,
    ) -> None:  # noqa: ANN001
        big = max(m * parts, k, max(_span(a)[1] for a in inputs)) >= 2**31 - 1
        # GPUs: interleaved parts (coalesced loads).  CPUs (PoCL): each part one contiguous chunk,
        # several independent accumulators per work-item -- interleaved parts measured 20x slower there.
        interleaved = parts > 1 and not self.is_cpu
        unroll = self.reduce_unroll if self.is_cpu and len(ishape) == 1 and op not in codegen.ARG_REDUCTIONS else 1
        layout = codegen.ReduceLayout(
            len(oshape), len(ishape), interleaved=interleaved, index_input=index_input, index64=big, unroll=unroll
        )
        kernel = self._build(
            ("mr", graph, op, acc_dtype, layout, reduce_check),
            lambda: codegen.map_reduce(graph, op, acc_dtype, layout, "opencl", reduce_check=reduce_check),
        )
        it = numpy.int64 if big else numpy.int32
        args: list[Any] = []
        for a in inputs:
            args += [a.data, it(a.offset)]
        for value, dt in zip(scalars, graph.scalars, strict=True):
            args.append(_scalar_value(value, dt) if dt.kind != "b" else numpy.uint8(bool(value)))
        args.append(_scalar_value(init, acc_dtype) if acc_dtype.kind != "b" else numpy.uint8(bool(init)))
        args += [it(m), it(k), it(parts)]
        args += [it(d) for d in oshape] + [it(d) for d in ishape]
        for so, si in zip(ostrides, istrides, strict=True):
            args += [it(s) for s in so] + [it(s) for s in si]
        args += [out.data, it(out.offset // out.itemsize)]
        if idx_out is not None:
            args += [idx_out.data, it(idx_out.offset // 8)]
        if graph.error_nodes or reduce_check:
            args += [flags[0], it(flags[1])]
        self._launch(kernel, m * parts, args)

    def reduce_op(self, op: str, a: CLArray, axis: Any = None, acc_dtype: Any = None) -> CLArray:
        """Plain reduction of one array (no keepdims): the building block of the functions."""
        axes = _norm_axes(axis, a.ndim)
        acc = numpy.dtype(acc_dtype) if acc_dtype is not None else a.dtype
        graph = self._graph_cast(a.dtype, acc)
        return self.map_reduce(graph, [a], [], op, axes, acc, None, a.shape)[0]

    def _graph_cast(self, src: numpy.dtype, dst: numpy.dtype) -> ir.Graph:
        key = ("cast", src, dst)
        g = self._graphs.get(key)
        if g is None:
            g = self._graphs[key] = ir.cast_graph(src, dst)
        return g

    def reduction(
        self,
        kind: str,
        a: CLArray,
        axis: Any = None,
        dtype: Any = None,
        out: CLArray | None = None,
        keepdims: bool = False,
        initial: Any = None,
        where: Any = True,
    ) -> Any:
        """sum/prod/max/min/any/all and nan-variants with NumPy's arguments and result dtype."""
        # (NumPy's ufunc reductions take axis 0 or -1 of a 0-d array: nothing to reduce)
        axes = () if a.ndim == 0 and type(axis) is int and axis in (0, -1) else _norm_axes(axis, a.ndim)
        op, nan_to = _REDUCTION_KINDS[kind]
        res_dt = _result_dtype(kind, a.dtype, dtype)
        acc = res_dt
        if op in ("maximum", "minimum", "fmax", "fmin"):
            acc = a.dtype
            k = math.prod(a.shape[d] for d in axes)
            if k == 0 and initial is None:
                raise ValueError(f"zero-size array to reduction operation {op} which has no identity")
        b = ir.GraphBuilder()
        x = b.input(a.dtype)
        val: ir.Node = b.cast(x, acc)
        if nan_to is not None and a.dtype.kind == "f":
            # nansum/nanprod: NaN counts as the identity
            isn = b.apply(numpy.isnan, (a.dtype, numpy.dtype(bool)), x)[0]
            val = ir.Select(isn, b.scalar(acc), val)
        inputs = [a]
        scalars: list[Any] = [] if nan_to is None or a.dtype.kind != "f" else [_identity(op, acc)]
        shape = a.shape
        if isinstance(where, CLArray):
            mask = b.input(numpy.dtype(bool))
            val = ir.Select(mask, val, b.scalar(acc))
            inputs.append(where)
            scalars.append(_identity(op, acc))
            shape = numpy.broadcast_shapes(a.shape, where.shape)
            if shape != a.shape:
                raise ValueError("where= must broadcast to the reduced array's shape")
        graph = b.build([val])
        init = initial  # (None: the identity)
        launch, check = _reduction_errors(op, acc)
        result, _ = self.map_reduce(graph, inputs, scalars, op, axes, acc, init, shape, launch, check)
        if launch is not None:
            _fperr.launched(self, launch)
        if (
            kind in ("nanmax", "nanmin")
            and a.dtype.kind == "f"
            and bool(self.to_host(self.reduce_op("logical_or", self.ufunc_call(numpy.isnan, (result,)), None)))
        ):
            warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=3)
        if result.dtype != res_dt:
            result = self.copy(result, res_dt)
        return self._finish(result, a.shape, axes, keepdims, out)

    def _finish(
        self, result: CLArray, shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool, out: CLArray | None
    ) -> Any:
        if keepdims:
            kshape = tuple(1 if d in axes else n for d, n in enumerate(shape))
            result = self.reshape(result, kshape)
        if out is not None:
            if out.shape != result.shape:
                raise ValueError(f"output parameter has shape {out.shape}, expected {result.shape}")
            self.copy_into(out, result)
            return out
        return result

    def mean(
        self,
        a: CLArray,
        axis: Any = None,
        dtype: Any = None,
        out: CLArray | None = None,
        keepdims: bool = False,
        where: Any = True,
        _nan: bool = False,
    ) -> Any:
        axes = _norm_axes(axis, a.ndim)
        res_dt = _result_dtype("mean", a.dtype, dtype)
        acc = res_dt
        b = ir.GraphBuilder()
        x = b.input(a.dtype)
        val: ir.Node = b.cast(x, acc)
        inputs = [a]
        scalars: list[Any] = []
        count_graph: ir.Graph | None = None
        if _nan:
            isn = b.apply(numpy.isnan, (a.dtype, numpy.dtype(bool)), x)[0]
            val = ir.Select(isn, b.scalar(acc), val)
            scalars.append(0)
            cb = ir.GraphBuilder()
            cx = cb.input(a.dtype)
            notnan = cb.apply(
                numpy.logical_not, (numpy.dtype(bool),) * 2, cb.apply(numpy.isnan, (a.dtype, numpy.dtype(bool)), cx)[0]
            )[0]
            count_graph = cb.build([notnan], [acc])
        graph = b.build([val])
        launch, check = _reduction_errors("add", acc)
        total, _ = self.map_reduce(graph, inputs, scalars, "add", axes, acc, 0, a.shape, launch, check)
        if launch is not None:
            _fperr.launched(self, launch)
        if count_graph is not None:
            count, _ = self.map_reduce(count_graph, [a], [], "add", axes, acc, 0, a.shape)
            result = self.ufunc_call(numpy.true_divide, (total, count))
        else:
            n = math.prod(a.shape[d] for d in axes)
            result = self.ufunc_call(numpy.true_divide, (total, float(n)), out=None)
            if result.dtype != res_dt:
                result = self.copy(result, res_dt)
        return self._finish(result, a.shape, axes, keepdims, out)

    def var(
        self,
        a: CLArray,
        axis: Any = None,
        dtype: Any = None,
        out: CLArray | None = None,
        ddof: int = 0,
        keepdims: bool = False,
        _sqrt: bool = False,
    ) -> Any:
        axes = _norm_axes(axis, a.ndim)
        res_dt = _result_dtype("var", a.dtype, dtype)
        acc = res_dt
        mean = self.mean(a, axis=axes, dtype=acc, keepdims=True)
        if not isinstance(mean, CLArray):
            mean = self.from_host(numpy.asarray(mean, acc).reshape((1,) * a.ndim))
        key = ("var", a.dtype, acc)
        graph = self._graphs.get(key)
        if graph is None:
            b = ir.GraphBuilder()
            x = b.input(a.dtype)
            mu = b.input(acc)
            d = b.apply(numpy.subtract, (acc,) * 3, b.cast(x, acc), mu)[0]
            graph = self._graphs[key] = b.build([b.apply(numpy.multiply, (acc,) * 3, d, d)[0]])
        total, _ = self.map_reduce(graph, [a, mean], [], "add", axes, acc, 0, a.shape)
        n = math.prod(a.shape[d] for d in axes) - ddof
        result = self.ufunc_call(numpy.true_divide, (total, float(n)))
        if _sqrt:
            result = self.ufunc_call(numpy.sqrt, (result,), out=result)
        if result.dtype != res_dt:
            result = self.copy(result, res_dt)
        return self._finish(result, a.shape, axes, keepdims, out)

    def argreduce(
        self, kind: str, a: CLArray, axis: Any = None, out: CLArray | None = None, keepdims: bool = False
    ) -> Any:
        whole = axis is None or (a.ndim == 0 and type(axis) is int and axis in (0, -1))  # (NumPy takes these of 0-d)
        axes: tuple[int, ...] = (0,) if whole else _norm_axes(axis, a.ndim)  # (its AxisError first)
        if (a.size if whole else math.prod(a.shape[d] for d in axes)) == 0:
            raise ValueError(f"attempt to get {kind} of an empty sequence")
        if whole:
            src = a if a.c_contiguous else self.copy(a)
            src = self.reshape(src, (a.size,))
        else:
            src = a
        graph = self._graph_cast(a.dtype, a.dtype)
        _, index = self.map_reduce(graph, [src], [], kind, axes, a.dtype, _identity("maximum", a.dtype), src.shape)
        if whole:
            index = self.reshape(index, ())
            if keepdims:
                index = self.reshape(index, (1,) * a.ndim)
            if out is not None:
                self.copy_into(out, index)
                return out
            return index
        return self._finish(index, a.shape, axes, keepdims, out)

    def _ufunc_reduce(
        self,
        ufunc: numpy.ufunc,
        a: CLArray,
        axis: Any = 0,
        dtype: Any = None,
        out: Any = None,
        keepdims: bool = False,
        initial: Any = None,
        where: Any = True,
    ) -> Any:
        kind = {
            "add": "sum",
            "multiply": "prod",
            "maximum": "max",
            "minimum": "min",
            "logical_and": "all",
            "logical_or": "any",
        }[ufunc.__name__]
        if isinstance(out, tuple):
            out = out[0]
        if where is not True and initial is None and ufunc.identity is None:
            raise ValueError(f"reduction operation '{ufunc.__name__}' does not have an identity, so to use a "
                             "where mask one has to specify 'initial'")
        if kind in ("all", "any"):
            # logical_and.reduce keeps a bool result only for bool input; NumPy's own rule
            res = _np_ufunc_reduce_dtype(ufunc, a.dtype, dtype)
            r = self.reduction(kind, a, axis=axis, out=None, keepdims=keepdims, initial=initial, where=where)
            r = self.copy(r, res) if r.dtype != res else r
            if out is None:
                return r
            self.copy_into(out, r)
            return out
        dtype = _np_ufunc_reduce_dtype(ufunc, a.dtype, dtype)
        return self.reduction(kind, a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial, where=where)

    def cumulative(self, kind: str, a: CLArray, axis: Any = None, dtype: Any = None, out: Any = None) -> CLArray:
        res_dt = _result_dtype(kind, a.dtype, dtype)
        if axis is None or (a.ndim == 0 and type(axis) is int and axis in (0, -1)):  # (NumPy takes these of 0-d)
            src = self.reshape(a if a.c_contiguous else self.copy(a), (a.size,))
            ax = 0
        else:
            src = a
            ax = _norm_axes(axis, a.ndim)[0]
        result = self.empty(src.shape, res_dt) if out is None else out
        op = "add" if kind == "cumsum" else "multiply"
        n = src.shape[ax] if src.ndim else 1
        outer = tuple(s for d, s in enumerate(src.shape) if d != ax)
        m = math.prod(outer)
        if m and n:
            ost = [tuple(st for d, st in enumerate(x.strides) if d != ax) for x in (src, result)]
            oshape, ostrides = _collapse(outer, ost)
            layout = (len(oshape), src.dtype, res_dt, op)
            kernel = self._build(("scan", layout), lambda: codegen.scan(len(oshape), src.dtype, res_dt, op, "opencl"))
            args: list[Any] = [
                src.data,
                numpy.int64(src.offset),
                result.data,
                numpy.int64(result.offset),
                numpy.int64(m),
                numpy.int64(n),
            ]
            args += [numpy.int64(d) for d in oshape]
            for st in ostrides:
                args += [numpy.int64(s) for s in st]
            args += [numpy.int64(src.strides[ax]), numpy.int64(result.strides[ax])]
            self._launch(kernel, m, args)
        return result

    # -- layout and data movement --------------------------------------------
    def reshape(self, a: CLArray, shape: Any, order: str = "C", copy: bool | None = None) -> CLArray:
        """A view when NumPy would give one, else a copy (``order`` 'C' or 'F', ``copy``: NumPy's)."""
        if order not in ("C", "F"):
            raise NotImplementedError(f"opencl backend: reshape with order {order!r}")  # (supports_function: no)
        # the new shape, with NumPy's errors and -1 resolved, from zero-byte items (no allocation)
        new_shape = numpy.reshape(numpy.empty(a.shape, _NO_BYTES), shape).shape
        dummy = as_strided(numpy.zeros(1, a.dtype), a.shape, a.strides, writeable=False)
        view = None
        try:
            view = None if copy else numpy.reshape(dummy, new_shape, order=order, copy=False)
        except ValueError:
            if copy is False:
                raise
        if view is not None:
            return a.view(view.shape, view.strides, a.offset)
        # a copy laid out in the reading order, which NumPy's reshape of it views
        contiguous = self._copy_ordered(a, a.dtype, order)
        view = numpy.reshape(as_strided(numpy.zeros(1, a.dtype), a.shape, contiguous.strides, writeable=False),
                             new_shape, order=order, copy=False)
        return CLArray(self, contiguous.data, view.shape, a.dtype, view.strides, contiguous.offset)

    def ravel(self, a: CLArray, order: str = "C") -> CLArray:
        if order != "C":
            raise NotImplementedError("opencl backend: ravel with order other than 'C'")
        return self.reshape(a, (a.size,))

    def transpose(self, a: CLArray, axes: Any = None) -> CLArray:
        if axes is None:
            return a.T
        axes = tuple(_norm_axes(ax, a.ndim)[0] for ax in axes)
        if sorted(axes) != list(range(a.ndim)):
            raise ValueError("axes don't match array")
        return a.view(tuple(a.shape[i] for i in axes), tuple(a.strides[i] for i in axes), a.offset)

    def astype(self, a: CLArray, dtype: Any, order: str = "K", casting: str = "unsafe", copy: bool = True) -> CLArray:
        dtype = numpy.dtype(dtype)
        if not numpy.can_cast(a.dtype, dtype, casting):
            raise TypeError(f"Cannot cast array data from {a.dtype!r} to {dtype!r} according to the rule {casting!r}")
        if dtype == a.dtype and not copy:
            return a
        return self._copy_ordered(a, dtype, order)

    def array_copy(self, a: CLArray, order: str = "K", subok: bool = True) -> CLArray:
        return self._copy_ordered(a, a.dtype, order)

    def _copy_ordered(self, a: CLArray, dtype: numpy.dtype, order: str) -> CLArray:
        out = self.empty_ordered(a.shape, dtype, order, like=a)
        self.copy_into(out, a)
        return out

    def ascontiguousarray(self, a: CLArray, dtype: Any = None) -> CLArray:
        dtype = a.dtype if dtype is None else numpy.dtype(dtype)
        if a.c_contiguous and dtype == a.dtype:
            return a
        return self.copy(a, dtype)

    def full(self, shape: Any, fill_value: Any, dtype: Any = None, order: str = "C",
             like: CLArray | None = None) -> CLArray:
        dtype = numpy.asarray(fill_value).dtype if dtype is None else numpy.dtype(dtype)
        out = self.empty_ordered(shape, dtype, order, like)
        self.fill(out, fill_value)
        return out

    def zeros(self, shape: Any, dtype: Any = float, order: str = "C", like: CLArray | None = None) -> CLArray:
        out = self.empty_ordered(shape, dtype, order, like)
        if out.size:
            self._cl.enqueue_fill_buffer(self.queue, out.data, numpy.uint8(0), 0, out.data.size)
        return out

    def ones(self, shape: Any, dtype: Any = float, order: str = "C") -> CLArray:
        return self.full(shape, 1, dtype, order)

    def empty_like(self, a: CLArray, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None):
        return self.empty_ordered(*_like(a, dtype, order, shape))

    def zeros_like(self, a: CLArray, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None):
        return self.zeros(*_like(a, dtype, order, shape))

    def ones_like(self, a: CLArray, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None):
        new_shape, new_dtype, new_order, like = _like(a, dtype, order, shape)
        return self.full(new_shape, 1, new_dtype, new_order, like)

    def full_like(
        self, a: CLArray, fill_value: Any, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None
    ) -> CLArray:
        new_shape, new_dtype, new_order, like = _like(a, dtype, order, shape)
        return self.full(new_shape, fill_value, new_dtype, new_order, like)

    def fill(self, a: CLArray, value: Any) -> None:
        """``a[...] = value`` for a scalar (NumPy's conversion rules for the value)."""
        if isinstance(value, CLArray):  # a 0-d (or broadcastable) device value: copied, as NumPy assigns it
            self.copy_into(a, value)
            return
        probe = numpy.empty((), a.dtype)
        probe[()] = value  # NumPy's own assignment: its errors (OverflowError for -1 into uint32), even for no elements
        if a.size == 0:
            return
        if a.dtype.kind == "c":
            v = probe[()]
            self.fill(_part(a, 0), v.real)
            self.fill(_part(a, 1), v.imag)
            return
        v = probe
        b = ir.GraphBuilder()
        key = ("fill", a.dtype)
        graph = self._graphs.get(key)
        if graph is None:
            graph = self._graphs[key] = b.build([b.scalar(a.dtype)])
        self.run_elementwise(graph, [], [a], [numpy.asarray(v)[()]])

    def _host_pattern(self, host: numpy.ndarray) -> CLArray:
        # values NumPy computes on the host (arange/linspace/eye are cheap to describe,
        # and computing them with NumPy guarantees NumPy's exact rounding)
        return self.from_host(host)

    def arange(self, *args: Any, dtype: Any = None) -> CLArray:
        return self._host_pattern(numpy.arange(*args, dtype=dtype))

    def linspace(
        self,
        start: Any,
        stop: Any,
        num: int = 50,
        endpoint: bool = True,
        retstep: bool = False,
        dtype: Any = None,
        axis: int = 0,
    ) -> Any:
        res = numpy.linspace(start, stop, num, endpoint=endpoint, retstep=retstep, dtype=dtype, axis=axis)
        if retstep:
            return self._host_pattern(res[0]), res[1]
        return self._host_pattern(res)

    def eye(self, N: int, M: int | None = None, k: int = 0, dtype: Any = float, order: str = "C") -> CLArray:  # noqa: N803
        return self._host_pattern(numpy.eye(N, M, k, dtype=dtype))

    def identity(self, n: int, dtype: Any = float) -> CLArray:
        return self._host_pattern(numpy.identity(n, dtype=dtype))

    def concatenate(
        self, arrays: Any, axis: Any = 0, out: Any = None, dtype: Any = None, casting: str = "same_kind"
    ) -> CLArray:
        arrays = list(arrays)
        if out is not None and dtype is not None:
            raise TypeError("concatenate() only takes `out` or `dtype` as an argument, but both were provided.")
        if axis is None:
            arrays = [self.ravel(a) for a in arrays]
            axis = 0
        # (out= is checked as dtype=out.dtype: NumPy's casting rule and TypeError)
        shape, rdtype = _concat_result(arrays, axis, out.dtype if out is not None else dtype, casting)
        ax = _norm_axes(axis, arrays[0].ndim)[0]
        if out is not None and out.shape != shape:
            raise ValueError(f"Output array is the wrong shape: {out.shape} instead of {shape}")
        result = self.empty(shape, rdtype) if out is None else out
        pos = 0
        for a in arrays:
            n = a.shape[ax]
            dst = result.view(a.shape, result.strides, result.offset + pos * result.strides[ax])
            self.copy_into(dst, a)
            pos += n
        return result

    def stack(
        self, arrays: Any, axis: int = 0, out: Any = None, dtype: Any = None, casting: str = "same_kind"
    ) -> CLArray:
        arrays = list(arrays)
        if not arrays:
            raise ValueError("need at least one array to stack")
        if any(a.shape != arrays[0].shape for a in arrays):
            raise ValueError("all input arrays must have the same shape")
        ax = _norm_axes(axis, arrays[0].ndim + 1)[0]
        expanded = [
            a.view(a.shape[:ax] + (1,) + a.shape[ax:], a.strides[:ax] + (0,) + a.strides[ax:], a.offset) for a in arrays
        ]
        return self.concatenate(expanded, axis=ax, out=out, dtype=dtype, casting=casting)

    def array_split(self, a: CLArray, indices_or_sections: Any, axis: int = 0) -> list[CLArray]:
        """Views, as NumPy's (it slices): NumPy splits a zero-byte stand-in, the offsets are kept."""
        return self._split(numpy.array_split, a, indices_or_sections, axis)

    def split(self, a: CLArray, indices_or_sections: Any, axis: int = 0) -> list[CLArray]:
        return self._split(numpy.split, a, indices_or_sections, axis)

    def numpy_view(self, how: Callable[..., Any], a: CLArray, *args: Any, **kwargs: Any) -> Any:
        """The view NumPy's ``how`` makes of ``a`` (swapaxes, moveaxis, squeeze, flip, ...: metadata
        only), with NumPy's errors: computed on a zero-byte stand-in with ``a``'s layout."""
        dummy = as_strided(numpy.zeros(1, a.dtype), a.shape, a.strides, writeable=False)
        base = dummy.__array_interface__["data"][0]

        def back(v: numpy.ndarray) -> CLArray:
            return a.view(v.shape, v.strides, a.offset + v.__array_interface__["data"][0] - base)

        result = how(dummy, *args, **kwargs)
        return type(result)(back(v) for v in result) if isinstance(result, (tuple, list)) else back(result)

    def broadcast_arrays(self, *arrays: CLArray, subok: bool = False) -> tuple[CLArray, ...]:
        shape = numpy.broadcast_shapes(*(a.shape for a in arrays))
        return tuple(self.numpy_view(numpy.broadcast_to, a, shape) for a in arrays)

    def _split(self, how: Callable[..., Any], a: CLArray, indices_or_sections: Any, axis: int) -> list[CLArray]:
        dummy = as_strided(numpy.zeros(1, a.dtype), a.shape, a.strides, writeable=False)
        base = dummy.__array_interface__["data"][0]
        views = how(dummy, indices_or_sections, axis=axis)
        return [a.view(v.shape, v.strides, a.offset + v.__array_interface__["data"][0] - base) for v in views]

    def where(self, condition: Any, x: Any = None, y: Any = None) -> Any:
        if x is None and y is None:
            raise NotImplementedError("opencl backend: one-argument where (nonzero)")
        ops = [condition, x, y]
        dt = numpy.result_type(*[o.dtype if isinstance(o, CLArray) else o for o in (x, y)])
        kinds = tuple("array" if isinstance(o, CLArray) else "scalar" for o in ops)
        dts = tuple(
            o.dtype if isinstance(o, CLArray) else (numpy.dtype(bool) if i == 0 else dt) for i, o in enumerate(ops)
        )
        key = ("where", kinds, dts, dt)
        graph = self._graphs.get(key)
        if graph is None:
            b = ir.GraphBuilder()
            nodes = [b.input(d) if k == "array" else b.scalar(d) for k, d in zip(kinds, dts, strict=True)]
            graph = self._graphs[key] = b.build([b.select(nodes[0], nodes[1], nodes[2], dt)])
        shape = numpy.broadcast_shapes(*[numpy.shape(o) if not isinstance(o, CLArray) else o.shape for o in ops])
        out = self.empty(shape, dt)
        self.run_elementwise(
            graph, [o for o in ops if isinstance(o, CLArray)], [out], [o for o in ops if not isinstance(o, CLArray)]
        )
        return out

    def clip(self, a: CLArray, a_min: Any = None, a_max: Any = None, out: Any = None, **kwargs: Any) -> CLArray:
        if a.dtype.kind in "iu":  # NumPy's clip drops Python-int bounds beyond the dtype (NEP 50, no error)
            info = numpy.iinfo(a.dtype)
            if type(a_min) is int and a_min <= info.min:
                a_min = None
            if type(a_max) is int and a_max >= info.max:
                a_max = None
        if a_min is None and a_max is None:
            return self.ufunc_call(numpy.positive, (a,), out=out, **kwargs)
        if a_min is None:
            return self.ufunc_call(numpy.minimum, (a, a_max), out=out, **kwargs)
        if a_max is None:
            return self.ufunc_call(numpy.maximum, (a, a_min), out=out, **kwargs)
        return self.ufunc_call(numpy._core.umath.clip, (a, a_min, a_max), out=out, **kwargs)

    def array_view(self, a: CLArray, dtype: Any = None, type: Any = None) -> CLArray:  # noqa: A002  (NumPy's)
        """``a.view(dtype)``: the same memory read as another dtype, as NumPy allows it (the last
        axis contiguous when the item size changes)."""
        if type is not None or (isinstance(dtype, builtins.type) and issubclass(dtype, numpy.ndarray)):
            raise TypeError("opencl backend: views as ndarray subclasses are NumPy's")  # (supports_function said no)
        new = a.dtype if dtype is None else numpy.dtype(dtype)
        if new.itemsize == a.itemsize:
            return CLArray(self, a.data, a.shape, new, a.strides, a.offset, a.base or a)
        if a.ndim == 0:
            raise ValueError("Changing the dtype of a 0d array is only supported if the itemsize is unchanged")
        if a.shape[-1] != 1 and a.strides[-1] != a.itemsize:
            raise ValueError("To change to a dtype of a different size, the last axis must be contiguous")
        total = a.shape[-1] * a.itemsize
        if total % new.itemsize:
            raise ValueError("When changing to a larger dtype, its size must be a divisor of the total size in bytes "
                             "of the last axis of the array.")
        shape = (*a.shape[:-1], total // new.itemsize)
        return CLArray(self, a.data, shape, new, (*a.strides[:-1], new.itemsize), a.offset, a.base or a)

    def real(self, a: CLArray) -> CLArray:
        """The real part: a view of a complex array's memory (writes reach it), else the array."""
        return _part(a, 0) if a.dtype.kind == "c" else a.view(a.shape, a.strides, a.offset)

    def imag(self, a: CLArray) -> CLArray:
        return _part(a, 1)

    def getitem(self, a: CLArray, key: Any) -> Any:
        if isinstance(key, CLArray) and key.dtype == numpy.bool_:
            return self._mask_get(a, key)
        # an all-integer key gives a 0-d view: the core turns it into NumPy's scalar
        return self._view(a, key)

    def setitem(self, a: CLArray, key: Any, value: Any) -> None:
        if isinstance(key, CLArray) and key.dtype == numpy.bool_:
            self._mask_set(a, key, value)
            return
        dst = self.getitem(a, key) if not _all_int_key(key, a.ndim) else self._view(a, key)
        if isinstance(value, CLArray):
            while value.ndim > dst.ndim and value.shape[0] == 1:  # NumPy drops leading ones of the value
                value = value.view(value.shape[1:], value.strides[1:], value.offset)
            if numpy.broadcast_shapes(value.shape, dst.shape) != dst.shape:
                raise ValueError(f"could not broadcast input array from shape {value.shape} into shape {dst.shape}")
            self.copy_into(dst, value)
        else:
            self.fill(dst, value)

    def _view(self, a: CLArray, key: Any) -> CLArray:
        dummy = as_strided(numpy.zeros(1, a.dtype), a.shape, a.strides, writeable=False)
        parts = key if isinstance(key, tuple) else (key,)
        # a trailing Ellipsis keeps an all-integer key a 0-d view rather than a scalar
        view = dummy[parts if any(p is Ellipsis for p in parts) else parts + (Ellipsis,)]
        delta = view.__array_interface__["data"][0] - dummy.__array_interface__["data"][0]
        return a.view(view.shape, view.strides, a.offset + delta)

    def _mask_positions(self, a: CLArray, mask: CLArray) -> numpy.ndarray:
        if mask.shape != a.shape[: mask.ndim]:  # NumPy's IndexError, from a zero-byte stand-in
            numpy.broadcast_to(numpy.zeros((), bool), a.shape)[numpy.zeros(mask.shape, bool)]
        # compaction on the host: the mask is 1 byte/element, and on PoCL host memory is the device's
        return numpy.flatnonzero(self.to_host(mask))

    def _mask_get(self, a: CLArray, mask: CLArray) -> CLArray:
        pos = self._mask_positions(a, mask)
        rest = a.shape[mask.ndim :]
        src = a if a.c_contiguous else self.copy(a)
        flat = self.reshape(src, (math.prod(mask.shape),) + rest)
        out = self.empty((len(pos),) + rest, a.dtype)
        if len(pos):
            self._gather(out, flat, pos)
        return out

    def _gather(self, out: CLArray, flat: CLArray, pos: numpy.ndarray) -> None:
        self._move_rows(out, flat, pos, math.prod(flat.shape[1:]) * flat.itemsize, scatter=False)

    def _move_rows(self, first: CLArray, second: CLArray, pos: numpy.ndarray, row: int, scatter: bool) -> None:
        """Row i of ``first`` <- row pos[i] of ``second`` (gather), or row pos[i] of ``first`` <- row i
        of ``second`` (scatter); rows of ``row`` bytes, one kernel for both directions."""
        idx = self.from_host(pos.astype(numpy.int64))
        kernel = self._build(("gather",), lambda: _GATHER)
        n = len(pos) * row
        args = [first.data, numpy.int64(first.offset), second.data, numpy.int64(second.offset), idx.data,
                numpy.int64(row), numpy.int64(n), numpy.int32(1 if scatter else 0)]
        self._launch(kernel, n, args)

    def _mask_set(self, a: CLArray, mask: CLArray, value: Any) -> None:
        if not a.c_contiguous:  # into a contiguous copy, then back into the view
            staged = self.copy(a)
            self._mask_set(staged, mask, value)
            self.copy_into(a, staged)
            return
        pos = self._mask_positions(a, mask)
        rest = a.shape[mask.ndim :]
        flat = self.reshape(a, (math.prod(mask.shape),) + rest)
        vals = self.empty((len(pos),) + rest, a.dtype)
        if isinstance(value, CLArray):
            if numpy.broadcast_shapes(value.shape, vals.shape) != vals.shape:
                raise ValueError(
                    f"NumPy boolean array indexing assignment cannot assign {value.shape} input "
                    f"values to the {len(pos)} output values where the mask is true"
                )
            self.copy_into(vals, value)
        else:
            self.fill(vals, value)
        if len(pos):
            self._move_rows(flat, vals, pos, math.prod(rest) * a.itemsize, scatter=True)

    # -- matmul --------------------------------------------------------------------
    def matmul(self, a: CLArray, b: CLArray, out: Any = None, **kwargs: Any) -> Any:
        if a.ndim == 0 or b.ndim == 0:
            raise ValueError("matmul: Input operand does not have enough dimensions")
        dt = numpy.result_type(a.dtype, b.dtype)
        ka, kb = a.shape[-1], (b.shape[-2] if b.ndim > 1 else b.shape[0])
        if ka != kb:
            raise ValueError(
                f"matmul: Input operand 1 has a mismatch in its core dimension 0 ({kb} is different from {ka})"
            )
        pshape = numpy.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + a.shape[-2:-1] + b.shape[-1:] * (b.ndim > 1)
        a2 = a if a.ndim > 1 else a.view((1,) + a.shape, (0,) + a.strides, a.offset)
        b2 = b if b.ndim > 1 else b.view(b.shape + (1,), b.strides + (0,), b.offset)
        if a2.dtype != dt:
            a2 = self.copy(a2, dt)
        if b2.dtype != dt:
            b2 = self.copy(b2, dt)
        batch = numpy.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
        m, k = a2.shape[-2:]
        n = b2.shape[-1]
        result = self.empty(batch + (m, n), dt)
        if result.size:
            sa = _broadcast_strides(a2.view(a2.shape[:-2], a2.strides[:-2], 0), batch) if batch else ()
            sb = _broadcast_strides(b2.view(b2.shape[:-2], b2.strides[:-2], 0), batch) if batch else ()
            sc = result.strides[:-2]
            bshape, (bsa, bsb, bsc) = _collapse(batch, [sa, sb, sc]) if batch else ((), [(), (), ()])
            kernel = self._build(("matmul", dt), lambda: _matmul_source(dt))
            isz = dt.itemsize
            outer = bshape[:-1]
            nb = bshape[-1] if bshape else 1
            for idx in numpy.ndindex(*outer):
                oa = a2.offset + sum(i * s for i, s in zip(idx, bsa, strict=False))
                ob = b2.offset + sum(i * s for i, s in zip(idx, bsb, strict=False))
                oc = result.offset + sum(i * s for i, s in zip(idx, bsc, strict=False))
                ba = bsa[-1] if bshape else 0
                bb = bsb[-1] if bshape else 0
                bc = bsc[-1] if bshape else 0
                args = [
                    a2.data,
                    numpy.int64(oa // isz),
                    numpy.int64(ba // isz),
                    numpy.int64(a2.strides[-2] // isz),
                    numpy.int64(a2.strides[-1] // isz),
                    b2.data,
                    numpy.int64(ob // isz),
                    numpy.int64(bb // isz),
                    numpy.int64(b2.strides[-2] // isz),
                    numpy.int64(b2.strides[-1] // isz),
                    result.data,
                    numpy.int64(oc // isz),
                    numpy.int64(bc // isz),
                    numpy.int64(result.strides[-2] // isz),
                    numpy.int32(m),
                    numpy.int32(n),
                    numpy.int32(k),
                ]
                gs = (-(-n // _TILE) * _TILE, -(-m // _TILE) * _TILE, nb)
                self._enqueue(kernel, gs, (_TILE, _TILE, 1), args)
        res = self.reshape(result, pshape)
        if out is not None:
            self.copy_into(out, res)
            return out
        return res

    def dot(self, a: CLArray, b: CLArray, out: Any = None) -> Any:
        if a.ndim <= 2 and b.ndim <= 2:
            return self.matmul(a, b, out=out)
        if b.ndim == 1:
            return self.matmul(a, b, out=out)
        return self.tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 2]), out=out)

    def tensordot(self, a: CLArray, b: CLArray, axes: Any = 2, out: Any = None) -> Any:
        if isinstance(axes, (int, numpy.integer)):
            ax_a = list(range(a.ndim - int(axes), a.ndim))
            ax_b = list(range(int(axes)))
        else:
            ax_a, ax_b = ([x] if isinstance(x, (int, numpy.integer)) else list(x) for x in axes)
        ax_a = [x % a.ndim for x in ax_a]
        ax_b = [x % b.ndim for x in ax_b]
        if [a.shape[x] for x in ax_a] != [b.shape[x] for x in ax_b]:
            raise ValueError("shape-mismatch for sum")
        free_a = [d for d in range(a.ndim) if d not in ax_a]
        free_b = [d for d in range(b.ndim) if d not in ax_b]
        k = math.prod(a.shape[d] for d in ax_a)
        at = self.reshape(self.transpose(a, free_a + ax_a), (math.prod(a.shape[d] for d in free_a), k))
        bt = self.reshape(self.transpose(b, ax_b + free_b), (k, math.prod(b.shape[d] for d in free_b)))
        res = self.reshape(self.matmul(at, bt), tuple(a.shape[d] for d in free_a) + tuple(b.shape[d] for d in free_b))
        if out is not None:
            self.copy_into(out, res)
            return out
        return res


_COMPARISONS = frozenset("equal not_equal less less_equal greater greater_equal".split())
_UFUNC_REDUCE = frozenset("add multiply maximum minimum logical_and logical_or".split())


def _reduction_errors(op: str, acc: numpy.dtype) -> tuple[_fperr.Launch | None, int]:
    """A user's sum or product reports overflow and invalid values as NumPy's reduce does
    ("overflow encountered in reduce"): the launch's report and map_reduce's reduce_check."""
    if op not in ("add", "multiply") or acc.kind != "f":
        return None, 0
    state = _fperr.current()
    check = state.check & (_table.OVER | _table.INVALID)
    return (_fperr.call_launch(None, state, ("reduce",)), check) if check else (None, 0)


def _comparison_loop(
    ufunc: numpy.ufunc, inputs: tuple[Any, ...], loop: tuple[numpy.dtype, ...], types: tuple[Any, ...]
) -> tuple[tuple[numpy.dtype, ...], tuple[Any, ...]]:
    """NumPy compares out-of-range Python ints exactly (uint8 array < -1); widen the loop."""
    changed = list(types)
    widened = False
    for i, x in enumerate(inputs):
        if isinstance(x, int) and not isinstance(x, bool) and loop[i].kind in "iu":
            info = numpy.iinfo(loop[i])
            if not info.min <= x <= info.max:
                changed[i] = numpy.dtype(numpy.int64) if -(2**63) <= x < 2**63 else numpy.dtype(numpy.uint64)
                widened = True
    if not widened:  # (dtype == int is True in NumPy: compare by flag, not by value)
        return loop, types
    return tuple(ufunc.resolve_dtypes(tuple(changed) + (None,))), tuple(changed)


def _storable(dt: numpy.dtype) -> bool:
    """Dtypes that can live on the device: computed ones, and complex (stored; computed in NumPy)."""
    return _table.is_supported_dtype(dt) or (dt.kind == "c" and dt.itemsize in (8, 16) and dt.isnative)


def _part(a: CLArray, k: int) -> CLArray:
    """The real (k=0) or imaginary (k=1) part of a complex array, as a float view."""
    half = a.itemsize // 2
    return CLArray(a.backend, a.data, a.shape, numpy.dtype(f"f{half}"), a.strides, a.offset + k * half, a.base or a)


def _pairs(a: CLArray) -> CLArray:
    """A complex array as its (real, imag) float pairs: shape + (2,)."""
    half = a.itemsize // 2
    return CLArray(
        a.backend, a.data, a.shape + (2,), numpy.dtype(f"f{half}"), a.strides + (half,), a.offset, a.base or a
    )


def _unwrap(x: Any) -> Any:
    """The native of an npgpu device array (the core hands ``where=`` of a ufunc over unconverted)."""
    native = getattr(x, "_native", None)
    return native if isinstance(native, CLArray) else x


def _native_or_device(x: Any) -> bool:
    """An array on the device (a native, or an npgpu device array not yet unwrapped)."""
    # (by type: a device array's __class__ says numpy.ndarray, so isinstance would call it a host array)
    return hasattr(x, "dtype") and hasattr(x, "shape") and not issubclass(type(x), (numpy.generic, numpy.ndarray))


def _array_operand(x: Any) -> bool:
    """An array operand: on the device, or a host array the core uploads before the call."""
    return hasattr(x, "dtype") and hasattr(x, "shape") and not issubclass(type(x), numpy.generic)


def _outs(kwargs: dict[str, Any]) -> tuple[Any, ...]:
    out = kwargs.get("out")
    if out is None:
        return ()
    return out if isinstance(out, tuple) else (out,)


def _choose_device(cl: Any, device: int | str | None) -> Any:
    devices, reason = OpenCLBackend._devices()
    if reason is not None:
        raise RuntimeError(reason)
    if device is None:
        device = os.environ.get("NPGPU_OPENCL_DEVICE") or None
    if device is not None:
        if isinstance(device, int) or (isinstance(device, str) and device.isdigit()):
            index = int(device)
            if not 0 <= index < len(devices):
                raise ValueError(f"OpenCL device index {index} out of range: {len(devices)} device(s)")
            return devices[index]
        for d in devices:
            if str(device).lower() in d.name.lower():
                return d
        names = ", ".join(d.name.strip() for d in devices)
        raise ValueError(f"no OpenCL device name contains {device!r}; devices: {names}")
    gpus = [d for d in devices if d.type & cl.device_type.GPU]
    return (gpus or devices)[0]


# kind -> (combining op, value NaNs are replaced by (nan-variants) or None)
_REDUCTION_KINDS: dict[str, tuple[str, Any]] = {
    "sum": ("add", None),
    "prod": ("multiply", None),
    "max": ("maximum", None),
    "min": ("minimum", None),
    "any": ("logical_or", None),
    "all": ("logical_and", None),
    "nansum": ("add", 0),
    "nanprod": ("multiply", 1),
    "nanmax": ("fmax", None),
    "nanmin": ("fmin", None),
}
_NUMPY_REDUCTIONS: dict[str, Callable[..., Any]] = {
    "sum": numpy.sum,
    "prod": numpy.prod,
    "max": numpy.max,
    "min": numpy.min,
    "any": numpy.any,
    "all": numpy.all,
    "nansum": numpy.nansum,
    "nanprod": numpy.nanprod,
    "nanmax": numpy.nanmax,
    "nanmin": numpy.nanmin,
    "mean": numpy.mean,
    "var": numpy.var,
    "cumsum": numpy.cumsum,
    "cumprod": numpy.cumprod,
}
_dtype_cache: dict[Any, numpy.dtype] = {}


def _result_dtype(kind: str, dt: numpy.dtype, dtype: Any) -> numpy.dtype:
    """NumPy's result dtype for a reduction, asked of NumPy itself on a one-element array."""
    key = (kind, dt, None if dtype is None else numpy.dtype(dtype))
    res = _dtype_cache.get(key)
    if res is None:
        kw = {} if dtype is None or kind in ("max", "min", "nanmax", "nanmin", "any", "all") else {"dtype": dtype}
        res = numpy.asarray(_NUMPY_REDUCTIONS[kind](numpy.ones(1, dt), **kw)).dtype
        if kind in ("any", "all"):
            res = numpy.dtype(bool)
        _dtype_cache[key] = res
    return res


def _np_ufunc_reduce_dtype(ufunc: numpy.ufunc, dt: numpy.dtype, dtype: Any) -> numpy.dtype:
    key = ("ufunc.reduce", ufunc, dt, None if dtype is None else numpy.dtype(dtype))
    res = _dtype_cache.get(key)
    if res is None:
        res = _dtype_cache[key] = ufunc.reduce(numpy.ones(1, dt), dtype=dtype).dtype
    return res


def _identity(op: str, dt: numpy.dtype) -> Any:
    return _table.reduction_identity(op, dt)


def _norm_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """``axis`` as sorted non-negative axes, with NumPy's errors (normalize_axis_tuple's)."""
    if axis is None:
        return tuple(range(ndim))
    return tuple(sorted(normalize_axis_tuple(axis, ndim)))


def _concat_result(
    arrays: list[CLArray], axis: int, dtype: Any, casting: str
) -> tuple[tuple[int, ...], numpy.dtype]:
    """numpy.concatenate's result shape and dtype (and its errors), without allocating.

    NumPy checks the stand-ins: each array's shape with the joined axis emptied (zero bytes).
    """
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    nd = arrays[0].ndim
    if nd == 0 or any(a.ndim != nd for a in arrays):
        numpy.concatenate([numpy.empty((0,) * a.ndim, a.dtype) for a in arrays], axis=axis)
    ax = _norm_axes(axis, nd)[0]
    stand_ins = [numpy.empty(a.shape[:ax] + (0,) + a.shape[ax + 1 :], a.dtype) for a in arrays]
    probe = numpy.concatenate(stand_ins, axis=ax, dtype=dtype, casting=casting)
    shape = probe.shape[:ax] + (sum(a.shape[ax] for a in arrays),) + probe.shape[ax + 1 :]
    return shape, probe.dtype


def _all_int_key(key: Any, ndim: int) -> bool:
    parts = key if isinstance(key, tuple) else (key,)
    return len(parts) == ndim and all(isinstance(p, (int, numpy.integer)) and not isinstance(p, bool) for p in parts)


# byte-wise gather/scatter of whole rows: out[i] = src[idx[i]] (scatter: dst[idx[i]] = vals[i])
_GATHER_SRC = """
__kernel void npg_gather(__global char* a, long a_off, __global const char* b, long b_off,
                         __global const long* idx, long row, long n, int scatter) {
  long i = get_global_id(0);
  if (i >= n) return;
  long r = i / row, c = i % row;
  if (scatter) a[a_off + idx[r] * row + c] = b[b_off + i];
  else a[a_off + i] = b[b_off + idx[r] * row + c];
}
"""
_GATHER = codegen.KernelSource(_GATHER_SRC, "npg_gather", "opencl", (), False)
_TILE = 16


def _matmul_source(dt: numpy.dtype) -> codegen.KernelSource:
    """C[b] = A[b] @ B[b] with TILE x TILE tiles in local memory (element strides, batch in dim 2)."""
    t = "double" if dt == numpy.float64 else "float"
    pragma = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if dt == numpy.float64 else ""
    src = f"""#pragma OPENCL FP_CONTRACT OFF
{pragma}#define TS {_TILE}
__kernel void npg_matmul(__global const {t}* A, long ao, long ab, long a0, long a1,
                         __global const {t}* B, long bo, long bb, long b0, long b1,
                         __global {t}* C, long co, long cb, long c0, int M, int N, int K) {{
  __local {t} As[TS][TS];
  __local {t} Bs[TS][TS + 1];
  int lx = get_local_id(0), ly = get_local_id(1);
  int col = get_group_id(0) * TS + lx, row = get_group_id(1) * TS + ly;
  long z = get_global_id(2);
  A += ao + z * ab; B += bo + z * bb; C += co + z * cb;
  {t} acc = 0;
  for (int t0 = 0; t0 < K; t0 += TS) {{
    As[ly][lx] = (row < M && t0 + lx < K) ? A[row * a0 + (t0 + lx) * a1] : 0;
    Bs[ly][lx] = (t0 + ly < K && col < N) ? B[(t0 + ly) * b0 + col * b1] : 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int q = 0; q < TS; q++) acc += As[ly][q] * Bs[q][lx];
    barrier(CLK_LOCAL_MEM_FENCE);
  }}
  if (row < M && col < N) C[row * c0 + col] = acc;
}}
"""
    return codegen.KernelSource(src, "npg_matmul", "opencl", (), dt == numpy.float64)


def _red(kind: str) -> Callable[..., Any]:
    def impl(
        self: OpenCLBackend,
        a: CLArray,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        keepdims: bool = False,
        initial: Any = None,
        where: Any = True,
    ) -> Any:
        return self.reduction(kind, a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial, where=where)

    return impl


def _minmax(kind: str) -> Callable[..., Any]:
    def impl(
        self: OpenCLBackend,
        a: CLArray,
        axis: Any = None,
        out: Any = None,
        keepdims: bool = False,
        initial: Any = None,
        where: Any = True,
    ) -> Any:
        return self.reduction(kind, a, axis=axis, out=out, keepdims=keepdims, initial=initial, where=where)

    return impl


def _logical(kind: str) -> Callable[..., Any]:
    def impl(
        self: OpenCLBackend, a: CLArray, axis: Any = None, out: Any = None, keepdims: bool = False, where: Any = True
    ) -> Any:
        return self.reduction(kind, a, axis=axis, out=out, keepdims=keepdims, where=where)

    return impl


def _arg(kind: str) -> Callable[..., Any]:
    def impl(self: OpenCLBackend, a: CLArray, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
        return self.argreduce(kind, a, axis=axis, out=out, keepdims=keepdims)

    return impl


def _cum(kind: str) -> Callable[..., Any]:
    def impl(self: OpenCLBackend, a: CLArray, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
        return self.cumulative(kind, a, axis=axis, dtype=dtype, out=out)

    return impl


def _method(name: str) -> Callable[..., Any]:
    def impl(self: OpenCLBackend, *args: Any, **kwargs: Any) -> Any:
        return getattr(self, name)(*args, **kwargs)

    return impl


#: NumPy functions that only make a view (new shape and strides over the same memory)
_VIEW_FUNCTIONS = (numpy.swapaxes, numpy.moveaxis, numpy.rollaxis, numpy.squeeze, numpy.expand_dims,
                   numpy.broadcast_to, numpy.atleast_1d, numpy.atleast_2d, numpy.atleast_3d, numpy.flip,
                   numpy.fliplr, numpy.flipud, numpy.diagonal)


def _numpy_view(func: Callable[..., Any]) -> Callable[..., Any]:
    def impl(self: OpenCLBackend, a: CLArray, *args: Any, **kwargs: Any) -> Any:
        return self.numpy_view(func, a, *args, **kwargs)

    return impl


def _fill(self: OpenCLBackend, a: CLArray, value: Any) -> None:
    self.fill(a, value)


_FUNCTIONS: dict[Callable[..., Any], Callable[..., Any]] = {
    numpy.sum: _red("sum"),
    numpy.prod: _red("prod"),
    numpy.nansum: _red("nansum"),
    numpy.nanprod: _red("nanprod"),
    numpy.max: _minmax("max"),
    numpy.min: _minmax("min"),
    numpy.amax: _minmax("max"),
    numpy.amin: _minmax("min"),
    numpy.nanmax: _minmax("nanmax"),
    numpy.nanmin: _minmax("nanmin"),
    numpy.any: _logical("any"),
    numpy.all: _logical("all"),
    numpy.argmax: _arg("argmax"),
    numpy.argmin: _arg("argmin"),
    numpy.cumsum: _cum("cumsum"),
    numpy.cumprod: _cum("cumprod"),
    numpy.mean: _method("mean"),
    numpy.var: _method("var"),
    numpy.std: lambda self, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False: self.var(
        a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims, _sqrt=True
    ),
    numpy.nanmean: lambda self, a, axis=None, dtype=None, out=None, keepdims=False: self.mean(
        a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, _nan=True
    ),
    numpy.empty: _method("empty_ordered"),
    numpy.zeros: _method("zeros"),
    numpy.ones: _method("ones"),
    numpy.full: _method("full"),
    numpy.empty_like: _method("empty_like"),
    numpy.zeros_like: _method("zeros_like"),
    numpy.ones_like: _method("ones_like"),
    numpy.full_like: _method("full_like"),
    numpy.arange: _method("arange"),
    numpy.linspace: _method("linspace"),
    numpy.eye: _method("eye"),
    numpy.identity: _method("identity"),
    numpy.ndarray.astype: _method("astype"),
    numpy.copy: _method("array_copy"),
    numpy.ndarray.copy: _method("array_copy"),
    numpy.ascontiguousarray: _method("ascontiguousarray"),
    numpy.reshape: _method("reshape"),
    numpy.ravel: _method("ravel"),
    numpy.transpose: _method("transpose"),
    numpy.concatenate: _method("concatenate"),
    numpy.stack: _method("stack"),
    numpy.split: _method("split"),
    numpy.array_split: _method("array_split"),
    numpy.where: _method("where"),
    numpy.clip: _method("clip"),
    numpy.ndarray.view: _method("array_view"),
    **{f: _numpy_view(f) for f in _VIEW_FUNCTIONS},
    numpy.broadcast_arrays: _method("broadcast_arrays"),
    numpy.real: _method("real"),
    numpy.imag: _method("imag"),
    numpy.ndarray.__getitem__: _method("getitem"),
    numpy.ndarray.__setitem__: _method("setitem"),
    numpy.ndarray.fill: _fill,
    numpy.matmul: _method("matmul"),
    numpy.dot: _method("dot"),
    numpy.tensordot: _method("tensordot"),
}
OpenCLBackend.functions = _FUNCTIONS

#: keyword arguments each function accepts here (anything else -> NumPy)
_ALLOWED_KWARGS: dict[Callable[..., Any], frozenset[str]] = {}
for _f, _impl in _FUNCTIONS.items():
    _code = getattr(_impl, "__code__", None)
    _ALLOWED_KWARGS[_f] = frozenset(_code.co_varnames[1 : _code.co_argcount]) if _code is not None else frozenset()
_KW = {
    numpy.mean: {"axis", "dtype", "out", "keepdims", "where"},
    numpy.var: {"axis", "dtype", "out", "ddof", "keepdims"},
    numpy.empty: {"dtype", "order"},
    numpy.zeros: {"dtype", "order"},
    numpy.ones: {"dtype", "order"},
    numpy.full: {"dtype", "order"},
    numpy.arange: {"dtype"},
    numpy.linspace: {"num", "endpoint", "retstep", "dtype", "axis"},
    numpy.eye: {"M", "k", "dtype", "order"},
    numpy.identity: {"dtype"},
    numpy.ndarray.astype: {"dtype", "order", "casting", "copy"},
    numpy.copy: {"order", "subok"},
    numpy.ndarray.copy: {"order"},
    numpy.ascontiguousarray: {"dtype"},
    numpy.reshape: {"shape", "order", "newshape", "copy"},
    numpy.ravel: {"order"},
    numpy.transpose: {"axes"},
    numpy.concatenate: {"axis", "out", "dtype", "casting"},
    numpy.stack: {"axis", "out", "dtype", "casting"},
    numpy.split: {"indices_or_sections", "axis"},
    numpy.array_split: {"indices_or_sections", "axis"},
    numpy.where: set(),
    numpy.clip: {"a_min", "a_max", "out", "min", "max"},
    numpy.matmul: {"out"},
    numpy.dot: {"out"},
    numpy.tensordot: {"axes"},
    numpy.ndarray.view: {"dtype", "type"},
    numpy.real: set(),
    numpy.imag: set(),
    numpy.ndarray.__getitem__: set(),
    numpy.ndarray.__setitem__: set(),
    numpy.ndarray.fill: set(),
    numpy.empty_like: {"dtype", "order", "subok", "shape"},
    numpy.zeros_like: {"dtype", "order", "subok", "shape"},
    numpy.ones_like: {"dtype", "order", "subok", "shape"},
    numpy.full_like: {"dtype", "order", "subok", "shape"},
}
for _f, _k in _KW.items():
    _ALLOWED_KWARGS[_f] = frozenset(_k)
for _f in (*_VIEW_FUNCTIONS, numpy.broadcast_arrays):  # (views: NumPy's own keywords, NumPy checks them)
    _ALLOWED_KWARGS[_f] = frozenset(inspect.signature(_f).parameters) - {"subok"}
_MATMUL_FUNCS = frozenset({numpy.matmul, numpy.dot, numpy.tensordot})
#: functions a CPU device runs slower than NumPy (see OpenCLBackend.prefers_host)
_HOST_ON_CPU = frozenset({numpy.matmul, numpy.dot, numpy.tensordot})
#: what complex arrays can do here: be made, copied, converted to and viewed (compute goes to NumPy)
_COMPLEX_FUNCS = frozenset({
    numpy.empty, numpy.zeros, numpy.ones, numpy.full, numpy.empty_like, numpy.zeros_like, numpy.ones_like,
    numpy.full_like, numpy.ndarray.astype, numpy.copy, numpy.ndarray.copy, numpy.ascontiguousarray, numpy.reshape,
    numpy.ravel, numpy.transpose, numpy.ndarray.__getitem__, numpy.ndarray.__setitem__, numpy.ndarray.fill,
    numpy.concatenate, numpy.stack, numpy.split, numpy.array_split, numpy.real, numpy.imag, numpy.ndarray.view,
    *_VIEW_FUNCTIONS, numpy.broadcast_arrays,
})
def _target_dtype(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The dtype a call asks for (None: not given; False: not a dtype this side should interpret)."""
    value = dtype_argument(func, args, kwargs)
    if value is None and func in (numpy.full, numpy.full_like) and len(args) > 1:
        return numpy.asarray(args[1]).dtype if not _native_or_device(args[1]) else None
    return value


_NEEDS_FLOAT = frozenset({numpy.nanmax, numpy.nanmin, numpy.nanmean})


def _supports_function(
    self: OpenCLBackend,
    func: Callable[..., Any],
    dtypes: tuple[numpy.dtype, ...],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> bool:
    if func not in _FUNCTIONS or not self.supports_dtypes(dtypes):
        return False
    if set(kwargs) - _ALLOWED_KWARGS[func]:
        return False
    target = _target_dtype(func, args, kwargs)
    if target is False or (target is not None and not self.supports_dtypes((target,))):
        return False  # a dtype argument NumPy must judge, or one this device can't hold (datetime64, ...)
    if func in (numpy.arange, numpy.linspace) and not all(
        isinstance(v, (int, float, numpy.integer, numpy.floating)) for v in args[:2]
    ):
        return False
    dts = [numpy.dtype(d) for d in dtypes if not isinstance(d, type)]
    if any(d.kind == "c" for d in dts) or (target is not None and target.kind == "c"):
        # complex values live on the device but are only moved there, not computed on
        if func not in _COMPLEX_FUNCS:
            return False
        if func is numpy.ndarray.astype and target.kind != "c":
            return False
        if func in (numpy.ndarray.__setitem__, numpy.ndarray.fill) and args[0].dtype.kind != "c":
            return False
        if func in (numpy.concatenate, numpy.stack) and target is not None and target.kind != "c":
            return False
        dtypes = ()
    elif func is numpy.imag:
        return False  # the imaginary part of a real array: NumPy's read-only zeros
    if func in (numpy.concatenate, numpy.stack):
        arrays = args[0] if args else kwargs.get("arrays")
        if not isinstance(arrays, (list, tuple)) or not all(map(_array_operand, arrays)):
            return False  # an array as the sequence (NumPy splits it into rows), or numbers among the arrays
    elif func in _VIEW_FUNCTIONS and not (args and _native_or_device(args[0])):
        return False  # a list of arrays where the array goes: NumPy makes the array first
    if func in (numpy.split, numpy.array_split):
        sections = args[1] if len(args) > 1 else kwargs.get("indices_or_sections")
        if not isinstance(sections, (int, numpy.integer, list, tuple)):
            return False  # split points are host values; an array of them is NumPy's to read
    for key in ("out", "where"):
        v = kwargs.get(key)
        if v is not None and v is not True and not _native_or_device(v):
            return False
    if "initial" in kwargs and kwargs["initial"] is not None and not isinstance(kwargs["initial"], (int, float, bool)):
        return False
    dts = [numpy.dtype(d) for d in dtypes if not isinstance(d, type)]
    if any(not _table.is_supported_dtype(d) for d in dts):
        return False
    if target is not None and not dtypes and target.kind != "c" and not _table.is_supported_dtype(target):
        return False
    if func in _MATMUL_FUNCS:
        return bool(dts) and all(d.kind == "f" for d in dts)
    if func in _NEEDS_FLOAT and not all(d.kind == "f" for d in dts):
        return False
    if func in (numpy.mean, numpy.var, numpy.std, numpy.nanmean):
        a = args[0] if args else None
        if a is None or getattr(a, "size", 0) == 0 or kwargs.get("where", True) is not True:
            return False
        if kwargs.get("ddof", 0) >= a.size:
            return False
    if func in (numpy.ndarray.__getitem__, numpy.ndarray.__setitem__):
        key = args[1] if len(args) > 1 else None
        if not (_is_basic_key(key) or (_array_operand(key) and key.dtype == numpy.bool_)):
            return False
        if func is numpy.ndarray.__setitem__ and len(args) > 2:
            v = args[2]
            if not (isinstance(v, (int, float, bool, numpy.generic)) or _array_operand(v)):
                return False
            if _native_or_device(key) and not args[0].flags.c_contiguous:  # (a mask into a strided view: NumPy)
                return False
    if func is numpy.where and len(args) != 3:
        return False
    if func in (numpy.reshape, numpy.ravel):
        position = 1 if func is numpy.ravel else 2
        order = args[position] if len(args) > position else kwargs.get("order", "C")
        if order not in (("C", "F") if func is numpy.reshape else ("C",)):
            return False  # ravel in Fortran (or A/K) order, reshape in A: NumPy's
    if func in (numpy.cumsum, numpy.cumprod) and kwargs.get("out") is not None:
        return False
    if func is numpy.ndarray.view:
        wanted = [*args[1:], kwargs.get("dtype"), kwargs.get("type")]
        if any(isinstance(w, type) and issubclass(w, numpy.ndarray) for w in wanted):
            return False  # a view as an ndarray subclass: NumPy's (the subclass lives on the host)
        if len(args) > 1 and args[1] is not None and not _storable(numpy.dtype(args[1])):
            return False
    if func is numpy.clip:
        if "min" in kwargs or "max" in kwargs:
            return False
        if (len(args) > 1 or "a_min" in kwargs) != (len(args) > 2 or "a_max" in kwargs):
            return False  # one of a_min and a_max given: NumPy's TypeError (the other is missing)
        bounds = [args[i] if len(args) > i else kwargs.get(("a_min", "a_max")[i - 1]) for i in (1, 2)]
        try:
            loop = numpy._core.umath.clip.resolve_dtypes(
                (args[0].dtype, *(args[0].dtype if b is None else b.dtype if hasattr(b, "dtype") else _weak_type(b)
                                  for b in bounds), None))
        except (TypeError, ValueError):
            return False
        if not _table.supports_loop(numpy._core.umath.clip, tuple(loop)):
            return False  # complex or float16 bounds: NumPy's
    return True


def _call_function(self: OpenCLBackend, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return _FUNCTIONS[func](self, *args, **kwargs)


OpenCLBackend.supports_function = _supports_function  # type: ignore[method-assign]
OpenCLBackend.call_function = _call_function  # type: ignore[method-assign]
