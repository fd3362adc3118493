"""OpenCL backend against NumPy: reductions, data movement, indexing and matmul.

Runs on any OpenCL device; on machines without a GPU, PoCL's CPU device.
"""

import numpy
import pytest

pytest.importorskip("pyopencl")

from npgpu.backends.opencl import CLArray, OpenCLBackend  # noqa: E402

pytestmark = pytest.mark.opencl



def host(cl, x):
    return cl.to_host(x) if isinstance(x, CLArray) else numpy.asarray(x)


def check(got, ref):
    ref = numpy.asarray(ref)
    assert got.dtype == ref.dtype and got.shape == ref.shape, (got.dtype, ref.dtype, got.shape, ref.shape)
    if ref.dtype.kind in "biu":
        numpy.testing.assert_array_equal(got, ref)
    else:
        rtol = 1e-12 if ref.dtype == numpy.float64 else 1e-5
        numpy.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol, equal_nan=True)


RNG = numpy.random.default_rng(0)
DATA = {
    "float64": RNG.normal(size=(7, 6, 9)),
    "float32": RNG.normal(size=(7, 6, 9)).astype(numpy.float32),
    "int8": RNG.integers(-100, 100, (7, 6, 9)).astype(numpy.int8),
    "uint16": RNG.integers(0, 60000, (7, 6, 9)).astype(numpy.uint16),
    "bool": RNG.integers(0, 2, (7, 6, 9)).astype(bool),
}


@pytest.mark.parametrize("dtype", list(DATA))
@pytest.mark.parametrize("func", [numpy.sum, numpy.prod, numpy.max, numpy.min, numpy.any, numpy.all])
def test_reductions(cl, dtype, func):
    a = DATA[dtype]
    d = cl.from_host(a)
    for axis, keepdims in [(None, False), (1, True), ((0, 2), False), (-1, False)]:
        kw = {"axis": axis, "keepdims": keepdims}
        assert cl.supports_function(func, (a.dtype,), (d,), kw)
        check(host(cl, cl.call_function(func, (d,), kw)), func(a, **kw))
    # views: negative steps and transposes
    v = cl.getitem(cl.transpose(d, (2, 0, 1)), (slice(None, None, -2),))
    check(host(cl, cl.call_function(func, (v,), {"axis": 1})), func(a.transpose(2, 0, 1)[::-2], axis=1))


def test_reduction_arguments(cl):
    a = DATA["float64"]
    d = cl.from_host(a)
    m = a > 0
    check(host(cl, cl.call_function(numpy.sum, (d,), {"axis": 0, "where": cl.from_host(m)})), numpy.sum(a, 0, where=m))
    check(host(cl, cl.call_function(numpy.max, (d,), {"initial": 5.0})), numpy.max(a, initial=5.0))
    check(host(cl, cl.call_function(numpy.sum, (d,), {"dtype": numpy.float32, "axis": 2})), a.sum(2, numpy.float32))
    i = DATA["int8"]
    check(host(cl, cl.call_function(numpy.sum, (cl.from_host(i),), {})), i.sum())
    check(host(cl, cl.call_function(numpy.sum, (cl.from_host(i),), {"initial": 3, "axis": 1})), i.sum(1, initial=3))
    out = cl.from_host(numpy.zeros((7, 9)))
    cl.call_function(numpy.sum, (d,), {"axis": 1, "out": out})
    check(cl.to_host(out), a.sum(1))
    with pytest.raises(ValueError):
        cl.call_function(numpy.max, (cl.from_host(numpy.zeros((0, 3))),), {})
    with pytest.raises(numpy.exceptions.AxisError):
        cl.call_function(numpy.sum, (d,), {"axis": 3})
    big = RNG.normal(size=300_001)
    check(host(cl, cl.call_function(numpy.sum, (cl.from_host(big),), {})), big.sum())
    assert cl.supports_ufunc(numpy.add, "reduce", (a.dtype,), {"axis": 0})
    check(host(cl, cl.call_ufunc(numpy.add, "reduce", (cl.from_host(i),), {"axis": 0})), numpy.add.reduce(i, 0))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int8"])
