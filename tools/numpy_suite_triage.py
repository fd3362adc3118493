#!/usr/bin/env python3
"""Triage of the failures tools/numpy_suite.py finds: root-cause groups, their counts, and repros.

Each group is a rule over a failure record (test id, exception, message, the test's line) and a
few lines of code that show the cause on its own, run as NumPy and under npgpu on every device
backend available. The first group whose rule matches takes the failure; what no rule matches is
listed as unexplained, so a new kind of failure shows up instead of hiding in a group.

    python3 tools/numpy_suite.py && python3 tools/numpy_suite.py --host-asserts --build-dir build/numpy_suite_ha
    python3 tools/numpy_suite_triage.py                     # group counts of the last run(s)
    python3 tools/numpy_suite_triage.py --repros            # and run every group's repro
    python3 tools/numpy_suite_triage.py --write tools/numpy_suite_triage.md
"""

from __future__ import annotations

import argparse
import re
import sys
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TOOLS = Path(__file__).resolve().parent
sys.path.insert(0, str(TOOLS))

import numpy_suite as ns  # noqa: E402  (tools/ is not a package)

HOST_ASSERTS_BUILD = ns.REPO / "build" / "numpy_suite_ha"


@dataclass
class Group:
    key: str
    title: str
    kind: str  # "wrong" (an answer without an error), "exception", "off"
    cause: str  # what goes wrong, and where to look
    repro: str  # code using `np`; its `r` is printed (or the exception it raises)
    tests: str = ""  # regex over the node id
    msg: str = ""  # regex over the message
    line: str = ""  # regex over the test's source line that failed
    exc: str = ""  # regex over the exception type
    backends: frozenset[str] = frozenset()
    categories: frozenset[str] = frozenset()

    def matches(self, f: ns.Failure) -> bool:
        r = f.record
        checks = ((self.tests, f.nodeid), (self.msg, r.get("message", "")), (self.line, r.get("test_line", "")),
                  (self.exc, r.get("exc_type", "")))
        if any(pattern and not re.search(pattern, text, re.S) for pattern, text in checks):
            return False
        if self.backends and f.backend not in self.backends:
            return False
        return not self.categories or f.category in self.categories


OFF = frozenset({"off"})
DEVICE = frozenset(ns.DEVICE_MODES)
CL = frozenset({"opencl"})
EMU = frozenset({"emulated", "cupy"})
WRONG = frozenset({"wrong-answer", "missing-error"})


def _same_value_printed(message: str) -> bool:
    """Whether an assert_equal message shows ACTUAL and DESIRED holding the same values in other types
    (``np.int64(4)`` against ``4``, ``np.int8(0)`` against ``array(0, dtype=int8)``, ``array([5])``
    against ``5``, ``array([nan, nan])`` against ``nan``): the scalar branch's isscalar check failed."""
    m = re.search(r"ACTUAL: (.+?)\s+DESIRED: (.+)$", " ".join(message.split()))
    if not m:
        return False

    def values(text: str) -> set[complex] | None:
        text = re.sub(r"np\.(True|False)_", r" \1", re.sub(r"dtype=[\w'<>]+", "", text))
        tokens = re.findall(r"(?<![\w.])(?:nan|-?inf|True|False|[-+]?\d+\.?\d*(?:e[-+]?\d+)?j?)", text)
        named = {"nan": "nan", "inf": "inf", "-inf": "-inf", "True": "1", "False": "0"}
        try:
            out = {complex(t) if t.endswith("j") else complex(float(named.get(t, t))) for t in tokens}
        except ValueError:
            return None
        return {complex(0, 0) if v != v else v for v in out} if out else None  # nan != nan: one marker

    a, b = values(m.group(1)), values(m.group(2))
    return a is not None and a == b


