"""The differential suite: each body runs as NumPy and as npgpu on every backend available here."""

from __future__ import annotations

import numpy
import pytest

import npgpu
from npgpu._harness import differential

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOAT_DTYPES = ["float32", "float64"]
ALL_DTYPES = ["bool", *INT_DTYPES, *FLOAT_DTYPES, "complex64", "complex128"]


def _data(xp, dtype, shape=(4, 5), seed=0):
    """Deterministic data of ``dtype`` made on the host, then handed to ``xp``."""
    rng = numpy.random.default_rng(seed)
    dt = numpy.dtype(dtype)
    if dt.kind == "b":
        host = rng.random(shape) > 0.5
    elif dt.kind in "iu":
        info = numpy.iinfo(dt)
        host = rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(dt)
    elif dt.kind == "c":
        host = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    else:
        host = rng.standard_normal(shape).astype(dt) * 10
    return xp.asarray(host)


# -- elementwise -----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES)
@differential()
def test_arithmetic(xp, dtype):
    a, b = _data(xp, dtype, seed=1), _data(xp, dtype, seed=2)
    if numpy.dtype(dtype).kind == "b":
        return a & b, a | b, a ^ b, ~a
    return a + b, a - b, a * b, -a, abs(a)


@pytest.mark.parametrize("dtype", INT_DTYPES)
@differential()
def test_integer_division_and_overflow(xp, dtype):
    a, b = _data(xp, dtype, seed=3), _data(xp, dtype, seed=4)
    b = xp.where(b == 0, 3, b).astype(dtype)
    big = xp.full((3,), numpy.iinfo(dtype).max, dtype=dtype)
    return a // b, a % b, big + xp.ones(3, dtype=dtype), a << 1, a >> 1, a & b, a | b


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
@differential(rtol=0.0, on_fallback="raise")
def test_absolute_of_the_most_negative_integer_fused_with_division(xp, dtype):
    """abs(INT_MIN) is INT_MIN in NumPy; fused with % and // it must stay negative (NVIDIA's OpenCL
    compiler took a select-form absolute for non-negative: abs(INT_MIN) % 7 gave 2, NumPy's 5)."""
    info = numpy.iinfo(dtype)
    x = xp.asarray(numpy.array([info.min, info.min + 1, -7, -5, 0, 3, info.max], dtype=dtype))
    k = xp.asarray(numpy.array([7], dtype=dtype))
    return [xp.abs(x) % 7, xp.abs(x) // 7, xp.abs(x) % k, xp.abs(x) // k, xp.abs(x) < 0]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@differential()
def test_transcendental(xp, dtype):
    a = _data(xp, dtype, seed=5)
    pos = xp.abs(a) + 1
    return xp.exp(a / 10), xp.log(pos), xp.sqrt(pos), xp.sin(a), xp.cos(a), xp.tanh(a / 10), xp.arctan2(a, pos)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@differential()
def test_nan_inf(xp, dtype):
    a = xp.asarray([0.0, -0.0, 1.0, -1.0, numpy.nan, numpy.inf, -numpy.inf], dtype=dtype)
    with numpy.errstate(all="ignore"):
        return (a / 0, xp.maximum(a, 0), xp.fmax(a, 0), xp.isnan(a), xp.isinf(a), xp.isfinite(a),
                xp.signbit(a), xp.sign(a), xp.floor(a), xp.rint(a * 2.5))


@differential()
def test_nep50_scalar_promotion(xp):
    i8 = xp.arange(5, dtype=xp.int8)
    f32 = xp.arange(5, dtype=xp.float32)
    return i8 + 3, i8 * 2.5, f32 + 1.0, f32 * 2, f32 + xp.float64(1), i8 + xp.int16(2), i8 > 1.5, f32 + 1j


@differential()
def test_python_int_out_of_range(xp):
    return xp.arange(3, dtype=xp.int8) + 300


@differential()
def test_broadcasting(xp):
    a = xp.arange(12.0).reshape(3, 4)
    return a + xp.arange(4.0), a * xp.arange(3.0)[:, None], a[None, :, :] - a[:, None, :1]


@differential()
def test_broadcast_error(xp):
    return xp.arange(3.0) + xp.arange(4.0)


@differential()
def test_no_loop_error(xp):
    return xp.add(xp.arange(3.0), xp.asarray(["a", "b", "c"]))


@differential()
def test_casting_error_with_out(xp):
    out = xp.zeros(3, dtype=xp.int32)
    return xp.add(xp.arange(3), 1.5, out=out)


@differential()
def test_out_and_inplace(xp):
    a = xp.arange(6.0)
    out = xp.empty(6)
    r = xp.multiply(a, 2, out=out)
    same = r is out
    a += 1
    a *= a
    b = xp.arange(6)
    b //= 2
    return a, out, same, b


@differential()
def test_casting_keyword(xp):
    a = xp.arange(5, dtype=xp.int32)
    out = xp.zeros(5, dtype=xp.int16)
    return xp.add(a, a, out=out, casting="unsafe"), xp.add(a, a, dtype=xp.float32)


@differential()
def test_where_keyword(xp):
    a = xp.arange(6.0)
    out = xp.full(6, -1.0)
    xp.add(a, 10, out=out, where=a > 2)
    return out


@differential()
def test_multiple_outputs(xp):
    a = xp.linspace(-3, 3, 7)
    return xp.divmod(a, 2), xp.modf(a), xp.frexp(a)


# -- views and in-place updates ---------------------------------------------------------------

@differential()
def test_view_shares_memory(xp):
    a = xp.arange(10.0)
    b = a[::2]
    b += 1
    c = a.reshape(2, 5)
    c[1, :] = 0
    return a, b, xp.shares_memory(a, b)


@differential()
def test_interleaved_views_share_no_memory_but_may(xp):
    """Columns interleave: their bounds overlap, no element is shared (NumPy's exact answer)."""
    a = xp.arange(24.0).reshape(4, 6)
    pairs = [(a[:, 0], a[:, 1]), (a[:, 1], a[:, 1]), (a[::2, 0], a[1::2, 0]), (a[:, ::2], a[:, 1::2]),
             (a[:, ::2], a[:, 2::2]), (a.T[1], a[:, 1]), (a[0], a[:, 0])]
    return ([xp.shares_memory(x, y) for x, y in pairs], [xp.may_share_memory(x, y) for x, y in pairs],
            [xp.shares_memory(x, y, max_work=0) for x, y in pairs],
            [xp.may_share_memory(x, y, max_work=-1) for x, y in pairs])


@differential()
def test_strided_transposed_negative(xp):
    a = xp.arange(24.0).reshape(4, 6)
    return a.T * 2, a[::-1, ::2] + 1, a[1:, 2:].sum(axis=0), xp.ascontiguousarray(a.T[::2])


@differential()
def test_setitem_forms(xp):
    a = xp.zeros((4, 5))
    a[1] = 1
    a[:, 2] = xp.arange(4.0)
    a[a > 0.5] = 7
    a[[0, 3], [1, 4]] = -1
    a[..., 0] += 2
    return a


_CAST_WRITES = [
    ("float64", "int8", [300.0, -129.7, 2.5, -0.5, 1e20, numpy.nan]),
    ("float64", "uint8", [300.0, 255.9, -1.5, 0.0, 70000.0, -1e10]),
    ("float64", "int32", [2.5e9, -3.5, 7.9, numpy.inf, -numpy.inf, 0.0]),
    ("float64", "int64", [1e19, -9.3e18, 2.5, numpy.nan, 0.0, -0.0]),
    ("float64", "uint32", [4e9, -2.5, 4294967295.5, 1e19, 3.0, -1e19]),  # (5e9: NumPy's loops differ)
    ("float64", "uint64", [1.5e19, -2.5, 2.0**63, 3.0, 1e20, 9.3e18]),
    ("float64", "bool", [0.0, -0.0, 2.5, numpy.nan, numpy.inf, -1e-300]),
    ("float32", "int16", [40000.0, -32768.5, 1.5, -7.0, 3e9, 0.25]),
    ("int64", "float32", [2**40 + 1, -3, 2**24 + 1, 7, -(2**62), 0]),
    ("int64", "uint8", [256, -1, 511, 7, -(2**62), 255]),
    ("bool", "float64", [True, False, True, True, False, False]),
]


@pytest.mark.parametrize("source,dtype,values", _CAST_WRITES, ids=lambda v: repr(v).replace(" ", ""))
@differential()
def test_writes_of_device_values_cast_as_numpys(xp, source, dtype, values):
    # a[basic key] = a device value of another dtype: NumPy's unsafe cast, the host's C conversion
    # (CuPy's own copies saturate float -> integer conversions: 300.0 into int8 is 127 there, 44
    # in NumPy); computed, broadcast into a wider view, and pending (the statement's own kernel)
    host = numpy.array(values, source)
    v = xp.asarray(host)
    n = len(values)
    a = xp.zeros((3, 2 * n), dtype)
    b = xp.zeros((3, n), dtype)  # (written by index arrays, a mask and a NumPy scalar: the general path)
    with numpy.errstate(all="ignore"):
        a[0, ::2] = v
        a[1:, 1::2] = v
        a[2, :n] = xp.negative(xp.negative(v)) if source != "bool" else ~(~v)
        b[0, xp.asarray(numpy.arange(n)[::-1])] = v
        b[xp.asarray(numpy.arange(3 * n).reshape(3, n) // n == 1)] = v
        b[2, xp.asarray(numpy.array([1]))] = host[0]
    return a, b


#: Calls that convert a device array of floats into an integer dtype (CuPy converts them in its own
#: kernels, which saturate: 300.0 into int8 is 127 there, NumPy's 44): name -> body(xp, v, dtype)
_CAST_CALLS = {
    "asarray": lambda xp, v, dt: xp.asarray(v, dtype=dt),
    "array": lambda xp, v, dt: xp.array(v, dtype=dt),
    "ascontiguousarray": lambda xp, v, dt: xp.ascontiguousarray(v[::-1], dtype=dt),
    "copyto": lambda xp, v, dt: _copied_into(xp, v, dt),
    "concatenate": lambda xp, v, dt: xp.concatenate([v, v[::2]], dtype=dt, casting="unsafe"),
    "stack": lambda xp, v, dt: xp.stack([v, v], dtype=dt, casting="unsafe"),
    "hstack": lambda xp, v, dt: xp.hstack([v, v], dtype=dt, casting="unsafe"),
    "sum": lambda xp, v, dt: xp.sum(v.reshape(2, -1), axis=1, dtype=dt),
    "prod": lambda xp, v, dt: xp.prod(v[:2], dtype=dt),
    "cumsum": lambda xp, v, dt: xp.cumsum(v, dtype=dt),
    "cumprod": lambda xp, v, dt: xp.cumprod(v[:3], dtype=dt),
    "add_reduce": lambda xp, v, dt: xp.add.reduce(v, dtype=dt),
    "add_accumulate": lambda xp, v, dt: xp.add.accumulate(v, dtype=dt),
    "mean": lambda xp, v, dt: xp.mean(v[:1], dtype=dt),
    "trace": lambda xp, v, dt: xp.trace(v.reshape(2, -1)[:, :2], dtype=dt),
    "nansum": lambda xp, v, dt: xp.nansum(v.reshape(2, -1), axis=0, dtype=dt),
    "nancumsum": lambda xp, v, dt: xp.nancumsum(v, dtype=dt),
    "einsum": lambda xp, v, dt: xp.einsum("i,i->i", v, v * 0 + 1, dtype=dt, casting="unsafe"),
    "ufunc_out": lambda xp, v, dt: xp.add(v, 0.25, out=xp.zeros(v.shape, dt), casting="unsafe"),
    "unary_out": lambda xp, v, dt: xp.rint(v, out=xp.zeros(v.shape, dt), casting="unsafe"),
    "clip_out": lambda xp, v, dt: xp.clip(v, -1e30, 1e30, out=xp.zeros(v.shape, dt), casting="unsafe"),
    "take_out": lambda xp, v, dt: xp.take(v, xp.asarray(numpy.arange(6)[::-1]), out=xp.zeros(6, dt)),
    "full": lambda xp, v, dt: xp.full(v.shape, v, dtype=dt),
    "full_scalar": lambda xp, v, dt: xp.full((2, 3), numpy.float64(300.75), dtype=dt),
    "full_like": lambda xp, v, dt: xp.full_like(xp.zeros(3, dt), 300.75),
    "fill": lambda xp, v, dt: _filled(xp, dt, -2.75),
    "fill_out_of_range": lambda xp, v, dt: _filled(xp, dt, 65536.5),
    "fill_nan": lambda xp, v, dt: _filled(xp, dt, numpy.nan),
    "matmul": lambda xp, v, dt: xp.matmul(v[:4].reshape(2, 2), v[4:8].reshape(2, 2), dtype=dt, casting="unsafe"),
    "putmask": lambda xp, v, dt: xp.putmask(xp.zeros(v.shape, dt), v > 0, v),
}


def _filled(xp, dt, value):
    a = xp.zeros(4, dt)
    a.fill(value)
    return a


def _copied_into(xp, v, dt):
    a = xp.zeros(v.shape, dt)
    xp.copyto(a, v, casting="unsafe")
    return a


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "uint32", "int64", "uint64"])
@pytest.mark.parametrize("call", sorted(_CAST_CALLS))
@differential()
def test_calls_cast_floats_to_integers_as_numpys(xp, call, dtype):
    # NumPy converts each float as the host's C does (on x86-64 through int64: 300.0 into int8 is
    # 44, NaN and infinities int64's lowest); every call that converts device floats into an
    # integer dtype gives those values. (NumPy's own uint32 conversions of values outside int64's
    # low 32 bits' reach differ between its SIMD loop and its scalar one: 1e10 is 0 in an array of
    # ten, 1410065408 in an array of one; the uint32 values stay where both loops agree.)
    values = [300.75, -2.5, 1e10, numpy.nan, -129.7, numpy.inf, 2.5e9, -3e9, 65535.5, -0.5]
    if dtype == "uint32":
        values = [300.75, -2.5, 4.2e9, 1.5, -129.7, 65536.25, 2.5e9, -7.0, 65535.5, -0.5]
    v = xp.asarray(numpy.array(values))
    with numpy.errstate(all="ignore"):
        return _CAST_CALLS[call](xp, v, dt=numpy.dtype(dtype))


@differential()
def test_negative_zero_writes_keep_the_sign(xp):
    # CuPy's fill writes a zero as a memset: -0.0 became +0.0 in full, fill, and writes of the
    # scalar by slices, index arrays and masks (found by tools/fuzz_programs.py on an H100)
    a = xp.ones(6)
    a[1:3] = -0.0
    a[xp.asarray(numpy.array([4]))] = -0.0
    a[xp.asarray(numpy.arange(6) == 5)] = -0.0
    b = xp.ones((2, 3), numpy.float32)
    b.fill(-0.0)
    c = xp.ones(3, numpy.complex128)
    c[0] = complex(0.0, -0.0)
    made = [xp.full(3, -0.0), xp.full((2, 2), -0.0, dtype=numpy.float32), xp.full_like(a, -0.0)]
    d = xp.ones(4)
    xp.copyto(d, -0.0)
    # (CuPy uploads a 0-d array by a fill, whose zero is a memset: every write above went through one)
    cell = xp.asarray(numpy.array(-0.0))
    return [xp.signbit(x) for x in (a, b, *made, d, cell)] + [xp.signbit(c.imag)]


@differential()
def test_index_writes_with_repeated_positions_keep_the_last(xp):
    # NumPy writes index-array assignments in index order, so the last write of a position wins;
    # CuPy's scatter wrote them in any order (found by tools/fuzz_programs.py on an H100)
    a = xp.zeros(6)
    a[xp.asarray(numpy.array([1, 3, 1, -5, 0]))] = xp.asarray(numpy.array([10.0, 20.0, 30.0, 40.0, 50.0]))
    b = xp.zeros((4, 3), numpy.int32)
    b[xp.asarray(numpy.array([2, 2, 0, 2]))] = xp.asarray(numpy.arange(12, dtype=numpy.int32).reshape(4, 3))
    c = xp.zeros(5, numpy.uint8)
    c[xp.asarray(numpy.array([4, 4, 4]))] = xp.asarray(numpy.array([1, 2, 3], numpy.uint8))
    return a, b, c


@differential()
def test_round_of_integers_to_tens_goes_through_float64(xp):
    # NumPy rounds integers to negative decimals as rint(a / 10**k) * 10**k in float64, cast back:
    # int16's -32768 becomes 32766 and uint64's largest 0 (CuPy's integer arithmetic differed;
    # found by tools/fuzz_programs.py on an H100)
    with numpy.errstate(invalid="ignore"):
        return (xp.round(xp.asarray(numpy.array([-32768, 15, 25, -35, 45, 32767], numpy.int16)), -1),
                xp.round(xp.asarray(numpy.array([2**64 - 1, 15, 25, 1234], numpy.uint64)), -1),
                xp.round(xp.asarray(numpy.array([-15, 149, 151], numpy.int8)), -2))


@differential()
def test_count_nonzero_counts_subnormals(xp):
    # CuPy's kernels flush float32 subnormals: count_nonzero counted 1e-40 as zero (found by
    # tools/fuzz_programs.py on an H100)
    a = xp.asarray(numpy.array([[1e-40, 0.0, -0.0], [1e-45, 2.0, numpy.nan]], numpy.float32))
    return xp.count_nonzero(a), xp.count_nonzero(a, axis=1), xp.count_nonzero(a, axis=0, keepdims=True)


@pytest.mark.parametrize("decimals", [-1, 0, 2])
@differential()
def test_round_of_bools_is_numpys(xp, decimals):
    # NumPy rounds bools through float16: decimals 0 gives float16, others its casting error (the
    # OpenCL backend returned the bools; found by tools/fuzz_programs.py)
    return xp.round(xp.asarray(numpy.array([True, False, True])), decimals)


@pytest.mark.parametrize("ufunc", ["sin", "cos", "tan"])
@differential()
def test_float32_trigonometry_beside_infinities(xp, ufunc):
    # PoCL 3.0's float8 sin, cos and tan gave the other lanes of a vector holding an infinity wrong
    # values (sin(0.001) as 0.0079999, sin(0.008)); found by tools/fuzz_programs.py on OpenCL
    x = numpy.tile(numpy.array([0.001, 0.5, 3.0, 0.01, 1e-5, 0.9, 2.0, 0.2], numpy.float32), 4)
    x[9], x[23], x[30] = numpy.inf, -numpy.inf, numpy.nan
    with numpy.errstate(invalid="ignore"):
        return getattr(xp, ufunc)(xp.asarray(x)), getattr(xp, ufunc)(xp.asarray(x.reshape(4, 8)) * 1)


@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float64])
@differential(rtol=0.0)
def test_tanh_reaches_one_where_numpys_does(xp, dtype):
    # PoCL 3.0's float tanh stopped at 0.99999994, tanh(inf) included (found by
    # tools/fuzz_programs.py: trunc(tanh(x)) was 0 where NumPy's is 1); NumPy's float32 loop is 1
    # from |x| >= 10 (between 9.01 and 10 a correctly rounded tanh, CUDA's, is 1 where NumPy's is
    # 0.99999994: an ulp, left out here)
    x = numpy.array([numpy.inf, -numpy.inf, 10.0, -10.0, 20.0, -1e30, 0.0, -0.0, numpy.nan, 50.0, 1e6, -100.0],
                    dtype)
    x = numpy.tile(x, 3)  # (vector kernels and their remainder)
    return xp.tanh(xp.asarray(x)), xp.trunc(xp.tanh(xp.asarray(x[:13]) * 1))


