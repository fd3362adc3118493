"""The array functions issue #15 added to the OpenCL device (indexing and movement, products, small
ufunc-like functions), compared with NumPy on every device backend; fallbacks raise, so a test
fails where the device did not run the call."""

from __future__ import annotations

import numpy
import pytest

from npgpu._harness import check, differential

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float32", "float64"]
#: on the device, or the test fails (on_fallback="raise")
on_device = differential(on_fallback="raise")


def _values(dtype, shape, seed=0):
    rng = numpy.random.default_rng(seed)
    dt = numpy.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) > 0.5
    if dt.kind in "iu":
        info = numpy.iinfo(dt)
        return rng.integers(max(info.min, -50), min(info.max, 50), shape, endpoint=True).astype(dt)
    return (rng.standard_normal(shape) * 10).astype(dt)


# -- ufuncs: frexp, ldexp, modf, spacing, lcm, bitwise_count ----------------------------------------

SPECIAL = [0.0, -0.0, 1.0, -1.0, 2.5, -123.25, 1e-310, 5e-324, 1e300, -1e300, numpy.inf, -numpy.inf, numpy.nan,
           1.7976931348623157e308, 3e38, 1e-40]


@pytest.mark.parametrize("dtype", FLOATS)
@differential(rtol=0.0, on_fallback="raise")
def test_float_decompositions_are_numpys(xp, dtype):
    with numpy.errstate(over="ignore"):
        a = xp.asarray(numpy.array(SPECIAL).astype(dtype))
        exponents = xp.asarray(numpy.array([3, -2000, 2000, 0, -1, 1, 2**40, -(2**40), 5, 6, 7, 8, 9, 10, 11, 12]))
        mantissa, exponent = xp.frexp(a)
        fraction, whole = xp.modf(a)
        return (mantissa, exponent, xp.signbit(mantissa), fraction, whole, xp.signbit(fraction), xp.spacing(a),
                xp.ldexp(a, exponents), xp.ldexp(a, exponents.astype("int32")), xp.ldexp(a[::2], 3),
                xp.spacing(a[1::3]) * 2)


@differential(on_fallback="raise")
def test_ldexp_and_spacing_report_overflow(xp):
    a = xp.asarray(numpy.array([1e308, 1.0]))
    with pytest.warns(RuntimeWarning, match="overflow encountered in ldexp"):
        big = xp.ldexp(a, 10)
        xp.asarray(big).tolist()
    with pytest.warns(RuntimeWarning, match="overflow encountered in spacing"):
        top = xp.spacing(xp.asarray(numpy.array([numpy.finfo(numpy.float64).max])))
        xp.asarray(top).tolist()
    return big, top


@pytest.mark.parametrize("dtype", INTS)
@differential(on_fallback="raise")
def test_lcm_and_bitwise_count_are_numpys(xp, dtype):
    info = numpy.iinfo(dtype)
    rng = numpy.random.default_rng(1)
    a = rng.integers(info.min, info.max, 64, dtype=dtype, endpoint=True)
    b = rng.integers(info.min, info.max, 64, dtype=dtype, endpoint=True)
    a[:4], b[:4] = [info.min, info.max, 0, 12], [3, 0, 0, 18]
    small = (a % 40).astype(dtype)
    a, b, small = xp.asarray(a), xp.asarray(b), xp.asarray(small)
    return xp.lcm(a, b), xp.lcm(small, b[::-1]), xp.lcm(small, 6), xp.bitwise_count(a), xp.bitwise_count(small)


