"""Sorting, searching, unique values, counts and order statistics on the OpenCL device, against NumPy.

Each body runs as NumPy and as npgpu on OpenCL with fallbacks raising: what is compared ran on the
device. Data holds ties, NaN, -0.0 next to 0.0, and empty and 0-d arrays where NumPy takes them.
A CPU device (PoCL) leaves these functions to NumPy by choice (sorting.HOST_ON_CPU: slower there);
the tests here turn that choice off, so that the kernels a GPU runs are checked on PoCL too.
"""

from __future__ import annotations

import numpy
import pytest

from npgpu._harness import check

pytest.importorskip("pyopencl")

from npgpu.backends.opencl import OpenCLBackend  # noqa: E402
from npgpu.backends.opencl.sorting import HOST_ON_CPU  # noqa: E402

pytestmark = pytest.mark.opencl

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
DTYPES = ["bool", *INTS, "float32", "float64"]


@pytest.fixture(autouse=True)
def _on_the_device(cl, monkeypatch):  # (skipped where OpenCL can't run)
    monkeypatch.setattr(OpenCLBackend, "prefers_host", lambda self, func: False)


def device(body, **kwargs):
    """``body(xp)`` on OpenCL (no fallback allowed) against NumPy."""
    return check(body, "opencl", on_fallback="raise", kwargs=kwargs)


def data(xp, dtype, shape=(4, 6), seed=0, nan=True):
    """Values with ties (few distinct values), and for floats NaN, -0.0 and 0.0."""
    rng = numpy.random.default_rng(seed)
    dt = numpy.dtype(dtype)
    if dt.kind == "b":
        host = rng.random(shape) > 0.5
    elif dt.kind in "iu":
        info = numpy.iinfo(dt)
        host = rng.integers(max(info.min, -5), min(info.max, 5), shape, endpoint=True).astype(dt)
        if host.size > 2:
            host.flat[1] = info.max
            host.flat[2] = info.min
    else:
        host = (rng.integers(-4, 4, shape) * 0.5).astype(dt)
        if host.size > 4 and nan:
            host.flat[0] = numpy.nan
            host.flat[3] = -0.0
            host.flat[4] = numpy.inf
            host.flat[-1] = numpy.nan
    return xp.asarray(host)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sort_and_argsort(dtype):
    def body(xp):
        a = data(xp, dtype)
        out = []
        for axis in (-1, 0, None):
            out += [xp.sort(a, axis=axis), xp.argsort(a, axis=axis, kind="stable")]
        out += [xp.sort(a, kind="stable"), xp.argsort(a[:, ::-2], axis=0, stable=True)]
        if dtype != "bool":  # NumPy's default kind orders ties its own way (unspecified): distinct values
            distinct = xp.asarray(numpy.random.default_rng(1).permutation(24).reshape(4, 6).astype(dtype))
            out += [xp.argsort(distinct), xp.argsort(distinct, axis=0, kind="quicksort")]
        return out

    device(body)


@pytest.mark.parametrize("dtype", ["int32", "float64"])
def test_sort_layouts_and_edges(dtype):
    def body(xp):
        a = data(xp, dtype, shape=(3, 4, 5))
        empty = xp.asarray(numpy.zeros((0, 3), dtype))
        return [xp.sort(a, axis=1), xp.argsort(a, axis=0, kind="stable"), xp.sort(a.transpose(2, 0, 1)),
                xp.sort(empty), xp.argsort(empty, axis=0), xp.sort(xp.asarray(numpy.array(3, dtype)), axis=None)]

    device(body)


def test_sort_errors():
    device(lambda xp: xp.sort(xp.asarray(numpy.array(3.0))))  # (AxisError: a 0-d array has no axis -1)
    device(lambda xp: xp.sort(xp.asarray(numpy.ones((2, 3))), axis=2))
    device(lambda xp: xp.argsort(xp.ones(3), axis=1.0))  # TypeError
    device(lambda xp: xp.sort(xp.ones(3), stable=False))


def test_sort_arguments_numpy_judges():
    """kind with stable, an unknown kind: NumPy's errors (from NumPy, counted as a fallback)."""
    import npgpu

    for kwargs in ({"kind": "stable", "stable": True}, {"kind": "bogus"}):
        with pytest.raises(ValueError), npgpu.enable("opencl", threshold=0):
            npgpu.sort(npgpu.ones(3), **kwargs)