@differential(rtol=0.0)
def test_views_of_a_zero_dimensional_array(xp):
    # NumPy's flip of a 0-d array is its element (m[()]): OpenCL's view of it took the offset of the
    # scalar's own memory (found by tools/fuzz_programs.py)
    a = xp.asarray(numpy.array(-7, numpy.int16))
    return xp.flip(a), xp.flip(a, axis=None), xp.squeeze(a), xp.expand_dims(a, 0), a.T, a[...]


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "uint64"])
@differential()
def test_integers_converted_into_a_float16_loop(xp, dtype):
    # OpenCL's code generator converts no integer wider than a byte into float16 (NumPy warns of its
    # overflow): the loop true_divide(..., dtype=float16) converts its operands, and raised KeyError
    # (NumPy's own test_ufunc.py::test_true_divide, run by tools/numpy_suite.py)
    a = xp.asarray(numpy.array([10, 100, 120, 3], dtype))
    b = xp.asarray(numpy.array([20, 3, 1, 7], dtype))
    return xp.true_divide(a, b, dtype=numpy.float16), xp.add(a, 1.5, dtype=numpy.float16)


@pytest.mark.parametrize("how", ["convolve", "correlate"])
@differential()
def test_correlation_modes_by_number(xp, how):
    # NumPy takes 0, 1 and 2 for 'valid', 'same' and 'full': OpenCL raised KeyError (NumPy's own
    # test_numeric.py::TestConvolve::test_mode, run by tools/numpy_suite.py)
    a, v = xp.asarray(numpy.arange(9.0)), xp.asarray(numpy.array([1.0, -2.0, 0.5]))
    return tuple(getattr(xp, how)(a, v, mode=m) for m in (0, 1, 2, numpy.int64(2), "same"))


