"""complex64 and complex128 ufuncs and reductions on the OpenCL device, against NumPy.

Special-value grids (every combination of 0, -0, 1, -1, inf, -inf, nan, a tiny and a huge value in
the real and the imaginary part) go through each ufunc on the device with fallbacks raising, and
are compared with NumPy as NumPy's own tests compare: bit for bit (signed zeros included, a NaN's
payload aside) where NumPy's loop is exact arithmetic, to a few ulp where it calls libm; the
floating-point errors each call raises (np.errstate) are compared too.
"""

from __future__ import annotations

from typing import Any

import numpy
import pytest

pytest.importorskip("pyopencl")

import npgpu  # noqa: E402
from npgpu._array import DeviceArray  # noqa: E402

pytestmark = pytest.mark.opencl

COMPLEX = (numpy.complex64, numpy.complex128)
#: device arrays of every size, each call on the device or an error, ufuncs run one by one
ON: dict[str, Any] = {"on_fallback": "raise", "fusion": False, "threshold": 0}
_TINY = {numpy.complex64: 1e-45, numpy.complex128: 5e-324}
_HUGE = {numpy.complex64: 3e38, numpy.complex128: 1.7e308}


def grid(dtype: Any) -> numpy.ndarray:
    """Every combination of the special values as real and imaginary parts."""
    parts = [0.0, -0.0, 1.0, -1.0, numpy.inf, -numpy.inf, numpy.nan, _TINY[dtype], _HUGE[dtype]]
    real = numpy.dtype(dtype).type(0).real.dtype
    z = numpy.empty(len(parts) ** 2, dtype)
    z.real = numpy.repeat(numpy.array(parts, real), len(parts))
    z.imag = numpy.tile(numpy.array(parts, real), len(parts))
    return z


def pairs(dtype: Any) -> tuple[numpy.ndarray, numpy.ndarray]:
    """Every pair of grid values, as two arrays."""
    z = grid(dtype)
    return numpy.repeat(z, len(z)), numpy.tile(z, len(z))


def _parts(x: numpy.ndarray) -> list[numpy.ndarray]:
    return [x.real, x.imag] if x.dtype.kind == "c" else [x]


def assert_exact(got: numpy.ndarray, want: numpy.ndarray, context: Any = "") -> None:
    """Same dtype, shape and values: NaN where NumPy has NaN, else the same bits (zeros' signs)."""
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    if want.dtype.kind == "b":
        bad = numpy.flatnonzero(got != want)
    else:
        bad = numpy.zeros(want.shape, bool)
        for g, w in zip(_parts(got), _parts(want)):
            nan = numpy.isnan(w)
            bad |= nan != numpy.isnan(g)
            bad |= ~nan & ((g != w) | (numpy.signbit(g) != numpy.signbit(w)))
        bad = numpy.flatnonzero(bad)
    assert bad.size == 0, f"{context}: {bad.size} differ, e.g. at {bad[:5]}: got {got.flat[bad[:5]]}, " \
                          f"NumPy {want.flat[bad[:5]]}"


def assert_close(got: numpy.ndarray, want: numpy.ndarray, ulps: float, context: Any = "") -> None:
    """Within ``ulps`` units in the last place of NumPy's value, part by part; same NaNs and infs."""
    assert got.dtype == want.dtype and got.shape == want.shape
    for g, w in zip(_parts(got), _parts(want)):
        finite = numpy.isfinite(w)
        numpy.testing.assert_array_equal(numpy.isnan(g), numpy.isnan(w), err_msg=f"{context}: NaNs")
        numpy.testing.assert_array_equal(g[~finite & ~numpy.isnan(w)], w[~finite & ~numpy.isnan(w)],
                                         err_msg=f"{context}: infinities")
        error = numpy.abs(g[finite].astype(numpy.float64) - w[finite]) / numpy.spacing(numpy.abs(w[finite]))
        assert error.size == 0 or error.max() <= ulps, f"{context}: {error.max()} ulp"


def device(host: numpy.ndarray) -> DeviceArray:
    d = npgpu.asarray(host)
    assert isinstance(d, DeviceArray)
    return d


def _download(x: Any) -> Any:
    return x.__array__() if isinstance(x, DeviceArray) else numpy.asarray(x)


def run(uf: numpy.ufunc, *hosts: numpy.ndarray) -> tuple[numpy.ndarray, numpy.ndarray]:
    """(npgpu's result on the device, NumPy's), errors ignored."""
    with numpy.errstate(all="ignore"):
        want = uf(*hosts)
    with npgpu.enable("opencl", **ON), npgpu.errstate(all="ignore"):
        got = _download(uf(*[device(h) for h in hosts]))
    return got, want


def _flags(xp: Any, uf: numpy.ufunc, operands: list[Any]) -> list[str]:
    seen: list[str] = []
    with xp.errstate(all="call", under="ignore", call=lambda kind, flag: seen.append(kind)):
        _download(uf(*operands))
    return sorted(set(seen))