# In rule order: the first match takes a failure. The order of the report is by count.
GROUPS: list[Group] = [
    # --- npgpu off is not NumPy -----------------------------------------------------------------------
    Group("off-subclass", "Subclasses of np.ndarray are not arrays when np is npgpu", "off",
          "`npgpu.ndarray` is a class with an isinstance hook, not `numpy.ndarray`: `class A(np.ndarray)` "
          "makes a plain Python class, and `arr.view(A)` then reads `A` as a dtype (object) and raises. "
          "npgpu/_namespace.py `ndarray`.",
          "class A(np.ndarray):\n    pass\nr = np.arange(3).view(A)",
          msg=r"Cannot change data-type for array of references|Type must be a sub-type of ndarray",
          backends=OFF),
    Group("off-type-is", "`type(x) is np.ndarray` is False when np is npgpu", "off",
          "`np.ndarray` is npgpu's class, so identity tests against it fail for real NumPy arrays "
          "(`assert type(b) is np.ndarray`, `assert_equal(type(x), np.ndarray)`).",
          "r = type(np.zeros(2)) is np.ndarray",
          msg=r"npgpu\._namespace\.ndarray|^$", line=r"is np\.ndarray|type\(.*\), np\.ndarray|expected_type",
          backends=OFF),
    Group("off-class-attrs", "np.ufunc / np.ndarray lack NumPy's class attributes", "off",
          "`npgpu.ufunc` and `npgpu.ndarray` are stand-in classes: `np.ufunc.reduce`, `np.ufunc.at`, "
          "`np.ndarray.flat` (used with `inspect.signature`, `add_docstring`) don't exist.",
          "r = (hasattr(np.ufunc, 'reduce'), hasattr(np.ndarray, 'flat'))",
          msg=r"type object '(ufunc|ndarray)' has no attribute", backends=OFF),
    # --- the yardstick's own blind spot, then answers without errors --------------------------------------
    Group("assert-equal", "numpy.testing.assert_equal given a device array raises 'truth value is ambiguous'",
          "exception",
          "`assert_equal` sends `numpy.ndarray` operands to `assert_array_equal`; a DeviceArray is not one, "
          "so it takes the scalar branch and ends in `if not (desired == actual)`: bool() of a device "
          "array with more than one element (or none). assert_array_equal/assert_allclose work (they call "
          "`np.asanyarray`). Only a DeviceArray that *is* a numpy.ndarray, or an npgpu-aware numpy.testing, "
          "can pass these; each such test stops at its first assert_equal, hiding what follows: the "
          "--host-asserts run (below) shows what is behind them.",
          "from numpy.testing import assert_equal\nassert_equal(np.arange(3), [0, 1, 2])\nr = 'passed'",
          msg=r"truth value of an (array with more than one element|empty array) is ambiguous"),
    Group("list-operand", "OpenCL: a Python list or tuple operand of a ufunc is read as its first element",
          "wrong",
          "`OpenCLBackend.ufunc_call` (npgpu/backends/opencl_backend.py) classes every input that is not a "
          "CLArray as a scalar kernel argument; the broadcast shape comes from `numpy.shape(list)`, the "
          "value from its first item. `device == [..]`, `device + [..]`, `device // list` are wrong "
          "without an error (test_at_negative_indexes checks `indxs == [-1, 1, -1, 2]`).",
          "i = np.array([-1, 1, -1, 2])\nr = (i == [-1, 1, -1, 2], i + [10, 20, 30, 40])",
          tests=r"test_at_negative_indexes|test_ufunc_at_negative|test_index_is_larger|test_division_int_boundary",
          backends=CL, categories=frozenset({"wrong-answer"})),
    Group("int-power", "Integer ** negative integer doesn't raise (OpenCL returns garbage)", "wrong",
          "NumPy raises ValueError('Integers to negative integer powers are not allowed.'); OpenCL returns "
          "values for array exponents (`_check_int_power` in ufunc_call). Emulated fails the same test on "
          "one of its dtype/operand combinations (not isolated).",
          "r = np.power(np.array([0, 1, 2, 3], dtype=np.int8), np.array([0, 1, 2, -3], dtype=np.int8))",
          tests=r"test_integer_to_negative_power"),
    Group("concat-out-dtype", "concatenate/stack: out= with dtype= doesn't raise TypeError on OpenCL", "wrong",
          "NumPy rejects giving both (`TypeError: concatenate() only takes out or dtype`); OpenCL "
          "accepts them and casts.",
          "r = np.concatenate((np.array([1, 2]), np.array([3, 4])), out=np.zeros(4), dtype='f8')",
          tests=r"test_out_and_dtype|test_stack_out_and_dtype", categories=frozenset({"missing-error"})),
    Group("byteorder", "OpenCL ignores non-native byte order ('>f8', '>i8')", "wrong",
          "Kernels read and write big-endian arrays as native: reductions, vecdot, stack(dtype='>f8') and "
          "reduce(out=big-endian) give garbage.",
          "a = np.arange(10, dtype='>i8')\nb = np.stack((np.array([1, 2]), np.array([3, 4])), dtype='>f8')\n"
          "r = (np.add.reduce(a), b)",
          tests=r"test_reducelike_byteorder_resolution|test_endian|test_reducelike_output_needs_identical_cast|"
                r"test_stack_out_and_dtype",
          backends=CL),
    Group("complex-write", "OpenCL: writes into a complex device array are lost", "wrong",
          "OpenCL holds no complex kernels (complex work runs in NumPy): `d.real = ...`, `e[1] += 6j` and "
          "`ufunc.at` into a complex device array don't reach it, without an error; np.sum then reads the "
          "old values.",
          "d = np.zeros(2, dtype=np.complex64)\nd.real = 1\ne = np.ones(3, dtype=complex)\ne[1] += 6j\nr = (d, e)",
          tests=r"test_sum_complex|test_ufunc_at_inner_loops_complex", backends=CL),
    Group("out-overlap", "OpenCL: out= that overlaps an input is left unwritten", "wrong",
          "`np.einsum(..., out=b)` with b an operand, `np.matvec(a, b, out=b)`, `np.add.accumulate(a, out=a)`"
          " return their out unchanged (or half-computed) instead of NumPy's buffered result.",
          "a = np.arange(5)\nnp.add.accumulate(a, out=a)\nb = np.arange(9).reshape(3, 3)\n"
          "np.einsum('ij,jk->ik', np.arange(9).reshape(3, 3), b, out=b)\nr = (a, b[0])",
          tests=r"test_einsum\.py::test_overlap|test_matvec_vecmat_out|test_memoverlap_accumulate", backends=CL),
    Group("where-list", "where= given as a list (or, on emulated, any where=) writes nothing", "wrong",
          "`np.power(a, 2, out=a, where=[[False, True], [True, False]])` leaves a unchanged on both "
          "backends; on emulated a boolean-array where= too.",
          "a = np.arange(4).reshape(2, 2) + 2\nnp.power(a, 2, out=a, where=[[False, True], [True, False]])\nr = a",
          tests=r"TestUfunc::test_where_param$"),
    Group("reduce-where", "OpenCL reductions: where= without identity, initial=-0.0, logical out=", "wrong",
          "`np.maximum.reduce(a, where=m)` returns -inf where NumPy raises ValueError (no identity); "
          "`np.sum([-0.0, -0.0], initial=-0.0)` gives 0.0; `np.maximum.reduce(..., where=, initial=)` "
          "and `logical_and.reduce(a, out=int32)` give other values.",
          "a = np.ones(3)\nr = (np.sum(np.array([-0.0, -0.0]), initial=-0.0), np.maximum.reduce(a, where=a > 0))",
          tests=r"test_reduction_where_initial_needed|test_reduction_with_where_and_initial|"
                r"test_addition_reduce_negative_zero|test_logical_ufuncs_support_anything",
          backends=CL, categories=WRONG),
    Group("cast-saturates", "OpenCL float -> small int casts saturate where NumPy wraps", "wrong",
          "Out-of-range float to int8/int16 is undefined in C; NumPy on x86-64 goes through int32 and wraps "
          "(130.0 -> -126), OpenCL's convert saturates (127). Seen in einsum(dtype='f8', out=int8).",
          "r = np.array([130.0, 300.0, -200.0, 1e10]).astype(np.int8)",
          tests=r"test_einsum_sums_(u?int8|u?int16)", backends=CL, categories=frozenset({"wrong-answer"})),
    Group("clip-bounds", "clip with min > max, and clip() without bounds, on OpenCL", "wrong",
          "NumPy computes minimum(maximum(a, lo), hi) (so min > max gives max everywhere) and accepts "
          "`np.clip(a)`; OpenCL returns lo for some elements and raises 'One of max or min must be given'.",
          "a = np.arange(10)\nr = np.clip(a, 6, 4)",
          tests=r"test_clip_value_min_max_flip|test_clip_min_max_args", backends=CL),
    Group("order-views", "Memory layout: order='F' ignored, views returned as copies (OpenCL)", "wrong",
          "OpenCL makes C-contiguous results for order='F' (zeros, ones, block, einsum, fancy indexing) "
          "and `empty(order=)` raises TypeError; `np.rollaxis`, `np.moveaxis`, `np.broadcast_arrays` and "
          "reshape return copies (OWNDATA, strides != 0), so writes through them don't reach the base.",
          "a = np.arange(24).reshape(2, 3, 4)\nu, v = np.broadcast_arrays(np.arange(2), np.zeros((2, 2)))\n"
          "r = (np.zeros((2, 2), order='F').flags.f_contiguous, np.moveaxis(a, 0, 2).flags.owndata, u.strides)",
          tests=r"test_output_order|TestIndexing::test_memory_order|TestCreationFuncs::test_(zeros|ones|empty)|"
                r"test_block_memory_order|test_reshape_copy_arg|TestRollaxis::test_results|TestUfunc::test_broadcast$",
          backends=CL),
    Group("flags", "DeviceArray.flags: no equality, 'aligned' always True", "wrong",
          "`a.flags == b.flags` is identity (npgpu's _Flags has no __eq__), so TestClip's strict check "
          "fails; unaligned views report aligned=True.",
          "a = np.ones(3)\nr = a.flags == a.copy().flags",
          tests=r"TestClip::test_(clip_complex|type_cast_07|type_cast_08)|test_count_nonzero_non_aligned_array"),
    Group("masked", "Emulated: masked arrays come back as device arrays", "wrong",
          "`np.isclose(2, masked)`, `np.moveaxis(masked, ...)`, `std/var(mean=masked)` on the emulated "
          "(CuPy) path return a DeviceArray, dropping the MaskedArray subclass (and its mask).",
          "x = np.ma.masked_where([True, False], [1.0, 2.0])\nr = type(np.isclose(2, x)).__name__",
          tests=r"test_masked_arrays|test_array_likes|_keepdims_true_masked", backends=EMU),
    Group("out-host", "Emulated: out= given as a host array is not written (np.outer)", "wrong",
          "`np.outer(a, b, out)` with `out` a NumPy array returns a new array and leaves out unwritten.",
          "out = np.ndarray(shape=(2, 2))\nout[...] = 0\nres = np.outer(np.ones(2), np.ones(2), out)\n"
          "r = (res is out, out)",
          tests=r"test_outer_out_param"),
    Group("arg-validation", "Wrong or missing errors for bad arguments", "wrong",
          "`np.min(d, (0.5, 1))` (float axis) raises nothing on OpenCL, `np.add.reduce(d, 'invalid')` "
          "raises ValueError instead of TypeError, `operator.concat(a, b)` works on device arrays, and a "
          "boolean-index IndexError has another message.",
          "d = np.zeros((3, 3))\nr = np.min(d, (0.5, 1))",
          tests=r"test_reduce_axis_float_index|test_reduce_arguments|test_operator_concat|"
                r"test_boolean_indexing_fast_path"),
    Group("errstate", "np.errstate and floating-point warnings are ignored on the device", "wrong",
          "Device kernels set no floating-point status: `np.errstate(divide='raise')` raises nothing, "
          "`RuntimeWarning: divide by zero / overflow / invalid value` is never given (NumPy checks the "
          "FPU flags after each loop). Covers missing FloatingPointError, 'DID NOT WARN' RuntimeWarning "
          "and warning counts.",
          "with np.errstate(divide='raise'):\n    r = np.ones(3) / np.zeros(3)",
          msg=r"FloatingPointError|DID NOT WARN\. No warnings of type \(<class 'RuntimeWarning'>",
          exc=r"AssertionError|Failed"),
    Group("errstate-count", "(errstate) counted warnings, and a FloatingPointError raised a step late", "wrong",
          "Same cause as the errstate group, seen through counts of caught warnings, and in "
          "test_unary_PyUFunc_O_O_method_full[arccosh], where the device ufunc doesn't raise under "
          "errstate(all='raise') and the object loop run next does.",
          "import warnings\nwith warnings.catch_warnings(record=True) as w:\n    warnings.simplefilter('always')\n"
          "    np.array([1e300]) * np.array([1e300])\nr = len(w)",
          tests=r"TestFloatExceptions::test_warnings|TestSeterr::test_divide_err|test_ufunc_methods_floaterrors|"
                r"test_unary_PyUFunc_O_O_method_full\[arccosh\]"),
    Group("scalar-type", "A device 0-d array where NumPy returns a NumPy scalar", "wrong",
          "Indexing an element, reductions and comparisons of device arrays return a 0-d DeviceArray: "
          "`isinstance(a[0], np.integer)` is False, and `assert_equal(np.count_nonzero(x), 4)` fails "
          "because `isscalar` differs (ACTUAL and DESIRED print the same value).",
          "a = np.arange(5)\nr = (type(a[0]).__name__, isinstance(a[0], np.integer), type(a.sum()).__name__)",
          line=r"isinstance\(", categories=frozenset({"wrong-answer"})),
    Group("type-mismatch", "assert_equal's scalar branch: same values, one side a device array", "wrong",
          "The `assert-equal` cause seen as an AssertionError: assert_equal takes its scalar branch for a "
          "DeviceArray (not a numpy.ndarray), and `isscalar(desired) != isscalar(actual)` fails although "
          "ACTUAL and DESIRED hold the same values (`array([5])` against `5`, a 0-d device array against "
          "`np.float64(0.0)`). These pass with --host-asserts.",
          "from numpy.testing import assert_equal\nassert_equal(np.count_nonzero(np.arange(5)), 4)\nr = 'passed'",
          tests=r"(?!)"),  # assigned by _same_value_printed, after every rule
    # --- exceptions where NumPy computes ----------------------------------------------------------------
    Group("flat", "DeviceArray has no .flat", "exception",
          "`a.flat`, `a.flat[...] = v`, `a.flat = range(...)` raise AttributeError (test_ufunc_noncontiguous "
          "builds its inputs with `.flat`).",
          "a = np.zeros(3)\na.flat[1] = 5\nr = a",
          msg=r"no attribute 'flat'|DID NOT WARN.*DeprecationWarning"),
    Group("ravel-order", "OpenCL: ravel/flatten with order other than 'C' raises NotImplementedError",
          "exception", "`flatten('F')`, `ravel('F')` (test_overflows flattens every result) are not implemented.",
          "r = np.arange(6).reshape(2, 3).flatten('F')",
          msg=r"ravel with order other than"),
    Group("object-loops", "(scalar-type) object-loop checks get a 0-d device array, not a scalar", "exception",
          "test_unary_PyUFunc_O_O_method_full compares `ufunc(0-d float64 array).astype('O')` with the object "
          "loop's result: NumPy's ufunc returns a float64 scalar, whose astype('O') is a Python float; "
          "npgpu's returns a 0-d device array, whose astype('O') is a 0-d object array, and "
          "assert_array_almost_equal then fails ('float' object has no attribute 'dtype'). The same root "
          "cause as scalar-type. (Its arccosh case is errstate: the device ufunc doesn't raise.)",
          "r = np.absolute(np.array(0.5)).astype('O')",
          tests=r"test_unary_PyUFunc_O_O_method_full"),
    Group("choose", "DeviceArray has no .choose (and choose(out=) fails on OpenCL)", "exception",
          "TestClip's reference implementation is `selector.choose((a, m, M), out=out)`.",
          "a = np.array([0, 1, 0])\nr = a.choose((np.zeros(3), np.ones(3)))",
          msg=r"no attribute 'choose'|output must be an array", tests=r"TestClip"),
    Group("emulated-out", "Emulated (the CuPy path): reduce/accumulate with out= raise TypeError", "exception",
          "`np.add.reduce(a, out=o)`, `np.minimum.reduce(..., out=)`, `np.add.accumulate(a, out=a)` raise "
          "'return arrays must be of ArrayType' / 'output must be an array' from CupyBackend.call_ufunc "
          "(npgpu/backends/cupy_backend.py), where NumPy stands in for CuPy: the cupy backend runs the "
          "same code, so expect the same on a GPU.",
          "a = np.arange(6.)\no = np.zeros(())\nr = np.add.reduce(a, out=o)",
          msg=r"return arrays must be of ArrayType|output must be an array", backends=EMU),
    Group("sequence-args", "OpenCL: device arrays and lists where NumPy takes sequences", "exception",
          "`np.ones(np.array(shape))` (a device array as the shape), `np.concatenate(device_2d, axis=None)`, "
          "`np.stack(device_2d)` and `np.concatenate((device, [list]))` raise 'CLArray object is not "
          "iterable' / 'list has no attribute ndim' in opencl_backend.empty/concatenate/stack.",
          "r = (np.ones(np.array([2, 3])).shape, np.concatenate((np.arange(2), [5])))",
          msg=r"'CLArray' object is not iterable|'list' object has no attribute '(ndim|size)'"),
    Group("base", "DeviceArray has no .base; np.broadcast iterators see host copies", "exception",
          "`a[...].base is a`, `out.base`, `np.broadcast(a).iters[0].base is a`.",
          "a = np.arange(3)\nr = a[...].base is a",
          msg=r"no attribute 'base'"),
    Group("base-broadcast", "(base) np.broadcast over device arrays iterates host copies", "exception",
          "np.broadcast is NumPy's C iterator: its .iters are over host copies, so `.base is a` fails.",
          "a = np.arange(3)\nr = np.broadcast(a).iters[0].base is a",
          tests=r"TestBroadcast::test_broadcast_(in_args|single_arg|error_kwargs)"),
    Group("missing-api", "Other missing ndarray API: setflags, byteswap, ctypes, buffer protocol", "exception",
          "AttributeError for `a.setflags(write=False)`, `a.byteswap()`, `a.ctypes`; `memoryview(a)` "
          "fails (no buffer protocol); read-only flags are not enforced either (group readonly).",
          "a = np.arange(3)\na.setflags(write=False)\nr = a.flags.writeable",
          msg=r"no attribute '(setflags|byteswap|ctypes)'|memoryview: a bytes-like object"),
    Group("recursion", "RecursionError in np.block, np.stack errors and frexp(out=, subok=)", "exception",
          "`np.block([a, b, c])` with mixed ndims, `np.stack` of mismatched shapes, `np.frexp(d, None, o2, "
          "subok=...)` recurse in npgpu's dispatch (_dispatch.scan, _report.record).",
          "r = np.block([1., 2 * np.ones((1, 2)), 3 * np.ones((1, 1, 3))]).shape",
          exc=r"RecursionError"),
    Group("out-ellipsis", "out=(array, ...) with an Ellipsis in the tuple", "exception",
          "`np.divmod(1, 2, out=(np.empty(()), ...))` must raise TypeError; npgpu reads `...` as an array.",
          "np.divmod(np.ones(2), 2, out=(np.empty(2), ...))\nr = 'no error'",
          msg=r"'ellipsis' object has no attribute"),
    Group("array-wrap", "Objects with __array__ and __array_wrap__ as ufunc operands", "exception",
          "`ncu.minimum(a, a)` where `a` is a class whose `__array__` returns a device array: NumPy "
          "requires __array__ to return a numpy.ndarray ('object __array__ method not producing an array').",
          "class A:\n    def __array__(self, dtype=None, copy=None):\n        return np.zeros(2)\n"
          "r = np.minimum(A(), A())",
          msg=r"__array__ method not producing an array"),
    Group("where-warning", "The 'where used without out' UserWarning", "exception",
          "NumPy warns when where= is given without out=; OpenCL doesn't, and emulated warns from its host "
          "fallback where NumPy is given out=None explicitly.",
          "import warnings\nwith warnings.catch_warnings(record=True) as w:\n    warnings.simplefilter('always')\n"
          "    np.add(np.ones(3), 1, where=np.array([True, False, True]))\nr = [str(x.message)[:30] for x in w]",
          tests=r"test_where_warns|test_where_param_alloc"),
    Group("compare-str", "Comparing a number array with a string array raises", "exception",
          "NumPy returns all-True for `!=` (no common loop: elementwise comparison fails), npgpu's dispatch "
          "raises UFuncTypeError resolving the loop.",
          "r = np.array([1.0, 2.0]) != np.array('a')",
          msg=r"did not contain a loop with signature"),
    Group("assign-broadcast", "OpenCL assignment gaps: strided boolean views, prepended broadcast dims",
          "exception",
          "`a[::2][mask] = v` raises NotImplementedError; `a[...] = np.ones((1, 3, 2))` into (3, 2) "
          "raises ValueError (NumPy drops leading 1s).",
          "a = np.zeros((3, 2))\na[...] = np.ones((1, 3, 2))\nr = a[0]",
          msg=r"boolean assignment into a non-contiguous view|could not broadcast input array"),
    # --- found by a repro, no failing test of their own in these files --------------------------------
    Group("readonly", "Read-only flags are not enforced on device arrays", "wrong",
          "`a.flags.writeable = False` is accepted and later writes succeed, where NumPy raises ValueError "
          "('assignment destination is read-only'). No test of the six files fails on it alone (those that "
          "would fail earlier, on subclasses or setflags).",
          "a = np.ones(3)\na.flags.writeable = False\na[0] = 5\nr = a",
          tests=r"(?!)"),
    Group("submodule-import", "`import npgpu.linalg` / `from npgpu.random import rand` fail", "off",
          "npgpu.linalg, .fft and .random are module objects set as attributes, not importable submodules "
          "(not in sys.modules): `from numpy.random import rand` rewritten to npgpu raises "
          "ModuleNotFoundError. The suite's rewrite binds them from `npgpu.random` instead.",
          "import importlib\nr = importlib.import_module(np.__name__ + '.random').__name__",
          tests=r"(?!)"),
    Group("refcount-diagnostic", "(diagnostic only) refcount of np.dtype(np.intp) in the --host-asserts run",
          "exception",
          "test_small_regressions compares sys.getrefcount(np.dtype(np.intp)) before and after; it passes "
          "in the yardstick and fails only with --host-asserts, whose wrappers change what holds dtypes.",
          "", tests=r"TestIndexing::test_small_regressions"),
    Group("timeout", "Tests that ran past the time limit", "exception",
          "A test phase over --timeout seconds (each new dtype combination compiles kernels on PoCL).",
          "", exc=r"SuiteTimeout"),
]