@differential(rtol=0.0)
def test_isclose_bound_of_a_python_number_is_a_weak_scalar(xp):
    # NumPy computes atol + rtol * abs(b) of a Python number b in Python, then compares float32 data
    # with it as a weak scalar (NEP 50): OpenCL computed it in float64 (NumPy's own
    # test_numeric.py::TestIsclose::test_nep50_isclose, run by tools/numpy_suite.py)
    below_one = float(1.0 - numpy.finfo("f8").eps)
    f32 = xp.asarray(numpy.array([below_one, 2.0, numpy.nan, numpy.inf, -1.0], numpy.float32))
    return (xp.isclose(f32, 2, atol=0, rtol=below_one / 2), xp.isclose(f32, below_one, atol=0, rtol=0),
            xp.isclose(f32, numpy.inf), xp.isclose(f32, float("nan"), equal_nan=True), xp.isclose(f32, 2.5, rtol=0.3))


@pytest.mark.parametrize("bounds", [(2,), (), ((), {"a_max": 2}), ((), {"a_min": 2}), ((1, 3), {})])
@differential()
def test_clip_with_one_bound_missing_is_numpys_type_error(xp, bounds):
    # the device's own clip took a missing a_max as None (NumPy's own
    # test_numeric.py::TestClip::test_clip_min_max_args, run by tools/numpy_suite.py)
    args, kwargs = (bounds, {}) if not bounds or not isinstance(bounds[0], tuple) else bounds
    return xp.clip(xp.asarray(numpy.arange(5)), *args, **kwargs)