# -- constructors of device data, logspace, tri ------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float64", "int32", "bool", "complex128"])
@on_device
def test_array_and_asarray_of_device_arrays(xp, dtype):
    a = xp.asarray(_values("float64", (3, 4)).astype(dtype))
    b = xp.asarray(_values("int16", (3, 4), seed=2))
    other = "complex64" if dtype == "complex128" else "float32"
    same = xp.asarray(a)
    with pytest.raises(ValueError):
        xp.asarray(a, dtype=other, copy=False)
    with pytest.raises(ValueError):
        xp.array([a, a], copy=False)
    return (same, xp.asarray(a, dtype=other), xp.array(a), xp.array(a.T, order="C"), xp.asarray(a.T, order="F"),
            xp.array(a, ndmin=4), xp.array([a, b]), xp.asarray((a[0], a[1], b[2])), xp.array([[a, b], [b, a]]),
            xp.asanyarray(a[:, ::2]), xp.array(a, dtype=other), xp.array(a.T, copy=False))


@on_device
def test_array_of_a_device_array_is_a_copy_and_asarray_is_not(xp):
    a = xp.asarray(numpy.arange(6.0))
    copied, same = xp.array(a), xp.asarray(a)
    a[0] = 100.0
    return copied, same, xp.shares_memory(a, same), xp.shares_memory(a, copied)


@on_device
def test_logspace_and_tri(xp):
    return (xp.logspace(0, 3, 7), xp.logspace(1, 2, 5, endpoint=False, base=2.0), xp.logspace(0, 1, 4, dtype="float32"),
            xp.tri(4), xp.tri(3, 5, 1), xp.tri(5, 3, -1, dtype="int8"), xp.tri(3, k=-1.5, dtype=bool), xp.tri(0))


# -- take, put, take_along_axis, repeat, nonzero, fill_diagonal, copyto --------------------------

@pytest.mark.parametrize("dtype", ["float64", "float32", "int8", "uint64", "bool", "complex64"])
@on_device
def test_take_is_numpys(xp, dtype):
    a = xp.asarray(_values("float64", (4, 5, 3)).astype(dtype))
    idx = xp.asarray(numpy.array([[0, -1], [2, 3]]))
    with pytest.raises(IndexError):
        xp.take(a, xp.asarray(numpy.array([7])), axis=1)
    with pytest.raises(TypeError):
        xp.take(a, xp.asarray(numpy.array([1.0])))
    out = xp.zeros((4, 2, 2, 3), dtype=dtype)
    xp.take(a, idx, axis=1, out=out)
    return (xp.take(a, idx), xp.take(a, idx, axis=0), xp.take(a, idx, axis=-1), xp.take(a, [1, 0, 1], axis=2),
            xp.take(a, 3, axis=1), xp.take(a[:, ::2], [9, -7], axis=1, mode="wrap"),
            xp.take(a, [10, -10], axis=0, mode="clip"), out, xp.take(a, xp.asarray(numpy.zeros(0, int)), axis=1))


@pytest.mark.parametrize("dtype", ["float64", "int16", "bool"])
@on_device
def test_put_is_numpys(xp, dtype):
    a = xp.asarray(_values("float64", (4, 5)).astype(dtype))
    b = xp.asarray(_values("float64", (4, 5)).astype(dtype))
    c = xp.asarray(_values("float64", (6,)).astype(dtype))
    xp.put(a, [0, 7, -1, 7], xp.asarray(_values(dtype, (3,), seed=4)))  # (the last of repeated positions wins)
    xp.put(b.T, xp.asarray(numpy.array([1, 2, 30])), 1, mode="wrap")
    xp.put(c, [[1, 2], [9, 0]], 0, mode="clip")
    with pytest.raises(IndexError):
        xp.put(c, [6], 1)
    return a, b, c


