"""NVIDIA GPUs through CuPy: CupyBackend (transfers, NumPy's errors and rounding where CuPy's differ).

The only module that imports cupy (when a CupyBackend is made).
"""

from __future__ import annotations

import atexit
import functools
import math
import os
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any, NoReturn

import numpy

from ... import _errors, _fperr
from ...kernels import codegen, ir, ufuncs
from ...kernels import order as _order
from ...kernels import ufuncs as _table
from .. import random_kernels
from .array_module import ArrayModuleBackend, _clip_bounds_without_nan, _weak
from .kernels import _COMPLEX_PRODUCTS, _CONSTANT_POWER, Kernels, _numpy_complex_product_fuses, _small_integer_exponent
from .staging import _PinnedStager


class CupyBackend(Kernels, ArrayModuleBackend):
    """NVIDIA GPUs through CuPy."""

    name = "cupy"
    survives_fork = False  # (CUDA refuses a context its parent process made before fork())
    # Measured on an H200 machine (tools/measure_cupy.py, 2026-11-30): one elementwise op on
    # arrays already on the device costs ~45 us there against NumPy's ~120 us at 1e5 float64
    # elements, so arrays from 1 MiB are made on the device; an op on host inputs only beat
    # NumPy once the upload was amortized, between 1e6 and 1e7 elements (24-240 MB moved).
    default_threshold_bytes = 1 << 20  # (ceilings of the measured thresholds: calibrate)
    upload_threshold_bytes = 32 << 20
    calibrated = True
    #: Arrays smaller than this move with one plain copy; the pinned pipeline pays above it.
    pinned_min_bytes = 4 << 20

    cuda_memory = True  # (cupy.ndarray: __cuda_array_interface__ and a kDLCUDA DLPack capsule)

    def __init__(self, device: int | None = None) -> None:
        import cupy

        self.xp = cupy
        device = _device_from_environment() if device is None else device
        if device is not None:
            cupy.cuda.Device(int(device)).use()
        super().__init__()
        self._stager: _PinnedStager | None = None
        self._kernels: dict[Any, Any] = {}
        #: (extents, each operand's strides) -> the strided kernel's packed geometry argument
        self._geometries: dict[tuple[Any, ...], Any] = {}
        #: (shape, operands' shapes and strides) -> () where a new result is C-ordered, else the
        #: shape of its memory in NumPy's order and the transpose that views it (run_fused)
        self._layouts: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        self._small_reductions: dict[tuple[Any, ...], Any] = {}  # (_small_map_reduce's plans, or False)
        # (an index outside its axis raises the one flag every index array of a key shares)
        self._outside_kernel = cupy.ElementwiseKernel(
            "T x, int64 n", "raw int32 flag", "if ((long long)x >= n || (long long)x < -n) flag[0] = 1;",
            "npg_index_outside")
        #: Guards the kernel cache and the stager's creation (CuPy's own launches, memory pool and
        #: streams are thread-safe; every thread uses CuPy's default stream, so work of all threads
        #: on this device runs in the order it was queued).
        self._lock = threading.Lock()
        compile_errors = tuple(c for c in (getattr(cupy.cuda.compiler, "CompileException", None),
                                           getattr(getattr(cupy.cuda, "nvrtc", None), "NVRTCError", None)) if c)
        #: CuPy's errors that _raise_fault translates at this backend's boundary
        self._faults = (cupy.cuda.memory.OutOfMemoryError, cupy.cuda.runtime.CUDARuntimeError,
                        cupy.cuda.driver.CUDADriverError, *compile_errors)
        self._compile_errors = compile_errors
        if not _LIVE_CUPY:  # (registered after CuPy's own exit handlers, so it runs before them)
            atexit.register(_finish_devices)
        _LIVE_CUPY.add(self)
        #: flag buffers in page-locked host memory that kernels write directly (_FlagBuffer)
        self.map_flags = bool(cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id).get("unifiedAddressing", 0))
        self.calibrate()

    #: Compiled fused kernels kept (CuPy also caches the binaries on disk).
    kernel_cache_size = 256

    @classmethod
    def unavailable_reason(cls, device: int | None = None) -> str | None:
        import cupy

        if not cupy.cuda.is_available():
            return "CuPy is installed but finds no usable CUDA GPU (cupy.cuda.is_available() is False)"
        device = _device_from_environment() if device is None else device
        if device is not None and not 0 <= int(device) < cupy.cuda.runtime.getDeviceCount():
            return f"there is no CUDA device {device}"
        return None

    def describe(self) -> dict[str, Any]:
        cp = self.xp
        dev = cp.cuda.Device()
        props = cp.cuda.runtime.getDeviceProperties(dev.id)
        free, total = dev.mem_info
        return {
            "backend": self.name,
            "device": props["name"].decode() if isinstance(props["name"], bytes) else props["name"],
            "memory_bytes": total,
            "fp64": True,
            "cupy": cp.__version__,
            "cuda_runtime": cp.cuda.runtime.runtimeGetVersion(),
        }

    def supports_function(
        self, func: Callable[..., Any], dtypes: tuple[numpy.dtype, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> bool:
        if func is numpy.einsum and (not args or not isinstance(args[0], str) or "out" in kwargs
                                     or not isinstance(kwargs.get("optimize", False), (bool, str))):
            return False  # CuPy's einsum takes no sublist subscripts, out= or explicit contraction path
        if func is numpy.clip and not _clip_bounds_without_nan(args, kwargs):
            return False  # CuPy's clip ignores NaN bounds, NumPy's propagates them
        return super().supports_function(func, dtypes, args, kwargs)

    def _stager_for_size(self, nbytes: int) -> _PinnedStager | None:
        if nbytes < self.pinned_min_bytes:
            return None
        if self._stager is None:
            with self._lock:  # (one stager: two would each start their threads)
                if self._stager is None:
                    self._stager = _PinnedStager(self.xp)
        return self._stager

    def _upload(self, array: numpy.ndarray) -> Any:
        cp = self.xp
        stager = self._stager_for_size(array.nbytes)
        if stager is None:
            return cp.asarray(array)
        src = numpy.ascontiguousarray(array)
        dst = cp.empty(src.shape, src.dtype)
        cp.cuda.get_current_stream().synchronize()
        stager.upload(src, dst)
        return dst

    #: Large downloads land in page-locked host memory from CuPy's pinned pool: one DMA at full
    #: speed and no second copy; the pool takes the memory back when the array is freed.
    pinned_destination = True
    pinned_destination_max_bytes = 1 << 30

    def to_host(self, native: Any) -> numpy.ndarray:
        if native.dtype.char in _ALIASED_CHARS:  # (CuPy's bool sums are 'q', NumPy's 'l': numpy.longlong
            native = native.view(numpy.dtype(native.dtype.str))  # is not numpy.int64 where both are 8 bytes)
        stager = self._stager_for_size(native.nbytes)
        if stager is None:
            return native.get()
        src = self.xp.ascontiguousarray(native)
        if self.pinned_destination and src.nbytes <= self.pinned_destination_max_bytes:
            memory = self.xp.cuda.alloc_pinned_memory(src.nbytes)
            dst = numpy.frombuffer(memory, src.dtype, src.size).reshape(src.shape)
            src.get(out=dst)
            return dst
        dst = numpy.empty(src.shape, src.dtype)
        self.xp.cuda.get_current_stream().synchronize()
        stager.download(src, dst)
        return dst

    def sync(self) -> None:
        self.xp.cuda.get_current_stream().synchronize()

    # -- complex products rounded as the host's NumPy rounds them -----------------------------
    def call_ufunc(self, ufunc: numpy.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any],
                   loop: tuple[numpy.dtype, ...] | None = None) -> Any:
        if method == "__call__" and ufunc in _COMPLEX_PRODUCTS and set(kwargs) <= {"out"}:
            out = kwargs.get("out")
            target = out[0] if isinstance(out, tuple) and len(out) == 1 else out
            if self.is_native(inputs[0]) and (target is None or (
                    self.is_native(target) and target.dtype == inputs[0].dtype and target.shape == inputs[0].shape)):
                exact = self._complex_product(ufunc, inputs, target)
                if exact is not None:
                    if target is None or exact is target:
                        return exact
                    target[...] = exact  # (a ** n into a: the product is computed first, then stored)
                    return target
        if method == "__call__":
            own = self._own_ufunc(ufunc, inputs, kwargs, loop=loop)  # (the core's loop: NumPy's)
            if own is not None:
                return own
            if ufunc is numpy.divmod and not kwargs:
                # NumPy's divmod is its floor_divide and remainder (npy_divmod), whose own kernels give
                # NumPy's values; divmod's error conditions are then checked on those
                quotient = self._own_ufunc(numpy.floor_divide, inputs, {}, report=False)
                remainder = None if quotient is None else self._own_ufunc(numpy.remainder, inputs, {}, report=False)
                if remainder is not None:
                    self._eager_errors(ufunc, inputs, (quotient, remainder))
                    return quotient, remainder
        result = super().call_ufunc(ufunc, method, inputs, kwargs, loop)
        if method == "__call__":
            self._eager_errors(ufunc, inputs, result)
        elif method == "reduce" and ufunc in (numpy.add, numpy.multiply) and self.is_native(inputs[0]):
            self._reduction_errors(inputs[0], result)
        return result

    # -- NumPy's overflow and invalid reports of sums and products (CuPy's reductions make none) --
    def call_function(self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if func in _MEANS and args and self.is_native(args[0]) and not args[0].size \
                and (func is numpy.mean or args[0].dtype.kind in "biu") \
                and len(args) <= 3 and set(kwargs) <= {"axis", "dtype", "keepdims"}:
            # NumPy's warnings for a mean of nothing ("Mean of empty slice.", then the division's
            # "invalid value", as its errstate says; CuPy gives the NaN silently), from NumPy's
            # own mean of an empty stand-in: nothing to compute, its reports exactly NumPy's.
            # (NumPy's nanmean of integers is their mean: an H100's fuzz, 2026-12-07)
            func(numpy.empty(args[0].shape, args[0].dtype), *args[1:], **kwargs)
        if func is numpy.where and len(args) == 3 and not kwargs:
            selected = self._own_where(*args)
            if selected is not None:
                return selected
        result = super().call_function(func, args, kwargs)
        if func in _CHECKED_REDUCTIONS and args and self.is_native(args[0]):
            self._reduction_errors(args[0], result)
        return result

    def _own_where(self, condition: Any, x: Any, y: Any) -> Any:
        """where(condition, x, y) as NumPy computes it, by a select kernel of the code generator,
        where CuPy's where differs: a result laid out in its operands' memory order (CuPy's is
        C-ordered), and floats converted or tested as NumPy does (CuPy's kernels flush float32
        subnormals: a 1e-40 condition is False there, a 1e-40 value widened to float64 is 0).
        None where CuPy's where gives NumPy's answer, or a dtype is not the code generator's."""
        ops = (condition, x, y)
        arrays = [o for o in ops if self.is_native(o)]
        if not arrays or not all(self.is_native(o) or type(o) in (bool, int, float) for o in ops):
            return None
        if len(arrays) == 3 and condition.dtype.kind == "b" and x.dtype == y.dtype and x._c_contiguous and \
                y._c_contiguous and condition._c_contiguous:
            return None  # (the common case, at once: nothing converted, C order)
        kinds, dts, dt = ir.where_plan(condition, x, y, self.is_native)
        if dt.kind not in "biuf" or not all(_table.is_supported_dtype(d) for d in (*dts, dt)):
            return None
        shape = numpy.broadcast_shapes(*(o.shape if self.is_native(o) else () for o in ops))
        converts = dts[0].kind == "f" or any(d.kind == "f" and d != dt for d in dts[1:])
        if not converts and (all(a._c_contiguous for a in arrays) or len(shape) < 2 or
                             not self._result_layout(shape, tuple((a.shape, a.strides) for a in arrays))):
            return None  # (C order, nothing converted: CuPy's where)
        graph = self._eager_graph(("where", kinds, dts, dt), lambda: ir.where_graph(kinds, dts, dt))
        scalars = [d.type(o) for o, k, d in zip(ops, kinds, dts, strict=True) if k == "scalar"]
        return self.run_fused(graph, arrays, scalars, shape)

    def _reduction_errors(self, values: Any, result: Any) -> None:
        """A sum, product or mean reports what NumPy's reduce reports ("overflow encountered in
        reduce", "invalid value ..."): where a result is inf though no value was inf or NaN, and NaN
        though no value was. One small flag kernel over the values that also checks the result
        (a strided loop over it: a ``where=`` that broadcasts can make it the larger), its flags
        read at the next sync point as a fused launch's are (npgpu/_fperr.py)."""
        if values.dtype.kind != "f" or not self.is_native(result) or result.dtype.kind != "f" or not values.size:
            return
        state = _fperr.current()
        if not state.check & (_table.OVER | _table.INVALID):
            return

        def build() -> Any:
            body = ("unsigned char* npg_err = (unsigned char*)npg_errp + npg_err_off;\n"
                    "if (!isfinite(x)) npg_err[0] = 1;\n"
                    "if (isnan(x)) npg_err[1] = 1;\n"
                    "for (ptrdiff_t j = i; j < npg_rn; j += _ind.size()) {\n"
                    "  if (isinf(npg_r[j])) npg_err[2] = 1;\n"
                    "  if (isnan(npg_r[j])) npg_err[3] = 1;\n"
                    "}")
            return self.xp.ElementwiseKernel("uint64 npg_errp, int64 npg_err_off, raw U npg_r, int64 npg_rn", "T x",
                                             body, "npg_reduction_errors", options=self.NVRTC_OPTIONS,
                                             no_return=True)

        kernel = self._kernel(("reduction_errors",), build)
        launch = _fperr.call_launch(None, state, ("reduce",), global_reduce=True)
        buffer, base = _fperr.reserve(self, launch)
        flat = result.reshape(-1)  # (a view of the fresh result; a copy of an odd out=)
        # (x is an "output" only read)
        kernel(numpy.uint64(buffer.data.ptr), numpy.int64(base), flat, numpy.int64(flat.size), values)
        _fperr.launched(self, launch)

    def _complex_product(self, ufunc: numpy.ufunc, inputs: tuple[Any, ...], into: Any = None) -> Any:
        """multiply, square, reciprocal and power of complex arrays with NumPy's own formulas and
        rounding (and float powers with a constant exponent NumPy's loop special-cases), or None.

        CuPy's complex products round differently from NumPy's by an ulp here and there, which
        iterations such as ``z = z**2 + c`` amplify (NPBench mandelbrot1 differed by 1.7e-2); its
        power goes through exp(n log z), its reciprocal through a division (1/inf is nan there)."""
        z = inputs[0]
        if ufunc is numpy.power and self.is_native(z) and z.dtype.kind == "f":
            # NumPy's loop special-cases a constant exponent (npgpu/kernels/ufuncs.py, UfuncFacts.constant_operand)
            special = _CONSTANT_POWER.get(inputs[1]) if isinstance(inputs[1], (int, float, numpy.floating)) else None
            return None if special is None else self._own_ufunc(getattr(numpy, special), (z,), {})
        if not (self.is_native(z) and z.dtype.kind == "c"):
            return None
        if ufunc is numpy.power:
            n = _small_integer_exponent(inputs[1])
            if n is None:
                return None
            result = self._complex_kernel("power", z, z, n)
            if n < 0 and numpy.geterr()["invalid"] != "ignore" and bool((z == 0).any()):
                # NumPy's loop raises invalid for a zero base: the same operation on the host raises it
                # under the errstate in force (warn, raise, call or log)
                numpy.power(numpy.complex128(0), -1)
            return result
        if ufunc is numpy.reciprocal:
            return self._complex_kernel("reciprocal", z, z)
        fused = _numpy_complex_product_fuses(z.dtype)
        if fused is None:
            return None  # a host NumPy whose rounding npgpu does not know: CuPy's own product
        other = z if ufunc is numpy.square else inputs[1]
        if not (self.is_native(other) and other.dtype == z.dtype):
            return None
        # (a product may be written straight into ``into``; a power not: its zero check reads z after)
        return self._complex_kernel("multiply_fma" if fused else "multiply", z, other, into=into)

    random_streams = frozenset({"PCG64", "MT19937"})  # type: ignore[assignment]

    def random_doubles(self, state: dict[str, Any], shape: tuple[int, ...]) -> tuple[Any, dict[str, Any]]:
        return random_kernels.cuda_doubles(self, state, shape)


    # -- floating-point error flags (npgpu/_fperr.py): bytes in device memory, read at sync points --
    def error_buffer(self, nbytes: int) -> Any:
        memory = self.xp.cuda.alloc_pinned_memory(nbytes)
        host = numpy.frombuffer(memory, numpy.uint8, nbytes)
        host[:] = 0
        device = None if self.map_flags else self.xp.zeros(nbytes, self.xp.uint8)
        return _FlagBuffer(memory, host, device)

    def read_errors(self, buffer: Any, nbytes: int) -> numpy.ndarray:
        if buffer.device is None:
            self.xp.cuda.get_current_stream().synchronize()  # (after every kernel queued there)
            return buffer.host[:nbytes]
        return buffer.device[:nbytes].get()  # (on the current stream: after every kernel queued there)

    def read_errors_later(self, buffer: Any, nbytes: int) -> numpy.ndarray:
        """The flags' host memory, read once the download that follows waited for the current
        stream (every download, to_host, does before it returns); copied there on that stream
        first where kernels write a device buffer."""
        host = buffer.host[:nbytes]
        if buffer.device is not None:
            buffer.device[:nbytes].get(out=host, blocking=False)
        return host

    def clear_errors(self, buffer: Any, nbytes: int) -> None:
        if buffer.device is None:  # (read after the host waited for the device: no kernel writes it now)
            buffer.host[:nbytes] = 0
        else:
            buffer.device[:nbytes].fill(0)

    def _error_arguments(self, graph: Any, errors: Any, reduce_check: int = 0) -> tuple[Any, ...]:
        """The kernel arguments (pointer, offset) of a launch whose graph reports errors."""
        if not (graph.error_nodes or reduce_check):
            return ()
        if errors is None:
            errors = _fperr.call_launch(graph if graph.error_nodes else None, _fperr.current(),
                                        ("reduce",) if reduce_check else (), global_reduce=bool(reduce_check))
        buffer, base = _fperr.reserve(self, errors)
        return numpy.uint64(buffer.data.ptr), numpy.int64(base)

    def _eager_errors(self, ufunc: numpy.ufunc, inputs: tuple[Any, ...], result: Any) -> None:
        """CuPy's ufuncs detect no floating-point errors: where NumPy's errstate here asks for this
        ufunc's, one more kernel applies the ufunc table's conditions (npgpu/kernels/ufuncs.py,
        UfuncFacts.errors) to the operands and the result, and its flags are reported as a fused kernel's."""
        state = _fperr.current()
        facts = ufuncs.facts(ufunc.__name__)
        if not state.check or facts is None or not facts.errors:
            return
        results = result if isinstance(result, tuple) else (result,)
        if not all(self.is_native(r) for r in results) or any(r.dtype.kind not in "biuf" for r in results):
            return
        kinds = tuple("array" if self.is_native(x) else "scalar" for x in inputs)
        operand_types = tuple(x.dtype if self.is_native(x) else _weak(x) for x in inputs)
        try:
            loop = tuple(ufunc.resolve_dtypes(operand_types + (None,) * ufunc.nout))
        except (TypeError, ValueError):
            return
        if tuple(r.dtype for r in results) != loop[ufunc.nin:]:
            return  # a result stored in another dtype (out=): not checked (README)
        if not ufuncs.supports_loop(ufunc, loop):
            return  # a loop the kernel table lacks (float16): its errors are not checked (README)
        if any(self.is_native(x) and x.data.ptr == r.data.ptr for x in inputs for r in results):
            return  # written over its input (x += y, fusion off): the operand is gone (README)
        check = state.check & ufuncs.error_categories(ufunc, loop)
        if not check:
            return
        operand_dtypes = tuple(x.dtype if self.is_native(x) else loop[i] for i, x in enumerate(inputs))
        key = ("errors", ufunc, loop, kinds, operand_dtypes, check)

        def build() -> Any:
            graph = ir.ufunc_graph(ufunc, loop, kinds, operand_dtypes, loop[ufunc.nin:], check)
            apply = graph.outputs[0]
            names = {apply: "q0", **{o: f"a{i}" for i, o in enumerate(apply.operands)}}
            if ufunc.nout == 2:
                names[graph.outputs[1]] = "q1"
            lines = ["unsigned char* npg_err = (unsigned char*)npg_errp;"]
            lines += [f"const {ufuncs.ctype(loop[i])} a{i} = ({ufuncs.ctype(loop[i])})x{i};" for i in range(ufunc.nin)]
            lines += [f"const {ufuncs.ctype(dt)} q{k} = r{k};" for k, dt in enumerate(loop[ufunc.nin:])]
            lines += codegen.emit_checks(graph, names, "cuda", codegen.error_flag("cuda")).inline()
            params = ", ".join([f"{dt.name} x{i}" for i, dt in enumerate(operand_dtypes)]
                               + ["uint64 npg_errp", "int64 npg_err_off"])
            # the results are the kernel's outputs, only read: the launch covers their shape, allocates nothing
            results_spec = ", ".join(f"{dt.name} r{k}" for k, dt in enumerate(loop[ufunc.nin:]))
            kernel = self.xp.ElementwiseKernel(params, results_spec, "\n".join(lines), "npg_eager_errors",
                                               preamble=ufuncs.typedefs("cuda"), options=self.NVRTC_OPTIONS,
                                               no_return=True)
            return kernel, graph

        kernel, graph = self._kernel(key, build)
        launch = _fperr.call_launch(graph, state)
        buffer, base = _fperr.reserve(self, launch)
        operands = [x if self.is_native(x) else loop[i].type(x) for i, x in enumerate(inputs)]
        if results[0].size:
            kernel(*operands, numpy.uint64(buffer.data.ptr), numpy.int64(base), *results)
        _fperr.launched(self, launch)


    # -- faults: CuPy's errors at this boundary, translated into npgpu's (npgpu._errors) -------------
    #: CUDA statuses after which the device (or its context) is unusable: no device, devices
    #: unavailable, ECC, illegal address, launch timeout, hardware stack error, illegal
    #: instruction, misaligned address, invalid address space, invalid PC, launch failure,
    #: context destroyed, system not ready, unknown.
    _LOST = frozenset({100, 46, 214, 700, 702, 714, 715, 716, 717, 718, 719, 709, 802, 999})

    def _raise_fault(self, exc: BaseException) -> NoReturn:
        cp = self.xp
        device = f"CUDA device {cp.cuda.Device().id}"
        status = getattr(exc, "status", None)
        if isinstance(exc, cp.cuda.memory.OutOfMemoryError) or status == 2:  # (2: cudaErrorMemoryAllocation)
            try:
                free, total = cp.cuda.Device().mem_info
            except cp.cuda.runtime.CUDARuntimeError:
                free = total = None
            raise _errors.DeviceMemoryError(device, getattr(exc, "_size", None), free=free, total=total,
                                            detail=str(exc)) from exc
        if isinstance(exc, self._compile_errors):
            raise _errors.KernelBuildError("CUDA (NVRTC)", str(exc)) from exc
        if status in self._LOST:
            raise _errors.DeviceLostError(
                f"npgpu: the {device} stopped working ({exc}). Arrays on it are lost; restart the process, or "
                "enable another backend (npgpu.enable('numpy')) to go on without it.") from exc
        raise exc


    def _outside(self, indexed: list[tuple[int, int, Any]]) -> bool:
        """Whether an index array of ``indexed`` has an element outside its axis: one kernel per
        array, all raising one flag, and one read back of it (the array module's way took three
        kernels and a reduction per array, then a stack: mandelbrot2's ``N_[Xi[I], Yi[I]] = v``
        spent 270 us a write there). A cast to a 64-bit signed index catches unsigned ones past
        2**63 as negative: outside too."""
        native = [(size, index) for _, size, index in indexed if self.is_native(index)]
        if len(native) < len(indexed):  # (a list index, checked on the host)
            if super()._outside([entry for entry in indexed if not self.is_native(entry[2])]):
                return True
        if not native:
            return False
        flag = self.xp.zeros(1, numpy.int32)
        for size, index in native:
            self._outside_kernel(index, size, flag)
        return bool(flag.get()[0])

    def run_fused(self, graph: Any, inputs: list[Any], scalars: list[Any], shape: tuple[int, ...],
                  out: Any = None, errors: Any = None) -> Any:
        cp = self.xp
        dense = False  # (out: a new result in an order of NumPy's other than C's, dense in it)
        operands = None  # (the inputs' shapes and strides, where read: CuPy builds each tuple per read)
        if out is None:
            if len(shape) > 1:
                for x in inputs:
                    if not x._c_contiguous:
                        operands = tuple([(x.shape, x.strides) for x in inputs])
                        out = self._result_in_operands_order(shape, graph.out_dtypes[0], operands)
                        dense = out is not None
                        break
            if out is None:
                out = cp.ndarray(shape, graph.out_dtypes[0])  # (cupy.empty, less one Python layer)
        size = out.size
        contiguous = size and out._c_contiguous  # (CuPy's flags property builds an object per call)
        if contiguous:
            for x in inputs:
                if not x._c_contiguous or x.size != size:
                    contiguous = False
                    break
        elif size and (dense or out._f_contiguous):
            # operands laid out as the output is (a.T + a.T into an F-ordered result): one run over
            # memory, each pointer its array's lowest address (the strides are positive and equal)
            contiguous = _laid_out_as(out, inputs)
        if contiguous:
            key = ir.canonical(graph)  # (equal graphs made apart share one key object: no deep compare)
            built = self._kernels.get(key)
            if built is None:
                built = self._kernel(key, lambda: self._contiguous_kernel(graph))
            kernel, per_block = built
            # (scalars are NumPy scalars of the graph's scalar dtypes: RawKernel passes them as such)
            kernel(((size + per_block - 1) // per_block,), (self.BLOCK,),
                   (*inputs, *scalars, out, numpy.int64(size), *self._error_arguments(graph, errors)))
            return out

        if not size:
            return out
        # Views, broadcasts and other strides: the code generator's strided kernel (as OpenCL's),
        # one thread per element of the broadcast shape, operands addressed by byte strides.
        full = shape if shape else (1,)
        ndim = len(full)
        kernel = self._kernel(("strided", ir.canonical(graph), ndim), lambda: self._strided_kernel(graph, ndim))
        arrays = [*inputs, out]
        # The offsets, n, extents and strides as one struct (codegen's Layout.packed): CuPy converts
        # each argument of a launch, and a stencil statement repeats its geometry every iteration.
        # An operand broadcast to the shape has stride 0 along the dimensions it lacks or has as 1
        # (computed here, not by CuPy's broadcast_to and reshape: two views a launch).
        key = (full, *(operands or [(x.shape, x.strides) for x in inputs]), (out.shape, out.strides))
        geometry = self._geometries.get(key)
        if geometry is None:
            if len(self._geometries) >= _GEOMETRIES_MAX:
                self._geometries.clear()
            per_array: list[list[int]] = []
            for x in arrays:
                lead = ndim - x.ndim
                per_array.append([0] * lead + [0 if n == 1 and d != 1 else st
                                               for n, st, d in zip(x.shape, x.strides, full[lead:], strict=True)])
            # The threads walk the output's memory order (its axes by decreasing stride): consecutive
            # threads write consecutive addresses of an F-ordered result, as of a C-ordered one
            axes = sorted(range(ndim), key=lambda d: -abs(per_array[-1][d])) if ndim > 1 else [0]
            strides = [st[d] for st in per_array for d in axes]
            # (each pointer is its array's first element: offsets 0)
            geometry = self._geometries[key] = codegen.pack_geometry(
                [0] * len(arrays) + [size, *(full[d] for d in axes)] + strides)
        block = 256
        kernel(((size + block - 1) // block,), (block,),
               (*arrays, *scalars, geometry, *self._error_arguments(graph, errors)))
        return out

    def _result_in_operands_order(self, shape: tuple[int, ...], dtype: numpy.dtype,
                                  operands: tuple[tuple[Any, Any], ...]) -> Any:
        """A new result of ``shape`` laid out in the memory order NumPy gives it from these operands
        (kernels/order.result_axes: ``a.T * 2`` is F-ordered, as ``a.T`` is) from the operands'
        (shape, strides); None where that is C order."""
        layout = self._result_layout(shape, operands)
        return self.xp.ndarray(layout[0], dtype).transpose(layout[1]) if layout else None

    def _result_layout(self, shape: tuple[int, ...], operands: tuple[tuple[Any, Any], ...]) -> tuple[Any, ...]:
        """() where NumPy lays an elementwise result of these operands out in C order, else the
        shape of its memory and the transpose that views it as ``shape`` (kept per layout)."""
        key = (shape, *operands)
        layout = self._layouts.get(key)
        if layout is None:
            if len(self._layouts) >= _GEOMETRIES_MAX:
                self._layouts.clear()
            axes = _order.result_axes(shape, list(operands))
            layout = self._layouts[key] = (() if axes is None else
                                           (tuple(shape[d] for d in axes), tuple(numpy.argsort(axes).tolist())))
        return layout

    def reduce_fused(self, graph: Any, inputs: list[Any], scalars: list[Any], shape: tuple[int, ...], op: str,
                     axes: tuple[int, ...], errors: Any = None, reduce_check: int = 0) -> Any:
        acc_dtype = graph.out_dtypes[0]
        combine = _combine(op, acc_dtype) if op in self.FUSED_REDUCTIONS and inputs else None
        if combine is None:
            return None
        reduce_expr, combine_helpers, identity = combine
        cp = self.xp
        size = math.prod(shape)
        if len(axes) == len(shape) and _SPLIT_REDUCE <= size * acc_dtype.itemsize <= _SPLIT_REDUCE_MAX:
            # CuPy's ReductionKernel gives each output one thread block: a whole-array reduction ran
            # on one of the H200's 132 SMs (800x800 (a * b).sum(): 290 us against CuPy's own 29,
            # whose sum goes through CUB). The map as an elementwise kernel into a temporary, then
            # CuPy's own reduction, its overflow and invalid reports as an eager sum's.
            mapped = self.run_fused(graph, inputs, scalars, shape, None, errors)
            result = (cp.sum if op == "add" else cp.prod)(mapped, dtype=acc_dtype)
            if reduce_check:
                self._reduction_errors(mapped, result)
            return result
        small = self._small_map_reduce(graph, inputs, scalars, shape, op, axes, errors, reduce_check)
        if small is not None:
            return small

        def build() -> Any:
            preamble, call, spec = self._fused_function(graph, reduce_check)
            preamble = "\n".join([preamble, *(h for h in combine_helpers.values() if h not in preamble)])
            acc = acc_dtype.name
            post = "y = npg_reduced(a, (unsigned char*)npg_errp, npg_err_off)" if reduce_check else "y = a"
            return cp.ReductionKernel(spec, f"{acc} y", f"npg_fused({call})", reduce_expr, post, identity,
                                      "npg_fused_reduce", preamble=preamble, options=self.NVRTC_OPTIONS)

        kernel = self._kernel(("reduce", ir.canonical(graph), op, reduce_check), build)
        operands = [cp.broadcast_to(x, shape) for x in inputs]
        if reduce_check and errors is not None:
            errors.global_reduce = True  # (CuPy's reduction keeps no per-thread state: see _fused_function)
        return kernel(*operands, *scalars, *self._error_arguments(graph, errors, reduce_check), axis=axes)

    def _small_map_reduce(self, graph: Any, inputs: list[Any], scalars: list[Any], shape: tuple[int, ...], op: str,
                          axes: tuple[int, ...], errors: Any, reduce_check: int) -> Any:
        """A small fused reduction (resnet's per-pixel ``sum(x[:, i:i + k, j:j + k, :, None] * w,
        axis=(1, 2, 3))``: 256 sums of 288 products) as the code generator's map-reduce kernel
        (codegen.map_reduce, the OpenCL backend's), one thread per output, launched as a RawKernel.
        Float sums and products fold in NumPy's order (kernels/order.py) and give its bits, where
        CuPy's ReductionKernel adds in its own order. On the H100 (thirty-first session) resnet's
        pixel statement took the same time either way, 140-152 us against 139-190. A float sum
        NumPy adds pairwise (its innermost axis reduced) is left to CuPy's reduction, as are
        reductions of more than SMALL_REDUCE_LENGTH values an output or SMALL_REDUCE_VALUES in all
        (one thread's fold would be long), and complex ones. None where this kernel does not run.
        What depends only on the layouts (the order, the kernel, its integer arguments) is kept by
        them."""
        key = (ir.canonical(graph), op, reduce_check, shape, axes, *((x.shape, x.strides) for x in inputs))
        plan = self._small_reductions.get(key)
        if plan is None:
            if len(self._small_reductions) >= _GEOMETRIES_MAX:
                self._small_reductions.clear()
            plan = self._small_reductions[key] = self._plan_small_reduce(graph, inputs, shape, op, axes, reduce_check)
        if plan is False:
            return None
        kernel, out_shape, blocks, it, geometry = plan
        acc_dtype = graph.out_dtypes[0]
        out = self.xp.ndarray(out_shape, acc_dtype)
        args = codegen.reduce_arguments(
            [(x, 0) for x in inputs],  # (each pointer is its view's first element)
            [numpy.uint8(bool(v)) if dt.kind == "b" else dt.type(v) for v, dt in zip(scalars, graph.scalars,
                                                                                    strict=True)],
            acc_dtype.type(_table.reduction_identity(op, acc_dtype)), geometry, it)
        args += [out, it(0)]
        if graph.error_nodes or reduce_check:
            if errors is None:
                errors = _fperr.call_launch(graph if graph.error_nodes else None, _fperr.current(),
                                            ("reduce",) if reduce_check else ())
            buffer, base = _fperr.reserve(self, errors)
            args += [numpy.uint64(buffer.data.ptr), it(base)]
        kernel((blocks,), (_SMALL_REDUCE_BLOCK,), tuple(args))
        return out

    def _plan_small_reduce(self, graph: Any, inputs: list[Any], shape: tuple[int, ...], op: str,
                           axes: tuple[int, ...], reduce_check: int) -> Any:
        """(kernel, result shape, blocks, index type, integer arguments) of _small_map_reduce for
        inputs of these layouts, or False where it does not run."""
        acc_dtype = graph.out_dtypes[0]
        kept = [d for d in range(len(shape)) if d not in axes]
        out_shape = tuple(shape[d] for d in kept)
        m = math.prod(out_shape)
        k = math.prod([shape[d] for d in axes])
        if (not m or not k or k > SMALL_REDUCE_LENGTH or m * k > SMALL_REDUCE_VALUES
                or any(dt.kind not in "biuf" for dt in (*graph.dtypes(), acc_dtype))):
            return False
        ordered = acc_dtype.kind == "f"
        if ordered:
            order = _order.fused_sum_order(graph, inputs, shape, axes)
            if op == "add" and order.chunk > 1:
                return False
            axes = order.axes + tuple(d for d in axes if shape[d] == 1)
        ndim = len(shape)
        strides = []
        span = 0
        for x in inputs:  # (byte strides along ``shape``: 0 where an input is broadcast)
            lead = ndim - x.ndim
            st = [0] * lead + [0 if n == 1 and d != 1 else s for n, s, d in zip(x.shape, x.strides, shape[lead:],
                                                                                strict=True)]
            strides.append(st)
            span = max(span, sum((n - 1) * abs(s) for n, s in zip(shape, st, strict=True)) + x.itemsize)
        big = max(m * k, span) >= 2**31 - 1
        layout = codegen.ReduceLayout(len(out_shape), len(axes), index64=big, ordered=ordered)
        kernel = self._kernel(("map_reduce", ir.canonical(graph), op, layout, reduce_check),
                              lambda: self._map_reduce_kernel(graph, op, layout, reduce_check))
        it = numpy.int64 if big else numpy.int32
        geometry = codegen.reduce_geometry([m, k, 1], out_shape, tuple(shape[d] for d in axes),
                                           [[st[d] for d in kept] for st in strides],
                                           [[st[d] for d in axes] for st in strides], it)
        return kernel, out_shape, (m + _SMALL_REDUCE_BLOCK - 1) // _SMALL_REDUCE_BLOCK, it, geometry


class _FlagBuffer:
    """Flag bytes (npgpu/_fperr.py) in page-locked host memory, ``host``. With unified addressing
    (``map_flags``: every 64-bit CUDA process on Linux) kernels write them there directly, at the
    pointer cudaHostAlloc returned: reading them after the host waited for the device copies
    nothing, and clearing them launches nothing (a sum read as a float paid a second download
    and the sync that ends each loop step a copy). Else kernels write ``device``, a device
    buffer, copied into ``host`` on the stream. ``data.ptr``: the address kernels are given."""

    __slots__ = ("memory", "host", "device")

    def __init__(self, memory: Any, host: numpy.ndarray, device: Any) -> None:
        self.memory, self.host, self.device = memory, host, device

    @property
    def data(self) -> Any:
        return self.memory if self.device is None else self.device.data


@functools.cache
def _combine(op: str, acc_dtype: numpy.dtype) -> tuple[str, dict[str, str], str] | None:
    """(combine expression, its helpers, identity literal) of a fused reduction ``op`` accumulating
    in ``acc_dtype``, from the one table (-0.0 for a float sum, which keeps negative zeros' sign);
    None where the table has no loop for it. Rendered once per (op, dtype): reduce_fused runs at
    every call, before its kernel-cache lookup, and rendering is pure CPU on a loop's path."""
    ufunc = codegen.REDUCE_UFUNCS[op]
    if not _table.supports_loop(ufunc, (acc_dtype,) * 3):
        return None
    expr, helpers = _table.render(ufunc, (acc_dtype,) * 3, ["a", "b"], 0, "cuda")
    return expr, helpers, _table.identity_literal(op, acc_dtype)


#: functions whose results report NumPy's reduce errors (CupyBackend._reduction_errors)
_CHECKED_REDUCTIONS = frozenset({numpy.sum, numpy.prod, numpy.mean})
_MEANS = (numpy.mean, numpy.nanmean)
#: bytes of a whole-array fused reduction's map from which it runs as an elementwise kernel and
#: CuPy's own reduction (CupyBackend.reduce_fused), up to the temporary's largest size
_SPLIT_REDUCE, _SPLIT_REDUCE_MAX = 1 << 16, 1 << 30
#: The largest fused reduction npgpu's own map-reduce kernel runs on CuPy (CupyBackend._small_map_reduce):
#: values an output (one thread folds them) and values in all; threads a block
SMALL_REDUCE_LENGTH = 1024
SMALL_REDUCE_VALUES = 1 << 20
_SMALL_REDUCE_BLOCK = 128
#: Packed geometries a CuPy backend keeps (a loop's statements repeat a few; cleared when full)
_GEOMETRIES_MAX = 1024


def _laid_out_as(out: Any, inputs: list[Any]) -> bool:
    """Whether every operand has ``out``'s shape and strides (in elements): one run over memory."""
    for x in inputs:
        if x.shape != out.shape or x.size != out.size:
            return False
        for a, b in zip(x.strides, out.strides, strict=True):
            if a * out.itemsize != b * x.itemsize:
                return False
    return True
#: dtype characters naming the same type as another's that NumPy prefers: longlong/ulonglong where
#: long is 8 bytes (Linux), long/ulong where it is 4 and longlong 8 (Windows)
_ALIASED_CHARS = frozenset(c for c in "qQlLiI" if numpy.dtype(numpy.dtype(c).str).char != c)


def _at_boundary(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` of CupyBackend with CuPy's errors raised as npgpu's (memory, compiler, device lost)."""

    @functools.wraps(method)
    def translated(self: CupyBackend, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except self._faults as exc:  # (only CuPy's memory, compiler and CUDA errors)
            self._raise_fault(exc)

    return translated


for _name in ("from_host", "to_host", "sync", "run_fused", "reduce_fused", "call_function", "call_ufunc",
              "random_call", "mask_positions", "take_positions", "put_positions"):
    setattr(CupyBackend, _name, _at_boundary(getattr(CupyBackend, _name)))

def _device_from_environment() -> int | None:
    """``NPGPU_CUDA_DEVICE``: the CUDA device index a process uses where ``enable(device=)`` names
    none (a Dask worker's device; under ``CUDA_VISIBLE_DEVICES`` indices count the visible ones)."""
    text = os.environ.get("NPGPU_CUDA_DEVICE", "").strip()
    if not text:
        return None
    if not text.isdigit():
        raise ValueError(f"NPGPU_CUDA_DEVICE must be a CUDA device index (0, 1, ...), not {text!r}")
    return int(text)


#: CuPy backends made so far: at exit, each device finishes its queued work before the interpreter
#: frees the memory (host and pinned) that it may still read or write.
_LIVE_CUPY: weakref.WeakSet[CupyBackend] = weakref.WeakSet()


def _finish_devices() -> None:
    for backend in list(_LIVE_CUPY):
        try:
            backend.xp.cuda.runtime.deviceSynchronize()
        except backend._faults as exc:  # (the process is ending: say so, don't raise)
            sys.stderr.write(f"npgpu: the CUDA device failed while finishing its work at exit: {exc}\n")