@pytest.mark.parametrize("call", ["method_one_bound", "method_max", "method_none", "method_both", "method_out",
                                  "min_keyword", "min_and_max", "max_float", "complex_min"])
@differential()
def test_clip_by_numpy_2s_names_and_the_methods_one_bound(xp, call):
    # ndarray.clip(min=None, max=None): a.clip(2) is a lower bound (the device array's method passed
    # it on as numpy.clip(a, 2): a TypeError); numpy.clip's min=/max= keywords (NumPy 2), which
    # CuPy's clip does not take
    a = xp.asarray(numpy.arange(6).reshape(2, 3))
    f = xp.asarray(numpy.array([numpy.nan, -1.5, 0.5, 2.5]))
    z = xp.asarray(numpy.array([1 + 2j, -3 + 0j, 2 - 1j]))
    out = xp.asarray(numpy.zeros((2, 3), numpy.int64))
    return {"method_one_bound": lambda: a.clip(2), "method_max": lambda: a.clip(max=3),
            "method_none": lambda: a.clip(), "method_both": lambda: a.clip(1, 4),
            "method_out": lambda: (a.clip(1, 4, out), out), "min_keyword": lambda: xp.clip(a, min=2),
            "min_and_max": lambda: xp.clip(f, min=-1.0, max=1.0), "max_float": lambda: xp.clip(a, max=2.5),
            "complex_min": lambda: xp.clip(z, min=0, max=2)}[call]()


@pytest.mark.parametrize("bounds", [((2,), {}), ((), {"a_max": 2}), ((1, 3), {"min": 1}), ((), {"a_min": 1, "max": 2})])
@differential()
def test_clip_refuses_names_as_numpy_does(xp, bounds):
    return xp.clip(xp.asarray(numpy.arange(5)), *bounds[0], **bounds[1])


@pytest.mark.parametrize("bounds", [(-128, 1000), (-1, 255), (0, 256), (None, None), (-(2**70), 2**70)])
@differential()
def test_clip_of_integers_by_python_ints_beyond_their_dtype_is_numpys(xp, bounds):
    # NumPy drops a Python-int bound beyond an integer array's dtype (NEP 50) and clips by none at
    # all as positive(a); CuPy's clip converted them into the dtype: an OverflowError (an H100's fuzz)
    a = xp.asarray(numpy.array([0, 7, 255], numpy.uint8))
    return xp.clip(a, *bounds), xp.clip(a[0], *bounds), xp.clip(a.astype(numpy.int8), *bounds)


@pytest.mark.parametrize("call", ["swapaxes", "swapaxes_0d", "rollaxis", "rollaxis_start", "moveaxis", "expand_dims",
                                  "squeeze", "transpose", "flip"])
@differential()
def test_view_functions_refuse_an_axis_out_of_range_with_numpys_error(xp, call):
    # NumPy's AxisError (an IndexError too), where CuPy's swapaxes and rollaxis raise ValueError
    a = xp.asarray(numpy.arange(6.0).reshape(2, 3))
    return {"swapaxes": lambda: xp.swapaxes(a, 0, 2), "swapaxes_0d": lambda: xp.swapaxes(a[0, 0], 0, -1),
            "rollaxis": lambda: xp.rollaxis(a, 2), "rollaxis_start": lambda: xp.rollaxis(a, 0, 4),
            "moveaxis": lambda: xp.moveaxis(a, 0, 2), "expand_dims": lambda: xp.expand_dims(a, 4),
            "squeeze": lambda: xp.squeeze(a, 2), "transpose": lambda: xp.transpose(a, (0, 2)),
            "flip": lambda: xp.flip(a, 2)}[call]()


@differential()
def test_the_array_apis_astype_without_a_copy_is_the_array(xp):
    # numpy.astype(x, x.dtype, copy=False) returns x: the CuPy/emulated backend fell back, and the
    # host round trip made a copy (NumPy's own test_numeric.py::TestAsType::test_astype)
    a = xp.asarray(numpy.array([[1, 2], [3, 4]], numpy.int64))
    same = xp.astype(a, numpy.int64, copy=False)
    return (xp.shares_memory(a, same), xp.astype(a, numpy.uint32), xp.astype(xp.asarray(numpy.array([1.5, 300.0])),
                                                                         numpy.int8, copy=False))


@pytest.mark.parametrize("operand", ["numpy_scalar", "zero_d", "list"])
@differential()
def test_the_array_apis_astype_of_scalars_and_sequences(xp, operand):
    # (a NumPy scalar converts, a 0-d array stays 0-d, a list is NumPy's TypeError)
    x = {"numpy_scalar": numpy.int64(10), "zero_d": xp.asarray(numpy.array(10)), "list": [[1, 2]]}[operand]
    return xp.astype(x, numpy.float64)


