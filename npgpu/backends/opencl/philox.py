"""The device's own random streams (unseeded draws, ``random="device"``): Philox4x32-10, the
counter-based generator of Random123 that PyOpenCL ships (pyopencl-random123/philox.cl, the
reference tests/test_opencl_random.py checks these kernels against), mapped to NumPy's ranges.

Block ``b`` of draw ``d`` of a stream is Philox4x32-10 of the counter (b, d) (64 bits each)
under the stream's 64-bit key: four 32-bit words that depend on nothing else, so work-items make
their blocks independently, in groups of four (one vector per word), and a stream only counts
its draws. Doubles take 53 bits of a 64-bit word, ``(w >> 11) * 2**-53``, floats 24 bits of a
32-bit one, as NumPy's: uniform draws lie in [0, 1) exactly. Normals are Box-Muller pairs,
exponentials ``-log`` of a uniform in (0, 1]. Integers follow Lemire's multiply-and-reject
(NumPy's method in Generator.integers): exactly uniform over [low, high].

``pyopencl.clrandom``'s own kernels (its PhiloxGenerator/ThreefryGenerator ``uniform``/``normal``)
are not used: measured on PoCL (2026-12-01) its float32 uniform returned 1.0 five times in 10**8
draws (a 32-bit word converted to float rounds up to 2**32), its float64 uniform can round to
1.0 as well, its integer kernels take only 32- and 64-bit dtypes and scale without rejection
(uneven counts for ranges that are not powers of two), and a draw of 10**7 took 154 ms
(float64) and 92 ms (float32) there, against 21 ms and 10-18 ms here
(benchmarks/bench_random.py TimeDeviceStreams).
"""

from __future__ import annotations

import inspect
import math
import operator
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy

from ...kernels import codegen
from .. import random_kernels
from ..base import Backend

_F8 = numpy.dtype(numpy.float64)
_F4 = numpy.dtype(numpy.float32)
_REALS = (int, float, numpy.integer, numpy.floating)
_INTEGERS = (int, numpy.integer)
_CTYPES = {"b": "uchar", "i1": "char", "u1": "uchar", "i2": "short", "u2": "ushort", "i4": "int", "u4": "uint",
           "i8": "long", "u8": "ulong"}


class Request(NamedTuple):
    """One draw: ``kind`` ("uniform", "normal", "exponential": ``a + b * value``; "integers":
    ``a + offset`` with offset uniform in [0, b], both as unsigned 64-bit words)."""

    kind: str
    dtype: numpy.dtype
    shape: tuple[int, ...]
    a: Any
    b: Any


# -- arguments: NumPy's signatures, and the values the kernels take (anything else: None, NumPy's) --

def _shape(size: Any) -> tuple[int, ...] | None:
    if isinstance(size, _INTEGERS) and not isinstance(size, bool):
        size = (size,)
    if not isinstance(size, (tuple, list)) or any(isinstance(s, bool) or not isinstance(s, _INTEGERS) for s in size):
        return None
    shape = tuple(operator.index(s) for s in size)
    return shape if all(s >= 0 for s in shape) else None


def _finite(*values: Any) -> tuple[float, ...] | None:
    if not all(isinstance(v, _REALS) for v in values):
        return None
    try:
        floats = tuple(float(v) for v in values)
    except OverflowError:  # (an int beyond float's range: NumPy says so)
        return None
    return floats if all(math.isfinite(f) for f in floats) else None


def _float_dtype(dtype: Any) -> numpy.dtype | None:
    try:
        dtype = numpy.dtype(dtype)
    except TypeError:
        return None
    return dtype if dtype in (_F8, _F4) else None  # ('>f8' is not float64: NumPy refuses it)


def _draw(kind: str, dtype: Any, size: Any, a: float, b: float) -> Request | None:
    shape, dtype = _shape(size), _float_dtype(dtype)
    return None if shape is None or dtype is None else Request(kind, dtype, shape, a, b)


def _uniform(low: Any, high: Any, size: Any, generator: bool) -> Request | None:
    bounds = _finite(low, high)
    if bounds is None or not math.isfinite(bounds[1] - bounds[0]) or (generator and bounds[1] < bounds[0]):
        return None  # (Generator.uniform refuses high < low; the legacy one draws from (high, low])
    return _draw("uniform", _F8, size, bounds[0], bounds[1] - bounds[0])


def _normal(loc: Any, scale: Any, size: Any) -> Request | None:
    found = _finite(loc, scale)
    return None if found is None or found[1] < 0 else _draw("normal", _F8, size, *found)


