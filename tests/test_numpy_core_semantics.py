"""Ufunc methods, views and scalars of device arrays, against NumPy.

Found by running NumPy's own numpy/_core test files beyond the six of issue #11 against the device
path (``tools/numpy_suite.py --files _core/tests/test_mem_overlap.py,_core/tests/test_regression.py,...``):
each test here failed on a backend before its fix.
"""

from __future__ import annotations

import itertools

import numpy
import pytest

from npgpu._harness import differential

_CODES = "?bhilefd"


@pytest.mark.parametrize("ufunc", ["add", "multiply", "maximum", "minimum", "logical_or"])
@pytest.mark.parametrize("method", ["reduce", "accumulate"])
@differential()
def test_a_reduction_into_an_out_computes_in_the_type_numpy_resolves_with_it(xp, ufunc, method):
    # NumPy reduces in the loop its out= resolves: add.reduce(int16s, out=int16) wraps in int16
    # (the emulated stand-in raised OverflowError), float32s multiplied into an int64 out= multiply
    # in float64 (CuPy's path multiplied in float32), int64s into float16 add in float64 (OpenCL
    # had no such cast: KeyError); out= narrower than that loop is NumPy's own answer
    f = getattr(getattr(xp, ufunc), method)
    data = (numpy.arange(1, 9) * 7919 % 251)
    results = []
    for into, code in itertools.product(_CODES, _CODES):
        a = xp.asarray(data.astype(into))
        out = xp.zeros(() if method == "reduce" else (8,), code)
        try:
            with numpy.errstate(all="ignore"):
                results.append(f(a, out=out))
        except (TypeError, ValueError) as error:
            results.append(type(error).__name__)
    return results


@differential()
def test_reductions_into_an_out_along_an_axis(xp):
    data = (numpy.arange(24).reshape(2, 3, 4) * 7919 % 251).astype(numpy.int16)
    a = xp.asarray(data)
    o1 = xp.zeros((2, 4), numpy.int16)
    o2 = xp.zeros((2, 1, 4), numpy.float64)
    o3 = xp.zeros((2, 3, 4), numpy.int16)
    xp.multiply.reduce(a, axis=1, out=o1)
    xp.add.reduce(a, axis=1, keepdims=True, out=o2)
    xp.multiply.accumulate(a, axis=2, out=o3)
    return o1, o2, o3, xp.maximum.reduce(a, axis=0, dtype=numpy.float32)


@differential()
def test_axes_given_as_arrays(xp):
    # test_mem_overlap permutes views with a.transpose(np.arange(ndim) shuffled): a device array of
    # axes was compared with (None,) (ValueError) or iterated as a backend array (OpenCL: TypeError)
    a = xp.asarray(numpy.arange(24).reshape(2, 3, 4))
    order = xp.arange(3)[::-1]
    return (a.transpose(order), xp.transpose(a, order), xp.moveaxis(a, xp.asarray([0]), xp.asarray([2])),
            xp.sum(a, axis=xp.asarray(1)), xp.roll(a, xp.asarray([1, 2]), axis=xp.asarray([0, 1])))


_LAYOUTS = {
    "C": lambda a: a, "F": lambda a: a.T.copy().T, "transposed": lambda a: a.transpose(2, 0, 1),
    "strided": lambda a: a[:, ::2], "reversed": lambda a: a[:, ::-1],
    "reversed-transposed": lambda a: a[::-1, :, ::-2].transpose(1, 2, 0), "unit": lambda a: a[:1, :, 1:2],
    "empty": lambda a: a[:, :0],
}


@pytest.mark.parametrize("layout", sorted(_LAYOUTS))
@pytest.mark.parametrize("order", "CFAK")
@differential()
def test_ravel_in_each_order_views_where_numpys_does(xp, layout, order):
    # a.ravel('F') of a Fortran-ordered array (or 'K' of a transposed one) is NumPy's view: OpenCL
    # ran it in NumPy, whose result, uploaded, was a copy that writes through it never reached
    base = xp.asarray(numpy.arange(24.0).reshape(2, 3, 4))
    view = _LAYOUTS[layout](base)
    flat = view.ravel(order)
    if flat.size:
        flat[0] = -1.0
    return flat, base, flat.flags.owndata


@differential()
def test_ravel_in_k_order_of_broadcast_views(xp):
    # (NumPy's copy follows its iterator, which keeps zero-stride axes in place)
    a = xp.broadcast_to(xp.arange(4.0), (3, 4))
    b = xp.broadcast_to(xp.arange(12.0).reshape(3, 4)[:, None, :], (3, 2, 4))
    return a.ravel("K"), b.ravel("K"), xp.arange(10.0)[::-1].ravel("K")
