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


@differential()
def test_setting_a_shape_that_needs_a_copy_raises_as_numpys(xp):
    # b.shape = (10,) on a non-contiguous view reshaped it into a copy, leaving the data it viewed
    a = xp.zeros((5, 3))
    b = a[:, :2]
    errors = []
    for shape in [(10,), (7,)]:
        try:
            b.shape = shape
        except (AttributeError, ValueError) as error:
            errors.append((type(error).__name__, str(error)))
    c = a[:2]
    c.shape = (6,)
    c[0] = 9.0
    return errors, a, c


@pytest.mark.parametrize("layout", ["F", "transposed", "strided"])
@differential()
def test_copy_module_keeps_the_layout(xp, layout):
    # copy.copy and copy.deepcopy of a Fortran-ordered array are Fortran-ordered (NumPy's order='K')
    import copy
    import pickle

    a = _LAYOUTS[layout](xp.asarray(numpy.arange(24.0).reshape(2, 3, 4)))
    shallow, deep, unpickled = copy.copy(a), copy.deepcopy(a), pickle.loads(pickle.dumps(a))
    return [(x, x.strides, x.flags.f_contiguous) for x in (shallow, deep, unpickled)]


@pytest.mark.parametrize("dtype", ["int64", "int8", "uint8", "bool"])
@pytest.mark.parametrize("key", ["mask", "indices", "slice", "int"])
@differential()
def test_numpy_scalars_written_through_an_advanced_index_are_cast_as_arrays(xp, dtype, key):
    # a[mask] = np.float64('nan') into ints warns "invalid value encountered in cast", as NumPy
    # converts a NumPy scalar written through an advanced index as an array; npgpu raised
    # ValueError as for a[1:] = nan (Python's conversion, which a slice or an int index uses)
    import warnings

    keys = {"mask": lambda: xp.asarray(numpy.ones(3, bool)), "indices": lambda: xp.asarray([0, 2]),
            "slice": lambda: slice(None), "int": lambda: 1}
    results = []
    for value in [numpy.float64("nan"), float("nan"), numpy.float32("inf"), numpy.float64(1e300), -1,
                  numpy.int64(-1), numpy.int64(300), numpy.float64(-2.5)]:
        a = xp.asarray(numpy.arange(3).astype(dtype))
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                a[keys[key]()] = value
                written = numpy.asarray(a).tolist()  # (read inside: a deferred warning is delivered here)
            results.append((sorted({str(w.message) for w in caught}), written))
        except (ValueError, OverflowError) as error:
            results.append(type(error).__name__)
    return results


class _EqualsOK(numpy.ndarray):
    def __eq__(self, other):
        return "OK"


class _RaisingArray:
    __array_priority__ = 1002

    def __array__(self, *args, **kwargs):
        raise RuntimeError("no array")