def _exponential(scale: Any, size: Any) -> Request | None:
    found = _finite(scale)
    return None if found is None or found[0] < 0 else _draw("exponential", _F8, size, 0.0, found[0])


def _integers(low: Any, high: Any, size: Any, dtype: Any, endpoint: bool) -> Request | None:
    if high is None:
        low, high = 0, low
    if not (isinstance(low, _INTEGERS) and isinstance(high, _INTEGERS)) or not isinstance(endpoint, bool):
        return None
    try:
        dtype = numpy.dtype(dtype)
    except TypeError:
        return None
    if dtype.kind not in "biu" or not dtype.isnative or dtype.itemsize > 8:
        return None
    low, top = int(low), int(high) - (not endpoint)
    lowest, highest = (0, 1) if dtype.kind == "b" else (int(numpy.iinfo(dtype).min), int(numpy.iinfo(dtype).max))
    shape = _shape(size)
    if shape is None or not lowest <= low <= top <= highest:
        return None  # (an empty range or bounds beyond the dtype: NumPy's ValueError)
    return Request("integers", dtype, shape, low % 2**64, top - low)


def _dims(*dims: Any) -> tuple[Any, ...]:
    return dims


#: the legacy API (numpy.random.<name>, RandomState.<name>): name -> NumPy's signature, as a
#: function returning the Request
LEGACY: dict[str, Callable[..., Request | None]] = {
    "rand": lambda *dims: _draw("uniform", _F8, dims, 0.0, 1.0),
    "randn": lambda *dims: _draw("normal", _F8, dims, 0.0, 1.0),
    "random": lambda size=None: _draw("uniform", _F8, size, 0.0, 1.0),
    "standard_normal": lambda size=None: _draw("normal", _F8, size, 0.0, 1.0),
    "uniform": lambda low=0.0, high=1.0, size=None: _uniform(low, high, size, False),
    "normal": lambda loc=0.0, scale=1.0, size=None: _normal(loc, scale, size),
    "randint": lambda low, high=None, size=None, dtype=int: _integers(low, high, size, dtype, False),
    "exponential": lambda scale=1.0, size=None: _exponential(scale, size),
    "standard_exponential": lambda size=None: _exponential(1.0, size),
}
for _alias in ("random_sample", "ranf", "sample"):
    LEGACY[_alias] = LEGACY["random"]

#: Generator.<name>: NumPy's signature, as a function returning the Request (out= goes to NumPy)
GENERATOR: dict[str, Callable[..., Request | None]] = {
    "random": lambda size=None, dtype=_F8, out=None: (
        None if out is not None else _draw("uniform", dtype, size, 0.0, 1.0)),
    "standard_normal": lambda size=None, dtype=_F8, out=None: (
        None if out is not None else _draw("normal", dtype, size, 0.0, 1.0)),
    "uniform": lambda low=0.0, high=1.0, size=None: _uniform(low, high, size, True),
    "normal": lambda loc=0.0, scale=1.0, size=None: _normal(loc, scale, size),
    "integers": lambda low, high=None, size=None, dtype=numpy.int64, endpoint=False: _integers(
        low, high, size, dtype, endpoint),
    "exponential": lambda scale=1.0, size=None: _exponential(scale, size),
}

_SIGNATURES = {id(f): inspect.signature(f) for f in (*LEGACY.values(), *GENERATOR.values())}


def request(table: dict[str, Callable[..., Request | None]], name: str, args: tuple[Any, ...],
            kwargs: dict[str, Any]) -> Request | None:
    """The draw ``name(*args, **kwargs)`` asks for, when the kernels here make it; else None (NumPy
    draws it, and raises its error for arguments it refuses)."""
    parse = table.get(name)
    if parse is None:
        return None
    try:
        bound = _SIGNATURES[id(parse)].bind(*args, **kwargs)
    except TypeError:
        return None
    return parse(*bound.args, **bound.kwargs)


# -- the kernels -------------------------------------------------------------------------------