@pytest.mark.parametrize("axis", [0, 1, -1, None])
@on_device
def test_take_along_axis_is_numpys(xp, axis):
    host = _values("float64", (3, 4, 5))
    a = xp.asarray(host)
    order = numpy.argsort(host, axis=axis)
    picked = xp.take_along_axis(a, xp.asarray(order), axis=axis)
    if axis is None:
        return picked, xp.take_along_axis(a[1], xp.asarray(numpy.array([-1, 3, 0])), axis=None)
    first = xp.asarray(numpy.expand_dims(numpy.argmax(host, axis=axis), axis))
    return picked, xp.take_along_axis(a, first, axis=axis), xp.take_along_axis(a[:, ::2], first[:, :1], axis=axis)


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
@on_device
def test_repeat_is_numpys(xp, dtype):
    a = xp.asarray(_values("float64", (3, 4)).astype(dtype))
    with pytest.raises(ValueError):
        xp.repeat(a, [1, 2], axis=0)
    with pytest.raises(ValueError):
        xp.repeat(a, -1)
    return (xp.repeat(a, 2), xp.repeat(a, 3, axis=1), xp.repeat(a, [1, 0, 2], axis=0),
            xp.repeat(a.T, xp.asarray(numpy.array([2, 1, 0])), axis=-1), xp.repeat(a, 0, axis=0))


@pytest.mark.parametrize("dtype", ["float64", "int8", "bool", "uint32"])
@on_device
def test_nonzero_argwhere_flatnonzero(xp, dtype):
    host = _values("int8", (4, 6), seed=5) % 3
    a = xp.asarray(host.astype(dtype))
    with pytest.raises(ValueError):
        xp.nonzero(xp.asarray(numpy.array(1.0, dtype)))
    return (xp.nonzero(a), xp.argwhere(a), xp.flatnonzero(a), xp.nonzero(a[:, ::2].T), xp.argwhere(a[0]),
            xp.flatnonzero(a[::-1]), xp.nonzero(xp.zeros((0, 3), dtype)),
            xp.argwhere(xp.asarray(numpy.array(2, dtype))))


@pytest.mark.parametrize("dtype", ["float64", "int32", "complex128"])
@on_device
def test_fill_diagonal_is_numpys(xp, dtype):
    a, b = xp.zeros((4, 4), dtype), xp.zeros((7, 3), dtype)
    c, d = xp.zeros((3, 3, 3), dtype), xp.zeros((3, 5), dtype)
    e = xp.zeros((5, 5), dtype)
    xp.fill_diagonal(a, 5)
    xp.fill_diagonal(b, xp.asarray(numpy.array([1, 2], dtype)), wrap=True)
    xp.fill_diagonal(c, 2)
    xp.fill_diagonal(d, [7, 8, 9, 10])
    xp.fill_diagonal(e[::2, 1:], 3)  # (a view: NumPy fills its diagonal in logical order)
    with pytest.raises(ValueError):
        xp.fill_diagonal(xp.zeros(3, dtype), 1)
    with pytest.raises(ValueError):
        xp.fill_diagonal(xp.zeros((2, 3, 2), dtype), 1)
    return a, b, c, d, e


@pytest.mark.parametrize("dtype", ["float32", "int16", "bool"])
@on_device
def test_copyto_is_numpys(xp, dtype):
    a, b = xp.zeros((3, 4), dtype), xp.ones((3, 4), dtype)
    src = xp.asarray(_values("float64", (4,)).astype(dtype))
    mask = xp.asarray(_values("bool", (3, 4), seed=3))
    xp.copyto(a, src)
    xp.copyto(b, xp.asarray(numpy.array(7, dtype)), where=mask)
    c = xp.zeros((2, 3), "float64")
    xp.copyto(c, xp.asarray(numpy.arange(3, dtype="int32")))
    xp.copyto(c[:, 1:], 2.5, where=mask[:2, :2])
    with pytest.raises(TypeError):
        xp.copyto(xp.zeros(3, "int32"), xp.asarray(numpy.ones(3)))
    with pytest.raises(ValueError):
        xp.copyto(xp.zeros(3, "float64"), xp.asarray(numpy.ones(4)))
    return a, b, c


# -- tile, pad, meshgrid, splits, diag, fftshift -----------------------------------------------------

