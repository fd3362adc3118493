"""Building, caching and launching kernels; the floating-point error flag buffers."""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable
from typing import Any, ClassVar

import numpy

from ... import _fperr
from ..._errors import KernelBuildError
from ...kernels import codegen, ir
from ..base import Backend
from .array import _PY_SCALARS
from .memory import aligned_empty

#: compiled kernels kept per backend (each holds a built program)
KERNEL_CACHE_SIZE = 512


#: held while a program builds with CompilerWarning silenced (see OpenCLBackend._build)
_BUILD_LOCK = threading.Lock()


_F8 = numpy.dtype(numpy.float64)


def _scalar_value(x: Any, dtype: numpy.dtype) -> numpy.generic:
    """A scalar converted the way NumPy converts it for a loop (OverflowError for bad Python ints)."""
    if not isinstance(x, (*_PY_SCALARS, numpy.generic)):
        # the core converts array data (lists, host arrays) to device arrays before a call: anything
        # else here is a bug that must not turn into a kernel argument made of its first element
        raise TypeError(f"opencl backend: a scalar operand was expected, not {type(x).__name__}")
    kind = type(x)
    if kind is float and dtype is _F8:  # (a statement's constants: 1.9 us through the general road)
        return numpy.float64(x)
    if isinstance(x, numpy.generic) and x.dtype == dtype:
        return x
    if isinstance(x, int) and kind is not bool and dtype.kind in "iu":
        info = numpy.iinfo(dtype)
        if not info.min <= x <= info.max:
            raise OverflowError(f"Python integer {x} out of bounds for {dtype}")
        return dtype.type(x)
    # (NumPy's conversion of a weak number: 1e300 or a huge int into float32 is inf, with its
    # "overflow encountered in cast" as the errstate in force asks)
    return numpy.asarray(x).astype(dtype)[()]



def _compiler_errors(message: str) -> str:
    """The compiler's error lines from PyOpenCL's build-failure message (all of it if it has none)."""
    lines = [" ".join(line.split()) for line in message.splitlines()]
    errors = [line for line in lines if "error" in line.lower() and "BUILD_PROGRAM_FAILURE" not in line]
    return "; ".join(errors) if errors else " ".join(message.split())



def _declare_scalars(kernel: Any, args: list[Any], kinds: tuple[type, ...]) -> None:
    """Declare ``kernel``'s scalar arguments' dtypes from ``args`` (of types ``kinds``), once per
    kernel and kinds of arguments: PyOpenCL sets an undeclared NumPy scalar argument in about 15 us
    (PoCL, PyOpenCL 2026.1, measured 2026-12-03; a buffer in 1 us), a declared one by packing it:
    an elementwise kernel's ten arguments took 63 us, declared a few. The packing converts a value
    to the declared dtype, so the declaration is made again whenever the types differ from those
    it was made for. Complex scalars stay undeclared (their bytes are passed as they are), one by one."""
    kernel.set_scalar_arg_dtypes([arg.dtype if isinstance(arg, numpy.generic) and arg.dtype.kind in "biuf" else None
                                  for arg in args])
    kernel.npgpu_arg_kinds = kinds


class Launch(Backend):
    """Kernels: built (and cached) from npgpu.kernels sources, launched under the lock, with
    the floating-point error flags they write."""

    _graphs: ClassVar[dict[Any, ir.Graph]] = {}

    def _build(self, key: Any, make_source: Callable[[], codegen.KernelSource]) -> Any:
        with self._lock:
            kernel = self._kernels.get(key)
            if kernel is not None:
                self._kernels.move_to_end(key)
                return kernel
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
                kinds = tuple(map(type, args))
                if getattr(kernel, "npgpu_arg_kinds", None) != kinds:
                    _declare_scalars(kernel, args, kinds)
                kernel.set_args(*args)
                cl.enqueue_nd_range_kernel(self.queue, kernel, global_size, local_size)
        except cl.Error as exc:  # (the bytes of its buffers: what a device that allocates at first use needed)
            self._raise_fault(exc, "a kernel launch", sum(a.size for a in args if isinstance(a, cl.MemoryObjectHolder)))

    # -- floating-point error flags (npgpu/_fperr.py) -------------------------------------------
    # On a CPU device (host_backed) the flags are host memory the kernels write in place: read
    # once the queue has run (a download waits for it anyway), with no OpenCL command, which
    # on PoCL costs 25-45 us each (measured 2026-12-01); elsewhere they are copied back.
    def error_buffer(self, nbytes: int) -> Any:
        """A zeroed device buffer of ``nbytes`` flag bytes."""
        flags = self._cl.mem_flags
        if self.host_backed:
            host = aligned_empty(nbytes, self.host_alignment)
            host[:] = 0
            buffer = self._cl.Buffer(self.context, flags.READ_WRITE | flags.USE_HOST_PTR, hostbuf=host)
            self._error_hosts[buffer.int_ptr] = host  # (the buffer and its memory live as long as the backend)
            return buffer
        host = numpy.zeros(nbytes, numpy.uint8)
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
