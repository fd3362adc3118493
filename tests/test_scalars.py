"""Where NumPy returns a NumPy scalar, npgpu returns that scalar, of the same type, on every backend.

Legacy code rounds, formats, serializes and isinstance-checks what ``a[i]`` and ``a.sum()``
give; a 0-d device array in their place broke ``round(x, 6)``, ``json.dumps`` and
``isinstance(x, np.floating)``.
"""

from __future__ import annotations

import json

import numpy
import pytest

import npgpu
from npgpu import _ops
from npgpu._harness import differential

DTYPES = ["float64", "float32", "int64", "int32", "uint8", "int8", "bool", "complex128"]


def _vector(xp, dtype):
    return xp.asarray((numpy.arange(1, 7) % 4).astype(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@differential()
def test_indexing_gives_scalars(xp, dtype):
    a = _vector(xp, dtype)
    m = a.reshape(2, 3)
    return a[0], a[-1], m[1, 2], m[1][0], a[numpy.int64(2)], m[(0, 1)]


@pytest.mark.parametrize("dtype", DTYPES)
@differential()
def test_ellipsis_keeps_zero_d_arrays(xp, dtype):
    a = _vector(xp, dtype)
    zero_d = xp.asarray(numpy.array(3, dtype=dtype))
    return a[0, ...], zero_d[...], zero_d[()], xp.asarray(zero_d), zero_d.reshape(())


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32", "uint8", "bool"])
@differential()
def test_reductions_give_scalars(xp, dtype):
    a = _vector(xp, dtype)
    m = a.reshape(2, 3)
    results = [a.sum(), a.max(), a.min(), a.prod(), a.argmax(), a.argmin(), a.any(), a.all(), xp.sum(m),
               xp.amax(m), m.sum(axis=None), a.sum(axis=0), xp.count_nonzero(a)]
    if dtype != "bool":
        results += [a.mean(), a.std(), a.var(), xp.mean(m), a.cumsum()[-1]]
    return tuple(results)


@differential()
def test_fused_reductions_give_scalars(xp):
    a = _vector(xp, "float64")
    b = _vector(xp, "float32")
    return (a * 2 + 1).sum(), (b * b).mean(), xp.abs(a - 3).max(), ((a > 2) & (a < 4)).any(), (a * b).sum()


@differential()
def test_products_and_norms_give_scalars(xp):
    a = _vector(xp, "float64")
    return xp.dot(a, a), xp.vdot(a, a), xp.inner(a, a), a @ a, xp.linalg.norm(a), xp.median(a), xp.trace(
        a.reshape(2, 3)[:, :2])


@pytest.mark.parametrize("dtype", ["float64", "int32", "bool"])
@differential()
def test_ufuncs_of_zero_d_arrays_give_scalars(xp, dtype):
    zero_d = xp.asarray(numpy.array(2, dtype=dtype))
    out = [zero_d + 1, zero_d * zero_d, -zero_d if dtype != "bool" else ~zero_d, xp.add.reduce(_vector(xp, dtype)),
           abs(zero_d), zero_d == 2]
    if dtype != "bool":
        out += [xp.sqrt(zero_d), zero_d / 3]
    return tuple(out)


@differential()
def test_scalars_work_where_python_numbers_do(xp):
    a = xp.asarray(numpy.array([1.123456789, 2.5, 3.75]))
    i = xp.asarray(numpy.arange(4, dtype="int32"))
    return (round(a.sum(), 6), json.dumps({"m": float(a.max()), "i": int(i[2])}),
            isinstance(a.max(), (float, numpy.floating)), isinstance(i[1], numpy.integer),
            f"{a[0]:.3f}", [10, 20, 30, 40][i[3]], hash(i[2]) == hash(2))


# -- the table of functions that return 0-d arrays, checked against NumPy itself ---------------

_ZERO_D_CALLS = {
    numpy.asarray: lambda z: numpy.asarray(z), numpy.array: lambda z: numpy.array(z),
    numpy.copy: lambda z: numpy.copy(z), numpy.reshape: lambda z: numpy.reshape(z, ()),
    numpy.squeeze: lambda z: numpy.squeeze(z), numpy.transpose: lambda z: numpy.transpose(z),
    numpy.real: lambda z: numpy.real(z), numpy.imag: lambda z: numpy.imag(z),
    numpy.where: lambda z: numpy.where(True, z, z), numpy.roll: lambda z: numpy.roll(z, 1),
    numpy.broadcast_to: lambda z: numpy.broadcast_to(z, ()), numpy.zeros_like: lambda z: numpy.zeros_like(z),
    numpy.ones_like: lambda z: numpy.ones_like(z), numpy.empty_like: lambda z: numpy.empty_like(z),
    numpy.full_like: lambda z: numpy.full_like(z, 1), numpy.ndarray.astype: lambda z: z.astype("f4"),
    numpy.ndarray.copy: lambda z: z.copy(), numpy.ndarray.view: lambda z: z.view(),
    numpy.zeros: lambda z: numpy.zeros(()), numpy.ones: lambda z: numpy.ones(()),
    numpy.empty: lambda z: numpy.empty(()), numpy.full: lambda z: numpy.full((), 1.0),
    numpy.tensordot: lambda z: numpy.tensordot(z, z, 0), numpy.fft.fftn: lambda z: numpy.fft.fftn(z),
    numpy.tile: lambda z: numpy.tile(z, ()),
}


@pytest.mark.parametrize("func", list(_ZERO_D_CALLS), ids=lambda f: getattr(f, "__qualname__", str(f)))
def test_zero_d_array_table_is_numpys(func):
    """Each function npgpu lets return a 0-d array does so in NumPy (a fact the table states)."""
    assert func in _ops.ARRAY_RESULT_0D
    result = _ZERO_D_CALLS[func](numpy.array(2.0))
    assert type(result) is numpy.ndarray and result.ndim == 0


@pytest.mark.parametrize("func", [numpy.sum, numpy.max, numpy.mean, numpy.dot, numpy.clip, numpy.flip,
                                  numpy.median, numpy.around],
                         ids=lambda f: f.__name__)
def test_scalar_results_are_not_in_the_table(func):
    assert func not in _ops.ARRAY_RESULT_0D


def test_scalar_read_is_one_small_transfer(device_backend):
    with npgpu.enable(device_backend, threshold=0):
        a = npgpu.asarray(numpy.arange(1000.0))
        npgpu.report(reset=True)
        value = a[10]
        moved = npgpu.report().totals().bytes_to_host
    assert value == 10.0 and type(value) is numpy.float64
    assert moved == 8  # one element, not the array