@pytest.mark.parametrize("dtype", ["uint8", "float32", "float64"])
def test_ndarray_sort_in_place(dtype):
    def body(xp):
        a = data(xp, dtype, shape=(5, 6))
        b = a.copy()
        a.sort()
        b.sort(axis=0, kind="stable")
        view = data(xp, dtype, shape=(5, 6), seed=3)
        view[:, ::2].sort(axis=0)
        return a, b, view

    device(body)


@pytest.mark.parametrize("dtype", ["int16", "float64"])
def test_partition_values_at_kth(dtype):
    """A partition is compared on its defining property: the value at each kth is NumPy's, no value
    before it is larger, none after it smaller (NumPy's own arrangement of the rest is unspecified)."""
    a_host = numpy.asarray(data(numpy, dtype, shape=(5, 9)))
    import npgpu

    with npgpu.enable("opencl", threshold=0, on_fallback="raise"):
        a = npgpu.asarray(a_host)
        for kth, axis in ((3, -1), ([0, 4, 8], -1), (-1, 0), (2, None)):
            got = numpy.asarray(npgpu.partition(a, kth, axis=axis))
            pos = numpy.asarray(npgpu.argpartition(a, kth, axis=axis))
            ref = numpy.partition(a_host, kth, axis=axis)
            ax = -1 if axis is None else axis
            flat = a_host.ravel() if axis is None else a_host
            for k in numpy.atleast_1d(kth):
                want = numpy.take(ref, k, axis=ax)
                numpy.testing.assert_array_equal(numpy.take(got, k, axis=ax), want)
                numpy.testing.assert_array_equal(numpy.take(numpy.take_along_axis(flat, pos, ax), k, axis=ax), want)
            numpy.testing.assert_array_equal(numpy.sort(got, axis=ax), numpy.sort(ref, axis=ax))
    device(lambda xp: xp.partition(xp.asarray(a_host), 9))  # NumPy's ValueError: kth out of bounds


@pytest.mark.parametrize("dtype", ["int8", "uint32", "float32", "float64"])
def test_searchsorted(dtype):
    def body(xp):
        a = xp.sort(data(xp, dtype, shape=(20,)))
        v = data(xp, dtype, shape=(3, 5), seed=4)
        order = xp.argsort(data(xp, dtype, shape=(20,), seed=5), kind="stable")
        raw = data(xp, dtype, shape=(20,), seed=5)
        return [xp.searchsorted(a, v), xp.searchsorted(a, v, side="right"), xp.searchsorted(a, 2),
                xp.searchsorted(raw, v, sorter=order), xp.searchsorted(a, v[:0])]

    device(body)
    for sorter in ([0, 1, 2, 7], [0, 9, 2, 3], [0, 1, 2]):  # (NumPy checks the indices its search reads)
        device(lambda xp, sorter=sorter: xp.searchsorted(xp.arange(4.0), xp.ones(2), sorter=xp.asarray(sorter)))


@pytest.mark.parametrize("right", [False, True])
def test_digitize(right):
    def body(xp):
        x = data(xp, "float64", shape=(30,), seed=6)
        rising = xp.asarray([-1.0, 0.0, 0.5, 0.5, 1.5])
        falling = xp.asarray([1.5, 0.5, 0.0, -1.0])
        ints = data(xp, "int32", shape=(10,))
        return [xp.digitize(x, rising, right=right), xp.digitize(x, falling, right=right),
                xp.digitize(ints, xp.asarray([0, 2, 4]), right=right)]

    device(body)
    device(lambda xp: xp.digitize(xp.ones(3), xp.asarray([0.0, 2.0, 1.0])))  # NumPy's ValueError


@pytest.mark.parametrize("dtype", DTYPES)
def test_unique(dtype):
    def body(xp):
        a = data(xp, dtype, shape=(5, 7))
        return [xp.unique(a), *xp.unique(a, return_index=True, return_inverse=True, return_counts=True),
                *xp.unique(a[::2], return_counts=True)]

    device(body)


def test_unique_nan_and_empty():
    def body(xp):
        a = data(xp, "float64", shape=(4, 5))
        empty = xp.asarray(numpy.zeros((0, 2)))
        return [*xp.unique(a, equal_nan=False, return_counts=True), *xp.unique(empty, return_inverse=True),
                *xp.unique(xp.asarray(numpy.array(2.5)), return_index=True)]

    device(body)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "int64"])