_SUBNORMAL = numpy.float32(1e-40)  # (a float32 subnormal: CuPy's kernels flush it to zero)


@differential()
def test_clip_is_numpys_at_nan_crossed_bounds_and_subnormals(xp):
    # CuPy's clip kernel returns the upper bound for NaN where the bounds cross, and compares
    # float32 subnormals as zeros; NumPy's clip loop keeps NaN and compares them as they are
    h = numpy.array([numpy.nan, 1.0, -0.0, 5.0, _SUBNORMAL, -numpy.inf], numpy.float32)
    a = xp.asarray(h)
    return (xp.clip(a, 1e10, 3), xp.clip(a, 3, 0.0), xp.clip(a, 0.0, 0), xp.clip(a, 0.0, 2.0),
            xp.clip(a, None, 2), xp.clip(a, 3, None), xp.clip(xp.asarray(numpy.array([5, -300, 7])), 0, 6),
            xp.signbit(xp.clip(a, -1.0, 1.0)), xp.signbit(xp.clip(a, 0.0, 7.0)), xp.signbit(xp.clip(a, -1.0, -0.0)),
            xp.signbit(xp.clip(xp.asarray(numpy.array([0.0, -0.0] * 20)), -128.0, -0.0)))


@differential()
def test_float32_subnormals_are_kept_by_casts_where_and_joins(xp):
    h = numpy.array([_SUBNORMAL, -_SUBNORMAL, 1.5, 0.0], numpy.float32)
    a = xp.asarray(h)
    ints = xp.asarray(numpy.array([1, 2], numpy.uint32))
    return (a.astype(numpy.float64), a.astype(bool), xp.where(a, 1, 2), xp.where(a > 1, 2.0, a.astype(numpy.float64)),
            xp.where(xp.asarray(numpy.array([True, False, True, False])), a, xp.zeros(4)),
            xp.concatenate([a, ints]), xp.stack([a, xp.zeros(4)]), xp.asarray(h.astype(numpy.float64)).astype(
                numpy.float32))


_OVERLAPPING_COPIES = {
    "forward_wider_source": lambda a: a.__setitem__(slice(2, 7), a[::2]),
    "wider_destination": lambda a: a.__setitem__(slice(None, None, 2), a[2:7]),
    "backward": lambda a: a.__setitem__(slice(7, 2, -1), a[::-2][:5]),
    "row_into_column": lambda a: a.reshape(2, 5).__setitem__((slice(None), 0), a.reshape(2, 5)[0, :2]),
    "three_strides": lambda a: a.__setitem__(slice(1, 10, 3), a[:3]),
    "reversed_source_reaching": lambda a: a.__setitem__(slice(5, 8), a[::-4][:3]),
    "copyto": lambda a: numpy.copyto(a[2:7], a[::2]),
    "copyto_where": lambda a: numpy.copyto(a[:6:2], a[:3], where=numpy.array([True, True, True])),
    # place reads its values one at a time, cycling through them
    "place": lambda a: numpy.place(a, _mask(a, [2, 3, 4, 6, 9]), a),
    "place_cycling": lambda a: numpy.place(a, _mask(a, [1, 2, 3, 4, 5, 6, 7, 8]), a[:3]),
    # a boolean mask of the array's dimensions and a 1-D value: runs of adjacent true positions
    # move at once (a[3] reads its old value), later runs read what earlier ones wrote (a[7])
    "mask_runs": lambda a: a.__setitem__(_mask(a, [2, 3, 7, 9]), a[1:5]),
    "mask_strided_value": lambda a: a.__setitem__(_mask(a, [5, 6, 7, 8]), a[::-1][:4]),
    "mask_of_a_view": lambda a: a.reshape(2, 5)[:, 1:].__setitem__(_mask(a.reshape(2, 5)[:, 1:], [2, 3, 4, 5]),
                                                                    a[2:6]),
}


def _mask(a, positions):
    """A boolean device (or host) array of ``a``'s shape, true at the flat ``positions``."""
    host = numpy.zeros(a.size, bool)
    host[positions] = True
    return (npgpu.asarray if type(a) is not numpy.ndarray else numpy.asarray)(host.reshape(a.shape))


@pytest.mark.parametrize("dtype", ["float64", "int16"])
@pytest.mark.parametrize("case", sorted(_OVERLAPPING_COPIES))
@differential()
def test_copies_between_overlapping_views_are_numpys(xp, case, dtype):
    # NumPy copies one-dimensional views of unequal strides element by element, without a
    # temporary: a[2:7] = a[::2] reads a[6] after writing it (a copy first gave other values)
    a = xp.asarray((numpy.arange(10) * 3 - 7).astype(dtype))
    _OVERLAPPING_COPIES[case](a)
    return a


_SCALAR_WRITES = [
    ("float64", (2, 3), 1.5), ("float64", (-1, -1), numpy.float32(0.1)), ("float64", (1, slice(None)), 7),
    ("int64", (0, 0), 2.9), ("int64", (slice(1, None), 2), -3), ("uint8", (1, 1), 300), ("uint8", (0, 0), -1),
    ("int32", (2, 2), float("nan")), ("float32", (0, 1), 1e300), ("float64", (0, 0), 1j),
    ("complex128", (3, slice(None, None, 2)), 2 - 1j), ("bool", (1, 2), 5), ("float64", (4, 0), 1.0),
    ("float64", (0, 9), 2.0), ("uint8", (9, 0), 300), ("float64", (Ellipsis, 1), numpy.int64(4)),
]


@pytest.mark.parametrize("dtype,key,value", _SCALAR_WRITES, ids=lambda v: repr(v).replace(" ", ""))
@differential()
def test_scalar_writes_convert_and_fail_as_numpys(xp, dtype, key, value):
    # a[key] = scalar with a basic key fills the view: NumPy's conversion, its errors (a bad
    # index before a bad value), and the array left intact when it raises
    a = xp.asarray((numpy.arange(16) % 5).reshape(4, 4).astype(dtype))
    before = a * 1  # (held, pending where recorded: must keep the old values)
    with numpy.errstate(over="ignore"):
        try:
            a[key] = value
        except (IndexError, OverflowError, ValueError, TypeError) as exc:
            return type(exc).__name__, a, before
    return a, before


@differential()
def test_getitem_forms(xp):
    a = xp.arange(30).reshape(5, 6)
    return a[2], a[1:4, ::2], a[[0, 2, 4]], a[a % 3 == 0], a[:, None, 1], a[..., -1], a[-1, -1]


