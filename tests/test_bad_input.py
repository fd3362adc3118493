"""Bad input at scale: random shapes, dtypes, strides, broadcasting and out-of-range arguments
through the device path. Each call gives NumPy's result or NumPy's exception type, and leaves its
inputs as NumPy leaves them (unchanged, or changed in place as NumPy changes them)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import npgpu
from npgpu._harness import assert_same, backend_context

DTYPES = [numpy.dtype(t) for t in (bool, numpy.int8, numpy.uint8, numpy.int16, numpy.int32, numpy.int64,
                                    numpy.uint32, numpy.float32, numpy.float64)]
VIEWS = ["whole", "step", "reversed", "transposed", "offset"]


def _view(a: Any, kind: str) -> Any:
    if a.ndim == 0 or kind == "whole":
        return a
    if kind == "step":
        return a[::2]
    if kind == "reversed":
        return a[::-1]
    if kind == "transposed":
        return a.T
    return a[1:]


@st.composite
def host_arrays(draw: Any, shape: Any = None) -> numpy.ndarray:
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)) if shape is None else shape
    if dtype.kind == "f":
        elements = st.floats(-50, 50, width=dtype.itemsize * 8) | st.sampled_from([0.0, -0.0, numpy.inf, numpy.nan])
    elif dtype.kind == "b":
        elements = st.booleans()
    else:
        info = numpy.iinfo(dtype)
        elements = st.integers(max(info.min, -20), min(info.max, 20)) | st.sampled_from([info.min, info.max])
    return draw(hnp.arrays(dtype, shape, elements=elements))


_BINARY = [numpy.add, numpy.subtract, numpy.multiply, numpy.true_divide, numpy.floor_divide, numpy.remainder,
           numpy.power, numpy.maximum, numpy.minimum, numpy.less, numpy.equal, numpy.logical_and,
           numpy.bitwise_and, numpy.arctan2]
_UNARY = [numpy.negative, numpy.absolute, numpy.sqrt, numpy.exp, numpy.log, numpy.invert, numpy.logical_not,
          numpy.sign, numpy.floor, numpy.isnan]
_REDUCE = ["sum", "prod", "max", "min", "mean", "any", "all", "argmax", "cumsum"]
#: Python scalars, some out of every integer dtype's range (NumPy raises OverflowError for them)
_SCALARS = st.sampled_from([0, 1, -1, 7, 300, -129, 70_000, 2**40, 2**70, 0.5, -2.25, 1e300, True, False])
_INDEX = st.integers(-7, 7)
_KEYS = st.one_of(
    _INDEX,
    st.builds(slice, st.none() | st.integers(-6, 6), st.none() | st.integers(-6, 6),
              st.none() | st.sampled_from([-2, -1, 1, 2, 3, 0])),
    st.tuples(_INDEX, _INDEX), st.tuples(_INDEX, _INDEX, _INDEX, _INDEX),
    st.just(Ellipsis), st.just(None), st.tuples(st.just(Ellipsis), _INDEX),
    st.lists(_INDEX, min_size=0, max_size=4),
    st.just("mask"), st.just("wrong mask"),
)


@st.composite
def cases(draw: Any) -> tuple[str, list[numpy.ndarray], list[str], dict[str, Any]]:
    op = draw(st.sampled_from(["binary", "scalar", "unary", "reduce", "getitem", "setitem", "reshape",
                               "transpose", "concatenate", "take", "astype", "clip", "where", "inplace",
                               "put", "repeat", "pad", "tile", "nonzero", "isclose"]))
    first = draw(host_arrays())
    hosts = [first]
    if op in ("binary", "concatenate", "where", "inplace", "isclose"):
        # a second array of a related shape (often broadcastable) or of any shape
        related = st.just(first.shape) | st.just(first.shape[1:]) | hnp.array_shapes(min_dims=0, max_dims=3,
                                                                                      min_side=0, max_side=5)
        hosts.append(draw(host_arrays(shape=draw(related))))
    views = [draw(st.sampled_from(VIEWS)) for _ in hosts]
    params: dict[str, Any] = {}
    if op == "binary":
        params["ufunc"] = draw(st.sampled_from(_BINARY))
    elif op == "scalar":
        params["ufunc"] = draw(st.sampled_from(_BINARY))
        params["scalar"] = draw(_SCALARS)
        params["reflected"] = draw(st.booleans())
    elif op == "unary":
        params["ufunc"] = draw(st.sampled_from(_UNARY))
    elif op == "reduce":
        params["name"] = draw(st.sampled_from(_REDUCE))
        params["axis"] = draw(st.none() | st.integers(-4, 3))
        params["keepdims"] = draw(st.booleans())
    elif op in ("getitem", "setitem"):
        params["key"] = draw(_KEYS)
        params["value"] = draw(_SCALARS | st.just("array"))
    elif op == "reshape":
        params["shape"] = tuple(draw(st.lists(st.integers(-1, 6), min_size=0, max_size=3)))
    elif op == "transpose":
        params["axes"] = tuple(draw(st.lists(st.integers(-3, 3), min_size=0, max_size=3)))
    elif op in ("concatenate", "take"):
        params["axis"] = draw(st.none() | st.integers(-3, 3))
        params["indices"] = draw(st.lists(st.integers(-8, 8), max_size=5))
    elif op == "astype":
        params["dtype"] = draw(st.sampled_from(DTYPES))
        if first.dtype.kind == "f" and params["dtype"].kind in "iu":
            # A float that doesn't fit the integer dtype (inf, nan, -1 into uint8) has no defined value:
            # C leaves it undefined, and NumPy's own answer differs between CPUs ("invalid value" warning).
            info = numpy.iinfo(params["dtype"])
            with numpy.errstate(invalid="ignore"):
                hosts[0] = numpy.where((first >= info.min) & (first <= info.max), first, 0).astype(first.dtype)
    elif op == "clip":
        params["bounds"] = (draw(_SCALARS), draw(_SCALARS))
    elif op == "put":
        params["indices"] = draw(st.lists(st.integers(-8, 8), max_size=5))
        params["value"] = draw(_SCALARS)
        params["mode"] = draw(st.sampled_from(["raise", "wrap", "clip"]))
    elif op == "repeat":
        params["repeats"] = draw(st.integers(-1, 3) | st.lists(st.integers(-1, 3), max_size=5))
        params["axis"] = draw(st.none() | st.integers(-3, 3))
    elif op == "pad":
        params["width"] = draw(st.integers(-1, 3) | st.tuples(st.integers(0, 3), st.integers(0, 7)))
        params["mode"] = draw(st.sampled_from(["constant", "edge", "reflect", "symmetric", "wrap"]))
    elif op == "tile":
        params["reps"] = tuple(draw(st.lists(st.integers(-1, 3), min_size=0, max_size=3)))
    elif op == "inplace":
        params["ufunc"] = draw(st.sampled_from([numpy.add, numpy.multiply, numpy.subtract]))
        # (no int beyond int64 here: into a bool out= with one, NumPy's OverflowError comes before
        # its casting error, npgpu's after)
        params["scalar"] = draw(st.none() | _SCALARS.filter(lambda x: type(x) is not int or abs(x) < 1 << 63))
    return op, hosts, views, params


def _key(key: Any, a: Any, xp: Any) -> Any:
    if key == "mask":
        return xp.asarray(numpy.arange(a.size).reshape(a.shape) % 2 == 0)
    if key == "wrong mask":
        return xp.asarray(numpy.ones(a.shape[:1] + (7,), bool)) if a.ndim else xp.asarray(numpy.ones(3, bool))
    if isinstance(key, list):
        return xp.asarray(numpy.asarray(key, dtype=numpy.intp))
    return key


def _call(xp: Any, op: str, arrays: list[Any], params: dict[str, Any]) -> Any:
    a = arrays[0]
    if op == "binary":
        return params["ufunc"](a, arrays[1])
    if op == "scalar":
        s = params["scalar"]
        return params["ufunc"](s, a) if params["reflected"] else params["ufunc"](a, s)
    if op == "unary":
        return params["ufunc"](a)
    if op == "reduce":
        name, axis = params["name"], params["axis"]
        if name in ("argmax", "cumsum"):
            return getattr(xp, name)(a, axis=axis)
        return getattr(xp, name)(a, axis=axis, keepdims=params["keepdims"])
    if op == "getitem":
        return a[_key(params["key"], a, xp)]
    if op == "setitem":
        value, key = params["value"], params["key"]
        if value == "array":
            # (with an integer-array key, a (1,) value: for a value that doesn't broadcast to the
            # selection of an out-of-bounds index NumPy names the shapes and the CuPy path the index)
            value = xp.asarray(numpy.arange(1 if isinstance(key, list) else 3) % 2)
        a[_key(key, a, xp)] = value
        return None
    if op == "reshape":
        return xp.reshape(a, params["shape"])
    if op == "transpose":
        return xp.transpose(a, params["axes"] or None)
    if op == "concatenate":
        return xp.concatenate([a, arrays[1]], axis=params["axis"])
    if op == "take":
        return xp.take(a, xp.asarray(numpy.asarray(params["indices"], dtype=numpy.intp)), axis=params["axis"])
    if op == "put":
        xp.put(a, xp.asarray(numpy.asarray(params["indices"], dtype=numpy.intp)), params["value"], mode=params["mode"])
        return None
    if op == "repeat":
        return xp.repeat(a, params["repeats"], axis=params["axis"])
    if op == "pad":
        return xp.pad(a, params["width"], mode=params["mode"])
    if op == "tile":
        return xp.tile(a, params["reps"])
    if op == "nonzero":
        return xp.nonzero(a)
    if op == "isclose":
        return xp.isclose(a, arrays[1])
    if op == "astype":
        return a.astype(params["dtype"])
    if op == "clip":
        return xp.clip(a, *params["bounds"])
    if op == "where":
        return xp.where(a > 0, a, arrays[1])
    if op == "inplace":
        operand = arrays[1] if params["scalar"] is None else params["scalar"]
        params["ufunc"](a, operand, out=a)
        return None
    raise AssertionError(op)


def _run(xp: Any, case: Any) -> tuple[Any, BaseException | None, list[numpy.ndarray]]:
    op, hosts, views, params = case
    arrays = [_view(xp.asarray(h.copy()), v) for h, v in zip(hosts, views, strict=True)]
    with numpy.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (a device raises no floating-point warnings; NumPy's are not the point)
        try:
            result, error = _call(xp, op, arrays, params), None
        except Exception as exc:  # (compared with NumPy's exception below)
            result, error = None, exc
    return result, error, [numpy.array(numpy.asarray(a)) for a in arrays]


def _check(backend: str, case: Any) -> None:
    from npgpu.backends import get_backend

    want, want_error, want_after = _run(numpy, case)
    # (a result of a dtype the device can't hold, float16 on OpenCL, is NumPy's, on the host)
    device = not isinstance(want, numpy.ndarray) or get_backend(backend).supports_dtypes((want.dtype,))
    with backend_context(backend):
        got, got_error, got_after = _run(__import__("npgpu"), case)
        if want_error is not None:
            assert got_error is not None, f"NumPy raised {type(want_error).__name__}({want_error}); npgpu returned"
            assert isinstance(got_error, type(want_error)), (
                f"NumPy raised {type(want_error).__name__}({want_error}); npgpu raised "
                f"{type(got_error).__name__}({got_error})")
        elif got_error is not None:
            raise got_error
        else:
            with numpy.errstate(all="ignore"):
                assert_same(got, want, device=device)
    for i, (g, w) in enumerate(zip(got_after, want_after, strict=True)):
        numpy.testing.assert_array_equal(g, w, err_msg=f"input {i} afterwards", strict=True)


@pytest.mark.parametrize("backend", ["emulated", pytest.param("opencl", marks=pytest.mark.opencl)])
@settings(max_examples=int(__import__("os").environ.get("NPGPU_BAD_INPUT_EXAMPLES", "150")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_random_calls_give_numpys_answer_or_numpys_error_and_leave_inputs_as_numpy_does(backend, case):
    from conftest import _OPENCL_REASON

    if backend == "opencl" and _OPENCL_REASON is not None:
        pytest.skip(_OPENCL_REASON)
    _check(backend, case)


PUT_TARGETS = {
    "contiguous": lambda h: h,
    "reversed": lambda h: h[::-1],
    "strided_2d": lambda h: h.reshape(3, 4)[:, ::2],
    "transposed": lambda h: h.reshape(3, 4).T,
}


@pytest.mark.parametrize("target", sorted(PUT_TARGETS))
@pytest.mark.parametrize("indices", [[0, 5, 99], [2, -40, 1], [99, 0], [1, 3, -1], [3, 3, 99]])
@pytest.mark.parametrize("values", [7.5, [1.0, 2.0]])
def test_put_with_a_bad_index_leaves_what_numpy_leaves(device_backend, target, indices, values):
    """``put`` in raise mode: NumPy's loop writes a C-contiguous array in place, in index order,
    up to the first bad index (those positions stay written); any other array is written through
    a copy that is discarded when the loop raises (it is left as it was). The error names the
    first bad index in index order. (Found by the random calls above: a reversed view was written.)"""
    host = PUT_TARGETS[target](numpy.arange(12.0))
    want_error = got_error = None
    try:
        numpy.put(host, indices, values)
    except IndexError as exc:
        want_error = str(exc)
    with backend_context(device_backend, threshold=0):
        device = PUT_TARGETS[target](npgpu.asarray(numpy.arange(12.0)))
        try:
            npgpu.put(device, indices, values)
        except IndexError as exc:
            got_error = str(exc)
        got = npgpu.asnumpy(device)
    assert got_error == want_error
    numpy.testing.assert_array_equal(got, host, strict=True)


INDEX_ERRORS = {
    "take_first_bad_of_two": lambda xp, a: xp.take(a, [5, 70]),
    "take_first_bad_reversed": lambda xp, a: xp.take(a, [70, 5]),
    "take_negative_first": lambda xp, a: xp.take(a, [1, -90, 50]),
    "take_axis": lambda xp, a: xp.take(a, [1, 9, -8], axis=1),
    "take_along_axis_bad": lambda xp, a: xp.take_along_axis(a, xp.asarray(numpy.array([[0, 9, -7]])), axis=1),
    "take_along_axis_shapes": lambda xp, a: xp.take_along_axis(a, xp.asarray(numpy.full((2, 2), 9, numpy.intp)),
                                                               axis=1),
    "take_along_axis_fine": lambda xp, a: xp.take_along_axis(a, xp.asarray(numpy.array([[3, 0, 1, 2]])), axis=0),
}


@pytest.mark.parametrize("case", sorted(INDEX_ERRORS))
def test_index_errors_name_what_numpy_names(device_backend, case):
    """Out-of-range indices: NumPy's loop names the first bad one in index order; take_along_axis
    broadcasts its index grids before it checks any index (its shape mismatch comes first)."""
    host = numpy.arange(12.0).reshape(3, 4)
    want_error = got_error = want = got = None
    try:
        want = INDEX_ERRORS[case](numpy, host)
    except (IndexError, ValueError) as exc:
        want_error = (type(exc), str(exc))
    with backend_context(device_backend, threshold=0):
        try:
            got = npgpu.asnumpy(INDEX_ERRORS[case](npgpu, npgpu.asarray(host)))
        except (IndexError, ValueError) as exc:
            got_error = (type(exc), str(exc))
    assert got_error == want_error
    if want_error is None:
        numpy.testing.assert_array_equal(got, want, strict=True)


@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "uint8", "uint64"])
@pytest.mark.parametrize("values", [[0, 5, 11], [3, 12, 1], [11, 100, 0], [2, -12, 4], [-13, 0, 1], [-1, -12, 0]])
@pytest.mark.parametrize("write", [False, True])
def test_index_arrays_out_of_bounds_on_the_device(device_backend, dtype, values, write):
    """Device index arrays of signed and unsigned dtypes, two at once (mandelbrot2's
    ``N_[Xi[I], Yi[I]] = i + 1``): NumPy's IndexError and message where one lies outside its
    axis (a negative value of an unsigned dtype wraps to a large one first, as in NumPy), and
    NumPy's values where none does, read and written."""
    if numpy.dtype(dtype).kind == "u" and min(values) < 0:
        values = [v % 256 for v in values]  # (uint8's wrap; uint64's too stays outside 12)
    rows = numpy.array(values, dtype=dtype)
    cols = numpy.array([1, 0, 2], dtype=dtype)
    host = numpy.arange(36.0).reshape(12, 3)
    want_error = got_error = None
    try:
        if write:
            host[rows, cols] = 7.5
            want = host
        else:
            want = host[rows, cols]
    except IndexError as exc:
        want_error = str(exc)
    with backend_context(device_backend, threshold=0):
        device = npgpu.asarray(numpy.arange(36.0).reshape(12, 3))
        index = (npgpu.asarray(rows), npgpu.asarray(cols))
        try:
            if write:
                device[index] = 7.5
                got = npgpu.asnumpy(device)
            else:
                got = npgpu.asnumpy(device[index])
        except IndexError as exc:
            got_error = str(exc)
    assert got_error == want_error
    if want_error is None:
        numpy.testing.assert_array_equal(got, want, strict=True)