@pytest.mark.parametrize("dtype", ["float64", "int8", "bool", "complex128"])
@on_device
def test_tile_is_numpys(xp, dtype):
    a = xp.asarray(_values("float64", (2, 3)).astype(dtype))
    with pytest.raises(ValueError):
        xp.tile(a, -1)
    return (xp.tile(a, 2), xp.tile(a, (2, 1)), xp.tile(a, (3, 1, 2)), xp.tile(a[:, ::2], (1, 0)), xp.tile(a[0], 3),
            xp.tile(a, 1), xp.tile(a.T, (2, 2)))


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric", "wrap"])
@pytest.mark.parametrize("dtype", ["float32", "int16", "complex64"])
@on_device
def test_pad_is_numpys(xp, mode, dtype):
    a = xp.asarray(_values("float64", (3, 4)).astype(dtype))
    extra = {"constant_values": ((1, 2), (3.5, -4))} if mode == "constant" else {}
    results = [xp.pad(a, 2, mode=mode), xp.pad(a, ((1, 0), (0, 3)), mode=mode, **extra),
               xp.pad(a[:, ::2], (1, 7), mode=mode), xp.pad(a[0], (5, 9), mode=mode), xp.pad(a, 0, mode=mode),
               xp.pad(a.reshape(2, 3, 2), ((1, 2), (0, 4), (3, 0)), mode=mode), xp.pad(a[::-1], ((6, 0), (0, 9)), mode)]
    with pytest.raises(ValueError):
        xp.pad(a, -1, mode=mode)
    if mode != "constant":
        with pytest.raises(ValueError):
            xp.pad(a, 1, mode=mode, constant_values=1)
    return results


@pytest.mark.parametrize("indexing", ["xy", "ij"])
@on_device
def test_meshgrid_is_numpys(xp, indexing):
    x = xp.asarray(numpy.arange(3.0))
    y = xp.asarray(numpy.arange(4, dtype="int32"))
    z = xp.asarray(numpy.linspace(0, 1, 2).astype("float32"))
    with pytest.raises(ValueError):
        xp.meshgrid(x, y, indexing="yx")
    return (xp.meshgrid(x, y, indexing=indexing), xp.meshgrid(x, y, z, indexing=indexing),
            xp.meshgrid(x, y, sparse=True, indexing=indexing), xp.meshgrid(x, copy=False, indexing=indexing),
            xp.meshgrid(x[::2], y, z, sparse=True, copy=False, indexing=indexing))


@on_device
def test_h_v_d_split_are_numpys(xp):
    a = xp.asarray(numpy.arange(48.0).reshape(4, 6, 2))
    with pytest.raises(ValueError):
        xp.hsplit(a, 4)
    with pytest.raises(ValueError):
        xp.dsplit(a[0], 2)
    return (xp.hsplit(a, 3), xp.hsplit(a, [1, 4]), xp.vsplit(a, 2), xp.vsplit(a[:, ::2], [3]), xp.dsplit(a, 2),
            xp.hsplit(a[0, :, 0], 2))


@pytest.mark.parametrize("dtype", ["float64", "uint8", "complex128"])
@on_device
def test_diag_and_diagflat_are_numpys(xp, dtype):
    v = xp.asarray(_values("float64", (4,)).astype(dtype))
    m = xp.asarray(_values("float64", (3, 5)).astype(dtype))
    with pytest.raises(ValueError):
        xp.diag(xp.zeros((2, 2, 2), dtype))
    return (xp.diag(v), xp.diag(v, 2), xp.diag(v[::2], -1), xp.diag(m), xp.diag(m, 1), xp.diag(m, -2), xp.diag(m, 9),
            xp.diagflat(m), xp.diagflat(v, -1))


