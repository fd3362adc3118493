"""roll and diff on the device (OpenCL ran them as fallbacks: a diffusion script moved 8 GB), as NumPy."""

from __future__ import annotations

import numpy
import pytest

import npgpu
from npgpu._harness import differential

SHAPES_AND_AXES = [((10,), None), ((10,), 0), ((3, 4), None), ((3, 4), 1), ((3, 4), -2), ((2, 3, 4), (0, 2)),
                   ((2, 3, 4), (1, 1)), ((0, 3), 0), ((5, 0), 1)]


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "uint8", "bool", "complex128"])
@pytest.mark.parametrize(("shape", "axis"), SHAPES_AND_AXES)
@differential(rtol=0.0)
def test_roll_is_numpys(xp, dtype, shape, axis):
    a = xp.asarray((numpy.arange(numpy.prod(shape)) * 7 % 11).reshape(shape).astype(dtype))
    shifts = (1, -1, 3, 13, 0) if not isinstance(axis, tuple) else ((1, 2), (-3, 5), (0, 0))
    return [xp.roll(a, s, axis=axis) for s in shifts]


@differential()
def test_roll_of_a_view_and_with_numpy_ints_and_bad_shifts(xp):
    a = xp.asarray(numpy.arange(30.0).reshape(5, 6))[::2, 1:]
    with pytest.raises(numpy.exceptions.AxisError):
        xp.roll(a, 1, axis=2)
    with pytest.raises(ValueError, match="scalars or 1D sequences"):
        xp.roll(a, [[1, 2]], axis=(0, 1))
    return (xp.roll(a, numpy.int64(2), axis=numpy.int32(1)), xp.roll(a.T, (1, -1), axis=(0, 1)),
            xp.roll(a, 1.5), xp.roll(a, -2.7, axis=0))  # (NumPy takes int() of a float shift)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "uint8", "int16", "bool"])
@pytest.mark.parametrize(("n", "axis"), [(1, -1), (2, -1), (1, 0), (3, 1), (0, 0), (5, -1)])
@differential(rtol=0.0)
def test_diff_is_numpys(xp, dtype, n, axis):
    values = (numpy.arange(20) * 37 % 23).reshape(4, 5).astype(dtype)
    a = xp.asarray(values)
    return xp.diff(a, n=n, axis=axis), xp.diff(a[:, ::2], n=min(n, 2), axis=axis)


@differential()
def test_diff_errors_and_floating_point_reports_are_numpys(xp):
    a = xp.asarray(numpy.array([1e308, -1e308, 0.0]))
    with pytest.raises(ValueError, match="order must be non-negative"):
        xp.diff(a, n=-1)
    with pytest.raises(ValueError):
        xp.diff(xp.asarray(numpy.float64(3.0)))
    with pytest.warns(RuntimeWarning, match="overflow encountered in subtract"):
        result = xp.diff(a)
        xp.asarray(result).tolist()  # (the device's report arrives at the next read)
    return result


@pytest.mark.opencl
def test_opencl_runs_roll_and_diff_on_the_device():
    pytest.importorskip("pyopencl")
    host = numpy.linspace(0.0, 1.0, 4096).reshape(64, 64)
    with npgpu.enable("opencl", threshold=0):
        a = npgpu.asarray(host)
        npgpu.report(reset=True)
        laplacian = numpy.roll(a, 1, 0) + numpy.roll(a, -1, 0) + numpy.roll(a, 1, 1) + numpy.roll(a, -1, 1) - 4 * a
        gradient = numpy.diff(a, axis=1)
        numpy.testing.assert_allclose(numpy.asarray(laplacian), numpy.roll(host, 1, 0) + numpy.roll(host, -1, 0)
                                      + numpy.roll(host, 1, 1) + numpy.roll(host, -1, 1) - 4 * host, rtol=1e-13)
        numpy.testing.assert_allclose(numpy.asarray(gradient), numpy.diff(host, axis=1), rtol=1e-13)
        functions = npgpu.report().functions
        assert functions["roll"].device == 4 and functions["roll"].fallback == 0
        assert functions["diff"].device == 1 and functions["diff"].fallback == 0
