"""CUDA kernel sources and their compilation: the fused kernels of the IR, NumPy's complex
formulas, NVRTC without flushing subnormals, and the binaries' disk cache.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable
from typing import Any

import numpy

from ... import _fperr
from ...kernels import codegen, ufuncs

_COMPLEX_PRODUCTS = frozenset({numpy.multiply, numpy.square, numpy.power, numpy.reciprocal})
_CONSTANT_POWER = {0.5: "sqrt", -1: "reciprocal", 2: "square", 1: "positive"}
# NumPy's complex multiply and square loops round with FMA or not as the host's NumPy does
# (_COMPLEX_BODIES "multiply_fma" and "multiply"): the probe is the kernel table's.
_numpy_complex_product_fuses = ufuncs.numpy_complex_product_fuses


def _small_integer_exponent(x: Any) -> int | None:
    """The integer n of a scalar exponent for which NumPy's complex power multiplies (|n| < 100)."""
    if isinstance(x, (bool, numpy.bool_)):
        return int(x)  # (cast to the complex loop: True is 1+0j)
    if not isinstance(x, (int, float, complex, numpy.number)):
        return None
    value = complex(x)
    if value.imag != 0 or value.real != int(value.real) or not -100 < value.real < 100:
        return None
    return int(value.real)


# NumPy's complex formulas on (real, imaginary) pairs of type R, each operation rounded as NumPy
# rounds it (compiled with --fmad=false). Products: (ar*br - ai*bi, ar*bi + ai*br), or with FMA as
# the host's SIMD loops round them (_numpy_complex_product_fuses). Division: Smith's algorithm, as
# NumPy's. Reciprocal: NumPy's loop (1/inf is 0 there).
_COMPLEX_HELPERS = """
__device__ __forceinline__ void npg_cmul(R ar, R ai, R br, R bi, R& cr, R& ci) {
    cr = ar * br - ai * bi;
    ci = ar * bi + ai * br;
}
__device__ __forceinline__ void npg_cmul_fma(R ar, R ai, R br, R bi, R& cr, R& ci) {
    cr = fma(ar, br, -(ai * bi));
    ci = fma(ar, bi, ai * br);
}
__device__ void npg_cdiv(R ar, R ai, R br, R bi, R& cr, R& ci) {
    const R abs_br = fabs(br), abs_bi = fabs(bi);  // (fabs: -0.0 has no sign after it)
    if (abs_br >= abs_bi) {
        if (abs_br == 0 && abs_bi == 0) {
            cr = ar / abs_br;
            ci = ai / abs_bi;
            return;
        }
        const R rat = bi / br;
        const R scl = (R)1 / (br + bi * rat);
        cr = (ar + ai * rat) * scl;
        ci = (ai - ar * rat) * scl;
        return;
    }
    const R rat = br / bi;
    const R scl = (R)1 / (bi + br * rat);
    cr = (ar * rat + ai) * scl;
    ci = (ai * rat - ar) * scl;
}
"""
# NumPy's complex power for an integer exponent e, |e| < 100 (npy_cpow in numpy/_core/src/npymath):
# e = 0 gives 1; a zero base 0 for e > 0, nan+nanj (invalid) otherwise; e = 1, 2, 3 unrolled;
# other exponents by binary exponentiation (the accumulator times the running square), and for
# e < 0 one divided by that product.
_COMPLEX_BODIES = {
    "multiply": "npg_cmul(xr, xi, yr, yi, rr, ri);",
    "multiply_fma": "npg_cmul_fma(xr, xi, yr, yi, rr, ri);",
    "reciprocal": """if (fabs(xi) <= fabs(xr)) {
    const R r = xi / xr, d = xr + xi * r;
    rr = (R)1 / d;
    ri = -r / d;
} else {
    const R r = xr / xi, d = xr * r + xi;
    rr = r / d;
    ri = (R)-1 / d;
}""",
    "power": """if (e == 0) { rr = 1; ri = 0; }
else if (xr == 0 && xi == 0) {
    if (e > 0) { rr = 0; ri = 0; } else { rr = (R)nan(""); ri = (R)nan(""); }
}
else if (e == 1) { rr = xr; ri = xi; }
else if (e == 2) { npg_cmul(xr, xi, xr, xi, rr, ri); }
else if (e == 3) { R sr, si; npg_cmul(xr, xi, xr, xi, sr, si); npg_cmul(xr, xi, sr, si, rr, ri); }
else {
    const long long m = e < 0 ? -e : e;
    R ar = 1, ai = 0, pr = xr, pi = xi, tr, ti;
    long long mask = 1;
    while (true) {
        if (m & mask) { npg_cmul(ar, ai, pr, pi, tr, ti); ar = tr; ai = ti; }
        mask <<= 1;
        if (m < mask || mask <= 0) break;
        npg_cmul(pr, pi, pr, pi, tr, ti); pr = tr; pi = ti;
    }
    if (e < 0) { npg_cdiv((R)1, (R)0, ar, ai, rr, ri); } else { rr = ar; ri = ai; }
}""",
}