@on_device
def test_fftshift_and_ifftshift_are_numpys(xp):
    a = xp.asarray(numpy.arange(30.0).reshape(5, 6))
    c = xp.asarray(numpy.arange(7) * (1 + 2j))
    return (xp.fft.fftshift(a), xp.fft.ifftshift(a), xp.fft.fftshift(a, axes=0), xp.fft.ifftshift(a, axes=(1,)),
            xp.fft.fftshift(c), xp.fft.ifftshift(c), xp.fft.ifftshift(xp.fft.fftshift(a[:, 1:])))


# -- products -------------------------------------------------------------------------------------

PRODUCT_DTYPES = ["float64", "float32", "int32", "int8", "uint16", "bool"]


@pytest.mark.parametrize("dtype", PRODUCT_DTYPES)
@on_device
def test_inner_vdot_kron_are_numpys(xp, dtype):
    a = xp.asarray(_values(dtype, (3, 4)))
    b = xp.asarray(_values(dtype, (2, 5, 4), seed=1))
    v = xp.asarray(_values(dtype, (4,), seed=2))
    with pytest.raises(ValueError):
        xp.inner(a, xp.asarray(_values(dtype, (3,))))
    return (xp.inner(a, b), xp.inner(v, v), xp.inner(a, v), xp.inner(a[:, ::2], b[..., 1::2]), xp.vdot(a, a),
            xp.vdot(v, a[1]), xp.kron(a, v), xp.kron(v, b), xp.kron(a[:2, :2], a.T[:2]))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int16"])
@on_device
def test_cross_is_numpys(xp, dtype):
    a = xp.asarray(_values(dtype, (4, 3)))
    b = xp.asarray(_values(dtype, (4, 3), seed=1))
    c = xp.asarray(_values(dtype, (3, 5), seed=2))
    return (xp.cross(a, b), xp.cross(a[0], b), xp.cross(a, c, axisb=0), xp.cross(c, c[::-1], axis=0),
            xp.cross(a, b, axisc=0))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "uint8"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@on_device
def test_convolve_and_correlate_are_numpys(xp, dtype, mode):
    a = xp.asarray(_values(dtype, (9,)))
    v = xp.asarray(_values(dtype, (4,), seed=1))
    w = xp.asarray(_values(dtype, (1,), seed=2))
    with pytest.raises(ValueError):
        xp.convolve(a, xp.asarray(numpy.zeros(0, dtype)))
    long, taps = xp.asarray(_values(dtype, (40,), seed=3)), xp.asarray(_values(dtype, (21,), seed=4))
    return (xp.convolve(a, v, mode=mode), xp.convolve(v, a, mode=mode), xp.correlate(a, v, mode=mode),
            xp.correlate(v, a, mode=mode), xp.correlate(a[::2], w, mode), xp.convolve(a, a[::-1], mode),
            xp.convolve(long, taps, mode), xp.correlate(taps, long, mode))  # (21 taps: the map-reduce road)


@pytest.mark.parametrize("dtype", PRODUCT_DTYPES)
@on_device
def test_vecdot_matvec_vecmat_are_numpys(xp, dtype):
    m = xp.asarray(_values(dtype, (2, 3, 4)))
    v = xp.asarray(_values(dtype, (4,), seed=1))
    w = xp.asarray(_values(dtype, (3, 4), seed=2))
    u = xp.asarray(_values(dtype, (3,), seed=3))
    with pytest.raises(ValueError):
        xp.vecdot(m, u)
    return (xp.vecdot(m, v), xp.vecdot(w, w), xp.vecdot(v, v), xp.matvec(m, v), xp.matvec(w, m[:, :, ::-1][0, 0]),
            xp.vecmat(u, m), xp.vecmat(u, w), xp.vecdot(m[:, ::2], w[::2]))