@dataclass
class Assigned:
    group: Group | None
    failure: ns.Failure


def assign(summary: ns.Summary) -> list[Assigned]:
    out = []
    same_value = next(g for g in GROUPS if g.key == "type-mismatch")
    for f in summary.unexpected:
        if f.category == "wrong-answer" and f.backend != "off" and _same_value_printed(f.record.get("message", "")):
            group: Group | None = same_value  # before the rules by test name: the test failed earlier than them
        else:
            group = next((g for g in GROUPS if g.matches(f)), None)
        out.append(Assigned(group, f))
    return out


def load(build_dir: Path) -> ns.Summary | None:
    if not (build_dir / "results").exists():
        return None
    modes = [m for m in ns.MODES if any((build_dir / "results").glob(f"{m}-*.jsonl"))]
    return ns.compare(ns.load_results(build_dir, modes), ns.read_expected(ns.EXPECTED))


def run_repro(code: str, backends: list[str]) -> dict[str, str]:
    """``code`` as NumPy and under npgpu on each backend: ``r``'s type and repr, or the exception."""
    import numpy

    import npgpu

    outcome = {}
    for backend in ["numpy", *backends]:
        namespace: dict[str, Any] = {"np": numpy if backend == "numpy" else npgpu}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # (a repro that counts warnings sets its own filter)
                if backend in ("numpy", "off"):
                    exec(code, namespace)
                else:
                    with npgpu.enable(backend, threshold=0):
                        exec(code, namespace)
            r = namespace.get("r")
            text = " ".join(repr(r).split())
            outcome[backend] = f"{type(r).__name__} {text}"[:240]
        except Exception as exc:  # noqa: BLE001  (the exception is the repro's answer)
            outcome[backend] = f"raises {type(exc).__name__}: {' '.join(str(exc).split())}"[:240]
    return outcome


