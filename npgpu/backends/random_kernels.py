"""NumPy's PCG64 and MT19937 uniform doubles computed on the device, bit for bit, for any state.

One kernel text serves OpenCL and CUDA (a few macros differ). The backends call
``opencl_doubles`` / ``cuda_doubles`` / ``numpy_doubles``; each takes a bit generator's
``state`` dict and returns the draw and the state after it, as NumPy's ``random()`` leaves it.

- PCG64 (NumPy's ``PCG64``): a 128-bit LCG, ``s <- a*s + c``, output XSL-RR of the new state,
  ``random()`` = ``(next_uint64 >> 11) * 2**-53``. The LCG jumps ahead: ``d`` steps at once are
  ``s <- A_d*s + C_d``, so every work-item computes its own first state and walks from there
  (128-bit products from 64-bit halves; OpenCL has no 128-bit integers).
- MT19937: words satisfy ``x[k] = x[k-227] ^ twist(x[k-624], x[k-623])``, so 227 consecutive
  words at a time depend only on earlier ones: one work-group walks the sequence 227 words per
  step through a ring in local memory and writes the tempered words; a second kernel pairs them
  into doubles, ``((a >> 5) * 2**26 + (b >> 6)) * 2**-53``, in place. The final 624 words are
  the generator's new key, read back.
"""

from __future__ import annotations

import math
from typing import Any

import numpy

from ..kernels import codegen

#: NumPy's PCG64 multiplier (PCG_DEFAULT_MULTIPLIER_128).
PCG64_MULTIPLIER = 0x2360ED051FC65DA44385DF649FCCF645
_MASK128 = (1 << 128) - 1
_MASK64 = (1 << 64) - 1
MT_N = 624  # words of MT19937's state (the kernels walk 624 - 397 = 227 words at a time)
#: The kinds of NumPy bit generator computed here (``state["bit_generator"]``).
STREAMS = frozenset({"PCG64", "MT19937"})


# -- the host side: jumps and state bookkeeping ------------------------------------------------

def pcg64_jump(inc: int, steps: int) -> tuple[int, int]:
    """(multiplier, increment) taking a PCG64 state ``steps`` steps ahead at once (mod 2**128)."""
    acc_mult, acc_plus = 1, 0
    cur_mult, cur_plus = PCG64_MULTIPLIER, inc
    while steps:
        if steps & 1:
            acc_mult = acc_mult * cur_mult & _MASK128
            acc_plus = (acc_plus * cur_mult + cur_plus) & _MASK128
        cur_plus = (cur_mult + 1) * cur_plus & _MASK128
        cur_mult = cur_mult * cur_mult & _MASK128
        steps >>= 1
    return acc_mult, acc_plus


def pcg64_after(state: dict[str, Any], n: int) -> dict[str, Any]:
    """``state`` after ``n`` doubles: the LCG ``n`` steps on; the buffered 32-bit half (which
    doubles never touch) kept, where ``PCG64.advance`` would drop it."""
    inner = state["state"]
    mult, plus = pcg64_jump(inner["inc"], n)
    after = dict(state)
    after["state"] = {"state": (mult * inner["state"] + plus) & _MASK128, "inc": inner["inc"]}
    return after


