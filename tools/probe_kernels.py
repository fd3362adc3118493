# ruff: noqa: B023  (each lambda is timed before its loop variables change)
"""Variants of the contiguous fused kernel, timed on E8 at 1e8 against a copy and cupy.fuse.

Run on a CUDA machine: ``python tools/probe_kernels.py``. The body is npgpu's own (the backend's
``npg_fused`` device function for E8); what varies is how threads walk the arrays: threads per
block, elements per thread, 16-byte vector loads, and streaming cache hints (``__ldcs`` /
``__stcs``: the data is read once and written once). GPU times are CUDA-event medians.
"""

from __future__ import annotations

import itertools

import cupy
import numpy
from cupyx.profiler import benchmark

import npgpu
from npgpu.kernels import ufuncs
from npgpu.lazy import materialize as lazy


def e8_of(xp, a, b, c):
    return ((a * b + c) * a - b) / (c + 1.5) + xp.sqrt(xp.abs(a)) * 0.5 - xp.exp(-b)


def source(graph, preamble: str, block: int, per_thread: int, vector: bool, hints: bool) -> str:
    """A kernel over ``per_thread`` elements (or 16-byte vectors) per thread."""
    ctype = ufuncs.ctype(graph.inputs[0])
    ins = [f"in{i}" for i in range(len(graph.inputs))]
    scs = [f"s{j}" for j in range(len(graph.scalars))]
    params = ([f"const {ctype}* __restrict__ {n}" for n in ins]
              + [f"{ufuncs.ctype(dt)} {n}" for n, dt in zip(scs, graph.scalars)]
              + [f"{ctype}* __restrict__ out0", "long long n"])
    width = 16 // numpy.dtype(graph.inputs[0]).itemsize if vector else 1
    vtype = {("float64", 2): "double2", ("float32", 4): "float4"}.get((numpy.dtype(graph.inputs[0]).name, width), ctype)
    lanes = "xyzw"[:width] if width > 1 else [""]

    def load(ptr: str, index: str) -> str:
        p = f"reinterpret_cast<const {vtype}*>({ptr})" if width > 1 else ptr
        return f"__ldcs({p} + {index})" if hints else f"{p}[{index}]"

    lines = [preamble, f'extern "C" __global__ void k({", ".join(params)}) {{',
             f"  const long long nv = n / {width};",
             f"  const long long base = (long long)blockIdx.x * ({block} * {per_thread}) + threadIdx.x;",
             f"  {vtype} " + ", ".join(f"v{n}[{per_thread}]" for n in ins) + ";",
             f"  if (base + {block} * {per_thread - 1} < nv) {{",
             f"    #pragma unroll\n    for (int k = 0; k < {per_thread}; k++) {{",
             *(f"      v{n}[k] = {load(n, f'base + k * {block}')};" for n in ins),
             "    }",
             f"    #pragma unroll\n    for (int k = 0; k < {per_thread}; k++) {{",
             f"      {vtype} r;"]
    for lane in lanes:
        dot = f".{lane}" if lane else ""
        args = ", ".join([f"v{n}[k]{dot}" for n in ins] + scs)
        lines.append(f"      r{dot} = npg_fused({args});")
    optr = f"reinterpret_cast<{vtype}*>(out0)" if width > 1 else "out0"
    store = f"__stcs({optr} + base + k * {block}, r)" if hints else f"{optr}[base + k * {block}] = r"
    lines.append(f"      {store};")
    direct = ", ".join([f"{n}[i]" for n in ins] + scs)
    lines += ["    }", "  } else {",
              f"    for (int k = 0; k < {per_thread}; k++) {{",
              f"      for (int l = 0; l < {width}; l++) {{",
              f"        const long long i = (base + k * {block}) * {width} + l;",
              f"        if (i < n) out0[i] = npg_fused({direct});",
              "      }", "    }", "  }", "}"]
    return "\n".join(lines)


def main() -> None:
    n = 10**8
    def e8_cupy(a, b, c):  # cupy.fuse names its kernel after the function: no lambda
        return e8_of(cupy, a, b, c)

    fused = cupy.fuse(e8_cupy)
    for dtype in ("float32", "float64"):
        a, b, c = (cupy.random.random(n, dtype=dtype) for _ in range(3))
        src = cupy.empty(4 * n, dtype)
        dst = cupy.empty_like(src)
        t_copy = float(numpy.median(benchmark(lambda: cupy.copyto(dst, src), n_repeat=30).gpu_times))
        t_fuse = float(numpy.median(benchmark(lambda: fused(a, b, c), n_repeat=30).gpu_times))
        with npgpu.enable("cupy"):
            da, db, dc = (npgpu.asarray(x) for x in (a, b, c))
            pending = e8_of(npgpu, da, db, dc)
            state = lazy._GraphState()
            graph = state.graph(pending, pending.dtype)
            backend = da._backend
            t_ours = float(numpy.median(benchmark(
                lambda: backend.run_fused(graph, state.inputs, state.scalars, (n,)), n_repeat=30).gpu_times))
            preamble = backend._fused_function(graph)[0]
            want = backend.run_fused(graph, state.inputs, state.scalars, (n,))
        print(f"\n{dtype}: copy {t_copy * 1e3:.3f} ms | cupy.fuse {t_fuse * 1e3:.3f} | npgpu now {t_ours * 1e3:.3f} "
              f"({t_copy / t_ours:.0%} of copy)")
        rows = []
        out = cupy.empty(n, dtype)
        args = (*state.inputs, *state.scalars, out, numpy.int64(n))
        for block, per_thread, vector, hints in itertools.product((128, 256, 512), (1, 2, 4), (False, True),
                                                                  (False, True)):
            kernel = cupy.RawKernel(source(graph, preamble, block, per_thread, vector, hints), "k",
                                    options=backend.NVRTC_OPTIONS)
            width = 16 // numpy.dtype(dtype).itemsize if vector else 1
            grid = (-(-n // (block * per_thread * width)),)
            try:
                kernel(grid, (block,), args)
            except cupy.cuda.compiler.CompileException as exc:  # a probe: show it, try the next
                print(f"  block {block} x {per_thread} vector={vector} hints={hints}: {str(exc)[:300]}")
                continue
            same = bool(cupy.array_equal(out, want))
            t = float(numpy.median(benchmark(lambda: kernel(grid, (block,), args), n_repeat=30).gpu_times))
            rows.append((t, block, per_thread, vector, hints, same))
        rows.sort()
        for row in rows[:8] + [None] + rows[-3:]:
            if row is None:
                print("  ...")
                continue
            t, block, per_thread, vector, hints, same = row
            print(f"  block {block:4d} x {per_thread} {'vec16' if vector else 'elem '} {'cs' if hints else '  '}: "
                  f"{t * 1e3:.3f} ms ({t_copy / t:.0%} of copy, fuse/this {t_fuse / t:.3f}) same={same}")


if __name__ == "__main__":
    main()
