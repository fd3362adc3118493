"""The OpenCL backend: NumPy semantics on any OpenCL device (GPUs, or the CPU through PoCL).

Kernels are generated from npgpu.kernels.ufuncs; this package is the only one importing pyopencl.
OpenCLBackend is put together from one part per concern (the modules beside this one).
"""

from __future__ import annotations

import atexit
import threading
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any, ClassVar

import numpy

from .. import random_kernels
from ..base import Backend
from . import complexvalues, routing  # noqa: F401  (complexvalues: its functions register)
from .composed import Composed
from .creation import Creation
from .device import Device, _choose_device
from .elementwise import Elementwise
from .gather import Gather
from .indexing import Indexing
from .launch import Launch
from .linalg import _HOST_ON_CPU, Linalg
from .memory import Memory
from .movement import Movement
from .philox import Streams
from .products import Products
from .reductions import Reductions
from .shaping import Shaping
from .sorting import HOST_ON_CPU as _SORTS_ON_CPU
from .sorting import Sorting

# Queued commands must finish before the interpreter frees the host memory and buffers they use:
# a process that exited with a fill still running on PoCL crashed (SIGSEGV) after its last line.
_LIVE_BACKENDS: weakref.WeakSet[OpenCLBackend] = weakref.WeakSet()


@atexit.register
def _finish_queues() -> None:
    for backend in list(_LIVE_BACKENDS):
        backend.queue.finish()



class OpenCLBackend(Device, Memory, Launch, Elementwise, Creation, Reductions, Movement, Indexing,
                    Linalg, Gather, Shaping, Products, Composed, Sorting, Streams, Backend):
    """NumPy on an OpenCL device through generated kernels.

    ``device``: an index into all devices or a substring of a device name (default:
    env ``NPGPU_OPENCL_DEVICE``, else the first GPU, else the first device).
    ``fp64``: override the device's float64 capability (False simulates a device
    without cl_khr_fp64: float64 work then goes to NumPy).
    """

    name = "opencl"
    is_host = False
    survives_fork = False  # (its context's threads and queues stay in the parent)
    dlpack_native = False  # (pyopencl's arrays have no DLPack export: device arrays export host copies)
    functions: ClassVar[dict[Callable[..., Any], Callable[..., Any]]] = routing.FUNCTIONS
    # Ceilings of the measured thresholds (calibrate): GPUs the base values; CPU devices (PoCL)
    # set their own in __init__.
    default_threshold_bytes: int = 1 << 20
    upload_threshold_bytes: int = 16 << 20
    calibrated = True

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
        #: the alignment, in bytes, of the host memory such buffers use (memory.aligned_empty)
        self.host_alignment = max(64, int(self.device.mem_base_addr_align) // 8)
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
        self._watched: set[Any] = set()  # memory._Retiring: host memory that live buffers use
        self._retired: deque[Any] = deque()  # the _Retiring whose buffers died
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
        #: elementwise launch geometries by their operands' layouts (Elementwise._geometry)
        self._geometries: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        #: Guards what threads share here: launches (a kernel's arguments), the kernel cache, the
        #: memory pool and the recycling of host memory (reentrant: a collection that a lock holder
        #: triggers may free buffers, whose weakref callbacks only append to _retired, but stay safe if not)
        self._lock = threading.RLock()
        #: The most bytes one array may take (CL_DEVICE_MAX_MEM_ALLOC_SIZE); larger requests raise
        #: DeviceMemoryError before anything is allocated. Tests lower it to stand for a smaller device.
        self.max_alloc_bytes = int(self.device.max_mem_alloc_size)
        self._error_hosts: dict[int, numpy.ndarray] = {}  # host memory of flag buffers (error_buffer)
        self.compile_seconds = 0.0
        self.kernels_built = 0
        _LIVE_BACKENDS.add(self)
        self.calibrate()

    # -- NumPy's PCG64 (and, on GPUs, MT19937) doubles computed on the device (random_kernels.py) --
    @property
    def random_streams(self) -> frozenset[str]:
        return random_kernels.opencl_streams(self)

    def random_doubles(self, state: dict[str, Any], shape: tuple[int, ...]) -> tuple[Any, dict[str, Any]]:
        return random_kernels.opencl_doubles(self, state, shape)

    def prefers_host(self, func: Any) -> bool:
        """True for functions this device runs slower than NumPy: on CPU devices, matmul/dot/tensordot
        and the sorts and what is built on them (sorting.HOST_ON_CPU has the measurements).

        Measured on PoCL (2 cores), float64 n x n: 64: 0.84 ms vs NumPy 0.013; 256: 21.5 ms vs 0.47;
        512: 138 ms vs 3.2 (the local-memory tiled kernel suits GPUs; OpenBLAS wins on a CPU).
        Placement keeps such calls on the host when their inputs are there.
        """
        return self.is_cpu and (func in _HOST_ON_CPU or func in _SORTS_ON_CPU)

    supports_function = routing.supports_function
    call_function = routing.call_function