def counts_table(assigned: list[Assigned], backends: list[str]) -> dict[str, Counter]:
    table: dict[str, Counter] = defaultdict(Counter)
    for a in assigned:
        table[a.group.key if a.group else "unexplained"][a.failure.backend] += 1
    return table


INTRO = """\
# NumPy's own tests on npgpu: triage

Generated by `python3 tools/numpy_suite_triage.py --repros --write tools/numpy_suite_triage.md` from two
runs of `tools/numpy_suite.py` on this checkout's npgpu: the yardstick (`numpy.testing` as it is), and
a diagnostic one with `--host-asserts` (`numpy.testing`'s comparing asserts get host copies), which
shows what the yardstick's biggest group, `assert-equal`, hides. Each mode is held to the one before
it: `off` to NumPy itself, every device backend to `off`. A failure is counted in the first group
whose rule (tools/numpy_suite_triage.py) matches it; groups are ordered npgpu-off first, then wrong
answers (no exception: a value, a type, or an error NumPy raises and npgpu doesn't), then
exceptions, each by count. Repro outputs below are `r` (or the exception) as NumPy, and under
`npgpu.enable(backend, threshold=0)`.

Reading it: `assert-equal` (and `type-mismatch`, its AssertionError face) is the yardstick's blind
spot more than a bug of its own: `numpy.testing.assert_equal` only treats `numpy.ndarray` as an
array, so a test stops at its first `assert_equal` of a device array and whatever follows is not
checked. Fixing it means a DeviceArray that `isinstance(x, numpy.ndarray)` accepts, or deciding
that `numpy.testing` is rewritten too; until then the `--host-asserts` columns say what the
yardstick will find next. The wrong answers that need no such decision, by reach: `list-operand`
(any list/tuple operand on OpenCL), `scalar-type` (0-d device arrays for NumPy scalars), `errstate`,
`byteorder`, `complex-write`, `out-overlap`, `cast-saturates`, `where-list`, `readonly`.
Counts of a group in the two runs differ where a test fails earlier in one of them.
"""