_FP64_PRAGMA = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
# Philox4x32-10 as Random123 defines it (PyOpenCL's pyopencl-random123/philox.cl, which
# tests/test_opencl_random.py checks this against), four counters at once: each round's two
# 32x32-bit products as one 64-bit product per lane, which CPU compilers vectorize (measured on
# PoCL, 2026-12-01: 42 ms of CPU for 10**7 doubles against 106 ms for the header's scalar
# function, whose products are a mul_hi and a multiply each).
_HEADER = """\
#pragma OPENCL FP_CONTRACT OFF
""" + _FP64_PRAGMA + """\
typedef ulong u64;
typedef uint u32;

/* blocks b0 .. b0+3 (b0 a multiple of 4) of draw d under the key (k0, k1): word m of block b0+i
   in lane i of w[m] */
inline void npg_philox4(uint4* w, u64 b0, u64 d, u32 k0, u32 k1) {
  uint4 x0 = (uint4)((u32)b0) + (uint4)(0u, 1u, 2u, 3u), x1 = (uint4)((u32)(b0 >> 32));
  uint4 x2 = (uint4)((u32)d), x3 = (uint4)((u32)(d >> 32));
  for (int r = 0; r < 10; r++) {
    ulong4 p0 = convert_ulong4(x0) * (ulong4)0xD2511F53UL, p1 = convert_ulong4(x2) * (ulong4)0xCD9E8D57UL;
    x0 = convert_uint4(p1 >> 32) ^ x1 ^ (uint4)k0;
    x2 = convert_uint4(p0 >> 32) ^ x3 ^ (uint4)k1;
    x1 = convert_uint4(p1);
    x3 = convert_uint4(p0);
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  w[0] = x0; w[1] = x1; w[2] = x2; w[3] = x3;
}
inline ulong4 npg_words(uint4 lo, uint4 hi) { return (convert_ulong4(hi) << 32) | convert_ulong4(lo); }
"""

# Values of one group of 4 blocks, per (kind, dtype): how many vectors of 4 (PER), and the
# statements setting v[0 .. PER-1] from the words w[0..3].
_VALUES = {
    ("uniform", "f8"): (2, """
    v[0] = convert_double4(npg_words(w[0], w[1]) >> 11) * 0x1p-53;
    v[1] = convert_double4(npg_words(w[2], w[3]) >> 11) * 0x1p-53;"""),
    ("uniform", "f4"): (4, """
    for (int m = 0; m < 4; m++) v[m] = convert_float4(w[m] >> 8) * 0x1p-24f;"""),
    # u1 in (0, 1] (no log(0)), u2 in [0, 1)
    ("normal", "f8"): (2, """
    double4 u1 = convert_double4((npg_words(w[0], w[1]) >> 11) + 1) * 0x1p-53;
    double4 u2 = 2.0 * (convert_double4(npg_words(w[2], w[3]) >> 11) * 0x1p-53);
    double4 r = sqrt(-2.0 * log(u1));
    v[0] = r * cospi(u2); v[1] = r * sinpi(u2);"""),
    # (float)(x | 1) lies in [1, 2**32]: u1 in (0, 1]
    ("normal", "f4"): (4, """
    for (int m = 0; m < 4; m += 2) {
      float4 r = sqrt(-2.0f * log(convert_float4(w[m] | 1u) * 0x1p-32f));
      float4 t = 2.0f * (convert_float4(w[m + 1] >> 8) * 0x1p-24f);
      v[m] = r * cospi(t); v[m + 1] = r * sinpi(t);
    }"""),
    ("exponential", "f8"): (2, """
    v[0] = 0.0 - log(convert_double4((npg_words(w[0], w[1]) >> 11) + 1) * 0x1p-53);
    v[1] = 0.0 - log(convert_double4((npg_words(w[2], w[3]) >> 11) + 1) * 0x1p-53);"""),
}

# Group g (blocks 4g .. 4g+3) fills elements 4*PER*g + 4*m + i from lane i of v[m]. Work-item
# gid makes groups gid*first + k*stride, k < count (random_kernels' geometry).
_FLOATS = """
__kernel void npg_philox(__global T* out, u64 n, u64 groups, u64 first, u64 count, u64 stride,
                         u32 k0, u32 k1, u64 draw, T a, T b) {
  u64 g = (u64)get_global_id(0) * first;
  for (u64 k = 0; k < count && g < groups; k++, g += stride) {
    uint4 w[4];
    npg_philox4(w, 4 * g, draw, k0, k1);
    T4 v[PER];
    VALUES
    u64 e = 4 * PER * g;
    for (int m = 0; m < PER; m++) {
      T4 x = (T4)(a) + (T4)(b) * v[m];
      if (e + 4 * m + 4 <= n) {
        vstore4(x, 0, out + e + 4 * m);
      } else {
        T lanes[4];
        vstore4(x, 0, lanes);
        for (int i = 0; i < 4; i++) if (e + 4 * m + i < n) out[e + 4 * m + i] = lanes[i];
      }
    }
  }
}
"""