EXACT_BINARY = (numpy.add, numpy.subtract, numpy.multiply, numpy.divide, numpy.equal, numpy.not_equal, numpy.less,
                numpy.less_equal, numpy.greater, numpy.greater_equal, numpy.maximum, numpy.minimum, numpy.fmax,
                numpy.fmin, numpy.logical_and, numpy.logical_or, numpy.logical_xor)
EXACT_UNARY = (numpy.negative, numpy.positive, numpy.conjugate, numpy.square, numpy.reciprocal, numpy.isnan,
               numpy.isinf, numpy.isfinite, numpy.logical_not)


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.__name__)
@pytest.mark.parametrize("uf", EXACT_BINARY, ids=lambda u: u.__name__)
def test_binary_special_values_bit_for_bit(uf: numpy.ufunc, dtype: Any) -> None:
    a, b = pairs(dtype)
    got, want = run(uf, a, b)
    assert_exact(got, want, uf.__name__)


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.__name__)
@pytest.mark.parametrize("uf", EXACT_UNARY, ids=lambda u: u.__name__)
def test_unary_special_values_bit_for_bit(uf: numpy.ufunc, dtype: Any) -> None:
    got, want = run(uf, grid(dtype))
    assert_exact(got, want, uf.__name__)


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.__name__)
def test_random_values_bit_for_bit(dtype: Any) -> None:
    rng = numpy.random.default_rng(3)
    scale = 10.0 ** rng.integers(-20, 20, (2, 5000))
    a = (rng.standard_normal(5000) * scale[0] + 1j * rng.standard_normal(5000)).astype(dtype)
    b = (rng.standard_normal(5000) + 1j * rng.standard_normal(5000) * scale[1]).astype(dtype)
    for uf in (numpy.add, numpy.subtract, numpy.multiply, numpy.divide, numpy.less, numpy.maximum):
        assert_exact(*run(uf, a, b), uf.__name__)
    for uf in (numpy.square, numpy.reciprocal, numpy.negative, numpy.conjugate):
        assert_exact(*run(uf, a), uf.__name__)


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.__name__)
def test_absolute_is_hypot(dtype: Any) -> None:
    """NumPy's abs is libm's hypot: no overflow for huge parts, inf where a part is inf even beside
    NaN. The device's hypot is within 2 ulp of the host libm's (PoCL, 2026-12-01)."""
    rng = numpy.random.default_rng(5)
    scale = 10.0 ** rng.integers(-30, 30, 5000)
    z = numpy.concatenate([grid(dtype), (rng.standard_normal(5000) * scale + 1j * rng.standard_normal(5000))
                           .astype(dtype)])
    got, want = run(numpy.absolute, z)
    assert_close(got, want, 2, "absolute")
    huge = numpy.array([complex(_HUGE[dtype], _HUGE[dtype]) / 2], dtype)
    assert numpy.isfinite(run(numpy.absolute, huge)[0]).all()


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.__name__)
@pytest.mark.parametrize("uf", [*EXACT_BINARY, *EXACT_UNARY, numpy.absolute, numpy.sqrt, numpy.exp, numpy.log],
                         ids=lambda u: u.__name__)
def test_floating_point_errors_as_numpy(uf: numpy.ufunc, dtype: Any) -> None:
    """The errors each row and each column of the grid raise (np.errstate), as NumPy's loop raises them."""
    z = grid(dtype)
    lines: list[tuple[numpy.ndarray, ...]] = []
    for x in z:
        row = numpy.full_like(z, x)
        lines += [(row, z), (z, row)] if uf.nin == 2 else [(row,)]
    mismatches = []
    with npgpu.enable("opencl", **ON):
        for operands in lines[: len(lines) if uf.nin == 2 else len(z)]:
            want = _flags(numpy, uf, list(operands))
            got = _flags(npgpu, uf, [device(o) for o in operands])
            if got != want:
                mismatches.append((operands[0][0], operands[-1][0], want, got))
    assert not mismatches, mismatches[:5]


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.__name__)
def test_mixed_operands(dtype: Any) -> None:
    """Python and NumPy scalars, real arrays and out= arrays of another dtype, NumPy's result dtypes."""
    z = grid(dtype)
    x = numpy.linspace(-2, 2, z.size)
    cases = [(numpy.add, (z, 2.5)), (numpy.multiply, (z, 1j)), (numpy.divide, (3, z)), (numpy.add, (z, x)),
             (numpy.multiply, (x.astype(numpy.float32), z)), (numpy.subtract, (z, numpy.complex64(1 - 2j))),
             (numpy.equal, (z, 1.0)), (numpy.add, (z, True))]
    with numpy.errstate(all="ignore"), npgpu.enable("opencl", **ON), \
            npgpu.errstate(all="ignore"):
        for uf, operands in cases:
            want = uf(*operands)
            got = _download(uf(*[device(o) if isinstance(o, numpy.ndarray) else o for o in operands]))
            assert_exact(got, want, (uf.__name__, operands[1] if len(operands) > 1 else None))
        out = device(numpy.zeros(z.size, numpy.complex128))
        numpy.multiply(device(z), 2, out=out)
        assert_exact(_download(out), (z * 2).astype(numpy.complex128), "out=")


