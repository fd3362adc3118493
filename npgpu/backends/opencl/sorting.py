"""Sorting and what is built on it: sort/argsort/partition/lexsort (PyOpenCL's radix sort of
order-preserving keys), unique, median/nanmedian/quantile/percentile; binary searches (searchsorted,
digitize, interp); counts (bincount, histogram: atomics, or sums in NumPy's order).

Every sort is stable: a float's key puts NaN last and -0.0 with 0.0 (NumPy's order), ties keep their
positions (what NumPy's kind='stable' gives, and one valid answer for the other kinds).
"""

from __future__ import annotations

import math
import operator
import warnings
from typing import Any

import numpy
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from ... import _fperr
from ..._errors import KernelBuildError, NeedsNumpyError
from ...kernels import codegen
from ...kernels import ufuncs as _table
from ..base import Backend
from .array import CLArray, _array_operand
from .launch import _BUILD_LOCK, _compiler_errors
from .routing import implements

#: bits of the key a radix pass sorts (PoCL, 10^6 64-bit keys: 2 bits 1.04 s, 4 bits 1.06 s, 8 bits
#: 13 s; fewer passes suit GPUs, so 4)
_RADIX_BITS = 4

# the key of each value type: an unsigned integer whose order is NumPy's order of the values, and
# its bits (the radix passes: 4 bits each). Every key is a ulong: one radix sort program serves every
# dtype and the row pass (a cold build of one costs 10-30 s on PoCL).
_KEYS = {
    "b": ("(ulong)(x != 0)", 1),
    "u1": ("(ulong)x", 8),
    "u2": ("(ulong)x", 16),
    "u4": ("(ulong)x", 32),
    "u8": ("x", 64),
    "i1": ("(ulong)((uchar)x ^ 0x80u)", 8),
    "i2": ("(ulong)((ushort)x ^ 0x8000u)", 16),
    "i4": ("(ulong)((uint)x ^ 0x80000000u)", 32),
    "i8": ("((ulong)x ^ 0x8000000000000000UL)", 64),
    "f4": ("(ulong)npg_fkey(x)", 32),
    "f8": ("npg_dkey(x)", 64),
}

_FLOAT_KEYS = """
inline uint npg_fkey(float x) {
  if (isnan(x)) return 0xFFFFFFFFu;   /* every NaN after +inf */
  if (x == 0.0f) return 0x80000000u;  /* -0.0 equals 0.0 */
  uint b = as_uint(x);
  return (b >> 31) ? ~b : (b | 0x80000000u);
}
"""
_DOUBLE_KEYS = """
inline ulong npg_dkey(double x) {
  if (isnan(x)) return 0xFFFFFFFFFFFFFFFFUL;
  if (x == 0.0) return 0x8000000000000000UL;
  ulong b = as_ulong(x);
  return (b >> 63) ? ~b : (b | 0x8000000000000000UL);
}
"""