def _totals(summary: ns.Summary) -> list[str]:
    lines = []
    for mode in summary.modes:
        if mode == "numpy":
            continue
        c: Counter = Counter()
        for (_, m), counts in summary.counts.items():
            if m == mode:
                c.update(counts)
        kinds = ", ".join(f"{k} {c[k]}" for k in ("wrong-answer", "missing-error", "error-message", "warning",
                                                   "exception", "timeout", "crashed", "hung") if c[k])
        held = "as NumPy" if mode == "off" else "with npgpu off"
        lines.append(f"- {mode}: {c['kept']} of the {c['baseline']} tests that pass {held} pass "
                     f"({100.0 * c['kept'] / max(c['baseline'], 1):.1f}%); {c['unexpected']} fail "
                     f"({kinds}), {c['expected']} expected.")
    return lines


def report(standard: ns.Summary, host: ns.Summary | None, repros: bool, out: Any) -> None:
    def p(text: str = "") -> None:
        print(text, file=out)

    import numpy

    p(INTRO)
    tests = sum(c["tests"] for (_, m), c in standard.counts.items() if m == "numpy")
    p(f"NumPy {numpy.__version__}, {tests} tests in the six files. The yardstick:")
    p()
    for line in _totals(standard):
        p(line)
    if host is not None:
        p()
        p("With `--host-asserts` (diagnostic):")
        p()
        for line in _totals(host):
            if not line.startswith("- off"):
                p(line)
    p()

    backends = [m for m in standard.modes if m in ns.DEVICE_MODES]
    checked = ["off", *backends]
    a_std = assign(standard)
    a_host = assign(host) if host else []
    t_std = counts_table(a_std, checked)
    t_host = counts_table(a_host, checked)
    by_key = {g.key: g for g in GROUPS}
    found_by_repro = [g.key for g in GROUPS if g.tests == "(?!)" and g.key != "type-mismatch"]
    order = sorted(t_std.keys() | t_host.keys() | set(found_by_repro),
                   key=lambda k: (by_key[k].kind != "off" if k in by_key else True,
                                  by_key[k].kind != "wrong" if k in by_key else True,
                                  -sum(t_std.get(k, Counter()).values()) - sum(t_host.get(k, Counter()).values())))
    p("| group | kind | " + " | ".join(checked) + " | " + " | ".join(f"{b} (host asserts)" for b in backends) + " |")
    p("|---|---|" + "---|" * (len(checked) + len(backends)))
    for key in order:
        g = by_key.get(key)
        cells = [str(t_std.get(key, Counter()).get(b, "")) for b in checked]
        cells += [str(t_host.get(key, Counter()).get(b, "")) for b in backends]
        p(f"| [{key}](#{key}) | {g.kind if g else '?'} | " + " | ".join(cells) + " |")
    p()
    for key in order:
        g = by_key.get(key)
        if g is None:
            continue
        fs = [a.failure for a in a_std + a_host if a.group is g]
        p(f"### {key}")
        p()
        counts = ", ".join(f"{b}: {t_std[key][b]}" for b in checked if t_std.get(key, Counter()).get(b))
        host_counts = ", ".join(f"{b}: {t_host[key][b]}" for b in backends if t_host.get(key, Counter()).get(b))
        p(f"**{g.title}** ({g.kind}). Failures: {counts or 'none'}"
          + (f"; with host asserts: {host_counts}" if host_counts else "") + ".")
        p()
        p(g.cause)
        p()
        ids = list(dict.fromkeys(f.nodeid for f in fs))[:3]
        for nodeid in ids:
            f = next(x for x in fs if x.nodeid == nodeid)
            msg = " ".join(f.record.get("message", "").split())[:160]
            p(f"- `{nodeid}` [{f.backend}] `{f.record.get('exc_type', '')}: {msg}`")
        p()
        if not g.repro:
            continue
        p("```python")
        p(g.repro)
        p("```")
        if repros:
            for backend, text in run_repro(g.repro, ["off"] if g.kind == "off" else backends).items():
                p(f"- {'NumPy' if backend == 'numpy' else backend}: `{text}`")
        p()
    unexplained = [a.failure for a in a_std + a_host if a.group is None]
    if unexplained:
        p("### unexplained")
        p()
        for f in unexplained:
            msg = " ".join(f.record.get("message", "").split())[:160]
            p(f"- `{f.nodeid}` [{f.backend}] {f.category} `{f.record.get('exc_type', '')}: {msg}`")
        p()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", type=Path, default=ns.DEFAULT_BUILD, help="the standard run's folder")
    ap.add_argument("--host-asserts-dir", type=Path, default=HOST_ASSERTS_BUILD,
                    help="the --host-asserts run's folder (left out where absent)")
    ap.add_argument("--repros", action="store_true", help="run each group's repro")
    ap.add_argument("--write", type=Path, help="write the group report (markdown) here instead of stdout")
    args = ap.parse_args(argv)
    standard = load(args.build_dir)
    if standard is None:
        ap.error(f"no results in {args.build_dir}: run tools/numpy_suite.py first")
    host = load(args.host_asserts_dir)
    if args.write:
        with open(args.write, "w", encoding="utf-8") as out:
            report(standard, host, args.repros, out)
    else:
        report(standard, host, args.repros, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