def test_complex_stored_into_a_real_array_stays_numpys() -> None:
    z = grid(numpy.complex128)
    with npgpu.enable("opencl", **ON), pytest.raises(npgpu.FallbackError):
        numpy.add(device(z), 1, out=device(numpy.zeros(z.size)), casting="unsafe")


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.__name__)
def test_conjugate_real_imag_views(dtype: Any) -> None:
    z = grid(dtype)
    with npgpu.enable("opencl", **ON):
        d = device(z)
        assert_exact(_download(d.conj()), z.conj(), "conj")
        assert_exact(_download(numpy.real(d) * 0.5), z.real * 0.5, "real")
        assert_exact(_download(d.imag + 0), z.imag + 0, "imag")


@pytest.mark.parametrize("dtype", [*COMPLEX, numpy.float64, numpy.int32], ids=lambda d: d.__name__)
def test_angle_iscomplex_isreal(dtype: Any) -> None:
    kind = numpy.dtype(dtype).kind
    z = grid(dtype) if kind == "c" else numpy.array([0.0, -0.0, 1, -1, numpy.inf, -numpy.inf, numpy.nan, 3]) \
        if kind == "f" else numpy.array([0, 1, -1, 3, -7], dtype)
    with npgpu.enable("opencl", **ON):
        d = device(z)
        for deg in (False, True):
            assert_close(_download(numpy.angle(d, deg=deg)), numpy.angle(z, deg=deg), 2, ("angle", deg))
        assert_exact(_download(numpy.iscomplex(d)), numpy.iscomplex(z), "iscomplex")
        assert_exact(_download(numpy.isreal(d)), numpy.isreal(z), "isreal")


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.__name__)
def test_sum_mean_nansum(dtype: Any) -> None:
    """The additions' order differs from NumPy's pairwise sum (as for floats): close, not equal."""
    rng = numpy.random.default_rng(11)
    a = (rng.standard_normal((6, 70, 9)) + 1j * rng.standard_normal((6, 70, 9))).astype(dtype)
    a.flat[::17] = complex(numpy.nan, 1)
    rtol = 1e-5 if dtype == numpy.complex64 else 1e-13
    with npgpu.enable("opencl", **ON):
        d = device(a)
        for func in (numpy.sum, numpy.mean, numpy.nansum):
            for axis in (None, 0, 1, (0, 2), -1):
                for kwargs in ({}, {"keepdims": True}, {"dtype": numpy.complex128}):
                    want = func(a, axis=axis, **kwargs)
                    got = _download(func(d, axis=axis, **kwargs))
                    assert got.dtype == numpy.asarray(want).dtype and got.shape == numpy.shape(want)
                    numpy.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, equal_nan=True,
                                                  err_msg=f"{func.__name__} {axis} {kwargs}")
        assert_exact(_download(numpy.sum(device(grid(dtype)[:0]))), numpy.sum(grid(dtype)[:0])[()], "empty")


def test_sum_reports_overflow_as_numpy() -> None:
    a = numpy.array([complex(1.7e308, 1), complex(1.7e308, 2)])
    with npgpu.enable("opencl", **ON):
        assert _flags(numpy, numpy.sum, [a]) == _flags(npgpu, numpy.sum, [device(a)]) == ["overflow"]


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.__name__)
@pytest.mark.parametrize("uf", [numpy.sqrt, numpy.exp, numpy.log], ids=lambda u: u.__name__)
def test_libm_functions(uf: numpy.ufunc, dtype: Any) -> None:
    """NumPy calls the C library's csqrt, cexp, clog: the special values of C99 Annex G exactly (zeros'
    and infinities' signs included), finite values to a few ulp of the host's libm."""
    z = grid(dtype)
    got, want = run(uf, z)
    special = ~(numpy.isfinite(want.real) & numpy.isfinite(want.imag)) | (want == 0)
    assert_exact(got[special], want[special], uf.__name__)
    rng = numpy.random.default_rng(13)
    scale = 10.0 ** rng.integers(-12, 12, (2, 20000))
    near_one = numpy.exp(1j * rng.uniform(-4, 4, 2000)) * (1 + rng.standard_normal(2000) * 1e-6)
    values = numpy.concatenate([z[~special], (rng.standard_normal(20000) * scale[0]
                                              + 1j * rng.standard_normal(20000) * scale[1]), near_one])
    if uf is numpy.exp:
        values = values.real % 80 - 40 + 1j * (values.imag % 100)
    got, want = run(uf, values.astype(dtype))
    assert_close(got, want, 8 if dtype == numpy.complex64 else 4, uf.__name__)  # (measured: up to 8 and 4)