def test_statistics_and_args(cl, dtype):
    a = DATA[dtype]
    d = cl.from_host(a)
    for func in (numpy.mean, numpy.var, numpy.std, numpy.argmax, numpy.argmin, numpy.cumsum, numpy.cumprod):
        for axis in (None, 1):
            check(host(cl, cl.call_function(func, (d,), {"axis": axis})), func(a, axis=axis))
    check(host(cl, cl.call_function(numpy.var, (d,), {"axis": 0, "ddof": 1})), numpy.var(a, axis=0, ddof=1))


def test_nan_variants(cl):
    a = DATA["float64"].copy()
    a[a > 1.2] = numpy.nan
    d = cl.from_host(a)
    for func in (numpy.nansum, numpy.nanprod, numpy.nanmax, numpy.nanmin, numpy.nanmean, numpy.argmax, numpy.max):
        check(host(cl, cl.call_function(func, (d,), {"axis": 2})), func(a, axis=2))
    allnan = cl.from_host(numpy.full((2, 3), numpy.nan))
    with pytest.warns(RuntimeWarning):
        cl.call_function(numpy.nanmax, (allnan,), {"axis": 0})


def test_data_movement(cl):
    a = DATA["float64"]
    d = cl.from_host(a)
    check(cl.to_host(cl.reshape(cl.transpose(d), (-1, 7))), a.T.reshape(-1, 7))
    r = cl.reshape(d, (42, 9))
    assert r.data is d.data  # a view, no copy
    check(cl.to_host(cl.ravel(cl.getitem(d, (slice(None, None, 2),)))), a[::2].ravel())
    check(cl.to_host(cl.astype(d, numpy.int16)), a.astype(numpy.int16))
    check(cl.to_host(cl.astype(d, bool)), a.astype(bool))
    check(cl.to_host(cl.concatenate([d, cl.getitem(d, (slice(0, 2),))], axis=0)), numpy.concatenate([a, a[:2]]))
    check(cl.to_host(cl.stack([d, d], axis=1)), numpy.stack([a, a], axis=1))
    check(cl.to_host(cl.where(cl.from_host(a > 0), d, -1)), numpy.where(a > 0, a, -1))
    check(cl.to_host(cl.clip(d, -0.5, 0.5)), numpy.clip(a, -0.5, 0.5))
    check(cl.to_host(cl.zeros((3, 4), numpy.int32)), numpy.zeros((3, 4), numpy.int32))
    check(cl.to_host(cl.full((3,), 7, numpy.uint8)), numpy.full((3,), 7, numpy.uint8))
    check(cl.to_host(cl.ones_like(d)), numpy.ones_like(a))
    check(cl.to_host(cl.arange(3, 20, 2)), numpy.arange(3, 20, 2))
    check(cl.to_host(cl.linspace(0, 1, 11)), numpy.linspace(0, 1, 11))
    check(cl.to_host(cl.eye(4, 5, 1)), numpy.eye(4, 5, 1))
    scalar = cl.getitem(d, (1, 2, 3))  # a 0-d view: the core turns it into a NumPy scalar
    assert scalar.shape == () and cl.to_host(scalar)[()] == a[1, 2, 3]
    m = a > 0.3
    check(cl.to_host(cl.getitem(d, cl.from_host(m))), a[m])
    b = a.copy()
    db = cl.from_host(b)
    cl.setitem(db, cl.from_host(m), 0.0)
    cl.setitem(db, (slice(None), 0), cl.from_host(numpy.arange(9.0)))
    cl.setitem(db, (0, 0, 0), 5.5)
    b[m] = 0.0
    b[:, 0] = numpy.arange(9.0)
    b[0, 0, 0] = 5.5
    check(cl.to_host(db), b)
    f = cl.empty((4,), numpy.int16)
    cl.call_function(numpy.ndarray.fill, (f, -3), {})
    check(cl.to_host(f), numpy.full(4, -3, numpy.int16))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matmul_shapes(cl, dtype):
    shapes = [((5, 7), (7, 3)), ((7,), (7, 4)), ((3, 7), (7,)), ((7,), (7,)), ((2, 5, 7), (7, 33)),
              ((4, 1, 17, 18), (3, 18, 5)), ((40, 33), (33, 20))]
    for sa, sb in shapes:
        a = RNG.normal(size=sa).astype(dtype)
        b = RNG.normal(size=sb).astype(dtype)
        check(host(cl, cl.matmul(cl.from_host(a), cl.from_host(b))), a @ b)
    a = RNG.normal(size=(6, 5)).astype(dtype)
    check(host(cl, cl.matmul(cl.transpose(cl.from_host(a)), cl.from_host(a))), a.T @ a)
    check(host(cl, cl.dot(cl.from_host(a), cl.from_host(a[0]))), a.dot(a[0]))
    t = RNG.normal(size=(3, 4, 5)).astype(dtype)
    u = RNG.normal(size=(4, 5, 2)).astype(dtype)
    check(host(cl, cl.tensordot(cl.from_host(t), cl.from_host(u))), numpy.tensordot(t, u))
    with pytest.raises(ValueError):
        cl.matmul(cl.from_host(a), cl.from_host(a))
    assert not cl.supports_function(numpy.matmul, (numpy.dtype("int32"),) * 2, (), {})


