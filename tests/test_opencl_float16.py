"""float16 on the OpenCL device, against NumPy: stored as halves, computed as NumPy computes them.

NumPy's float16 loops widen each operand to float32, compute in float32 and round the result to
half (to nearest even) after every operation. The device does the same in OpenCL C without
cl_khr_fp16 (kernels/ufuncs.py's HALF_TYPEDEFS). Unary ufuncs are compared on every one of the
65536 halves, binary ones on every pair of special values and on random pairs, bit for bit (a
NaN's payload aside, signed zeros included), with the floating-point errors each call raises.
"""

from __future__ import annotations

from typing import Any

import numpy
import pytest

pytest.importorskip("pyopencl")

import npgpu  # noqa: E402
from npgpu._array import DeviceArray  # noqa: E402
from npgpu.kernels import ufuncs as _table  # noqa: E402

pytestmark = pytest.mark.opencl

#: device arrays of every size, each call on the device or an error, ufuncs run one by one
ON: dict[str, Any] = {"on_fallback": "raise", "fusion": False, "threshold": 0}
#: every half: subnormals, 65504, infinities, NaNs, both zeros
EVERY_HALF = numpy.arange(2**16, dtype=numpy.uint32).astype(numpy.uint16).view(numpy.float16)
SPECIAL = numpy.array([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, 0.1, 11.0, -11.0, 1000.0, 30000.0, 65504.0, -65504.0,
                       6e-8, -6e-8, 6.1e-5, 1e-7, numpy.nan, numpy.inf, -numpy.inf], numpy.float16)
UNARY = sorted(n for n in _table.HALF_LOOPS if getattr(numpy, n).nin == 1)
BINARY = sorted(n for n in _table.HALF_LOOPS if getattr(numpy, n).nin == 2)


def _pairs() -> tuple[numpy.ndarray, numpy.ndarray]:
    rng = numpy.random.default_rng(7)
    bits = rng.integers(0, 2**16, (2, 20000)).astype(numpy.uint16).view(numpy.float16)
    n = len(SPECIAL)
    return (numpy.concatenate([numpy.repeat(SPECIAL, n), bits[0]]),
            numpy.concatenate([numpy.tile(SPECIAL, n), bits[1]]))


def device(host: numpy.ndarray) -> DeviceArray:
    d = npgpu.asarray(host)
    assert isinstance(d, DeviceArray)
    return d


def _download(x: Any) -> Any:
    return x.__array__() if isinstance(x, DeviceArray) else numpy.asarray(x)


def assert_exact(got: numpy.ndarray, want: numpy.ndarray, context: Any = "") -> None:
    """Same dtype and shape; the same bits (a NaN where NumPy has a NaN)."""
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    if want.dtype.kind == "f":
        word = numpy.dtype(f"u{want.itemsize}")
        bad = (got.view(word) != want.view(word)) & ~(numpy.isnan(got) & numpy.isnan(want))
    else:
        bad = got != want
    where = numpy.flatnonzero(bad)
    assert where.size == 0, \
        f"{context}: {where.size} differ, e.g. got {got.flat[where[:5]]}, NumPy {want.flat[where[:5]]}"


def _outputs(x: Any) -> tuple[Any, ...]:
    return x if isinstance(x, tuple) else (x,)


def run(uf: numpy.ufunc, *hosts: numpy.ndarray) -> None:
    with numpy.errstate(all="ignore"):
        want = _outputs(uf(*hosts))
    with npgpu.enable("opencl", **ON), npgpu.errstate(all="ignore"):
        got = _outputs(uf(*[device(h) for h in hosts]))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert isinstance(g, DeviceArray)
        assert_exact(_download(g), w, uf.__name__)


@pytest.mark.parametrize("name", UNARY)
def test_unary_every_half_bit_for_bit(name: str) -> None:
    run(getattr(numpy, name), EVERY_HALF)