_MIXED_KEYS = {
    # index arrays after a slice, an Ellipsis or a number: each names the axis it stands on
    "slice_then_rows": lambda xp: (slice(None), xp.asarray(numpy.array([0, 3, -1]))),
    "slice_then_outside": lambda xp: (slice(None), xp.asarray(numpy.array([0, 4]))),
    "ellipsis_between": lambda xp: (xp.asarray(numpy.array([1])), Ellipsis, xp.asarray(numpy.array([-2, -4, -1]))),
    "ellipsis_then_outside": lambda xp: (Ellipsis, xp.asarray(numpy.array([-5]))),
    "number_then_rows": lambda xp: (2, xp.asarray(numpy.array([3, 3, 0]))),
    # index arrays that broadcast to nothing select nothing: NumPy checks none of their values
    "broadcast_to_nothing": lambda xp: (Ellipsis, xp.asarray(numpy.array([3])), xp.asarray(numpy.array([], int))),
}


@pytest.mark.parametrize("case", sorted(_MIXED_KEYS))
@differential()
def test_index_arrays_after_other_index_items(xp, case):
    a = xp.asarray(numpy.arange(12.0).reshape(3, 4))
    key = _MIXED_KEYS[case](xp)
    try:
        selected = a[key]
    except IndexError as exc:
        selected = str(exc)
    try:
        a[key] = -1.0
    except IndexError as exc:
        return selected, str(exc), a
    return selected, a


@pytest.mark.parametrize("key", [10, (0, 7), -11])
@differential()
def test_index_out_of_range(xp, key):
    a = xp.arange(20).reshape(10, 2)
    return a[key]


@differential()
def test_fancy_index_out_of_range_leaves_array_intact(xp):
    a = xp.arange(5)
    try:
        a[xp.asarray([1, 9])] = 0
    except IndexError:
        pass
    return a, a[xp.asarray([0, 4, -1])]


@differential()
def test_bad_reshape(xp):
    return xp.arange(10).reshape(3, 4)


# -- reductions --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["bool", "int8", "int32", "uint16", "int64", "float32", "float64"])
@differential(rtol=1e-4)
def test_reductions(xp, dtype):
    a = _data(xp, dtype, shape=(6, 7), seed=6)
    return (a.sum(), a.sum(axis=0), a.prod(axis=1), a.min(), a.max(axis=0), a.argmin(), a.argmax(axis=1),
            a.any(), a.all(axis=0), xp.cumsum(a, axis=1), a.sum(axis=1, keepdims=True))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@differential(rtol=1e-4)
def test_statistics(xp, dtype):
    a = _data(xp, dtype, shape=(5, 8), seed=7)
    return a.mean(), a.mean(axis=0), a.std(), a.var(axis=1, ddof=1), xp.median(a), xp.nansum(a), xp.ptp(a)


@differential()
def test_nan_reductions(xp):
    a = xp.asarray([[1.0, numpy.nan, 3.0], [4.0, 5.0, numpy.nan]])
    return a.max(), xp.nanmax(a), xp.nanmin(a, axis=1), xp.nanmean(a), xp.nanargmax(a, axis=0), a.sum()


@differential()
def test_empty_reduction_error(xp):
    return xp.zeros(0).max()


@differential()
def test_ufunc_methods(xp):
    a = xp.arange(1.0, 7.0).reshape(2, 3)
    return (xp.add.reduce(a), xp.add.reduce(a, axis=1), xp.multiply.accumulate(a, axis=1),
            xp.maximum.reduce(a, axis=None), xp.add.outer(xp.arange(3), xp.arange(4)),
            xp.add.reduceat(xp.arange(8), [0, 4, 6]))


@differential()
def test_ufunc_at(xp):
    a = xp.zeros(5)
    xp.add.at(a, [0, 1, 1, 4], 1.0)
    return a


# -- zero-d, empty, creation -------------------------------------------------------------------

@differential()
def test_zero_d_and_empty(xp):
    s = xp.asarray(3.5)
    e = xp.zeros((0, 3))
    return s * 2, s.ndim, e.sum(axis=0), e.shape, (e + 1).shape, xp.zeros(()) + 1


@differential()
def test_creation(xp):
    return (xp.zeros((2, 3)), xp.ones(4, dtype=xp.int16), xp.full((2, 2), 7), xp.arange(0, 1, 0.25),
            xp.linspace(0, 1, 5), xp.eye(3), xp.identity(2), xp.empty_like(xp.zeros(3)).shape,
            xp.zeros_like(xp.arange(4)), xp.full_like(xp.arange(3.0), 2))


@differential()
def test_shape_functions(xp):
    a = xp.arange(24).reshape(2, 3, 4)
    return (xp.transpose(a, (2, 0, 1)), xp.swapaxes(a, 0, 2), xp.moveaxis(a, 0, -1), a.ravel(), a.flatten(),
            xp.squeeze(a[:, :1]), xp.expand_dims(a, 0).shape, xp.concatenate([a, a], axis=1),
            xp.stack([a, a]), xp.vstack([a[0], a[1]]), xp.split(a, 2, axis=2), xp.tile(a[0, 0], 2),
            xp.repeat(a[0, 0], 2), xp.flip(a, 1), xp.roll(a, 1))


@differential()
def test_linear_algebra(xp):
    a = xp.arange(1.0, 10.0).reshape(3, 3) + xp.eye(3) * 10
    v = xp.arange(3.0)
    return (a @ v, xp.dot(a, a), a.dot(v), xp.matmul(a[None], a), xp.tensordot(a, a, axes=1),
            xp.linalg.inv(a), xp.linalg.solve(a, v), xp.linalg.norm(a), xp.linalg.det(a),
            xp.einsum("ij,jk->ik", a, a), xp.outer(v, v), xp.trace(a))


@differential(atol=1e-12)
def test_fft(xp):
    a = xp.sin(xp.linspace(0, 8, 16))
    return xp.fft.fft(a), xp.fft.rfft(a), xp.fft.ifft(xp.fft.fft(a)).real


@differential()
def test_sort_search(xp):
    a = xp.asarray([3, 1, 4, 1, 5, 9, 2, 6])
    b = a.copy()
    b.sort()
    return xp.sort(a), xp.argsort(a, kind="stable"), b, xp.searchsorted(b, 4), xp.unique(a), xp.nonzero(a > 3)


@differential()
def test_where_clip_round(xp):
    a = xp.linspace(-2, 2, 9)
    return xp.where(a > 0, a, 0), xp.clip(a, -1, 1), a.clip(0, 0.5), xp.round(a * 1.37, 1), a.round()


@differential(atol=1e-12)  # CuPy's linspace lands 1e-16 off NumPy's exact 0.0
def test_astype_and_conversions(xp):
    a = xp.linspace(-2.7, 2.7, 7)
    return a.astype(xp.int32), a.astype("float32"), (a > 0).astype(int), a.astype(xp.complex64)


@differential()
def test_object_dtype_falls_back(xp):
    a = xp.asarray([1, "a", None], dtype=object)
    return a[:2], len(a)


@differential()
def test_mixed_host_device(xp):
    host = numpy.arange(5.0)
    dev = xp.arange(5.0)
    return dev + host, host * dev, xp.concatenate([host, dev]), numpy.add(host, dev)