def test_bincount(dtype):
    def body(xp):
        x = xp.abs(data(xp, dtype, shape=(40,), nan=False)) if dtype != "bool" else data(xp, dtype, shape=(40,))
        if dtype in ("int32", "int64", "uint8"):
            x = x % 7
        w = data(xp, "float64", shape=(40,), seed=2, nan=False) * 0.1
        return [xp.bincount(x), xp.bincount(x, minlength=12), xp.bincount(x, weights=w),
                xp.bincount(x[:0]), xp.bincount(x[:0], minlength=3, weights=w[:0])]

    device(body)
    device(lambda xp: xp.bincount(xp.asarray([1, -1, 2])))  # NumPy's ValueError


def test_histogram():
    def body(xp):
        rng = numpy.random.default_rng(7)
        a = xp.asarray(rng.standard_normal(300))
        ints = xp.asarray(rng.integers(0, 20, (10, 10)))
        w = xp.asarray(rng.random(300))
        edges = [-2.0, -0.5, 0.0, 0.1, 3.0]
        return [*xp.histogram(a), *xp.histogram(a, bins=7, range=(-1, 1)), *xp.histogram(ints, bins=5),
                *xp.histogram(a, bins=edges), *xp.histogram(a, bins=4, weights=w),
                *xp.histogram(a, bins=6, density=True), *xp.histogram(a, bins=edges, density=True),
                *xp.histogram(xp.asarray(numpy.array([1.0, 1.0])), bins=3),
                *xp.histogram(xp.asarray(rng.standard_normal(20).astype(numpy.float32)), bins=4)]

    device(body)
    device(lambda xp: xp.histogram(xp.asarray([0.0, numpy.nan, 1.0])))  # NumPy's ValueError: range not finite


@pytest.mark.parametrize("dtype", ["int8", "int64", "float32", "float64"])
def test_median(dtype):
    def body(xp):
        a = data(xp, dtype, shape=(5, 6), nan=False)
        b = data(xp, dtype, shape=(5, 7), seed=1)
        return [xp.median(a), xp.median(a, axis=0), xp.median(a, axis=1, keepdims=True), xp.median(b, axis=1),
                xp.median(b), xp.median(a[:, :5], axis=-1), xp.median(a, keepdims=True),
                xp.median(xp.reshape(b, (5, 7, 1)), axis=(0, 2)), xp.median(xp.reshape(a, (2, 3, 5)), axis=(2, 0),
                                                                         keepdims=True)]

    device(body)


@pytest.mark.parametrize("dtype", ["uint16", "int32", "float32", "float64"])
def test_quantile_and_percentile(dtype):
    def body(xp):
        a = data(xp, dtype, shape=(6, 5), nan=False)
        b = data(xp, dtype, shape=(5, 6), seed=2)
        q32 = numpy.array([0.1, 0.5, 0.75], numpy.float32)
        return [xp.quantile(a, 0.3), xp.quantile(a, [0.0, 0.25, 1.0], axis=0), xp.quantile(a, q32, axis=1),
                xp.quantile(b, 0.5, axis=1, keepdims=True), xp.percentile(a, 40), xp.percentile(b, [10, 90], axis=0),
                xp.quantile(a, 1), xp.quantile(a, [0, 1], axis=1), xp.percentile(a, 50.0, keepdims=True),
                xp.quantile(xp.reshape(b, (5, 3, 2)), [0.2, 0.9], axis=(1, 2), keepdims=True)]

    device(body)
    device(lambda xp: xp.quantile(xp.ones(3), 1.5))  # NumPy's ValueError
    device(lambda xp: xp.percentile(xp.ones(3), [-1, 50]))


def test_views_with_offsets():
    """Views that start inside their buffer (a[3:]) read from their own first element."""
    def body(xp):
        a = data(xp, "float64", shape=(40,), seed=8)
        ints = xp.abs(data(xp, "int64", shape=(40,), seed=9, nan=False)) % 5
        w = data(xp, "float64", shape=(40,), seed=10, nan=False)
        s = xp.sort(a)
        return [xp.searchsorted(s[5:], a[7:20]), xp.searchsorted(s[3:], a[4:], sorter=xp.argsort(s[3:])[1:]),
                xp.bincount(ints[3:], weights=w[3:]), *xp.histogram(a[6:], bins=4, range=(-1, 1)),
                xp.interp(a[9:], s[2:30], w[4:32]), xp.unique(ints[11:], return_inverse=True)[1],
                xp.median(xp.reshape(a[4:], (6, 6)), axis=0)]

    device(body)