@pytest.mark.parametrize("name", BINARY)
def test_binary_pairs_bit_for_bit(name: str) -> None:
    run(getattr(numpy, name), *_pairs())


def _flags(xp: Any, uf: numpy.ufunc, operands: list[Any]) -> list[str]:
    seen: list[str] = []
    with xp.errstate(all="call", under="ignore", call=lambda kind, flag: seen.append(kind)):
        _download(uf(*operands))
    return sorted(set(seen))


@pytest.mark.parametrize("uf, operands", [
    (numpy.multiply, (60000.0, 2.0)),  # finite in float32, inf in half: NumPy's overflow
    (numpy.add, (65504.0, 16.0)),  # rounds to 65504: no error
    (numpy.add, (65504.0, 32.0)),  # a tie, to even: inf, overflow
    (numpy.divide, (1.0, 0.0)),
    (numpy.divide, (0.0, 0.0)),
    (numpy.sqrt, (-1.0,)),
    (numpy.log2, (0.0,)),
    (numpy.arctanh, (1.0,)),
    (numpy.square, (300.0,)),
    (numpy.subtract, (numpy.inf, numpy.inf)),
], ids=lambda v: getattr(v, "__name__", None) or str(v))
def test_errors_as_numpy(uf: numpy.ufunc, operands: tuple[float, ...]) -> None:
    hosts = [numpy.full(5, v, numpy.float16) for v in operands]
    want = _flags(numpy, uf, hosts)
    with npgpu.enable("opencl", **ON):
        got = _flags(npgpu, uf, [device(h) for h in hosts])
    assert got == want


def test_overflow_warns_as_numpy() -> None:
    a = numpy.full(10, 60000.0, numpy.float16)
    with pytest.warns(RuntimeWarning, match="overflow") as want:
        expected = a * numpy.float16(2)
    with npgpu.enable("opencl", **ON), pytest.warns(RuntimeWarning, match="overflow") as got:
        result = _download(device(a) * numpy.float16(2))  # (the flags are read when the result is)
    assert str(got[0].message) == str(want[0].message)
    assert_exact(result, expected)


def test_casts() -> None:
    rng = numpy.random.default_rng(11)
    doubles = numpy.concatenate([
        rng.standard_normal(20000) * 10.0 ** rng.integers(-9, 6, 20000),
        [1 + 2**-11 + 2**-40, 1 + 2**-11, 1 + 3 * 2**-11, 2**-25, 2**-25 * (1 + 2**-40), 3 * 2**-26, 65519.99,
         65520.0, 1e300, 1e-300, -0.0, numpy.nan, numpy.inf, -numpy.inf],
    ])
    # float32 of every exponent: the bits of 20000 random words (subnormals, NaNs and infinities among them)
    floats = rng.integers(0, 2**32, 20000, dtype=numpy.uint64).astype(numpy.uint32).view(numpy.float32)
    with numpy.errstate(all="ignore"):
        want = [doubles.astype(numpy.float16), floats.astype(numpy.float16)]
        for dt in (numpy.float32, numpy.float64, numpy.int32, numpy.int64, numpy.bool_):
            want.append(EVERY_HALF.astype(dt))
    with npgpu.enable("opencl", **ON), npgpu.errstate(all="ignore"):
        got = [device(doubles).astype(numpy.float16), device(floats).astype(numpy.float16)]
        for dt in (numpy.float32, numpy.float64, numpy.int32, numpy.int64, numpy.bool_):
            got.append(device(EVERY_HALF).astype(dt))
    for g, w in zip(got, want, strict=True):
        assert isinstance(g, DeviceArray)
        assert_exact(_download(g), w, f"astype {w.dtype}")