def mt19937_plan(pos: int, nwords: int) -> tuple[int, int]:
    """(words of the sequence to compute, counting the current key's 624; the position after)
    for ``nwords`` words drawn from position ``pos``. NumPy twists lazily, when a word is
    needed, so a draw that ends a block leaves ``pos == 624``."""
    beyond = pos + nwords - MT_N
    if beyond <= 0:
        return MT_N, pos + nwords
    blocks = -(-beyond // MT_N)
    return MT_N * (1 + blocks), beyond - MT_N * (blocks - 1)


def _halves(x: int) -> tuple[numpy.uint64, numpy.uint64]:
    return numpy.uint64(x >> 64), numpy.uint64(x & _MASK64)


def _pcg64_arguments(state: dict[str, Any], n: int, items: int, first: int, count: int,
                     stride: int) -> list[Any]:
    inner = state["state"]
    mult, plus = pcg64_jump(inner["inc"], stride)
    u64 = numpy.uint64
    return [u64(n), u64(items), u64(first), u64(count), u64(stride), *_halves(inner["state"]),
            *_halves(inner["inc"]), *_halves(mult), *_halves(plus)]


def numpy_doubles(state: dict[str, Any], shape: tuple[int, ...]) -> tuple[numpy.ndarray, dict[str, Any]]:
    """NumPy's own draw from ``state`` (the emulated backend's stand-in for the kernels)."""
    bit_generator = getattr(numpy.random, state["bit_generator"])()
    bit_generator.state = state
    values = numpy.random.Generator(bit_generator).random(shape)
    return values, bit_generator.state


# -- the kernels -------------------------------------------------------------------------------

_OPENCL_PRELUDE = """\
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef ulong u64;
typedef long i64;
typedef uint u32;
#define KERNEL __kernel
#define GLOBAL __global
#define LOCAL __local
#define FN inline
/* CPU compilers with 128-bit integers (PoCL's clang) make the 64x64->128 product one
   instruction; PoCL's mul_hi(ulong) measured 1.5-2x slower over the whole PCG64 kernel. */
#if defined(NPG_CPU) && defined(__SIZEOF_INT128__)
#define MULHI(a, b) ((u64)(((unsigned __int128)(a) * (b)) >> 64))
#else
#define MULHI(a, b) mul_hi(a, b)
#endif
#define GID ((u64)get_global_id(0))
#define LID ((u32)get_local_id(0))
#define LSIZE ((u32)get_local_size(0))
#define BARRIER barrier(CLK_LOCAL_MEM_FENCE)
#define U64(x) x##UL
"""

_CUDA_PRELUDE = """\
typedef unsigned long long u64;
typedef long long i64;
typedef unsigned int u32;
#define KERNEL extern "C" __global__
#define GLOBAL
#define LOCAL __shared__
#define FN __device__ __forceinline__
#define MULHI(a, b) __umul64hi(a, b)
#define GID ((u64)blockIdx.x * blockDim.x + threadIdx.x)
#define LID ((u32)threadIdx.x)
#define LSIZE ((u32)blockDim.x)
#define BARRIER __syncthreads()
#define U64(x) x##ULL
"""

# Work-item g handles elements j = g*first + k*stride, k < count (j < n): contiguous runs on CPU
# devices (first = count, stride = 1), a grid-stride loop on GPUs (first = 1, stride = items).
_PCG64 = """
typedef struct { u64 hi; u64 lo; } npg_u128;

FN npg_u128 npg_mul128(npg_u128 a, npg_u128 b) {
  npg_u128 r;
  r.lo = a.lo * b.lo;
  r.hi = MULHI(a.lo, b.lo) + a.lo * b.hi + a.hi * b.lo;
  return r;
}

FN npg_u128 npg_add128(npg_u128 a, npg_u128 b) {
  npg_u128 r;
  r.lo = a.lo + b.lo;
  r.hi = a.hi + b.hi + (r.lo < a.lo ? 1 : 0);
  return r;
}

FN double npg_pcg64_double(npg_u128 s) {
  u64 x = s.hi ^ s.lo;
  u32 rot = (u32)(s.hi >> 58);
  u64 v = (x >> rot) | (x << ((64u - rot) & 63u));
  /* v >> 11 < 2**53: exact as a double; a signed conversion is one instruction */
  return (double)(i64)(v >> 11) * (1.0 / 9007199254740992.0);
}

KERNEL void npg_pcg64_doubles(GLOBAL double* out, u64 n, u64 items, u64 first, u64 count, u64 stride,
                              u64 s_hi, u64 s_lo, u64 c_hi, u64 c_lo, u64 m_hi, u64 m_lo,
                              u64 p_hi, u64 p_lo) {
  u64 g = GID;
  if (g >= items) return;
  u64 j = g * first;
  if (j >= n) return;
  npg_u128 s; s.hi = s_hi; s.lo = s_lo;
  npg_u128 c; c.hi = c_hi; c.lo = c_lo;
  npg_u128 one; one.hi = 0; one.lo = 1;
  /* element j is the output of the state j + 1 steps on (NumPy steps, then outputs) */
  npg_u128 acc_m = one, acc_p; acc_p.hi = 0; acc_p.lo = 0;
  npg_u128 cur_m; cur_m.hi = U64(NPG_MULT_HI); cur_m.lo = U64(NPG_MULT_LO);
  npg_u128 cur_p = c;
  for (u64 d = j + 1; d != 0; d >>= 1) {
    if (d & 1) {
      acc_m = npg_mul128(acc_m, cur_m);
      acc_p = npg_add128(npg_mul128(acc_p, cur_m), cur_p);
    }
    cur_p = npg_mul128(npg_add128(cur_m, one), cur_p);
    cur_m = npg_mul128(cur_m, cur_m);
  }
  s = npg_add128(npg_mul128(acc_m, s), acc_p);
  npg_u128 m; m.hi = m_hi; m.lo = m_lo;
  npg_u128 p; p.hi = p_hi; p.lo = p_lo;
  out[j] = npg_pcg64_double(s);
  for (u64 k = 1; k < count; k++) {
    j += stride;
    if (j >= n) break;
    s = npg_add128(npg_mul128(m, s), p);
    out[j] = npg_pcg64_double(s);
  }
}
"""

# One work-group. ring[m % 1024] holds word m of the sequence (m < 624: the current key); a step
# computes words base .. base+226, which read words base-624 .. base-1 only: distinct ring slots.
_MT19937_WORDS = """
FN u32 npg_mt_temper(u32 y) {
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

KERNEL void npg_mt19937_words(GLOBAL u32* out, GLOBAL u32* key, u64 pos, u64 nwords, u64 total) {
  LOCAL u32 ring[1024];
  u32 lid = LID, ls = LSIZE;
  for (u32 i = lid; i < 624u; i += ls) {
    u32 x = key[i];
    ring[i] = x;
    if (i >= pos && i - pos < nwords) out[i - pos] = npg_mt_temper(x);
  }
  for (u64 base = 624; base < total; base += 227) {
    BARRIER;
    for (u32 i = lid; i < 227u; i += ls) {
      u64 m = base + i;
      if (m < total) {
        u32 y = (ring[(m - 624) & 1023] & 0x80000000u) | (ring[(m - 623) & 1023] & 0x7fffffffu);
        u32 x = ring[(m - 227) & 1023] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
        ring[m & 1023] = x;
        if (m - pos < nwords) out[m - pos] = npg_mt_temper(x);
      }
    }
  }
  BARRIER;
  for (u32 i = lid; i < 624u; i += ls) key[i] = ring[(total - 624 + i) & 1023];
}
"""

# In place: double j takes the words 2j and 2j+1 it is stored over, read before it is written.
_MT19937_DOUBLES = """
KERNEL void npg_mt19937_doubles(GLOBAL double* out, u64 n, u64 items, u64 first, u64 count, u64 stride) {
  u64 g = GID;
  if (g >= items) return;
  GLOBAL const u32* words = (GLOBAL const u32*)out;
  u64 j = g * first;
  for (u64 k = 0; k < count && j < n; k++, j += stride) {
    u32 a = words[2 * j] >> 5, b = words[2 * j + 1] >> 6;
    out[j] = ((double)a * 67108864.0 + (double)b) * (1.0 / 9007199254740992.0);
  }
}
"""

_SOURCES = {"npg_pcg64_doubles": _PCG64, "npg_mt19937_words": _MT19937_WORDS,
            "npg_mt19937_doubles": _MT19937_DOUBLES}


def source(name: str, dialect: str) -> str:
    """The text of kernel ``name`` for "opencl" or "cuda"."""
    text = (_OPENCL_PRELUDE if dialect == "opencl" else _CUDA_PRELUDE) + _SOURCES[name]
    return text.replace("NPG_MULT_HI", f"0x{PCG64_MULTIPLIER >> 64:016X}").replace(
        "NPG_MULT_LO", f"0x{PCG64_MULTIPLIER & _MASK64:016X}")


#: GPUs: elements per work-item at least this, and at most GPU_ITEMS work-items (each starts
#: with a jump of about log2(items) 128-bit steps, repaid over its elements).
GPU_MIN_COUNT = 16
GPU_ITEMS = 1 << 20


def gpu_geometry(n: int) -> tuple[int, int, int, int]:
    """(items, first, count, stride) of a grid-stride walk over ``n`` elements."""
    items = max(1, min(-(-n // GPU_MIN_COUNT), GPU_ITEMS))
    return items, 1, -(-n // items), items


def cpu_geometry(n: int, chunk: int) -> tuple[int, int, int, int]:
    """(items, first, count, stride) of contiguous runs of ``chunk`` elements."""
    return -(-n // chunk), chunk, chunk, 1


# -- OpenCL ------------------------------------------------------------------------------------

def opencl_streams(backend: Any) -> frozenset[str]:
    """The streams worth computing on this OpenCL device: both on GPUs; on CPU devices only
    PCG64 (MT19937's walk runs in one work-group, one core: slower than NumPy's, measured on
    PoCL; see benchmarks/bench_random.py)."""
    return frozenset({"PCG64"}) if backend.is_cpu else STREAMS


def _opencl_kernel(backend: Any, name: str) -> Any:
    text = source(name, "opencl")
    if backend.is_cpu:
        text = "#define NPG_CPU\n" + text
    return backend._build(("random", name), lambda: codegen.KernelSource(text, name, "opencl", (), True))


def _opencl_geometry(backend: Any, n: int) -> tuple[tuple[int, int, int, int], int]:
    """((items, first, count, stride), work-group size): runs of ``_chunk(n)`` elements on one
    work-item per group on CPU devices, as the backend's elementwise kernels; a grid-stride walk
    on GPUs."""
    if backend.is_cpu:
        return cpu_geometry(n, backend._chunk(n)), 1
    return gpu_geometry(n), backend.local_size


def _opencl_launch(backend: Any, name: str, items: int, local: int, args: list[Any]) -> None:
    kernel = _opencl_kernel(backend, name)
    kernel.set_args(*args)
    backend._cl.enqueue_nd_range_kernel(backend.queue, kernel, (-(-items // local) * local,), (local,))


def opencl_doubles(backend: Any, state: dict[str, Any], shape: tuple[int, ...]) -> tuple[Any, dict[str, Any]]:
    """NumPy's ``random(shape)`` from ``state`` on an OpenCL backend: (CLArray, state after)."""
    n = math.prod(shape)
    out = backend.empty(shape, numpy.float64)
    geometry, local = _opencl_geometry(backend, n)
    u64 = numpy.uint64
    if state["bit_generator"] == "PCG64":
        _opencl_launch(backend, "npg_pcg64_doubles", geometry[0], local,
                       [out.data, *_pcg64_arguments(state, n, *geometry)])
        return out, pcg64_after(state, n)
    inner = state["state"]
    total, pos = mt19937_plan(int(inner["pos"]), 2 * n)
    key = backend.from_host(numpy.ascontiguousarray(inner["key"], dtype=numpy.uint32))
    group = min(256, backend.device.max_work_group_size)
    _opencl_launch(backend, "npg_mt19937_words", group, group,
                   [out.data, key.data, u64(inner["pos"]), u64(2 * n), u64(total)])
    _opencl_launch(backend, "npg_mt19937_doubles", geometry[0], local,
                   [out.data, u64(n), *(u64(v) for v in geometry)])
    return out, _mt19937_state(state, backend.to_host(key), pos)


def _mt19937_state(state: dict[str, Any], key: numpy.ndarray, pos: int) -> dict[str, Any]:
    after = dict(state)
    after["state"] = {"key": key, "pos": pos}
    return after


# -- CUDA (CuPy) -------------------------------------------------------------------------------

#: Threads per block of the elementwise-style kernels; the MT19937 walk runs one block of 256.
CUDA_BLOCK = 256


def _cuda_kernel(backend: Any, name: str) -> Any:
    cp = backend.xp
    return backend._kernel(("random", name),
                           lambda: cp.RawKernel(source(name, "cuda"), name, options=backend.NVRTC_OPTIONS))


def cuda_doubles(backend: Any, state: dict[str, Any], shape: tuple[int, ...]) -> tuple[Any, dict[str, Any]]:
    """NumPy's ``random(shape)`` from ``state`` on the CuPy backend: (cupy array, state after)."""
    cp = backend.xp
    n = math.prod(shape)
    out = cp.empty(shape, cp.float64)
    geometry = gpu_geometry(n)
    blocks = (-(-geometry[0] // CUDA_BLOCK),)
    if state["bit_generator"] == "PCG64":
        _cuda_kernel(backend, "npg_pcg64_doubles")(blocks, (CUDA_BLOCK,), (out, *_pcg64_arguments(state, n, *geometry)))
        return out, pcg64_after(state, n)
    inner = state["state"]
    total, pos = mt19937_plan(int(inner["pos"]), 2 * n)
    key = cp.asarray(numpy.ascontiguousarray(inner["key"], dtype=numpy.uint32))
    u64 = numpy.uint64
    _cuda_kernel(backend, "npg_mt19937_words")((1,), (256,), (out, key, u64(inner["pos"]), u64(2 * n), u64(total)))
    _cuda_kernel(backend, "npg_mt19937_doubles")(blocks, (CUDA_BLOCK,), (out, u64(n), *(u64(v) for v in geometry)))
    return out, _mt19937_state(state, key.get(), pos)