# -- CPU-device paths: unrolled chunked reductions, host-backed buffers ------------------------

@pytest.mark.parametrize("n", [1, 7, 8, 9, 127, 4097, 100_003, 1_000_003])
def test_unrolled_sum_matches_numpy(cl, n):
    a = numpy.random.default_rng(n).normal(size=n) * 1e3 + 1e6  # a large mean: a naive sum loses digits
    got = host(cl, cl.reduction("sum", cl.from_host(a)))
    assert abs(got - a.sum()) <= 1e-12 * abs(a.sum())
    i = numpy.arange(n, dtype=numpy.int32) - n // 2
    assert host(cl, cl.reduction("sum", cl.from_host(i))) == i.sum()


def test_unrolled_reductions_nonfinite_and_extremes(cl):
    a = numpy.random.default_rng(1).normal(size=50_001)
    for poke in (numpy.inf, -numpy.inf, numpy.nan):
        b = a.copy()
        b[12_345] = poke
        d = cl.from_host(b)
        check(host(cl, cl.reduction("sum", d)), b.sum())
        check(host(cl, cl.reduction("max", d)), b.max())
        check(host(cl, cl.reduction("nanmin", d)), numpy.nanmin(b))
    b = numpy.concatenate([a, [numpy.inf, -numpy.inf]])
    with numpy.errstate(invalid="ignore"):
        want = b.sum()  # inf - inf is nan
    check(host(cl, cl.reduction("sum", cl.from_host(b))), want)
    m = a.reshape(3, -1)
    check(host(cl, cl.reduction("sum", cl.from_host(m), axis=1)), m.sum(axis=1))
    check(host(cl, cl.reduction("prod", cl.from_host(m[:, :40]), axis=1)), m[:, :40].prod(axis=1))


def test_many_temporaries_keep_host_memory_alive(cl):
    # host-backed buffers (PoCL) are freed only once queued work that uses them is done
    a = numpy.random.default_rng(2).random(300_000)
    d = cl.from_host(a)
    for _ in range(30):
        r = cl.reduction("sum", cl.ufunc_call(numpy.multiply, (d, 2.0)))
    assert abs(host(cl, r) - 2 * a.sum()) <= 1e-12 * a.sum()
    cl.sync()
    assert not cl._in_flight


# -- complex: stored on the device, computed in NumPy ------------------------------------------