def _header(*dtypes: numpy.dtype) -> str:
    lines = ["#pragma OPENCL FP_CONTRACT OFF"]
    if any(numpy.dtype(d) == numpy.float64 for d in dtypes):
        lines.append("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
    lines.append(_table.typedefs("opencl"))
    return "\n".join(lines) + "\n"


def _code(dt: numpy.dtype) -> str:
    return "b" if dt.kind == "b" else dt.str[1:]


def _key_source(dt: numpy.dtype) -> str:
    """keys[i] = key(src[perm[i]]) (perm: none means i), idx[i] = perm[i]."""
    expr, _ = _KEYS[_code(dt)]
    t = _table.ctype(dt)
    helpers = _FLOAT_KEYS if dt.kind == "f" and dt.itemsize == 4 else _DOUBLE_KEYS if dt.kind == "f" else ""
    return _header(dt) + helpers + f"""
__kernel void npg_sort_keys(__global const char* src, long off, __global const long* perm, int has_perm,
                            __global ulong* keys, __global long* idx, long n) {{
  long i = get_global_id(0);
  if (i >= n) return;
  long j = has_perm ? perm[i] : i;
  {t} x = ((__global const {t}*)(src + off))[j];
  keys[i] = {expr};
  idx[i] = j;
}}
"""


# the row of each sorted position: the key of the pass that sorts the rows back in place
_ROW_KEYS_SRC = """
__kernel void npg_row_keys(__global const long* idx, long off, __global ulong* keys, long row, long n) {
  long i = get_global_id(0);
  if (i >= n) return;
  keys[i] = (ulong)(((__global const long*)((__global const char*)idx + off))[i] / row);
}
"""


def _take_source(dt: numpy.dtype) -> str:
    """vals[i] = src[idx[i]], pos[i] = idx[i] % row (each if asked)."""
    t = _table.ctype(dt)
    return _header(dt) + f"""
__kernel void npg_sort_take(__global const char* src, long off, __global const long* idx,
                            __global {t}* vals, __global long* pos, long row, long n, int want_vals, int want_pos) {{
  long i = get_global_id(0);
  if (i >= n) return;
  long j = idx[i];
  if (want_vals) vals[i] = ((__global const {t}*)(src + off))[j];
  if (want_pos) pos[i] = j % row;
}}
"""


def _less(dt: numpy.dtype) -> str:
    """NumPy's sort order as a C function: NaN after everything."""
    t = _table.ctype(dt)
    body = "x < y || (y != y && x == x)" if dt.kind == "f" else "x < y"
    return f"inline int npg_lt({t} x, {t} y) {{ return {body}; }}\n"


def _search_source(dt: numpy.dtype) -> str:
    """out[i] = the position of v[i] in sorted a (through sorter), NumPy's side rule; -1 where the
    search met a sorter index out of range (NumPy's error, raised only for the indices it reads)."""
    t = _table.ctype(dt)
    return _header(dt) + _less(dt) + f"""
__kernel void npg_search(__global const {t}* a, long na, __global const long* sorter, int has_sorter,
                         __global const {t}* v, __global long* out, long n, int right) {{
  long i = get_global_id(0);
  if (i >= n) return;
  {t} x = v[i];
  long lo = 0, hi = na;
  while (lo < hi) {{
    long mid = lo + (hi - lo) / 2;
    long at = has_sorter ? sorter[mid] : mid;
    if (at < 0 || at >= na) {{ out[i] = -1; return; }}
    {t} y = a[at];
    if (right ? !npg_lt(x, y) : npg_lt(y, x)) lo = mid + 1; else hi = mid;
  }}
  out[i] = lo;
}}
"""


def _heads_source(dt: numpy.dtype) -> str:
    """head[i] = 1 where sorted s[i] starts a new value (NaNs one value when equal_nan)."""
    t = _table.ctype(dt)
    same = "(x == y || (equal_nan && x != x && y != y))" if dt.kind == "f" else "(x == y)"
    return _header(dt) + f"""
__kernel void npg_unique_heads(__global const {t}* s, __global long* head, long n, int equal_nan) {{
  long i = get_global_id(0);
  if (i >= n) return;
  if (i == 0) {{ head[i] = 1; return; }}
  {t} x = s[i], y = s[i - 1];
  head[i] = {same} ? 0 : 1;
}}
"""


def _unique_source(dt: numpy.dtype) -> str:
    t = _table.ctype(dt)
    return _header(dt) + f"""
__kernel void npg_unique_scatter(__global const {t}* s, __global const long* idx, __global const long* group,
                                 __global {t}* uniq, __global long* first, __global long* start, __global long* inv,
                                 long n, int want_first, int want_inv) {{
  long i = get_global_id(0);
  if (i >= n) return;
  long k = group[i] - 1;
  if (i == 0 || group[i] != group[i - 1]) {{
    uniq[k] = s[i];
    start[k] = i;
    if (want_first) first[k] = idx[i];
  }}
  if (want_inv) inv[idx[i]] = k;
}}
__kernel void npg_unique_counts(__global const long* start, __global long* counts, long u, long n) {{
  long k = get_global_id(0);
  if (k >= u) return;
  counts[k] = (k + 1 < u ? start[k + 1] : n) - start[k];
}}
"""


# bincount over sorted values: bin b holds positions [lower(b), lower(b+1)) of the sorted x; its
# weights are summed in their original order (NumPy's order: exact), in NumPy's blocks (histogram
# adds one bincount per block of `block` values; block 0: one block)
_LOWER = """
inline long npg_lower(__global const long* s, long n, long b) {
  long lo = 0, hi = n;
  while (lo < hi) { long mid = lo + (hi - lo) / 2; if (s[mid] < b) lo = mid + 1; else hi = mid; }
  return lo;
}
"""
_COUNTS_SRC = _LOWER + """
__kernel void npg_bincount(__global const long* s, __global long* counts, long n, long nbins) {
  long b = get_global_id(0);
  if (b >= nbins) return;
  counts[b] = npg_lower(s, n, b + 1) - npg_lower(s, n, b);
}
"""
_SUMS_SRC = "#pragma OPENCL FP_CONTRACT OFF\n#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" + _LOWER + """
__kernel void npg_binsums(__global const long* s, __global const long* perm, __global const double* w,
                          __global double* sums, long n, long nbins, long block) {
  long b = get_global_id(0);
  if (b >= nbins) return;
  long lo = npg_lower(s, n, b), hi = npg_lower(s, n, b + 1);
  double total = 0.0, part = 0.0;
  long current = -1;
  for (long j = lo; j < hi; j++) {
    long p = perm[j];
    long blk = block ? p / block : 0;
    if (blk != current) { total += part; part = 0.0; current = blk; }
    part += w[p];
  }
  sums[b] = total + part;
}
"""

# histogram: the bin of each value by the edges (NumPy's rule: [e_i, e_i+1), the last closed),
# nb (one past the last bin) for values outside the edges or NaN
_BIN_SEARCH = """
inline long npg_bin(T v, __global const T* e, long ne) {
  long nb = ne - 1;
  if (!(v >= e[0] && v <= e[nb])) return nb;
  if (v == e[nb]) return nb - 1;
  long lo = 0, hi = ne;
  while (lo < hi) { long mid = lo + (hi - lo) / 2; if (e[mid] <= v) lo = mid + 1; else hi = mid; }
  return lo - 1;
}
"""
_BINS_TEMPLATE = _BIN_SEARCH + """
__kernel void npg_hist_bins(__global const X* x, long off, __global const T* e, long ne, __global long* bin, long n) {
  long i = get_global_id(0);
  if (i >= n) return;
  bin[i] = npg_bin((T)((__global const X*)((__global const char*)x + off))[i], e, ne);
}
"""
# counts without weights (bincount's values, or histogram's bins when HIST): 32-bit atomic
# increments (OpenCL 1.1 core; fewer than 2**32 values), exact in any order. With LOCAL, each
# work-group counts into local memory first and adds its counts once (few bins: contended global
# atomics cost 80 ns each on PoCL); the work-items stride over the values.
_COUNT_TEMPLATE = """
__kernel void npg_count(__global const X* x, long off, __global const T* e, long ne, __global uint* counts,
                        long nbins, long n, __local uint* part) {
  __global const X* xs = (__global const X*)((__global const char*)x + off);
  long lid = get_local_id(0), ls = get_local_size(0), stride = get_global_size(0);
#if LOCAL
  for (long k = lid; k < nbins; k += ls) part[k] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
#endif
  for (long i = get_global_id(0); i < n; i += stride) {
#if HIST
    long b = npg_bin((T)xs[i], e, ne);
#else
    long b = (long)xs[i];
#endif
#if LOCAL
    atomic_inc(&part[b]);
#else
    atomic_inc(&counts[b]);
#endif
  }
#if LOCAL
  barrier(CLK_LOCAL_MEM_FENCE);
  for (long k = lid; k < nbins; k += ls) if (part[k]) atomic_add(&counts[k], part[k]);
#endif
}
"""

# nanmedian of sorted rows (NaN last): the median of each row's values before its first NaN;
# ``doubled``: (x + x) / 2 for an odd count, as NumPy's masked median computes it
_NANMEDIAN_TEMPLATE = """
__kernel void npg_nanmedian(__global const T* s, __global T* out, __global uchar* all_nan, long rows, long n,
                            int doubled) {
  long r = get_global_id(0);
  if (r >= rows) return;
  __global const T* row = s + r * n;
  long lo = 0, hi = n;
  while (lo < hi) { long mid = lo + (hi - lo) / 2; if (isnan(row[mid])) hi = mid; else lo = mid + 1; }
  all_nan[r] = lo == 0;
  if (lo == 0) { out[r] = row[n - 1]; return; }
  T low = row[(lo - 1) / 2], high = row[lo / 2];
  if (lo % 2 && !doubled) { out[r] = high; return; }
  T total = low + high;
  out[r] = total / (T)2;
}
"""

# numpy.interp (numpy/_core/src/multiarray/compiled_base.c, arr_interp), in float64: the same
# search (the last xp[j] <= x), the same slope and the same retries where the result is NaN
_INTERP_SRC = """
#pragma OPENCL FP_CONTRACT OFF
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void npg_interp(__global const double* x, __global const double* xp, __global const double* fp, long m,
                         double left, double right, __global double* out, long n) {
  long i = get_global_id(0);
  if (i >= n) return;
  double v = x[i];
  if (m == 1) { out[i] = v < xp[0] ? left : (v > xp[0] ? right : fp[0]); return; }  /* (NaN: fp[0]) */
  if (isnan(v)) { out[i] = v; return; }
  if (v > xp[m - 1]) { out[i] = right; return; }
  if (v < xp[0]) { out[i] = left; return; }
  long lo = 0, hi = m;
  while (lo < hi) { long mid = lo + (hi - lo) / 2; if (xp[mid] <= v) lo = mid + 1; else hi = mid; }
  long j = lo - 1;
  if (j == m - 1 || xp[j] == v) { out[i] = fp[j]; return; }
  double slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]);
  double r = slope * (v - xp[j]) + fp[j];
  if (isnan(r)) {
    r = slope * (v - xp[j + 1]) + fp[j + 1];
    if (isnan(r) && fp[j] == fp[j + 1]) r = fp[j];
  }
  out[i] = r;
}
"""

_KINDS = (None, "quicksort", "mergesort", "heapsort", "stable")

#: functions a CPU device runs slower than NumPy (OpenCLBackend.prefers_host keeps them on the host
#: there). Measured on PoCL, 2 cores, 2026-12-01, device arrays against NumPy, n = 10^6: sort float64
#: 770 vs 63 ms, stable argsort 1000 vs 130, median 506 vs 12, unique (int64) 1060 vs 32 (PyOpenCL's
#: radix sort: 16 scan passes of 4 bits); bincount 7 vs 0.9, histogram 31 vs 24 (atomics). Not here:
#: searchsorted (67 vs 62 ms), digitize and interp, binary searches as fast as NumPy's.
HOST_ON_CPU = frozenset({numpy.sort, numpy.argsort, numpy.ndarray.sort, numpy.partition, numpy.argpartition,
                         numpy.lexsort, numpy.unique, numpy.bincount, numpy.histogram, numpy.median,
                         numpy.nanmedian, numpy.quantile, numpy.percentile})


def _sort_accepts(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """A sort this backend runs: a kind NumPy knows or stable=None/True/False (both: NumPy's error),
    no field order."""
    kind = args[2] if len(args) > 2 else kwargs.get("kind")
    order = args[3] if len(args) > 3 else kwargs.get("order")
    stable = kwargs.get("stable")
    return (kind in _KINDS and order is None and stable in (None, True, False) and len(args) <= 4
            and (kind is None or stable is None))


def _partition_accepts(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    kind = args[3] if len(args) > 3 else kwargs.get("kind", "introselect")
    order = args[4] if len(args) > 4 else kwargs.get("order")
    return kind == "introselect" and order is None and len(args) <= 5


def _host_scalar(x: Any) -> bool:
    return isinstance(x, (int, float, numpy.integer, numpy.floating, numpy.bool_)) and not isinstance(x, complex)


def _searchsorted_accepts(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    a = args[0]
    v = args[1] if len(args) > 1 else kwargs.get("v")
    side = args[2] if len(args) > 2 else kwargs.get("side", "left")
    sorter = args[3] if len(args) > 3 else kwargs.get("sorter")
    return (_array_operand(a) and a.ndim == 1 and (_array_operand(v) or _host_scalar(v))
            and side in ("left", "right") and (sorter is None or (_array_operand(sorter) and sorter.ndim == 1
                                                                 and sorter.dtype.kind in "iu")))


def _digitize_accepts(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    x = args[0]
    bins = args[1] if len(args) > 1 else kwargs.get("bins")
    right = args[2] if len(args) > 2 else kwargs.get("right", False)
    return (_array_operand(x) and _array_operand(bins) and bins.ndim == 1
            and isinstance(right, (bool, numpy.bool_)))


def _unique_accepts(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    flags = [*args[1:4], kwargs.get("return_index", False), kwargs.get("return_inverse", False),
             kwargs.get("return_counts", False), kwargs.get("equal_nan", True)]
    axis = args[4] if len(args) > 4 else kwargs.get("axis")
    return (axis is None and kwargs.get("sorted", True) is True and len(args) <= 4
            and all(isinstance(f, (bool, numpy.bool_)) for f in flags))


def _reduced_axis(axis: Any) -> bool:
    """An axis argument of the order statistics here: None, an int, or a non-empty tuple of ints."""
    if isinstance(axis, (tuple, list)):
        return bool(axis) and all(isinstance(d, (int, numpy.integer)) for d in axis)
    return axis is None or isinstance(axis, (int, numpy.integer))


def _quantile_accepts(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    a = args[0]
    q = args[1] if len(args) > 1 else kwargs.get("q")
    axis = args[2] if len(args) > 2 else kwargs.get("axis")
    if len(args) > 3 or kwargs.get("out") is not None or kwargs.get("weights") is not None:
        return False
    if kwargs.get("method", "linear") != "linear" or kwargs.get("interpolation") is not None:
        return False
    if not _reduced_axis(axis) or a.ndim == 0:
        return False
    if _array_operand(q):  # (an array of quantiles: read on the host by the implementation)
        kind, size = q.dtype.kind, q.size
    else:
        try:
            qa = numpy.asarray(q)
        except (TypeError, ValueError):
            return False
        kind, size = qa.dtype.kind, qa.size
    return kind in "biuf" and size > 0 and a.size > 0 and isinstance(kwargs.get("keepdims", False), bool)


def _median_accepts(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    a = args[0]
    axis = args[1] if len(args) > 1 else kwargs.get("axis")
    # (a 0-d array's median is NumPy's Python float; an empty one NumPy's NaN with its warning)
    return (len(args) <= 2 and kwargs.get("out") is None and a.size > 0 and a.ndim > 0 and _reduced_axis(axis)
            and isinstance(kwargs.get("keepdims", False), bool))


def _nanmedian_accepts(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    return _median_accepts(args, kwargs)


def _lexsort_accepts(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    keys = args[0] if args else kwargs.get("keys")
    axis = args[1] if len(args) > 1 else kwargs.get("axis", -1)
    if isinstance(keys, (tuple, list)):
        arrays = list(keys)
    elif _array_operand(keys) and keys.ndim >= 1:
        arrays = [keys]
    else:
        return False
    return (bool(arrays) and all(_array_operand(k) and k.dtype.kind in "biuf" for k in arrays)
            and isinstance(axis, (int, numpy.integer)) and not isinstance(axis, bool))


def _interp_accepts(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    x, xp, fp = (list(args[:3]) + [kwargs.get(k) for k in ("x", "xp", "fp")[len(args):]])[:3]
    bounds = [*args[3:5], kwargs.get("left"), kwargs.get("right")]
    period = args[5] if len(args) > 5 else kwargs.get("period")
    return (period is None and (_array_operand(x) or _host_scalar(x))
            and all(_array_operand(v) and v.ndim == 1 and v.dtype.kind in "biuf" for v in (xp, fp))
            and all(b is None or (_host_scalar(b) and not isinstance(b, (bool, numpy.bool_))) for b in bounds))


def _bincount_accepts(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    x = args[0]
    weights = args[1] if len(args) > 1 else kwargs.get("weights")
    minlength = args[2] if len(args) > 2 else kwargs.get("minlength", 0)
    return (x.ndim == 1 and (x.dtype.kind in "bi" or (x.dtype.kind == "u" and x.dtype.itemsize < 8))
            and (weights is None or (_array_operand(weights) and weights.shape == x.shape
                                     and weights.dtype == numpy.float64))
            and isinstance(minlength, (int, numpy.integer)) and not isinstance(minlength, bool) and minlength >= 0)


def _histogram_accepts(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    a = args[0]
    bins = args[1] if len(args) > 1 else kwargs.get("bins", 10)
    weights = args[4] if len(args) > 4 else kwargs.get("weights")
    if isinstance(bins, str) or a.dtype.kind not in "biuf":
        return False
    # weights: float64 ones over equal bins (NumPy's block sums, repeated exactly); its cumulative
    # sums over other edges are NumPy's to round
    return weights is None or (_array_operand(weights) and weights.shape == a.shape
                               and weights.dtype == numpy.float64 and not numpy.ndim(bins))


class Sorting(Backend):
    """Sorts (radix sort of keys), searches, unique values, counts and order statistics."""

    # -- the sort ---------------------------------------------------------------------------------
    def _radix(self, index64: bool) -> Any:
        """PyOpenCL's RadixSort of (ulong keys, positions), built once per backend."""
        key = ("radix", index64)
        with self._lock:
            sorter = self._kernels.get(key)
        if sorter is None:
            from pyopencl.algorithm import RadixSort

            cl = self._cl
            try:  # (its programs build here: with Launch._build's options, its warnings silenced, its errors)
                with _BUILD_LOCK, warnings.catch_warnings():
                    warnings.simplefilter("ignore", cl.CompilerWarning)
                    sorter = RadixSort(self.context, "ulong *keys, long *idx", "keys[i]", ["keys", "idx"],
                                       _RADIX_BITS, numpy.int64 if index64 else numpy.int32, numpy.uint64,
                                       options=self._build_options)
            except cl.RuntimeError as exc:
                if exc.code != cl.status_code.BUILD_PROGRAM_FAILURE:
                    self._raise_fault(exc, "a kernel build")
                raise KernelBuildError("OpenCL", _compiler_errors(str(exc))) from exc
            with self._lock:
                sorter = self._kernels.setdefault(key, sorter)
        return sorter

    def _as_cl_array(self, a: CLArray) -> Any:
        import pyopencl.array as cla

        return cla.Array(self.queue, (a.size,), a.dtype, data=a.data, offset=a.offset)

    def _from_cl_array(self, x: Any) -> CLArray:
        return CLArray(self, x.base_data, x.shape, x.dtype, offset=x.offset)

    def _run_radix(self, sorter: Any, args: list[Any], key_bits: int) -> tuple[Any, ...]:
        cl = self._cl
        try:
            with self._lock:  # (its kernels' arguments are state shared by threads, as _enqueue's)
                result, _ = sorter(*args, key_bits=key_bits, queue=self.queue)
        except cl.Error as exc:
            self._raise_fault(exc, "a sort")
        return result

    def sort_order(self, c: CLArray, row: int, perm: CLArray | None = None) -> CLArray:
        """The flat positions of contiguous ``c`` in the order of a stable sort of each row of ``row``
        elements (``perm``: sort ``c[perm]`` instead, returning positions of ``c``)."""
        n = c.size
        _, bits = _KEYS[_code(c.dtype)]
        kernel = self._build(("sort_keys", c.dtype), lambda: _kernel_source(_key_source(c.dtype), "npg_sort_keys"))
        keys = self.empty((n,), numpy.uint64)
        idx = self.empty((n,), numpy.int64)
        self._launch(kernel, n, [c.data, numpy.int64(c.offset), (perm if perm is not None else idx).data,
                                 numpy.int32(perm is not None), keys.data, idx.data, numpy.int64(n)])
        sorter = self._radix(n >= 2**31 - 1)
        _, positions = self._run_radix(sorter, [self._as_cl_array(keys), self._as_cl_array(idx)], bits)
        rows = n // row if row else 0
        if rows > 1:  # then each position to its row, stably: every row sorted in place
            kernel = self._build(("sort_row_keys",), lambda: _kernel_source(_ROW_KEYS_SRC, "npg_row_keys"))
            self._launch(kernel, n, [positions.base_data, numpy.int64(positions.offset), keys.data,
                                     numpy.int64(row), numpy.int64(n)])
            _, positions = self._run_radix(sorter, [self._as_cl_array(keys), positions], (rows - 1).bit_length())
        return self._from_cl_array(positions)

    def _take_sorted(self, c: CLArray, idx: CLArray, row: int, values: bool, positions: bool
                     ) -> tuple[CLArray | None, CLArray | None]:
        n = c.size
        vals = self.empty((n,), c.dtype) if values else None
        pos = self.empty((n,), numpy.int64) if positions else None
        kernel = self._build(("sort_take", c.dtype), lambda: _kernel_source(_take_source(c.dtype), "npg_sort_take"))
        self._launch(kernel, n, [c.data, numpy.int64(c.offset), idx.data, (vals or idx).data, (pos or idx).data,
                                 numpy.int64(max(row, 1)), numpy.int64(n), numpy.int32(values), numpy.int32(positions)])
        return vals, pos

    def _rows_last(self, a: CLArray, axis: Any) -> tuple[CLArray, int, tuple[int, ...] | None]:
        """``a`` contiguous with the sort axis last: (array, axis length, the axes order to undo or
        None when the axis already was last; axis None: the flattened array)."""
        if axis is None:
            flat = self.reshape(a if a.c_contiguous else self.copy(a), (a.size,))
            return flat, a.size, None
        ax = normalize_axis_index(operator.index(axis), a.ndim)
        order = tuple(d for d in range(a.ndim) if d != ax) + (ax,)
        moved = a.view(tuple(a.shape[d] for d in order), tuple(a.strides[d] for d in order), a.offset)
        c = moved if moved.c_contiguous else self.copy(moved)
        return c, a.shape[ax], (order if ax != a.ndim - 1 else None)

    def _restore(self, result: CLArray, shape: tuple[int, ...], order: tuple[int, ...] | None) -> CLArray:
        """The moved-axis result laid back in NumPy's C order."""
        if order is None:
            return CLArray(self, result.data, shape, result.dtype, offset=result.offset)
        moved_shape = tuple(shape[d] for d in order)
        view = CLArray(self, result.data, moved_shape, result.dtype, offset=result.offset)
        back = numpy.argsort(order)
        return self.copy(view.view(shape, tuple(view.strides[k] for k in back), view.offset))

    def sorted_along(self, a: CLArray, axis: Any, values: bool = True, positions: bool = False
                     ) -> tuple[CLArray | None, CLArray | None]:
        """(sorted values, argsort positions) along ``axis`` (None: flattened), NumPy's layout."""
        c, row, order = self._rows_last(a, axis)
        shape = (a.size,) if axis is None else a.shape
        if c.size == 0:
            return (self.empty(shape, a.dtype) if values else None,
                    self.empty(shape, numpy.int64) if positions else None)
        idx = self.sort_order(c, row)
        vals, pos = self._take_sorted(c, idx, row, values, positions)
        return (None if vals is None else self._restore(vals, shape, order),
                None if pos is None else self._restore(pos, shape, order))

    @implements(numpy.sort, kwargs=("axis", "kind", "order", "stable"), accepts=_sort_accepts)
    def sort(self, a: CLArray, axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> CLArray:
        return self.sorted_along(a, axis)[0]

    @implements(numpy.argsort, kwargs=("axis", "kind", "order", "stable"), accepts=_sort_accepts)
    def argsort(self, a: CLArray, axis: Any = -1, kind: Any = None, order: Any = None, *,
                stable: Any = None) -> CLArray:
        return self.sorted_along(a, axis, values=False, positions=True)[1]

    @implements(numpy.ndarray.sort, kwargs=("axis", "kind", "order", "stable"), accepts=_sort_accepts)
    def sort_in_place(self, a: CLArray, axis: Any = -1, kind: Any = None, order: Any = None, *,
                      stable: Any = None) -> None:
        if axis is None:  # NumPy's message (ndarray.sort takes no axis=None)
            raise TypeError("'NoneType' object cannot be interpreted as an integer")
        result = self.sorted_along(a, axis)[0]
        self.copy_into(a, result)

    def _dense(self, a: CLArray, dtype: Any) -> CLArray:
        """``a`` as ``dtype``, contiguous from the start of its buffer (what the kernels here index)."""
        if a.dtype == dtype and a.c_contiguous and a.offset == 0:
            return a
        return self.copy(a, dtype)

    def _host_argument(self, x: Any) -> Any:
        """A parameter given as a list, which the core made a device array: its host values."""
        return self.to_host(x) if isinstance(x, CLArray) else x

    def _check_kth(self, a: CLArray, kth: Any, axis: Any) -> None:
        """NumPy's errors for ``kth`` (out of bounds, not integers), from a one-byte-per-element row."""
        length = a.size if axis is None else a.shape[normalize_axis_index(operator.index(axis), a.ndim)]
        numpy.partition(numpy.zeros(length, numpy.bool_), kth)

    @implements(numpy.partition, kwargs=("kth", "axis", "kind", "order"), accepts=_partition_accepts)
    def partition(self, a: CLArray, kth: Any, axis: Any = -1, kind: str = "introselect", order: Any = None) -> CLArray:
        """A full sort: a partition for every kth (the values at each kth are NumPy's)."""
        kth = self._host_argument(kth)
        if a.ndim == 0:
            numpy.partition(numpy.zeros((), a.dtype), kth, axis)  # (NumPy's error)
        self._check_kth(a, kth, axis)
        return self.sorted_along(a, axis)[0]

    @implements(numpy.argpartition, kwargs=("kth", "axis", "kind", "order"), accepts=_partition_accepts)
    def argpartition(self, a: CLArray, kth: Any, axis: Any = -1, kind: str = "introselect",
                     order: Any = None) -> CLArray:
        kth = self._host_argument(kth)
        if a.ndim == 0:
            numpy.argpartition(numpy.zeros((), a.dtype), kth, axis)
        self._check_kth(a, kth, axis)
        return self.sorted_along(a, axis, values=False, positions=True)[1]

    # -- searches ---------------------------------------------------------------------------------
    def _search(self, a: CLArray, v: Any, right: bool, sorter: CLArray | None = None) -> CLArray:
        if isinstance(v, CLArray):
            dt = numpy.result_type(a.dtype, v.dtype)
            vv = self._dense(v, dt)
        else:
            dt = numpy.result_type(a.dtype, numpy.asarray(v).dtype)
            vv = self.from_host(numpy.asarray(v, dt))
        aa = self._dense(a, dt)
        out = self.empty(vv.shape, numpy.int64)
        if vv.size == 0:
            return out
        if sorter is not None:
            if sorter.size != a.size:
                raise ValueError("sorter.size must equal a.size")
            sorter = self._dense(sorter, numpy.int64)
        kernel = self._build(("search", dt), lambda: _kernel_source(_search_source(dt), "npg_search"))
        self._launch(kernel, vv.size, [aa.data if aa.size else out.data, numpy.int64(aa.size),
                                       (sorter if sorter is not None else out).data, numpy.int32(sorter is not None),
                                       vv.data, out.data, numpy.int64(vv.size), numpy.int32(right)])
        if sorter is not None and int(self.to_host(self.reduce_op("minimum", out))) < 0:
            raise ValueError("Sorter index out of range.")
        return out

    @implements(numpy.searchsorted, kwargs=("v", "side", "sorter"), accepts=_searchsorted_accepts)
    def searchsorted(self, a: CLArray, v: Any, side: str = "left", sorter: CLArray | None = None) -> CLArray:
        return self._search(a, v, side == "right", sorter)

    @implements(numpy.digitize, kwargs=("bins", "right"), accepts=_digitize_accepts)
    def digitize(self, x: CLArray, bins: CLArray, right: bool = False) -> CLArray:
        edges = self.to_host(bins)  # (the bins: a few values whose order NumPy checks)
        numpy.digitize(numpy.empty(0, x.dtype), edges, right)  # NumPy's errors (not monotonic)
        changes = numpy.flatnonzero(edges[1:] != edges[:-1])
        if changes.size and edges[changes[0] + 1] < edges[changes[0]]:  # decreasing
            reversed_bins = self.copy(bins.view(bins.shape, (-bins.strides[0],),
                                                bins.offset + (bins.size - 1) * bins.strides[0]))
            return self.ufunc_call(numpy.subtract, (bins.size, self._search(reversed_bins, x, not right)))
        return self._search(bins, x, not right)

    @implements(numpy.lexsort, kwargs=("axis",), accepts=_lexsort_accepts)
    def lexsort(self, keys: Any, axis: int = -1) -> CLArray:
        """Stable sorts by each key in turn, the last key the primary one (NumPy's order)."""
        if isinstance(keys, CLArray):  # the rows of an array are the keys
            if keys.ndim == 1:
                keys = [keys]
            else:
                keys = [keys.view(keys.shape[1:], keys.strides[1:], keys.offset + k * keys.strides[0])
                        for k in range(keys.shape[0])]
        shape = keys[0].shape
        if any(k.shape != shape for k in keys):
            raise ValueError("all keys need to be the same shape")
        if not shape:
            numpy.lexsort([numpy.zeros((), k.dtype) for k in keys], axis)  # (NumPy's answer or error for 0-d)
            return self.empty((), numpy.int64)
        rows = [self._rows_last(k, axis) for k in keys]
        c, row, order = rows[0]
        if c.size == 0:
            return self.empty(shape, numpy.int64)
        perm = None
        for key, _, _ in rows:
            perm = self.sort_order(key, row, perm)
        assert perm is not None
        _, pos = self._take_sorted(c, perm, row, False, True)
        assert pos is not None
        return self._restore(pos, shape, order)

    @implements(numpy.interp, kwargs=("x", "xp", "fp", "left", "right", "period"), accepts=_interp_accepts)
    def interp(self, x: Any, xp: CLArray, fp: CLArray, left: Any = None, right: Any = None,
               period: Any = None) -> CLArray:
        if fp.size != xp.size:
            raise ValueError("fp and xp are not of the same length.")
        if xp.size == 0:
            raise ValueError("array of sample points is empty")
        f8 = numpy.dtype(numpy.float64)
        xs = x if isinstance(x, CLArray) else self.from_host(numpy.asarray(x, f8))
        xs, xps, fps = (self._dense(v, f8) for v in (xs, xp, fp))
        # NumPy's search starts from its guess of the element before: sample points that are not
        # increasing (or hold NaN) get answers only that sequential search gives (an out-of-range
        # read here, before: xp = [nan, 1] answered 0.0 or NaN by chance)
        n = xps.size  # (xps: float64, whatever xp's dtype)
        disorder = self.reduction("any", self.ufunc_call(numpy.isnan, (xps,)))
        if n > 1:
            step = xps.strides[0]
            falls = self.ufunc_call(numpy.less, (xps.view((n - 1,), (step,), xps.offset + step),
                                                 xps.view((n - 1,), (step,), xps.offset)))
            disorder = self.ufunc_call(numpy.logical_or, (disorder, self.reduction("any", falls)))
        if bool(self.to_host(disorder)):
            raise NeedsNumpyError("interp of sample points xp that are not increasing: NumPy's search, "
                                  "element by element")
        low = float(self.to_host(self._column(fps, 0))) if left is None else float(left)
        high = float(self.to_host(self._column(fps, -1))) if right is None else float(right)
        out = self.empty(xs.shape, f8)
        if xs.size:
            kernel = self._build(("interp",), lambda: _kernel_source(_INTERP_SRC, "npg_interp"))
            self._launch(kernel, xs.size, [xs.data, xps.data, fps.data, numpy.int64(xps.size), f8.type(low),
                                           f8.type(high), out.data, numpy.int64(xs.size)])
        return out

    # -- unique -----------------------------------------------------------------------------------
    @implements(numpy.unique, kwargs=("return_index", "return_inverse", "return_counts", "axis", "equal_nan",
                                      "sorted"), accepts=_unique_accepts)
    def unique(self, ar: CLArray, return_index: bool = False, return_inverse: bool = False,
               return_counts: bool = False, axis: Any = None, *, equal_nan: bool = True, sorted: bool = True) -> Any:  # noqa: A002
        c, n, _ = self._rows_last(ar, None)
        wanted = [return_index, return_inverse, return_counts]
        if n == 0:
            outs = [self.empty((0,), ar.dtype), self.empty((0,), numpy.int64),
                    self.empty(ar.shape, numpy.int64), self.empty((0,), numpy.int64)]
            return _unique_result(outs, wanted)
        idx = self.sort_order(c, n)
        s, _ = self._take_sorted(c, idx, n, True, False)
        assert s is not None
        heads = self.empty((n,), numpy.int64)
        dt = ar.dtype
        kernel = self._build(("unique_heads", dt), lambda: _kernel_source(_heads_source(dt), "npg_unique_heads"))
        self._launch(kernel, n, [s.data, heads.data, numpy.int64(n), numpy.int32(bool(equal_nan))])
        group = self.cumulative("cumsum", heads)
        u = int(self.to_host(group.view((), (), group.offset + (n - 1) * 8)))
        uniq = self.empty((u,), dt)
        first = self.empty((u,), numpy.int64)
        start = self.empty((u,), numpy.int64)
        inv = self.empty(ar.shape, numpy.int64)
        program = _kernel_source(_unique_source(dt), "npg_unique_scatter")
        kernel = self._build(("unique_scatter", dt), lambda: program)
        self._launch(kernel, n, [s.data, idx.data, group.data, uniq.data, first.data, start.data, inv.data,
                                 numpy.int64(n), numpy.int32(return_index), numpy.int32(return_inverse)])
        counts = None
        if return_counts:
            counts = self.empty((u,), numpy.int64)
            kernel = self._build(("unique_counts", dt), lambda: _kernel_source(program.source, "npg_unique_counts"))
            self._launch(kernel, u, [start.data, counts.data, numpy.int64(u), numpy.int64(n)])
        return _unique_result([uniq, first, inv, counts], wanted)

    # -- counts -----------------------------------------------------------------------------------
    def _count(self, x: CLArray, nbins: int, edges: CLArray | None = None) -> CLArray:
        """int64 counts of each value 0..nbins-1 of ``x`` (one dimension, fewer than 2**32 values), or
        with ``edges`` of each histogram bin (nbins: the bins and one for values outside)."""
        n = x.size
        counts = self.empty((nbins,), numpy.uint32)
        self.fill(counts, 0)
        src = x if x.c_contiguous else self.copy(x)
        hist = edges is not None
        local = 4 * nbins <= min(self.device.local_mem_size // 2, 32 << 10)
        et = edges.dtype if edges is not None else src.dtype
        source = (_header(src.dtype, et) + f"typedef {_table.ctype(src.dtype)} X;\ntypedef {_table.ctype(et)} T;\n"
                  f"#define HIST {int(hist)}\n#define LOCAL {int(local)}\n" + (_BIN_SEARCH if hist else "")
                  + _COUNT_TEMPLATE)
        kernel = self._build(("count", src.dtype, et, hist, local), lambda: _kernel_source(source, "npg_count"))
        ls = self.local_size
        groups = max(1, min(-(-n // ls), self.device.max_compute_units * (4 if self.is_cpu else 32)))
        args = [src.data, numpy.int64(src.offset), (edges if edges is not None else counts).data,
                numpy.int64(0 if edges is None else edges.size), counts.data, numpy.int64(nbins), numpy.int64(n),
                self._cl.LocalMemory(4 * nbins if local else 4)]
        self._enqueue(kernel, (groups * ls,), (ls,), args)
        return self.copy(counts, numpy.int64)

    def _bincount(self, x: CLArray, weights: CLArray | None, nbins: int, block: int = 0) -> CLArray:
        """Counts (int64) or weight sums (float64) of each bin value 0..nbins-1 of non-negative integer
        ``x`` (one dimension); weights are summed in NumPy's order (``block``: NumPy's histogram blocks)."""
        n = x.size
        if weights is None and 0 < n < 2**32 and nbins:
            return self._count(x, nbins)
        xs = self._dense(x, numpy.int64)
        out = self.empty((nbins,), numpy.int64 if weights is None else numpy.float64)
        if nbins == 0:
            return out
        perm = self.sort_order(xs, n) if n else xs
        s, _ = self._take_sorted(xs, perm, n, True, False) if n else (xs, None)
        assert s is not None
        if weights is None:
            kernel = self._build(("bincount",), lambda: _kernel_source(_COUNTS_SRC, "npg_bincount"))
            self._launch(kernel, nbins, [s.data if n else out.data, out.data, numpy.int64(n), numpy.int64(nbins)])
            return out
        w = self._dense(weights, numpy.float64)
        kernel = self._build(("binsums",), lambda: _kernel_source(_SUMS_SRC, "npg_binsums"))
        self._launch(kernel, nbins, [s.data if n else out.data, perm.data if n else out.data,
                                     w.data if n else out.data, out.data, numpy.int64(n), numpy.int64(nbins),
                                     numpy.int64(block)])
        return out

    @implements(numpy.bincount, kwargs=("weights", "minlength"), accepts=_bincount_accepts)
    def bincount(self, x: CLArray, weights: CLArray | None = None, minlength: int = 0) -> CLArray:
        nbins = int(minlength)
        if not x.size:  # (NumPy's counts of nothing: int64 zeros, with weights too)
            return self._bincount(x, None, nbins)
        if x.size:
            if x.dtype.kind == "i" and int(self.to_host(self.reduce_op("minimum", x))) < 0:
                raise ValueError("'list' argument must have no negative elements")
            nbins = max(nbins, int(self.to_host(self.reduce_op("maximum", x))) + 1)
        return self._bincount(x, weights, nbins)

    @implements(numpy.histogram, kwargs=("bins", "range", "density", "weights"), accepts=_histogram_accepts)
    def histogram(self, a: CLArray, bins: Any = 10, range: Any = None, density: Any = None,  # noqa: A002
                  weights: CLArray | None = None) -> tuple[CLArray, CLArray]:
        """NumPy's edges (its own code, from a stand-in holding a's min and max), binned here."""
        bins = self._host_argument(bins)
        flat = self.reshape(a if a.c_contiguous else self.copy(a), (a.size,))
        if range is None and not numpy.ndim(bins) and a.size:
            low = self.to_host(self.reduce_op("minimum", flat))
            high = self.to_host(self.reduce_op("maximum", flat))
            stand_in = numpy.array([low, high], a.dtype)
        else:
            stand_in = numpy.zeros(0, a.dtype)
        edges = numpy.histogram_bin_edges(stand_in, bins, range)
        uniform = not numpy.ndim(bins)  # (NumPy's equal bins: computed, then corrected by the edges)
        nb = edges.size - 1
        # NumPy compares in the edges' dtype (equal bins) or the common one (searchsorted on edges)
        dt = edges.dtype if uniform else numpy.result_type(a.dtype, edges.dtype)
        dev_edges = self.from_host(edges.astype(dt))
        if weights is None and a.size < 2**32:
            counts = self._count(flat, nb + 1, dev_edges) if a.size else self._bincount(flat, None, nb + 1)
            hist = self.copy(counts.view((nb,), counts.strides, counts.offset))
        else:
            # each value's bin, then the weights summed in NumPy's order (its equal bins add one
            # bincount per block of 65536 values: numpy/lib/_histograms_impl.py)
            bin_of = self.empty((a.size,), numpy.int64)
            if a.size:
                src = _header(flat.dtype, dt) + (f"typedef {_table.ctype(flat.dtype)} X;\n"
                                                 f"typedef {_table.ctype(dt)} T;\n") + _BINS_TEMPLATE
                kernel = self._build(("hist_bins", flat.dtype, dt), lambda: _kernel_source(src, "npg_hist_bins"))
                self._launch(kernel, a.size, [flat.data, numpy.int64(flat.offset), dev_edges.data,
                                              numpy.int64(edges.size), bin_of.data, numpy.int64(a.size)])
            w = None if weights is None else self.reshape(weights if weights.c_contiguous else self.copy(weights),
                                                          (weights.size,))
            sums = self._bincount(bin_of, w, nb + 1, 65536 if uniform else 0)
            hist = self.copy(sums.view((nb,), sums.strides, sums.offset))
        edges_out = self.from_host(edges)
        if density:
            db = self.from_host(numpy.diff(edges).astype(float))
            total = self.reduction("sum", hist)
            hist = self.ufunc_call(numpy.true_divide, (self.ufunc_call(numpy.true_divide, (hist, db)), total))
        return hist, edges_out

    # -- order statistics -------------------------------------------------------------------------
    def _ordered_rows(self, a: CLArray, axis: Any) -> tuple[CLArray, int, tuple[int, ...], tuple[int, ...]]:
        """The values over ``axis`` (an int, a tuple of axes or None: all) as sorted rows, last:
        (sorted, the row length, the kept axes' shape, the reduced axes), NumPy's _ureduce layout."""
        axes = tuple(range(a.ndim)) if axis is None else normalize_axis_tuple(axis, a.ndim)
        kept = tuple(d for d in range(a.ndim) if d not in axes)
        order = kept + axes
        rest = tuple(a.shape[d] for d in kept)
        n = math.prod(a.shape[d] for d in axes)
        moved = a.view(tuple(a.shape[d] for d in order), tuple(a.strides[d] for d in order), a.offset)
        c = moved if moved.c_contiguous else self.copy(moved)
        c = CLArray(self, c.data, rest + (n,), c.dtype, offset=c.offset)
        idx = self.sort_order(c, n)
        s, _ = self._take_sorted(c, idx, n, True, False)
        assert s is not None
        return CLArray(self, s.data, rest + (n,), s.dtype), n, rest, axes

    @staticmethod
    def _column(s: CLArray, k: int) -> CLArray:
        """The view s[..., k] (k may be negative)."""
        k = k % s.shape[-1]
        return s.view(s.shape[:-1], s.strides[:-1], s.offset + k * s.strides[-1])

    def _nan_rows(self, s: CLArray, result: CLArray) -> CLArray:
        """Where a row holds NaN (its last sorted value), that NaN (NumPy's _median_nancheck)."""
        if s.dtype.kind != "f":
            return result
        last = self._column(s, -1)
        return self.where(self.ufunc_call(numpy.isnan, (last,)), last, result)

    @staticmethod
    def _keep(result: CLArray, a: CLArray, axes: tuple[int, ...], keepdims: bool, lead: tuple[int, ...] = ()
              ) -> CLArray:
        if not keepdims:
            return result
        shape = lead + tuple(1 if d in axes else a.shape[d] for d in range(a.ndim))
        return CLArray(result.backend, result.data, shape, result.dtype, offset=result.offset)

    @implements(numpy.median, kwargs=("axis", "out", "overwrite_input", "keepdims"), accepts=_median_accepts)
    def median(self, a: CLArray, axis: Any = None, out: Any = None, overwrite_input: bool = False,
               keepdims: bool = False) -> CLArray:
        s, n, _, axes = self._ordered_rows(a, axis)
        mean_dt = numpy.mean(numpy.zeros(1, a.dtype)).dtype
        high = self._column(s, n // 2)
        if n % 2:
            result = self.copy(high, mean_dt)
        else:
            total = self.ufunc_call(numpy.add, (self._column(s, n // 2 - 1), high), dtype=mean_dt,
                                    errstate=_fperr.current())
            result = self.ufunc_call(numpy.true_divide, (total, 2), dtype=mean_dt)
        result = self._nan_rows(s, result)
        return self._keep(result, a, axes, keepdims)

    @implements(numpy.nanmedian, kwargs=("axis", "out", "overwrite_input", "keepdims"),
                accepts=_nanmedian_accepts)
    def nanmedian(self, a: CLArray, axis: Any = None, out: Any = None, overwrite_input: bool = False,
                  keepdims: bool = False) -> CLArray:
        """NumPy's nanmedian (numpy/lib/_nanfunctions_impl.py): the median of each row's non-NaN values,
        NaN and an "All-NaN slice encountered" warning per row that has none."""
        if a.dtype.kind != "f":  # (no NaN: NumPy's answer is the median's)
            return self.median(a, axis, keepdims=keepdims)
        s, n, rest, axes = self._ordered_rows(a, axis)
        rows = math.prod(rest)
        one_row = axis is None or not rest  # NumPy's one-dimensional road: the median of the compressed row
        result = self.empty(rest, a.dtype)
        all_nan = self.empty(rest, numpy.bool_)
        t = _table.ctype(a.dtype)
        src = _header(a.dtype) + f"typedef {t} T;\n" + _NANMEDIAN_TEMPLATE
        kernel = self._build(("nanmedian", a.dtype), lambda: _kernel_source(src, "npg_nanmedian"))
        self._launch(kernel, rows, [s.data, result.data, all_nan.data, numpy.int64(rows), numpy.int64(n),
                                    numpy.int32(not one_row and n < 600)])
        empty_rows = int(self.to_host(self.reduction("sum", all_nan)))
        for _ in range(1 if one_row and empty_rows else empty_rows):
            warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=2)
        return self._keep(result, a, axes, keepdims)

    def _quantile(self, a: CLArray, qa: numpy.ndarray, axis: Any, keepdims: bool, weak: bool) -> CLArray:
        """NumPy's 'linear' quantiles (numpy/lib/_function_base_impl.py, _quantile and _lerp): the
        positions and weights computed as NumPy does on the host, the interpolation here."""
        s, n, rest, axes = self._ordered_rows(a, axis)
        virtual = numpy.asanyarray((n - 1) * qa)
        columns = []
        if virtual.dtype.kind in "iu":  # integer quantiles: the values at those positions
            for k in virtual.ravel():
                columns.append(self.copy(self._column(s, int(k))))
        else:
            prev = numpy.array(numpy.floor(virtual))
            nxt = numpy.array(prev + 1)
            above = virtual >= n - 1
            prev[above] = -1
            nxt[above] = -1
            prev[virtual < 0] = 0
            nxt[virtual < 0] = 0
            prev_i, next_i = prev.astype(numpy.intp), nxt.astype(numpy.intp)
            gamma = numpy.asanyarray(numpy.asanyarray(virtual - prev_i), dtype=virtual.dtype)
            for k in range(virtual.size):
                t: Any = float(gamma.ravel()[k]) if weak else gamma.ravel()[k]
                low = self._column(s, int(prev_i.ravel()[k]))
                high = self._column(s, int(next_i.ravel()[k]))
                # NumPy's _lerp, operation by operation (its floating-point warnings too)
                state = _fperr.current()
                diff = self.ufunc_call(numpy.subtract, (high, low), errstate=state)
                step = self.ufunc_call(numpy.multiply, (diff, t), errstate=state)
                value = self.ufunc_call(numpy.add, (low, step), errstate=state)
                if t >= 0.5:
                    step = self.ufunc_call(numpy.multiply, (diff, 1 - t), errstate=state)
                    value = self.ufunc_call(numpy.subtract, (high, step), dtype=value.dtype, casting="unsafe",
                                            errstate=state)
                columns.append(value)
        columns = [self._nan_rows(s, col) for col in columns]
        result = self.empty(qa.shape + rest, columns[0].dtype)
        count = math.prod(rest)
        for k, col in enumerate(columns):
            self.copy_into(CLArray(self, result.data, rest, result.dtype, offset=k * count * result.itemsize), col)
        return self._keep(result, a, axes, keepdims, qa.shape)


_QUANTILE_KWARGS = ("q", "axis", "out", "overwrite_input", "method", "keepdims", "weights", "interpolation")


def _quantile_function(percent: bool) -> Any:
    """numpy.quantile (or numpy.percentile: q in percent): NumPy's checks of q, then Sorting._quantile."""
    def impl(self: Sorting, a: CLArray, q: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
             method: str = "linear", keepdims: bool = False, *, weights: Any = None, interpolation: Any = None
             ) -> CLArray:
        weak = type(q) in (int, float)  # (NumPy: a Python number q gives weak promotion of the result)
        q = self._host_argument(q)
        qa = numpy.asanyarray(numpy.true_divide(q, 100) if percent else q)
        if not numpy.all((qa >= 0) & (qa <= 1)):
            what, top = ("Percentiles", 100) if percent else ("Quantiles", 1)
            raise ValueError(f"{what} must be in the range [0, {top}]")
        return self._quantile(a, qa, axis, keepdims, weak)

    return impl


implements(numpy.quantile, kwargs=_QUANTILE_KWARGS, accepts=_quantile_accepts)(_quantile_function(False))
implements(numpy.percentile, kwargs=_QUANTILE_KWARGS, accepts=_quantile_accepts)(_quantile_function(True))


def _kernel_source(source: str, name: str) -> codegen.KernelSource:
    return codegen.KernelSource(source, name, "opencl", (), "cl_khr_fp64" in source)


def _unique_result(outs: list[Any], wanted: list[bool]) -> Any:
    uniq, first, inv, counts = outs
    extra = [x for x, want in zip((first, inv, counts), wanted, strict=True) if want]
    return (uniq, *extra) if extra else uniq