# Integers: offsets uniform in [0, span] by Lemire's method. Spans below 2**32 take one 32-bit
# word per element (element 16g + 4m + i from word m of lane i, as float32), wider ones a 64-bit
# word (8g + 4m + i from words 2m, 2m+1). An element whose word is rejected draws more words from
# blocks of its own: element e's q-th extra block is block e + q*n of the draw's second counter
# space (its top bit set).
_INTEGERS_KERNEL = """
inline void npg_more(u32* words, u64 e, u64 n, int q, u64 draw, u32 k0, u32 k1) {
  u64 b = e + (u64)q * n;
  uint4 w[4];
  u32 lanes[4];
  npg_philox4(w, b & ~3UL, draw | 0x8000000000000000UL, k0, k1);
  for (int m = 0; m < 4; m++) { vstore4(w[m], 0, lanes); words[m] = lanes[b & 3]; }
}

/* m = word * s, whose low half fell below s: reject while it lies below 2**32 mod s */
inline u64 npg_reject32(u64 m, u64 s, u64 e, u64 n, u64 draw, u32 k0, u32 k1) {
  u64 t = (0x100000000UL - s) % s;
  u32 words[4];
  int q = 0, used = 4;
  while ((u32)m < t) {
    if (used == 4) { npg_more(words, e, n, q++, draw, k0, k1); used = 0; }
    m = (u64)words[used++] * s;
  }
  return m >> 32;
}

/* x * s (mod 2**64) fell below s: reject while it lies below 2**64 mod s */
inline u64 npg_reject64(u64 x, u64 s, u64 e, u64 n, u64 draw, u32 k0, u32 k1) {
  u64 t = (0UL - s) % s;
  u32 words[4];
  int q = 0, used = 2;
  while (x * s < t) {
    if (used == 2) { npg_more(words, e, n, q++, draw, k0, k1); used = 0; }
    x = ((u64)words[2 * used + 1] << 32) | words[2 * used];
    used++;
  }
  return mul_hi(x, s);
}

__kernel void npg_philox(__global T* out, u64 n, u64 groups, u64 first, u64 count, u64 stride,
                         u32 k0, u32 k1, u64 draw, u64 low, u64 span) {
  int wide = span > 0xffffffffUL, per = wide ? 2 : 4;
  u64 s = span + 1;  /* (0 for the full 64-bit range, which takes its words as they are) */
  u64 g = (u64)get_global_id(0) * first;
  for (u64 k = 0; k < count && g < groups; k++, g += stride) {
    uint4 w[4];
    npg_philox4(w, 4 * g, draw, k0, k1);
    for (int m = 0; m < per; m++) {
      u64 e0 = 4 * per * g + 4 * m;
      if (e0 >= n) break;
      ulong4 x = wide ? npg_words(w[2 * m], w[2 * m + 1]) : convert_ulong4(w[m]), offset = x, product = x;
      int4 slow = (int4)(0);  /* (masks of -1: any() reads the lanes' sign bits) */
      if (!wide && span != 0xffffffffUL) {
        product = x * (ulong4)s;
        offset = product >> 32;
        slow = convert_uint4(product) < (uint4)((u32)s);
      } else if (wide && s != 0) {
        offset = mul_hi(x, (ulong4)s);
        slow = convert_int4(x * (ulong4)s < (ulong4)s);
      }
      if (!any(slow) && e0 + 4 <= n) {
        vstore4(CAST4((ulong4)(low) + offset), 0, out + e0);
        continue;
      }
      u64 offsets[4], values[4];
      int slows[4];
      vstore4(offset, 0, offsets);
      vstore4(wide ? x : product, 0, values);
      vstore4(slow, 0, slows);
      for (int i = 0; i < 4 && e0 + i < n; i++) {
        u64 e = e0 + i, o = offsets[i];
        if (slows[i] && wide) o = npg_reject64(values[i], s, e, n, draw, k0, k1);
        else if (slows[i]) o = npg_reject32(values[i], s, e, n, draw, k0, k1);
        out[e] = CAST(low + o);
      }
    }
  }
}
"""


def source(kind: str, dtype: numpy.dtype) -> codegen.KernelSource:
    """The kernel making draws of ``kind`` in ``dtype``."""
    code = "b" if dtype.kind == "b" else dtype.str[1:]
    fp64 = dtype == _F8
    header = _HEADER if fp64 else _HEADER.replace(_FP64_PRAGMA, "")
    if kind == "integers":
        ctype = _CTYPES[code]
        signed = dtype.kind == "i"
        cast = "(T)(long)" if signed else "(T)"
        cast4 = f"convert_{ctype}4(as_long4(x))" if signed else f"convert_{ctype}4(x)"
        body = (f"#define T {ctype}\n#define CAST(x) {cast}(x)\n#define CAST4(x) {cast4}\n"
                + _INTEGERS_KERNEL)
    else:
        per, values = _VALUES[(kind, code)]
        real = "double" if fp64 else "float"
        body = f"#define T {real}\n#define T4 {real}4\n#define PER {per}\n" + _FLOATS.replace("VALUES", values)
    return codegen.KernelSource(header + body, "npg_philox", "opencl", (), fp64)


