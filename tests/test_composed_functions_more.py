"""More functions the OpenCL backend composes from its kernels (rot90, append, nan_to_num, round,
array_equal), as NumPy on every backend."""

from __future__ import annotations

import numpy
import pytest

import npgpu
from npgpu._harness import differential

SPECIAL = numpy.array([1.25, -2.5, numpy.nan, numpy.inf, -numpy.inf, 0.0, -0.0, 3.14159, 1e300, -7.5])


@pytest.mark.parametrize("dtype", ["float64", "int32", "bool", "complex128"])
@differential(rtol=0.0)
def test_rot90_is_numpys_views(xp, dtype):
    m = xp.asarray((numpy.arange(24) % 7).reshape(2, 3, 4).astype(dtype))
    results = [xp.rot90(m, k, axes) for k in (0, 1, 2, 3, -1, 5) for axes in ((0, 1), (1, 2), (2, 0))]
    with pytest.raises(ValueError):
        xp.rot90(m, 1, (1, 1))
    with pytest.raises(ValueError):
        xp.rot90(m, 1, (0, 3))
    return results


@differential(rtol=0.0)
def test_append_is_numpys(xp):
    a = xp.asarray(numpy.arange(6.0).reshape(2, 3))
    b = xp.asarray(numpy.arange(3, dtype="int32").reshape(1, 3))
    return xp.append(a, b), xp.append(a, b, axis=0), xp.append(a[0], b[0]), xp.append(a, [7, 8])


@pytest.mark.parametrize("dtype", ["float64", "float32", "int16", "bool"])
@differential(rtol=0.0)
def test_nan_to_num_is_numpys(xp, dtype):
    with numpy.errstate(all="ignore"):
        values = SPECIAL.astype(dtype)
    a = xp.asarray(values)
    return (xp.nan_to_num(a), xp.nan_to_num(a, nan=-1.0, posinf=9.0), xp.nan_to_num(a, neginf=-9.0),
            xp.nan_to_num(a, copy=False) if dtype == "int16" else xp.nan_to_num(a, True, 5.0))


@differential()
def test_nan_to_num_warns_of_a_replacement_too_large_for_the_dtype(xp):
    a = xp.asarray(SPECIAL.astype("float32"))
    with pytest.warns(RuntimeWarning, match="overflow encountered in cast"):
        return xp.nan_to_num(a, posinf=1e300)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "uint8"])
@pytest.mark.parametrize("decimals", [0, 1, 2, 3, -1, -2])
@differential(rtol=0.0)
def test_round_is_numpys(xp, dtype, decimals):
    values = numpy.array([1.2345, -2.5, 2.5, 0.125, -0.0, 123.456, 99.95, 1e10 / 3, 7.0, 250.0])
    with numpy.errstate(all="ignore"):
        a = xp.asarray(values.astype(dtype) if dtype[0] == "f" else numpy.abs(values).astype(dtype))
        return xp.round(a, decimals), xp.around(a, decimals=decimals), a.round(decimals)


@differential()
def test_array_equal_is_numpys(xp):
    a = xp.asarray(SPECIAL)
    b = xp.asarray(SPECIAL.copy())
    c = xp.asarray(numpy.arange(10))
    results = (xp.array_equal(a, b), xp.array_equal(a, b, equal_nan=True), xp.array_equal(a, a[:5]),
               xp.array_equal(c, xp.asarray(numpy.arange(10.0))), xp.array_equal(c, c[::-1]),
               xp.array_equal(c, [0, 1, 2]), xp.array_equal(a[:0], b[:0]))
    assert all(type(r) is bool for r in results)
    return results


@pytest.mark.opencl
def test_opencl_runs_them_on_the_device():
    pytest.importorskip("pyopencl")
    host = SPECIAL.reshape(2, 5)
    with npgpu.enable("opencl", threshold=0):
        a = npgpu.asarray(host)
        npgpu.report(reset=True)
        with numpy.errstate(all="ignore"):
            got = [numpy.rot90(a), numpy.append(a, a), numpy.nan_to_num(a), numpy.round(a, 2),
                   numpy.array_equal(a, a, equal_nan=True)]
            want = [numpy.rot90(host), numpy.append(host, host), numpy.nan_to_num(host), numpy.round(host, 2), True]
        for g, w in zip(got, want):
            numpy.testing.assert_array_equal(numpy.asarray(g), w)
        assert npgpu.report().as_dict()["totals"]["fallback"] == 0