def _binary_path(cp: Any, source: str, options: tuple[str, ...]) -> str:
    major, minor = cp.cuda.nvrtc.getVersion()
    arch = cp.cuda.Device().compute_capability
    key = "\0".join([source, *options, arch, f"{major}.{minor}", cp.__version__]).encode()
    root = os.environ.get("NPGPU_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "npgpu")
    return os.path.join(root, "cuda", hashlib.sha256(key).hexdigest() + ".bin")


def _cached_binary(cp: Any, source: str, options: tuple[str, ...]) -> bytes | None:
    try:
        with open(_binary_path(cp, source, options), "rb") as f:
            return f.read() or None
    except OSError:
        return None


def _store_binary(cp: Any, source: str, options: tuple[str, ...], binary: bytes) -> None:
    """Write a compiled kernel to the disk cache (atomically; a cache that can't be written is skipped)."""
    path = _binary_path(cp, source, options)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        temporary = f"{path}.{os.getpid()}.{threading.get_ident()}"
        with open(temporary, "wb") as f:
            f.write(bytes(binary))
        os.replace(temporary, path)
    except OSError:
        pass


class Kernels:
    """npgpu's own CUDA kernels of a CuPy backend: the fused kernels of the IR (contiguous, strided,
    reductions), NumPy's complex formulas, compiled by NVRTC without flushing subnormals and cached."""

    #: Threads per block and elements per thread of the contiguous fused kernel. One element per
    #: thread (CuPy's ElementwiseKernel) left float32 E8 at 74% of copy bandwidth on the H200:
    #: too few bytes in flight. Each thread now loads UNROLL_BYTES of every input before computing.
    #: tools/probe_kernels.py on the H200 (2026-11-30): 128 threads x 16 bytes were among the
    #: fastest for E8 at 1e8 (float64 0.727 ms against 0.733 with 256 threads; float32 0.369);
    #: 16-byte vector loads gained nothing and streaming cache hints (__ldcs/__stcs) cost 10-25%.
    BLOCK = 128
    UNROLL_BYTES = 16
    #: No contraction of a*b+c into one FMA: NumPy rounds each operation (OpenCL: FP_CONTRACT OFF).
    NVRTC_OPTIONS = ("--fmad=false",)

    # -- fusion: generated CUDA from the shared IR, launched by CuPy's kernel machinery ----------
    #: the reductions a fused expression feeds straight into CuPy's ReductionKernel (their combine
    #: and identity come from the ufunc table; the others reduce the materialized expression)
    FUSED_REDUCTIONS = frozenset({"add", "multiply"})

    def _fused_function(self, graph: Any, reduce_check: int = 0) -> tuple[str, str, str]:
        """(preamble defining npg_fused, its argument list, its C++ parameter spec for CuPy).

        A graph that reports floating-point errors (or a reduction with ``reduce_check``) takes
        the flag buffer last: ``npg_fused(..., npg_err, npg_err_off)``, given to CuPy's kernels as
        ``uint64 npg_errp, int64 npg_err_off``. A reduction's slot (after the graph's) holds
        whole-launch flags: a reduced value was not finite / NaN (bytes 0, 1, set here), a result
        was inf / NaN (bytes 2, 3: npg_reduced in the post-map step); see _fperr.Launch."""
        ins = [f"in{i}" for i in range(len(graph.inputs))]
        scs = [f"s{j}" for j in range(len(graph.scalars))]
        stmts, results, helpers = codegen.emit_body(graph, "cuda", dict(enumerate(ins)), scs, names := {})
        stmts += codegen.emit_checks(graph, names, "cuda", codegen.error_flag("cuda")).inline()
        c_params = [f"{ufuncs.ctype(dt)} {n}" for n, dt in zip(ins + scs, graph.inputs + graph.scalars)]
        spec = ", ".join(f"{numpy.dtype(dt).name} {n}" for n, dt in zip(ins + scs, graph.inputs + graph.scalars))
        call = ins + scs
        extra: list[str] = []
        if graph.error_nodes or reduce_check:
            c_params += ["unsigned char* npg_err", "long long npg_err_off"]
            spec += ", uint64 npg_errp, int64 npg_err_off"
            call += ["(unsigned char*)npg_errp", "npg_err_off"]
        if reduce_check:
            slot = _fperr.SLOT_BYTES * len(graph.error_nodes)
            flag, value = codegen.error_flag("cuda"), results[0]
            stmts.append(f"if (!isfinite({value})) {{ {codegen.set_flag(flag, slot)} "
                         f"if (isnan({value})) {codegen.set_flag(flag, slot + 1)} }}")
            acc = ufuncs.ctype(graph.out_dtypes[0])
            extra = [f"__device__ {acc} npg_reduced({acc} a, unsigned char* npg_err, long long npg_err_off) {{",
                     f"  if (isinf(a)) {codegen.set_flag(flag, slot + 2)}",
                     f"  if (isnan(a)) {codegen.set_flag(flag, slot + 3)}",
                     "  return a;", "}"]
        out_type = ufuncs.ctype(graph.out_dtypes[0])
        preamble = "\n".join([ufuncs.typedefs("cuda"), *helpers.values(),
                              f"__device__ {out_type} npg_fused({', '.join(c_params)}) {{",
                              *("  " + st for st in stmts), f"  return {results[0]};", "}", *extra])
        return preamble, ", ".join(call), spec

    def _complex_kernel(self, op: str, x: Any, y: Any, n: int = 0, into: Any = None) -> Any:
        """One of _COMPLEX_BODIES over x (and y, broadcast together), compiled without flushing
        subnormals (see _compile): z**99 of complex64 passes through them. Written into ``into``
        where that is a contiguous array of the result's shape and dtype that each operand either
        is, element for element, or does not overlap (each element is read before it is written:
        mandelbrot2's ``multiply(Z, Z, Z)``); else into a new array, returned."""
        cp = self.xp
        shape = numpy.broadcast_shapes(x.shape, y.shape)
        real = "float" if x.dtype == numpy.complex64 else "double"

        def build() -> Any:
            source = "\n".join([_COMPLEX_HELPERS.replace("R", real),
                                 f'extern "C" __global__ void npg_complex_{op}(const {real}* x, const {real}* y, '
                                 f"{real}* out, long long n, long long e) {{",
                                 "  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;",
                                 "  if (i >= n) return;",
                                 f"  const {real} xr = x[2 * i], xi = x[2 * i + 1], yr = y[2 * i], yi = y[2 * i + 1];",
                                 f"  {real} rr, ri;",
                                 *("  " + line for line in _COMPLEX_BODIES[op].replace("R", real).splitlines()),
                                 "  out[2 * i] = rr; out[2 * i + 1] = ri;", "}"])
            return self._compile(source, f"npg_complex_{op}")

        kernel = self._kernel(("complex", op, real), build)
        xs = x if x.shape == shape and x.flags.c_contiguous else cp.ascontiguousarray(cp.broadcast_to(x, shape))
        ys = xs if y is x else (y if y.shape == shape and y.flags.c_contiguous
                                else cp.ascontiguousarray(cp.broadcast_to(y, shape)))
        if into is not None and _writable_into(into, shape, x.dtype, (xs, ys)):
            out = into
        else:
            out = cp.empty(shape, x.dtype)
        size = out.size
        if size:
            kernel(((size + 255) // 256,), (256,), (xs, ys, out, numpy.int64(size), numpy.int64(n)))
        return out

    def _outside_flag(self, index: Any, size: int) -> Any:
        """One reduction kernel for whether an index array has an element outside an axis of
        ``size`` (CuPy's comparisons, an or and an any were four launches: mandelbrot2's two
        ``N_[Xi[I], Yi[I]] = ...`` writes a step checked two index arrays each)."""
        signed = index.dtype.kind == "i"

        def build() -> Any:
            test = "(x >= size) || (x < -size)" if signed else "x >= size"
            return self.xp.ReductionKernel("T x, int64 size", "bool y", test, "a || b", "y = a", "false",
                                           "npg_index_outside")

        return self._kernel(("index_outside", signed), build)(index, numpy.int64(size))

    # -- NumPy's PCG64 and MT19937 doubles computed on the GPU (backends/random_kernels.py) ------

    def _kernel(self, key: Any, build: Callable[[], Any]) -> Any:
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = build()  # (outside the lock: two threads may both build it; the first stored is kept)
            with self._lock:
                while len(self._kernels) >= self.kernel_cache_size:
                    self._kernels.pop(next(iter(self._kernels)))  # oldest first
                kernel = self._kernels.setdefault(key, kernel)
        return kernel

    def _strided_kernel(self, graph: Any, ndim: int) -> Any:
        source = codegen.elementwise(graph, codegen.Layout(ndim, False, packed=True), "cuda", name="npg_fused_strided")
        return self._compile(source.source, source.name)

    def _map_reduce_kernel(self, graph: Any, op: str, layout: Any, reduce_check: int) -> Any:
        """The code generator's map-reduce kernel (the OpenCL backend's) in CUDA (_small_map_reduce)."""
        source = codegen.map_reduce(graph, op, graph.out_dtypes[0], layout, "cuda", reduce_check=reduce_check)
        return self._compile(source.source, source.name)

    def _contiguous_kernel(self, graph: Any) -> tuple[Any, int]:
        """A RawKernel over contiguous operands of one size: thread t of block b handles elements
        b*BLOCK*unroll + t + k*BLOCK (k < unroll), all loads first, so accesses stay coalesced.

        ``out`` may be one of the inputs (``a += expr`` runs into ``a``; partly overlapping views
        were computed first by the dispatcher). Each element is then read and written by the
        same thread, read first, so the ``__restrict__`` read-only loads never see a value that
        this kernel has written."""
        itemsize = max(numpy.dtype(dt).itemsize for dt in (*graph.inputs, graph.out_dtypes[0]))
        unroll = max(1, self.UNROLL_BYTES // itemsize)
        preamble, _, _ = self._fused_function(graph)
        ins = [f"in{i}" for i in range(len(graph.inputs))]
        scs = [f"s{j}" for j in range(len(graph.scalars))]
        params = ([f"const {ufuncs.ctype(dt)}* __restrict__ {n}" for n, dt in zip(ins, graph.inputs)]
                  + [f"{ufuncs.ctype(dt)} {n}" for n, dt in zip(scs, graph.scalars)]
                  + [f"{ufuncs.ctype(graph.out_dtypes[0])}* __restrict__ out0", "long long n"])
        errors = ["npg_err", "npg_err_off"] if graph.error_nodes else []
        if errors:  # (the flag buffer: see _fused_function)
            params += ["unsigned char* npg_err", "long long npg_err_off"]
        loads = [f"{ufuncs.ctype(dt)} v{n}[{unroll}];" for n, dt in zip(ins, graph.inputs)]
        loaded = ", ".join([f"v{n}[k]" for n in ins] + scs + errors)
        direct = ", ".join([f"{n}[i]" for n in ins] + scs + errors)
        source = "\n".join([
            preamble,
            f'extern "C" __global__ void npg_fused_contiguous({", ".join(params)}) {{',
            f"  const long long step = {self.BLOCK};",
            f"  const long long base = (long long)blockIdx.x * (step * {unroll}) + threadIdx.x;",
            f"  if (base + step * {unroll - 1} < n) {{",
            *("    " + line for line in loads),
            f"    #pragma unroll\n    for (int k = 0; k < {unroll}; k++) {{",
            *(f"      v{n}[k] = {n}[base + k * step];" for n in ins),
            "    }",
            f"    #pragma unroll\n    for (int k = 0; k < {unroll}; k++) out0[base + k * step] = npg_fused({loaded});",
            "  } else {",
            f"    for (int k = 0; k < {unroll}; k++) {{",
            "      const long long i = base + k * step;",
            f"      if (i < n) out0[i] = npg_fused({direct});",
            "    }",
            "  }",
            "}",
        ])
        return self._compile(source, "npg_fused_contiguous"), self.BLOCK * unroll

    def _compile(self, source: str, name: str) -> Any:
        """Kernel ``name`` of CUDA ``source``, compiled by NVRTC without flushing float32 subnormals.

        CuPy compiles every kernel with ``-ftz=true`` (cupy/cuda/compiler.py; cupy#9576), where NumPy
        keeps subnormals (float32 1e-40 * 1 is 1e-40, log(1e-40) finite). npgpu's generated kernels
        are compiled here with ``-ftz=false`` instead and cached on disk (``NPGPU_CACHE_DIR``, default
        ~/.cache/npgpu), keyed by the source, the options, the GPU's architecture and the NVRTC and
        CuPy versions. Where CuPy lacks the compiler entry point, CuPy's RawKernel is used (flushing)."""
        cp = self.xp
        try:
            from cupy.cuda import compiler, function
        except ImportError:  # pragma: no cover  (a CuPy without its compiler module)
            return cp.RawKernel(source, name, options=self.NVRTC_OPTIONS)
        compile_ = getattr(compiler, "compile_using_nvrtc", None)
        if compile_ is None:
            return cp.RawKernel(source, name, options=self.NVRTC_OPTIONS)
        options = (*self.NVRTC_OPTIONS, "-ftz=false")
        binary = _cached_binary(cp, source, options)
        if binary is None:
            compiled = compile_(source, options, cache_in_memory=True)
            binary = compiled[0] if isinstance(compiled, tuple) else compiled
            _store_binary(cp, source, options, binary)
        module = function.Module()
        module.load(bytes(binary))
        return module.get_function(name)  # (the function keeps its module loaded)


def _writable_into(into: Any, shape: tuple[int, ...], dtype: Any, operands: tuple[Any, ...]) -> bool:
    """Whether an elementwise kernel over contiguous ``operands`` may write its result straight
    into ``into``: contiguous, of the result's shape and dtype, and each operand either the same
    elements (same start, same shape) or memory that does not overlap it."""
    if into.shape != shape or into.dtype != dtype or not into.flags.c_contiguous:
        return False
    start = into.data.ptr
    end = start + into.nbytes
    for a in operands:
        a_start = a.data.ptr
        if a_start == start and a.shape == shape:
            continue
        if a_start < end and start < a_start + a.nbytes:
            return False
    return True