def test_complex_storage_and_layout(cl):
    z = (numpy.arange(24) + 1j * numpy.arange(24)[::-1]).reshape(4, 6).astype(numpy.complex128)
    d = cl.from_host(z)
    check(cl.to_host(d), z)
    check(cl.to_host(cl.copy(cl.transpose(d))), z.T)
    check(cl.to_host(cl.copy(cl.getitem(d, (slice(None, None, -1), slice(1, None, 2))))), z[::-1, 1::2])
    check(cl.to_host(cl.astype(d, numpy.complex64)), z.astype(numpy.complex64))
    r = numpy.linspace(-1, 1, 6)
    check(cl.to_host(cl.astype(cl.from_host(r), numpy.complex128)), r.astype(numpy.complex128))
    check(cl.to_host(cl.concatenate([d, cl.from_host(r[None])])), numpy.concatenate([z, r[None]]))
    e = cl.copy(d)
    cl.setitem(e, (slice(None), 0), 2 - 3j)
    z2 = z.copy()
    z2[:, 0] = 2 - 3j
    check(cl.to_host(e), z2)
    check(cl.to_host(cl.full((2, 2), 1j)), numpy.full((2, 2), 1j))
    assert cl.supports_function(numpy.reshape, (z.dtype,), (d, (6, 4)), {})
    assert cl.supports_function(numpy.sum, (z.dtype,), (d,), {})  # (complex values: tests/test_opencl_complex.py)
    assert not cl.supports_function(numpy.prod, (z.dtype,), (d,), {})  # (README: complex products)
    assert cl.supports_ufunc(numpy.add, "__call__", (z.dtype,) * 3, {})
    assert not cl.supports_ufunc(numpy.sin, "__call__", (z.dtype,) * 2, {})
    assert not cl.supports_function(numpy.ndarray.astype, (z.dtype,), (d, numpy.float64), {})


def test_split_views_and_concatenate_shapes(cl):
    a = numpy.arange(24.0).reshape(2, 3, 4)
    d = cl.from_host(a)
    for how, arg in ((cl.split, 2), (cl.array_split, 3), (cl.split, [1, 3])):
        parts = how(d, arg, axis=2)
        ref = getattr(numpy, how.__name__)(a, arg, axis=2)
        assert len(parts) == len(ref) and all(p.data is d.data for p in parts)
        for p, r in zip(parts, ref):
            check(cl.to_host(p), r)
    with pytest.raises(ValueError):
        cl.split(d, 3, axis=2)
    with pytest.raises(ValueError):
        cl.concatenate([d, cl.from_host(numpy.zeros((2, 4, 4)))], axis=2)
    with pytest.raises(ValueError):
        cl.concatenate([d, cl.from_host(numpy.zeros(3))])
    with pytest.raises(ValueError):
        cl.stack([d, cl.from_host(numpy.zeros((2, 3, 5)))])


def test_dtype_arguments_checked_before_launch(cl):
    d = cl.from_host(numpy.arange(4.0))
    assert not cl.supports_function(numpy.ndarray.astype, (d.dtype,), (d, "datetime64[s]"), {})
    assert not cl.supports_function(numpy.zeros, (), (3, "U4"), {})
    assert not cl.supports_function(numpy.sum, (d.dtype,), (d,), {"dtype": "M8[s]"})
    assert cl.supports_function(numpy.zeros, (), (3, numpy.int16), {})


def test_availability_and_placement_facts(cl, monkeypatch):
    import pyopencl

    assert OpenCLBackend.unavailable_reason(device=10_000) is not None
    assert "out of range" in OpenCLBackend.unavailable_reason(device=10_000)
    assert "no OpenCL device name contains" in OpenCLBackend.unavailable_reason(device="no-such-device-name")
    assert isinstance(OpenCLBackend.has_gpu(), bool)
    assert cl.prefers_host(numpy.matmul) == cl.is_cpu and not cl.prefers_host(numpy.sum)
    assert cl.default_threshold_bytes <= cl.upload_threshold_bytes
    monkeypatch.setattr(pyopencl, "get_platforms", lambda: [])
    assert OpenCLBackend.has_gpu() is False
    assert "no OpenCL platform" in OpenCLBackend.unavailable_reason()