@pytest.mark.parametrize("dtype", ["int8", "uint64", "float32", "float64"])
def test_lexsort(dtype):
    def body(xp):
        primary = data(xp, dtype, shape=(30,), seed=11)
        secondary = data(xp, "int16", shape=(30,), seed=12)
        grid = data(xp, dtype, shape=(3, 4, 5), seed=13)
        other = data(xp, "float64", shape=(3, 4, 5), seed=14)
        stacked = xp.stack([secondary, secondary[::-1]])
        return [xp.lexsort((secondary, primary)), xp.lexsort([primary]), xp.lexsort(stacked),
                xp.lexsort((other, grid), axis=1), xp.lexsort((grid, other), axis=0)]

    device(body)
    device(lambda xp: xp.lexsort((xp.ones(3), xp.ones(4))))  # NumPy's ValueError: not the same shape


def test_interp():
    def body(xp):
        rng = numpy.random.default_rng(15)
        x = rng.uniform(-1, 12, 50)
        x[3] = numpy.nan
        sample = xp.asarray([0.0, 1.0, 1.0, 2.5, 4.0, 10.0])
        values = xp.asarray([1.0, -2.0, 3.0, numpy.inf, numpy.inf, 0.5])
        ints = xp.asarray(numpy.arange(6))
        x = xp.asarray(numpy.concatenate([x, [0.0, 1.0, 4.0, 10.0, 3.0]]))
        return [xp.interp(x, sample, values), xp.interp(x, sample, values, left=-7, right=7.5),
                xp.interp(x, ints, ints * 2), xp.interp(2.5, sample, values),
                xp.interp(x, xp.asarray([2.0]), xp.asarray([5.0]))]

    device(body)
    device(lambda xp: xp.interp(xp.ones(3), xp.ones(2), xp.ones(3)))  # NumPy's ValueError


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_nanmedian(dtype):
    def body(xp):
        a = data(xp, dtype, shape=(6, 7))
        if dtype == "int32":
            return [xp.nanmedian(a), xp.nanmedian(a, axis=0), xp.nanmedian(a, axis=1, keepdims=True)]
        b = xp.asarray(numpy.array([[1.0, numpy.nan, 3.0, 2.0], [numpy.nan] * 4, [5.0, 6.0, numpy.nan, numpy.inf]],
                                   dtype))
        long_rows = data(xp, dtype, shape=(2, 601), seed=3)
        return [xp.nanmedian(a), xp.nanmedian(a, axis=0), xp.nanmedian(a, axis=1, keepdims=True),
                xp.nanmedian(a, axis=(0, 1)), xp.nanmedian(b[0]), xp.nanmedian(b[2], keepdims=True),
                xp.nanmedian(b[::2], axis=1), xp.nanmedian(long_rows, axis=1)]

    device(body)
    with pytest.warns(RuntimeWarning, match="All-NaN slice encountered"):
        device(lambda xp: xp.nanmedian(xp.asarray(numpy.array([[1.0, numpy.nan], [numpy.nan, numpy.nan]])), axis=1))


def test_host_values_as_arguments():
    """Lists where NumPy takes arrays (edges, sample points, quantiles, kth) and device arrays where
    NumPy reads values on the host (quantiles, kth)."""
    def body(xp):
        x = data(xp, "float64", shape=(5, 8), seed=16)
        s = xp.sort(xp.ravel(x))
        return [xp.searchsorted(s, [0.0, 1.5]), xp.digitize(x, [-1.0, 0.0, 2.0]), xp.interp(x, [-1, 0, 3], [5, 0, 1]),
                xp.quantile(x, xp.asarray([0.25, 0.5]), axis=1), xp.percentile(x, (5, 95)),
                xp.partition(x, xp.asarray([1, 6]))[:, 6], *xp.histogram(x, bins=[-2, 0, 0.5, 9]),
                xp.bincount([0, 3, 3, 1], weights=xp.asarray([0.5, 1.0, 2.0, 4.0]))]

    device(body)


def test_cpu_devices_sort_on_the_host(cl, monkeypatch):
    """On a CPU device the sorts run in NumPy by choice (not a fallback: on_fallback='raise' holds),
    with NumPy's answers; binary searches stay on the device."""
    monkeypatch.undo()
    assert all(cl.prefers_host(f) == cl.is_cpu for f in HOST_ON_CPU)
    assert not cl.prefers_host(numpy.searchsorted) and not cl.prefers_host(numpy.interp)

    def body(xp):
        a = data(xp, "float64", shape=(6, 5))
        return [xp.sort(a), xp.median(a, axis=0), xp.unique(a), xp.searchsorted(xp.sort(xp.ravel(a)), a)]

    device(body)