EINSUMS = [("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 5)]), ("i,i", [(5,), (5,)]),
           ("i,j->ij", [(3,), (4,)]), ("ij->ji", [(3, 4)]), ("ij->", [(3, 4)]), ("ijk->kj", [(2, 3, 4)]),
           ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
           ("ij,ij->i", [(3, 4), (3, 4)]), ("ij,kj->ik", [(3, 4), (5, 4)]), ("i,ij->j", [(1,), (3, 4)]),
           ("abc,cd->abd", [(2, 3, 4), (4, 2)])]


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "uint8"])
@pytest.mark.parametrize(("subscripts", "shapes"), EINSUMS)
@on_device
def test_einsum_is_numpys(xp, dtype, subscripts, shapes):
    operands = [xp.asarray(_values(dtype, s, seed=i)) for i, s in enumerate(shapes)]
    return xp.einsum(subscripts, *operands)


@on_device
def test_einsum_errors_are_numpys(xp):
    a = xp.asarray(_values("float64", (3, 4)))
    with pytest.raises(ValueError):
        xp.einsum("ij,jk->ik", a, a)
    with pytest.raises(ValueError):
        xp.einsum("ijk->i", a)
    return xp.einsum("ij,kj->ik", a, a, optimize=True), xp.einsum("ij,jk", a, a.T, optimize="greedy")


NORMS = [(None, None), (2, None), (1, None), (numpy.inf, None), (-numpy.inf, None), (0, None), (3, None),
         (0.5, None), (None, 0), (1, 1), (numpy.inf, -1), (0, 0), (2.5, 1), ("fro", None), (1, (0, 1)),
         (-1, (1, 0)), (numpy.inf, (0, 1)), (-numpy.inf, (1, 0)), ("fro", (0, 1)), (None, (0, 1))]


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32"])
@pytest.mark.parametrize(("ord", "axis"), NORMS)
@on_device
def test_norm_is_numpys(xp, dtype, ord, axis):
    m = xp.asarray(_values(dtype, (3, 4)))
    results = [xp.linalg.norm(m[0], ord if ord != "fro" else None)] if axis is None else []
    if axis is not None or ord in (None, "fro", 1, numpy.inf, -numpy.inf):  # (the others need an SVD, or raise)
        results += [xp.linalg.norm(m, ord, axis), xp.linalg.norm(m, ord, axis, keepdims=True)]
    return results


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int8"])
@on_device
def test_matrix_power_is_numpys(xp, dtype):
    m = xp.asarray(_values(dtype, (3, 3)) % 3)
    stack = xp.asarray(_values(dtype, (2, 4, 4), seed=1) % 3)
    with pytest.raises(numpy.linalg.LinAlgError):
        xp.linalg.matrix_power(xp.asarray(_values(dtype, (3, 4))), 2)
    return [xp.linalg.matrix_power(m, n) for n in (0, 1, 2, 3, 5)] + [xp.linalg.matrix_power(stack, 3)]


@pytest.mark.opencl
def test_matmul_operator_runs_on_an_opencl_gpu(monkeypatch):
    """``a @ b`` reached the ufunc path, which had no gufunc: on a GPU (where matmul is not left to
    NumPy by choice, as on a CPU device) it fell back."""
    pytest.importorskip("pyopencl")
    import npgpu
    from npgpu.backends import get_backend

    # (as on a GPU; patched on the class: monkeypatch's undo of an instance attribute would leave
    # the instance a copy of the old bound method, hiding later patches of the class)
    monkeypatch.setattr(type(get_backend("opencl")), "prefers_host", lambda self, func: False)
    host = _values("float64", (5, 6)), _values("float32", (6, 3), seed=1)
    with npgpu.enable("opencl", threshold=0, on_fallback="raise"):
        a, b = (npgpu.asarray(h) for h in host)
        out = npgpu.zeros((5, 3))
        numpy.matmul(a, b, out=out)
        got = (a @ b, numpy.matmul(a[::2], b), out, numpy.vecdot(a, a))
    want = (host[0] @ host[1], host[0][::2] @ host[1], host[0] @ host[1], numpy.vecdot(host[0], host[0]))
    for g, w in zip(got, want, strict=True):
        assert isinstance(g, npgpu.DeviceArray)
        numpy.testing.assert_allclose(npgpu.asnumpy(g), w, rtol=1e-12)