@differential()
def test_operators_defer_to_ndarray_subclasses_and_higher_priorities_as_ndarrays_do(xp):
    # Against an ndarray, Python asks a subclass that redefines the mirrored operator first, and
    # ndarray returns NotImplemented to an object of higher __array_priority__: a device array
    # times a np.matrix multiplied elementwise (NumPy: the matrix product), plus a masked array
    # added its masked values, == a subclass ignored its __eq__, < an object whose __array__
    # raises raised its error (NumPy: TypeError)
    import warnings

    a = xp.asarray(numpy.arange(4.0).reshape(2, 2))
    masked = numpy.ma.array([1.0, 2.0], mask=[0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)  # (the matrix subclass's)
        matrix = numpy.asmatrix(numpy.eye(2) * 2)
        product = a * matrix
    results = [product, a + masked, a - masked,
               a == numpy.array([1.0, 2.0]).view(_EqualsOK), a < numpy.array([1.0, 2.0]).view(_EqualsOK)]
    results = [(type(r).__name__, r if isinstance(r, str) else numpy.asarray(r).tolist()) for r in results]
    other = _RaisingArray()
    try:
        a < other  # noqa: B015
    except TypeError:
        results.append("TypeError")
    return results, a == other, a != other


@pytest.mark.parametrize("case", ["float32 + 1e300", "float32 + huge int", "float16 * 100000", "complex64 + 1e300j",
                                  "float32 * 0.1", "add(float32, huge int, dtype=float32)"])
@differential()
def test_a_number_too_large_for_the_arrays_type_warns_overflow_in_cast(xp, case):
    # NEP 50: a Python number takes the array's type, and NumPy's conversion of one too large for it
    # warns "overflow encountered in cast" (OpenCL converted silently, and float16's twice)
    import warnings

    f4, f2 = xp.asarray(numpy.ones(3, numpy.float32)), xp.asarray(numpy.ones(3, numpy.float16))
    huge = int(numpy.finfo(numpy.float32).max) * 2
    cases = {"float32 + 1e300": lambda: f4 + 1e300, "float32 + huge int": lambda: f4 + huge,
             "float16 * 100000": lambda: f2 * 100000,
             "complex64 + 1e300j": lambda: xp.asarray(numpy.ones(3, numpy.complex64)) + 1e300j,
             "float32 * 0.1": lambda: f4 * 0.1,
             "add(float32, huge int, dtype=float32)": lambda: xp.add(f4[0:1], huge, dtype=numpy.float32)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = cases[case]()
        values = numpy.asarray(result).tolist()  # (read inside: a deferred warning is delivered here)
    return result, values, [str(w.message) for w in caught]


@pytest.mark.parametrize("write", [False, True])
@differential()
def test_index_arrays_whose_broadcast_is_too_large_raise_numpys_value_error(xp, write):
    # np.ix_ of five 7132-long index arrays broadcasts past 2**63 elements: NumPy's ValueError
    # (CuPy's path said the shapes mismatch, an IndexError)
    a = xp.ones((3,) * 5)
    i = xp.asarray(numpy.arange(7132) % 3)
    key = xp.ix_(i, i, i, i, i)
    if write:
        a[key] = 0
        return a
    return a[key]


@pytest.mark.parametrize("pair", ["u2>e", "e>u2", "i4>e", "f8>c16", "u8>e", "f8>u1"])
@pytest.mark.parametrize("keyword", [False, True])
@differential()
def test_a_view_as_another_type_shares_the_memory(xp, pair, keyword):
    # a.view(dtype=np.float16) of uint16s ran in NumPy on OpenCL (no uint16 -> float16 cast in its
    # code, though a view converts nothing), so it was a copy: test_half's a |= 0x8000 never
    # reached a_f16
    source, target = pair.split(">")
    a = xp.asarray((numpy.arange(8) + 0x3C00).astype(source))
    view = a.view(dtype=target) if keyword else a.view(target)
    a[...] = xp.asarray((numpy.arange(8)[::-1] + 7).astype(source))
    return numpy.asarray(view).tobytes(), view.dtype, view.shape


_VIEWS = {
    "T": lambda xp, a: a.T, "swapaxes": lambda xp, a: a.swapaxes(0, 2), "moveaxis": lambda xp, a: xp.moveaxis(a, 0, -1),
    "squeeze": lambda xp, a: a[:, :1].squeeze(), "expand_dims": lambda xp, a: xp.expand_dims(a, 1),
    "diagonal": lambda xp, a: xp.diagonal(a, 0, 1, 2), "real": lambda xp, a: a.real,
    "sliding_window_view": lambda xp, a: xp.lib.stride_tricks.sliding_window_view(a, 2, axis=2),
    "broadcast_to": lambda xp, a: xp.broadcast_to(a, (2, 2, 3, 4)), "split": lambda xp, a: xp.split(a, 2, axis=2)[1],
    "flip": lambda xp, a: xp.flip(a, (0, 2)), "rot90": lambda xp, a: xp.rot90(a, 1, (1, 2)),
    "newaxis": lambda xp, a: a[:, None, ::2], "matrix_transpose": lambda xp, a: xp.matrix_transpose(a),
    "permute_dims": lambda xp, a: xp.permute_dims(a, (2, 0, 1)), "mT": lambda xp, a: a.mT,
}


@pytest.mark.parametrize("name", sorted(_VIEWS))
@pytest.mark.parametrize("dtype", ["float64", "complex128", "float16", "int32", "bool"])
@differential()
def test_functions_numpy_answers_with_views_answer_with_views(xp, name, dtype):
    # later writes to the array show through them (np.matrix_transpose ran in NumPy, a copy)
    a = xp.asarray(numpy.arange(24).reshape(2, 3, 4).astype(dtype))
    view = _VIEWS[name](xp, a)
    a[...] = xp.asarray((numpy.arange(24)[::-1] % 7).reshape(2, 3, 4).astype(dtype))
    return view


@differential()
def test_setting_the_dtype_reads_the_memory_in_place(xp):
    # a.dtype = t is NumPy's in-place a.view(t) (a device array had no setter: AttributeError)
    a = xp.asarray(numpy.arange(10, dtype=numpy.float32))
    before = a[2:]
    a.dtype = numpy.int32
    a[0] = 5
    c = xp.arange(6.0)
    c.dtype = "i4"
    errors = []
    b = xp.arange(6, dtype=numpy.float64)[::2]
    try:
        b.dtype = numpy.float32
    except ValueError as error:
        errors.append(str(error))
    return a, before, c, errors


@differential()
def test_the_matrix_transpose_of_fewer_than_two_axes_raises_numpys_error(xp):
    try:
        xp.arange(48).mT  # noqa: B018
    except ValueError as error:
        return str(error)
    return None