@differential()
def test_numpy_functions_on_device_arrays(xp):
    # Code that calls numpy directly (e.g. inside a library) reaches __array_function__.
    a = xp.arange(12.0).reshape(3, 4)
    return numpy.mean(a, axis=0), numpy.sum(a), numpy.concatenate([a, a]), numpy.median(a)


@differential()
def test_scalar_conversions(xp):
    a = xp.arange(5)
    return float(a[2]), int(a.sum()), bool(a[1]), a[3].item(), a.tolist(), list(range(10))[a[2]], complex(a[1])


@differential()
def test_ambiguous_truth_value(xp):
    return bool(xp.arange(3))


@differential()
def test_random_shapes(xp):
    xp.random.seed(0)
    r = xp.random.rand(3, 4)
    g = xp.random.default_rng(1)
    return r.shape, r.dtype, g.random(5).shape, g.standard_normal((2, 2)).dtype, xp.random.randint(0, 5, 10).dtype


# -- small host reductions (npgpu's shorter road to NumPy's ufunc reduction) ------------------

SMALL_REDUCTIONS = ["sum", "prod", "max", "min", "amax", "amin", "any", "all"]
REDUCTION_FORMS = {
    "a": lambda f, a: f(a),
    "a, 0": lambda f, a: f(a, 0),
    "a, -1": lambda f, a: f(a, -1),
    "a, None": lambda f, a: f(a, None),
    "a, axis=1": lambda f, a: f(a, axis=1),
    "a, axis=None": lambda f, a: f(a, axis=None),
    "a, 5 (bad axis)": lambda f, a: f(a, 5),
    "a, axis=0, keepdims": lambda f, a: f(a, axis=0, keepdims=True),
}
ODD_DTYPES = ["float16", "object", "timedelta64[s]", "datetime64[s]", "U3"]


def _reduction_inputs(dtype):
    if dtype in ODD_DTYPES:
        base = numpy.arange(1, 7).reshape(2, 3)
        return [base.astype(dtype), base[:, :0].astype(dtype), numpy.array(3).astype(dtype)]
    a = _data(numpy, dtype, shape=(3, 4), seed=11)
    return [a, a[:, :0], a[0, 0].reshape(()), a.T]


@pytest.mark.parametrize("dtype", [*ALL_DTYPES, *ODD_DTYPES])
def test_function_reductions_on_small_host_arrays(npgpu_backend, dtype):
    # With acceleration on, sum(a), max(a, axis) ... on a small NumPy array take a shorter road
    # to NumPy's own reduction: every form must give NumPy's value, dtype and exception.
    import npgpu
    from npgpu._harness import assert_same, backend_context

    for a in _reduction_inputs(dtype):
        for name in SMALL_REDUCTIONS:
            for form, call in REDUCTION_FORMS.items():
                try:
                    expected, expected_exc = call(getattr(numpy, name), a), None
                except Exception as exc:  # compared below
                    expected, expected_exc = None, exc
                with backend_context(npgpu_backend, threshold=1 << 20):
                    try:
                        actual, actual_exc = call(getattr(npgpu, name), a), None
                    except Exception as exc:  # compared below
                        actual, actual_exc = None, exc
                where = f"npgpu.{name}({form}) on {a.dtype} {a.shape}"
                if expected_exc is not None:
                    assert type(actual_exc) is type(expected_exc), f"{where}: {actual_exc!r} != {expected_exc!r}"
                    assert str(actual_exc) == str(expected_exc), where
                else:
                    assert actual_exc is None, f"{where} raised {actual_exc!r}"
                    assert_same(actual, expected, device=False, path=where)


def test_small_host_reductions_are_counted():
    import npgpu

    a = numpy.arange(6.0)
    npgpu.report(reset=True)
    with npgpu.enable("numpy", threshold=1 << 20):
        assert npgpu.sum(a) == 15.0 and npgpu.max(a, 0) == 5.0 and not npgpu.all(a, axis=None)
        npgpu.zeros(3), npgpu.array([1, 2]), npgpu.asarray(a), npgpu.random.rand(2)
    counts = npgpu.report().as_dict()["functions"]
    names = ("sum", "max", "all", "zeros", "array", "asarray", "random.RandomState.rand")
    assert [counts[name]["host"] for name in names] == [1] * 7



_T3 = numpy.linspace(-1.0, 1.0, 60).reshape(3, 4, 5)


@pytest.mark.parametrize(("name", "host", "axis"), [
    ("sum", _T3, (0, 2)), ("sum", _T3, (1, 2)), ("max", _T3, (2, 0)), ("min", _T3, (-1,)), ("prod", _T3, ()),
    ("any", _T3 > 0.5, (0, 1)), ("all", _T3 > -2, (0, 1, 2)),
    ("sum", numpy.arange(60, dtype=numpy.int8).reshape(3, 4, 5), (0, 2)),
    ("sum", _T3 > 0, (1, 2)), ("sum", _T3, (0, 0)), ("sum", _T3, (0, 3)), ("max", _T3[:, :0], (1, 2)),
])
def test_small_host_reductions_over_tuples_of_axes_give_numpys_answers(name, host, axis):
    """A small host reduction over several axes (resnet's per-pixel sums over ``axis=(1, 2, 3)``)
    takes the namespace's short road, as one over an int axis does: NumPy's values, dtype and
    errors, counted as a small host call."""
    import npgpu

    numpy_func, npgpu_func = getattr(numpy, name), getattr(npgpu, name)
    try:
        expected, expected_exc = numpy_func(host, axis=axis), None
    except Exception as exc:  # (NumPy's own error, compared below)
        expected, expected_exc = None, exc
    npgpu.report(reset=True)
    with npgpu.enable("numpy", threshold=1 << 20):
        for call in (lambda: npgpu_func(host, axis=axis), lambda: npgpu_func(host, axis)):
            if expected_exc is not None:
                with pytest.raises(type(expected_exc)) as raised:
                    call()
                assert str(raised.value) == str(expected_exc)
            else:
                got = call()
                assert type(got) is type(expected) and got.dtype == expected.dtype
                numpy.testing.assert_array_equal(got, expected)
    counts = npgpu.report().as_dict()["functions"][name]
    assert (counts["host"], counts["device"], counts["fallback"]) == (2, 0, 0)

# -- small creations and constructors (the namespace's short road to NumPy) -------------------