# -- isclose, allclose, average, NaN-skipping statistics, angle, iscomplex, isreal -----------------

@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "bool"])
@on_device
def test_isclose_and_allclose_are_numpys(xp, dtype):
    host = _values(dtype, (3, 4))
    a = xp.asarray(host)
    near = xp.asarray((host + 1e-6 * (numpy.arange(12).reshape(3, 4) % 3)).astype(dtype))
    specials = xp.asarray(numpy.array([numpy.nan, numpy.inf, -numpy.inf, 1.0, 0.0]))
    others = xp.asarray(numpy.array([numpy.nan, numpy.inf, numpy.inf, 1.0 + 1e-9, 1e-9]))
    return (xp.isclose(a, near), xp.isclose(a, near, rtol=0.0, atol=1e-7), xp.isclose(a, 1), xp.isclose(2.5, a),
            xp.isclose(specials, others), xp.isclose(specials, others, equal_nan=True), xp.allclose(a, near),
            xp.allclose(a, near, rtol=0, atol=0), xp.allclose(specials, specials, equal_nan=True),
            xp.isclose(a[0, 0], a[0, 0]), xp.isclose(a[:, ::2], near[:, 1::2]))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int16", "bool"])
@on_device
def test_average_is_numpys(xp, dtype):
    a = xp.asarray(_values(dtype, (3, 4)))
    w = xp.asarray(numpy.arange(1.0, 13.0).reshape(3, 4))
    w1 = xp.asarray(numpy.array([1, 2, 0, 3], dtype="int32"))
    with pytest.raises(ZeroDivisionError):
        xp.average(a, weights=xp.zeros((3, 4)))
    with pytest.raises(TypeError):
        xp.average(a, weights=w1)
    with pytest.raises(ValueError):
        xp.average(a, axis=1, weights=xp.asarray(numpy.ones(5)))
    return (xp.average(a), xp.average(a, axis=0), xp.average(a, axis=1, keepdims=True), xp.average(a, weights=w),
            xp.average(a, axis=1, weights=w1), xp.average(a, axis=1, weights=w1, returned=True),
            xp.average(a, axis=0, weights=w, returned=True, keepdims=True), xp.average(a, returned=True))


NAN_DATA = numpy.array([[1.0, numpy.nan, 3.0, 4.0], [numpy.nan, numpy.nan, numpy.nan, 2.0], [5.0, 6.0, -1.0, 0.5]])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@on_device
def test_nanvar_and_nanstd_are_numpys(xp, dtype):
    a = xp.asarray(NAN_DATA.astype(dtype))
    i = xp.asarray(_values("int32", (3, 4)))
    with pytest.warns(RuntimeWarning, match="Degrees of freedom"):
        bad = xp.nanvar(a, axis=1, ddof=1)
        xp.asarray(bad).tolist()
    with pytest.warns(RuntimeWarning, match="Degrees of freedom"):
        column = xp.nanstd(a[1, :3])
    return (xp.nanvar(a), xp.nanstd(a), xp.nanvar(a, axis=0), xp.nanstd(a, axis=1, keepdims=True),
            xp.nanvar(a, axis=0, ddof=1), xp.nanstd(a[::2], axis=0, dtype="float64"), bad, column, xp.nanvar(i),
            xp.nanstd(i, axis=0))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int8"])