def values_per_group(req: Request) -> int:
    """Elements one group of 4 blocks makes."""
    if req.kind == "integers":
        return 8 if req.b > 0xFFFFFFFF else 16
    return 4 * _VALUES[(req.kind, req.dtype.str[1:])][0]


# -- streams -----------------------------------------------------------------------------------

def _key(seed: Any) -> tuple[int, int]:
    """A 64-bit Philox key from ``seed`` (NumPy's SeedSequence; None: fresh entropy)."""
    words = numpy.random.SeedSequence(seed).generate_state(2, numpy.uint32)
    return int(words[0]), int(words[1])


class Stream:
    """A key and a count of draws (each draw its own counters): thread-safe, the count is
    taken under a lock and the kernels read nothing else."""

    def __init__(self, backend: Streams, seed: Any = None) -> None:
        self._backend = backend
        self._lock = threading.Lock()
        self.reseed(seed)

    def reseed(self, seed: Any) -> None:
        key = _key(seed)
        with self._lock:
            self.key, self.draws = key, 0

    def draw(self, req: Request) -> Any:
        """The draw ``req`` asks for: a native array of ``req.shape``."""
        with self._lock:
            key, number = self.key, self.draws
            self.draws += 1
        return self._backend._philox_draw(req, key, number)


def _method(name: str) -> Callable[..., Any]:
    def method(self: DeviceGenerator, *args: Any, **kwargs: Any) -> Any:
        req = request(GENERATOR, name, args, kwargs)
        if req is None:
            raise TypeError(f"Generator.{name}: arguments this device's generator does not take "
                            "(npgpu asks supports_generator first and sends those draws to NumPy)")
        return self.stream.draw(req)

    method.__name__ = name
    return method


class DeviceGenerator:
    """A device generator: NumPy's ``Generator`` methods named in GENERATOR, returning natives."""

    def __init__(self, backend: Streams, seed: Any) -> None:
        self.stream = Stream(backend, seed)


for _name in GENERATOR:
    setattr(DeviceGenerator, _name, _method(_name))


class Streams(Backend):
    """The random-stream abilities of backends/base.py, on Philox4x32-10 kernels."""

    _legacy: Stream | None = None

    def _legacy_stream(self) -> Stream:
        stream = self._legacy
        if stream is None:
            with self._lock:
                if self._legacy is None:
                    self._legacy = Stream(self)
                stream = self._legacy
        return stream

    def _supports_draw(self, req: Request | None) -> bool:
        return req is not None and self.supports_dtypes((req.dtype,))

    def supports_random(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        return self._supports_draw(request(LEGACY, name, args, kwargs))

    def random_call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        req = request(LEGACY, name, args, kwargs)
        if req is None:
            raise TypeError(f"numpy.random.{name}: arguments the device's stream does not take "
                            "(npgpu asks supports_random first and sends those draws to NumPy)")
        return self._legacy_stream().draw(req)

    def random_seed(self, seed: Any) -> None:
        self._legacy_stream().reseed(seed)

    def supports_generator(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        return self._supports_draw(request(GENERATOR, name, args, kwargs))

    def random_generator(self, seed: Any) -> DeviceGenerator:
        return DeviceGenerator(self, seed)

    def _philox_draw(self, req: Request, key: tuple[int, int], number: int) -> Any:
        out = self.empty(req.shape, req.dtype)
        n = out.size
        if n == 0:
            return out
        groups = -(-n // values_per_group(req))
        if self.is_cpu:
            (items, first, count, stride), local = random_kernels.cpu_geometry(groups, self._chunk(groups)), 1
        else:
            (items, first, count, stride), local = random_kernels.gpu_geometry(groups), self.local_size
        kernel = self._build(("philox", req.kind, req.dtype), lambda: source(req.kind, req.dtype))
        u64, u32 = numpy.uint64, numpy.uint32
        if req.kind == "integers":
            params = [u64(req.a), u64(req.b)]
        else:
            params = [req.dtype.type(req.a), req.dtype.type(req.b)]
        self._enqueue(kernel, (-(-items // local) * local,), (local,),
                      [out.data, u64(n), u64(groups), u64(first), u64(count), u64(stride), u32(key[0]),
                       u32(key[1]), u64(number % 2**63), *params])  # (the top bit: extra blocks)
        return out