def test_mixed_operands_as_numpy() -> None:
    """Scalars and int8 arrays join float16's loop; int16 and float32 promote to float32."""
    h = EVERY_HALF[::7]
    i8 = numpy.arange(len(h)).astype(numpy.int8)
    i16 = numpy.arange(len(h)).astype(numpy.int16)
    f32 = numpy.linspace(-3, 3, len(h)).astype(numpy.float32)
    cases = [lambda x, a, b, c: x + a, lambda x, a, b, c: x * b, lambda x, a, b, c: x - c,
             lambda x, a, b, c: x * 1.1, lambda x, a, b, c: 3 - x, lambda x, a, b, c: x / numpy.float16(3),
             lambda x, a, b, c: x < 2.5, lambda x, a, b, c: numpy.add(x, c, out=numpy.empty_like(x),
                                                                           casting="unsafe")]
    for k, case in enumerate(cases):
        with numpy.errstate(all="ignore"):
            want = case(h, i8, i16, f32)
        with npgpu.enable("opencl", **ON), npgpu.errstate(all="ignore"):
            got = case(device(h), device(i8), device(i16), device(f32))
        assert isinstance(got, DeviceArray), k
        assert_exact(_download(got), want, k)


def test_stored_on_the_device() -> None:
    h = EVERY_HALF.reshape(256, 256)
    with npgpu.enable("opencl", **ON):
        d = device(h)
        assert d.nbytes == h.nbytes
        views = [d.T, d[::3, 1::2], d.reshape(-1), d[h > 1], numpy.concatenate([d, d]), d.copy(),
                 numpy.zeros_like(d), numpy.full((3, 4), 0.1, numpy.float16), numpy.ones(7, numpy.float16)]
        views = [_download(v) for v in views]
        d[0, :] = 2.5
        d[h < 0] = 0.1
    h = h.copy()
    want = [h.T, h[::3, 1::2], h.reshape(-1), h[h > 1], numpy.concatenate([h, h]), h.copy(), numpy.zeros_like(h),
            numpy.full((3, 4), 0.1, numpy.float16), numpy.ones(7, numpy.float16)]
    for g, w in zip(views, want, strict=True):
        assert_exact(g, w)
    h[0, :] = 2.5
    h[h < 0] = 0.1
    assert_exact(_download(d), h)


def test_default_mode_expression() -> None:
    """With fusion on (float16 graphs are not fused: each operation is its own kernel, rounded)."""
    rng = numpy.random.default_rng(5)
    x = rng.standard_normal(5000).astype(numpy.float16)
    y = rng.standard_normal(5000).astype(numpy.float16)
    with numpy.errstate(all="ignore"):
        want = numpy.sqrt(x * x + y * y) / (x - y) + 1
    with npgpu.enable("opencl", on_fallback="raise", threshold=0), npgpu.errstate(all="ignore"):
        a, b = device(x), device(y)
        got = numpy.sqrt(a * a + b * b) / (a - b) + 1
    assert_exact(_download(got), want)


def test_reductions_and_others_run_in_numpy() -> None:
    """float16 sums and the ufuncs whose device libm differs after rounding: NumPy's answer, counted."""
    x = numpy.full(10000, 0.1, numpy.float16)
    with npgpu.enable("opencl", fusion=False, threshold=0):
        d = device(x)
        npgpu.report(reset=True)
        got = [numpy.sum(d), numpy.exp(d)]
        fallbacks = npgpu.report().totals().fallback
    assert fallbacks >= 2
    assert_exact(numpy.asarray(_download(got[0])), numpy.sum(x))
    assert_exact(_download(got[1]), numpy.exp(x))


def test_cupy_kernels_do_not_take_float16() -> None:
    """The CuPy backend asks the table without complex_values: its float16 handling stays CuPy's."""
    loop = (numpy.dtype(numpy.float16),) * 3
    assert not _table.supports_loop(numpy.add, loop)
    assert not _table.is_supported_dtype(numpy.float16)
    assert _table.supports_loop(numpy.add, loop, complex_values=True)
    assert not _table.supports_loop(numpy.exp, loop[:2], complex_values=True)