@on_device
def test_nanargmax_nanargmin_nancumsum_nancumprod_are_numpys(xp, dtype):
    data = NAN_DATA if dtype != "int8" else _values("int8", (3, 4))
    a = xp.asarray(data.astype(dtype))
    results = [xp.nanargmax(a), xp.nanargmin(a), xp.nanargmax(a, axis=1), xp.nanargmin(a, axis=0, keepdims=True),
               xp.nancumsum(a), xp.nancumsum(a, axis=1), xp.nancumprod(a, axis=0), xp.nancumprod(a[:, ::2]),
               xp.nancumsum(a, dtype="float64")]
    if dtype != "int8":
        with pytest.raises(ValueError, match="All-NaN slice"):
            xp.nanargmax(a[1, :3])
        with pytest.raises(ValueError, match="All-NaN slice"):
            xp.nanargmin(a[:2, 1], axis=0)
    return results


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "uint16"])
@on_device
def test_angle_iscomplex_isreal_of_real_arrays(xp, dtype):
    host = numpy.array([-2.0, -0.0, 0.0, 3.5, numpy.inf, -numpy.inf]) if dtype.startswith("float") else (
        _values(dtype, (6,)))
    a = xp.asarray(host.astype(dtype))
    scalar = xp.asarray(numpy.array(3, dtype))
    return (xp.angle(a), xp.angle(a, deg=True), xp.iscomplex(a), xp.isreal(a), xp.iscomplex(scalar),
            xp.isreal(scalar), xp.angle(a[::2].reshape(3, 1)))


# -- what the CuPy backend composes from NumPy's definitions beyond the cases above: on the device
# there (CuPy and emulated); on OpenCL mixed sequences and complex products run in NumPy, counted ------

def _array_of_device_arrays_and_numbers(xp):
    d = xp.asarray(numpy.array(2.5, "float32"))
    v = xp.asarray(numpy.arange(3, dtype="int8"))
    with pytest.raises(ValueError):
        xp.array([v, 1.5])  # (inhomogeneous)
    with pytest.raises(ValueError):
        xp.asarray([v, [1, 2, 3]], copy=False)
    return (xp.array([d, 2.0]), xp.array([v, [1, 2, 3]]), xp.asarray((d, 3, d), dtype="float64"),
            xp.array([[v], [v]], order="F", ndmin=4), xp.array([v, v], dtype="uint8"), xp.asarray([d, True]))


def _complex_products_and_correlations(xp, dtype):
    z = xp.asarray((_values("float64", (2, 4)) + 1j * _values("float64", (2, 4), seed=1)).astype(dtype))
    long = xp.asarray((_values("float64", (11,), seed=2) - 2j).astype(dtype))
    return (xp.vecdot(z, z[::-1]), xp.matvec(z, z[0]), xp.vecmat(z[1], z.T), xp.convolve(z[0], long),
            xp.correlate(z[1], long, "same"), xp.correlate(long, z[0], "full"), xp.correlate(long, z[1], 0))


def test_array_of_device_arrays_and_numbers(device_backend):
    check(_array_of_device_arrays_and_numbers, device_backend,
          on_fallback="ignore" if device_backend == "opencl" else "raise")


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
def test_complex_products_and_correlations(device_backend, dtype):
    check(_complex_products_and_correlations, device_backend, kwargs={"dtype": dtype},
          on_fallback="ignore" if device_backend == "opencl" else "raise")


@on_device
def test_take_put_modes_and_repeated_positions(xp):
    a = xp.asarray(numpy.arange(12.0).reshape(3, 4))
    b = xp.asarray(numpy.zeros(6))
    xp.put(b, [1, 1, 5, 1, -1], xp.asarray(numpy.array([10.0, 20.0])))  # (the last of repeated positions wins)
    with pytest.raises(IndexError):
        xp.take_along_axis(a, xp.asarray(numpy.array([[4]])), axis=1)
    with pytest.raises(IndexError):
        xp.put(b, xp.asarray(numpy.array([-7])), 0.0)
    return (b, xp.take(a, [-20, 15, 3], mode="wrap"), xp.take(a, [[-20, 15]], axis=1, mode="clip"),
            xp.take(a, -1, axis=0), xp.pad(a[0, :3], (7, 11), "wrap"))
