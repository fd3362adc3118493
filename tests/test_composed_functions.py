"""Functions the OpenCL backend composes from its kernels (tril/triu, stacking, outer, ptp, trace,
count_nonzero; they fell back before), as NumPy on every backend."""

from __future__ import annotations

import numpy
import pytest

import npgpu
from npgpu._harness import differential

DTYPES = ["float64", "float32", "int64", "int16", "uint8", "bool"]


def _values(xp, shape, dtype):
    return xp.asarray((numpy.arange(numpy.prod(shape)) * 7 % 11 - 4).reshape(shape).astype(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 6), (6, 4), (2, 3, 5), (5,), (0, 3)])
@differential(rtol=0.0)
def test_tril_and_triu_are_numpys(xp, dtype, shape):
    m = _values(xp, shape, dtype)
    return [f(m, k) for f in (xp.tril, xp.triu) for k in (0, 1, -2, 7, -7)]


@pytest.mark.parametrize("dtype", DTYPES + ["complex128"])
@differential(rtol=0.0)
def test_stacking_is_numpys(xp, dtype):
    a, b = _values(xp, (2, 3), dtype), _values(xp, (2, 3), dtype)[::-1]
    v, w = a[0], b[1]
    return (xp.vstack([a, b]), xp.vstack([v, w]), xp.hstack([a, b]), xp.hstack([v, w]), xp.dstack([a, b]),
            xp.dstack([v, w]), xp.column_stack([v, w]), xp.column_stack([a, b]), xp.vstack((a, v)))


@differential()
def test_stacking_errors_and_dtypes_are_numpys(xp):
    a = _values(xp, (2, 3), "float64")
    with pytest.raises(ValueError):
        xp.vstack([a, a[:, :2]])
    with pytest.raises(ValueError):
        xp.hstack([])
    return xp.vstack([a, a], dtype="float32"), xp.hstack([_values(xp, (2, 3), "int8"), a])


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "uint8"])
@differential(rtol=0.0)
def test_outer_is_numpys(xp, dtype):
    a, b = _values(xp, (3, 2), dtype), _values(xp, (5,), dtype)
    return xp.outer(a, b), xp.outer(b, b[::2]), xp.outer(a[0], 3)


@pytest.mark.parametrize("dtype", DTYPES[:-1])
@differential(rtol=0.0)
def test_ptp_trace_and_count_nonzero_are_numpys(xp, dtype):
    a = _values(xp, (4, 5), dtype)
    counted = xp.count_nonzero(a)  # (NumPy's scalar type for the whole array: compared by the harness)
    return (xp.ptp(a), xp.ptp(a, axis=0), xp.ptp(a, axis=1, keepdims=True), xp.trace(a), xp.trace(a, 1),
            xp.trace(a, -1, dtype="float64"), counted, xp.count_nonzero(a, axis=0),
            xp.count_nonzero(a, axis=(0, 1), keepdims=True), xp.count_nonzero(a > 0, axis=1))


@pytest.mark.opencl
def test_opencl_runs_them_on_the_device():
    pytest.importorskip("pyopencl")
    host = numpy.arange(64.0).reshape(8, 8)
    with npgpu.enable("opencl", threshold=0):
        a = npgpu.asarray(host)
        npgpu.report(reset=True)
        results = [numpy.tril(a), numpy.triu(a, 2), numpy.vstack([a, a]), numpy.hstack([a, a]), numpy.outer(a[0], a[1]),
                   numpy.ptp(a, axis=0), numpy.trace(a), numpy.count_nonzero(a, axis=1)]
        for got, want in zip(results, [numpy.tril(host), numpy.triu(host, 2), numpy.vstack([host, host]),
                                       numpy.hstack([host, host]), numpy.outer(host[0], host[1]),
                                       numpy.ptp(host, axis=0), numpy.trace(host), numpy.count_nonzero(host, axis=1)]):
            numpy.testing.assert_array_equal(numpy.asarray(got), want)
        totals = npgpu.report().as_dict()["totals"]
        assert totals["fallback"] == 0 and totals["device"] >= len(results)


@differential()
def test_stacking_device_arrays_with_host_data_is_numpys(xp):
    a = _values(xp, (2, 3), "float64")
    return (xp.vstack([a, [1.0, 2.0, 3.0]]), xp.hstack([a, numpy.ones((2, 1))]), xp.column_stack([a[0], (4, 5, 6)]),
            xp.dstack([a, 7.0 * numpy.ones((2, 3))]))