_HOST_DATA = numpy.arange(12.0).reshape(3, 4)
SMALL_CREATIONS = {
    "zeros(10)": lambda xp: xp.zeros(10),
    "zeros((3, 4), int32)": lambda xp: xp.zeros((3, 4), dtype=xp.int32),
    "ones(5, bool)": lambda xp: xp.ones(5, bool),
    "empty((2, 2)).shape": lambda xp: xp.empty((2, 2)).shape,
    "full((2, 3), 7.5)": lambda xp: xp.full((2, 3), 7.5),
    "arange(10)": lambda xp: xp.arange(10),
    "arange(3, 17, 4)": lambda xp: xp.arange(3, 17, 4),
    "arange(10, 0, -3)": lambda xp: xp.arange(10, 0, -3),
    "arange(5, 5)": lambda xp: xp.arange(5, 5),
    "arange(0, 1, 0.25)": lambda xp: xp.arange(0, 1, 0.25),
    "linspace(0, 1, 11)": lambda xp: xp.linspace(0, 1, 11),
    "logspace(0, 2, 5)": lambda xp: xp.logspace(0, 2, 5),
    "eye(3)": lambda xp: xp.eye(3),
    "identity(4, int)": lambda xp: xp.identity(4, dtype=int),
    "array([1, 2, 3])": lambda xp: xp.array([1, 2, 3]),
    "array([[1, 2], [3, 4]])": lambda xp: xp.array([[1, 2], [3, 4]]),
    "array(2.5)": lambda xp: xp.array(2.5),
    "array([])": lambda xp: xp.array([]),
    "array((1, 2.5), float32)": lambda xp: xp.array((1, 2.5), dtype=xp.float32),
    "asarray(host)": lambda xp: xp.asarray(_HOST_DATA),
    "asarray(host) is host": lambda xp: xp.asarray(_HOST_DATA) is _HOST_DATA,
    "array(host) is not host": lambda xp: xp.array(_HOST_DATA) is not _HOST_DATA,
    "asarray([1, 2], dtype('f4'))": lambda xp: xp.asarray([1, 2], dtype=numpy.dtype("f4")),
    "ascontiguousarray(host.T)": lambda xp: xp.ascontiguousarray(_HOST_DATA.T),
    "asfortranarray(host).flags.f_contiguous": lambda xp: xp.asfortranarray(_HOST_DATA).flags.f_contiguous,
    "random.rand(3, 2).shape": lambda xp: xp.random.rand(3, 2).shape,
    "matmul(host, host.T)": lambda xp: xp.matmul(_HOST_DATA, _HOST_DATA.T),
    "zeros(-1)": lambda xp: xp.zeros(-1),
    "arange(0, 10, 0)": lambda xp: xp.arange(0, 10, 0),
    "array([[1], [1, 2]])": lambda xp: xp.array([[1], [1, 2]]),
    "full((2,), [1, 2, 3])": lambda xp: xp.full((2,), [1, 2, 3]),
}


@pytest.mark.parametrize("name", list(SMALL_CREATIONS))
def test_small_creations_and_constructors_are_numpys(npgpu_backend, name):
    # With acceleration on, small arrays made from nothing or from host data (below a 1 MiB
    # threshold; the emulated backend's own default is 0) are NumPy's, with NumPy's errors,
    # made without the dispatcher's general path.
    import npgpu
    from npgpu._harness import assert_same

    call = SMALL_CREATIONS[name]
    try:
        expected, expected_exc = call(numpy), None
    except Exception as exc:  # compared below
        expected, expected_exc = None, exc
    with npgpu.disable() if npgpu_backend == "off" else npgpu.enable(npgpu_backend, threshold=1 << 20):
        try:
            actual, actual_exc = call(npgpu), None
        except Exception as exc:  # compared below
            actual, actual_exc = None, exc
    if expected_exc is not None:
        assert type(actual_exc) is type(expected_exc), f"{actual_exc!r} != {expected_exc!r}"
    else:
        assert actual_exc is None, repr(actual_exc)
        assert_same(actual, expected, device=False)


def test_creation_and_upload_thresholds_still_place_large_arrays(device_backend):
    import npgpu

    with npgpu.enable(device_backend, threshold=1000):  # bytes, for creation and upload alike
        assert type(npgpu.zeros(100)) is numpy.ndarray  # 800 bytes
        assert isinstance(npgpu.zeros(200), npgpu.DeviceArray)
        assert isinstance(npgpu.arange(3, 403), npgpu.DeviceArray)
        assert type(npgpu.array([1.0] * 100)) is numpy.ndarray
        big = npgpu.array([1.0] * 200)
        assert isinstance(big, npgpu.DeviceArray) and npgpu.asnumpy(big).sum() == 200.0
        assert isinstance(npgpu.asarray(numpy.ones(200)), npgpu.DeviceArray)
        assert type(npgpu.asarray(numpy.ones(100))) is numpy.ndarray
    with npgpu.enable("numpy", threshold=1000):  # the host backend never uploads
        assert type(npgpu.array([1.0] * 200)) is numpy.ndarray


@pytest.mark.parametrize("rows, cols", [([0, 3], [1, 9]), ([0, -5], [1, 2]), ([7, 0], [1, 2]), ([0, 3], [-4, 3])])
@differential()
def test_index_arrays_out_of_range_on_either_axis(xp, rows, cols):
    """Every index array of a key is checked (one read back for all of them on a device), and the
    error names the axis and the index NumPy names."""
    a = xp.arange(12).reshape(4, 3)
    return a[xp.asarray(rows), xp.asarray(cols)]


@pytest.mark.parametrize("rows, cols", [([0, 3], [1, 9]), ([0, 5], [1, 2]), ([0, 3], [2, 1])])
@differential()
def test_a_list_beside_an_index_array_in_and_out_of_range(xp, rows, cols):
    """A Python list index is checked on the host, the device index array beside it on the device
    (CuPy can't stack a host flag with a device one)."""
    a = xp.arange(12).reshape(4, 3)
    return a[rows, xp.asarray(cols)]


@differential()
def test_unsigned_index_arrays_in_and_out_of_range(xp):
    a = xp.arange(12).reshape(4, 3)
    good = a[xp.asarray([3, 0], dtype=xp.uint8), xp.asarray([2, 1], dtype=xp.uint64)]
    try:
        a[xp.asarray([1, 4], dtype=xp.uint16)] = 0
    except IndexError as error:
        return good, a, str(error)
    return good, a, None


def test_clip_by_numpy_2s_names_runs_on_the_cupy_path_without_falling_back():
    # (CuPy's clip takes a_min and a_max alone: a call by min=/max= fell back to NumPy, counted,
    # until the path's own clip took NumPy's names; the emulated backend reads the same signature)
    host = numpy.array([-2.0, 0.5, 3.0])
    npgpu.report(reset=True)
    with npgpu.enable("emulated", threshold=0):
        a = npgpu.asarray(host)
        got = [npgpu.clip(a, min=0.0), npgpu.clip(a, max=1.0), npgpu.clip(a, min=0.0, max=1.0), a.clip(max=1.0)]
    for g, want in zip(got, [numpy.clip(host, min=0.0), numpy.clip(host, max=1.0), numpy.clip(host, 0.0, 1.0),
                             host.clip(max=1.0)], strict=True):
        numpy.testing.assert_array_equal(numpy.asarray(g), want)
    counts = npgpu.report().as_dict()["functions"]["clip"]
    assert (counts["device"], counts["fallback"]) == (4, 0)
