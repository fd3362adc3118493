"""NumPy's statistics, averages and array-like arguments on device arrays, against NumPy.

Found by running NumPy's own numpy/lib test files against the device path
(``tools/numpy_suite.py --files lib/tests/test_nanfunctions.py,...``): each test here failed on a
backend before its fix.
"""

from __future__ import annotations

import gc
import sys
import warnings

import numpy
import pytest
from conftest import BACKEND_PARAMS

import npgpu
from npgpu._harness import backend_context, differential


def _caught(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    return result, [(w.category.__name__, str(w.message)) for w in caught]


@pytest.mark.parametrize("name", ["var", "std", "nanvar", "nanstd"])
@pytest.mark.parametrize("ddof", [0.5, 1.5])
@differential()
def test_variances_with_a_fractional_ddof(xp, name, ddof):
    # NumPy's count less ddof is a float then: n - 0.5, not n - 0 or n - 1 (OpenCL truncated it)
    rng = numpy.random.default_rng(4)
    data = rng.random((5, 7)) * 100
    data[1, 2] = data[3, 0] = numpy.nan if name.startswith("nan") else 1.0
    a = xp.asarray(data)
    f = getattr(xp, name)
    zero_d = xp.asarray(numpy.float64(3.0))
    return f(a, ddof=ddof), f(a, axis=0, ddof=ddof), f(a, axis=1, ddof=ddof), f(zero_d, ddof=0.5)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "complex128"])
@differential()
def test_a_mean_of_slices_without_numbers_warns_as_numpys(xp, dtype):
    # "Mean of empty slice" for a slice of NaNs only, or of nothing: OpenCL's nanmean and
    # CuPy's gave the NaN silently
    data = numpy.full((3, 4), numpy.nan, dtype)
    data[0, 1] = 2
    a = xp.asarray(data)
    empty = xp.asarray(numpy.zeros((0, 3), dtype))
    return (_caught(lambda: xp.nanmean(a, axis=0)), _caught(lambda: xp.nanmean(a, axis=1)),
            _caught(lambda: xp.nanmean(a[1:])), _caught(lambda: xp.nanmean(a)),
            _caught(lambda: xp.nanmean(empty, axis=0)), _caught(lambda: xp.nanmean(empty, axis=1)))


@pytest.mark.parametrize("name", ["nanvar", "nanstd"])
@differential()
def test_slices_without_degrees_of_freedom_warn_once(xp, name):
    # one "Degrees of freedom <= 0 for slice." (the emulated stand-in answers as CuPy's, which
    # warns not at all, so npgpu's own warning is the only one)
    data = numpy.array([[1.0, numpy.nan, 2.0], [numpy.nan, numpy.nan, 5.0]])
    f = getattr(xp, name)
    a = xp.asarray(data)
    return _caught(lambda: f(a, axis=1, ddof=1)), _caught(lambda: f(xp.asarray(numpy.zeros((0, 3))), axis=0))


@pytest.mark.parametrize("name", ["nanmean", "nanvar", "nanstd"])
@pytest.mark.parametrize("target", [numpy.bool_, numpy.int64, numpy.object_])
@differential()
def test_nan_statistics_refuse_a_dtype_or_out_that_is_not_inexact(xp, name, target):
    # NumPy's TypeError "If a is inexact, then dtype must be inexact" (and out): the devices answered
    a = xp.asarray(numpy.array([[0.5, numpy.nan, 0.25], [1.0, 2.0, numpy.nan]]))
    f = getattr(xp, name)
    with pytest.raises(TypeError, match="inexact"):
        f(a, axis=1, dtype=target)
    with pytest.raises(TypeError, match="inexact"):
        f(a, axis=1, out=numpy.empty(2, target))
    if target is not numpy.object_:
        with pytest.raises(TypeError, match="inexact"):
            f(a, axis=1, out=xp.asarray(numpy.empty(2, target)))
    return f(a, axis=1, dtype=numpy.float32)


@differential()
def test_average_with_weights_along_axes_in_the_order_given(xp):
    # NumPy 2: weights of a's shape along a tuple of axes, in that tuple's order (OpenCL ignored the
    # order: a wrong answer for square weights; CuPy's average takes 1-d weights only)
    y = xp.asarray(numpy.arange(12).reshape(2, 2, 3))
    w = xp.asarray(numpy.array([0., 0., 1., .5, .5, 0., 0., .5, .5, 1., 0., 0.]).reshape(2, 2, 3))
    square = w[:, :, 0]
    with pytest.raises(ValueError, match="Shape of weights must be consistent"):
        xp.average(y, axis=(0, 1, 2), weights=square)
    with pytest.raises(TypeError):
        xp.average(y, weights=square)
    return (xp.average(y, axis=(0, 1), weights=square), xp.average(y, axis=(1, 0), weights=square),
            xp.average(y, axis=(2, 0), weights=w[:, 0, :].T), xp.average(y, axis=(1, 2), weights=w[1]),
            xp.average(y, axis=(0, 2), weights=w[:, 0, :], returned=True),
            xp.average(y, axis=(1, 0), weights=square, keepdims=True), xp.average(y, axis=2, weights=w[0, 0]))


@differential()
def test_eye_in_fortran_order(xp):
    m = xp.eye(4, 3, k=-1, order="F")
    return m, m.flags.f_contiguous, m.flags.c_contiguous, xp.eye(3, order="C").flags.c_contiguous


_ONE_ARRAY_CALLS = {
    "sum": lambda xp, r: xp.sum([r[0], r[1]]),
    "sum_axis": lambda xp, r: xp.sum([r[0], r[1]], axis=0),
    "mean": lambda xp, r: xp.mean([r[0], r[1]], axis=0),
    "max_of_scalars": lambda xp, r: xp.max([r.max(), r.min()]),
    "transpose": lambda xp, r: xp.transpose([r[0], r[1]]),
    "where": lambda xp, r: xp.where([r[0] > 1, r[1] > 4], 1, 0),
    "clip": lambda xp, r: xp.clip([r[0], r[1]], 1, 4),
    "cumsum": lambda xp, r: xp.cumsum([r[0], r[1]]),
    "diff": lambda xp, r: xp.diff([r[0], r[1]], axis=0),
    "average": lambda xp, r: xp.average([r[0], r[1]], axis=0),
    "argmax": lambda xp, r: xp.argmax([r[0], r[1]]),
    "sort": lambda xp, r: xp.sort((r[1], r[0]), axis=0),
    "mixed": lambda xp, r: xp.sum([r[0], numpy.ones(3)], axis=1),
    # sequences of operands, as before
    "concatenate": lambda xp, r: xp.concatenate([r[0], r[1]]),
    "stack": lambda xp, r: xp.stack((r[0], r[1]), axis=1),
    "block": lambda xp, r: xp.block([[r[:1], r[1:]], [r[1:], r[:1]]]),
}


@pytest.mark.parametrize("call", sorted(_ONE_ARRAY_CALLS))
@differential()
def test_a_list_of_arrays_numpy_takes_as_one_array(xp, call):
    # np.sum([a, b]): NumPy makes one array of the list (its dispatcher names no item, unlike
    # concatenate's); on OpenCL the device functions got the list itself (AttributeError, and
    # where() used it as two truth values: a wrong answer)
    r = xp.asarray(numpy.arange(6.0).reshape(2, 3))
    return _ONE_ARRAY_CALLS[call](xp, r)


@differential()
def test_bins_per_axis_as_a_tuple(xp):
    # histogram2d(x, y, (edges, 4)): bins per axis, not one array of edges (its conversion to one
    # array raised ValueError before NumPy could read it)
    x = xp.asarray(numpy.array([0, 0.09207008, 0.64575234, 0.12875982, 0.47390599, 0.59944483, 1]))
    y = xp.asarray(numpy.array([0, 0.14344267, 0.48988575, 0.30558665, 0.44700682, 0.15886423, 1]))
    edges = (0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1)
    return xp.histogram2d(x, y, (edges, 4)), xp.histogram2d(x, y, (4, edges))


@differential()
def test_bins_per_axis_as_a_list_holding_an_array(xp):
    # histogramdd(x, bins=[3, edges]): its dispatcher names the list's items (bins per axis), after
    # asking the sample for a shape (the probe of which arrays NumPy names has one)
    x = xp.arange(6).reshape(3, 2)
    with numpy.errstate(invalid="ignore"):
        return xp.histogramdd(x, bins=[3, xp.asarray(numpy.array([-1, 2, numpy.inf]))])


@pytest.mark.parametrize("name, ufunc", [("nanmax", "fmax"), ("nanmin", "fmin"), ("max", "maximum"), ("sum", "add"),
                                         ("mean", "add")])
@differential()
def test_a_reduction_into_an_out_of_the_wrong_shape_raises_numpys_error(xp, name, ufunc):
    # NumPy's message names the reduction's ufunc; OpenCL's said "output parameter has shape ..."
    a = xp.asarray(numpy.arange(10.0))
    out = xp.asarray(numpy.zeros(2))
    with pytest.raises(ValueError, match=f"reduction operation {ufunc}"):
        getattr(xp, name)(a, out=out)
    return out


@pytest.mark.parametrize("backend", [p for p in BACKEND_PARAMS if p.values[0] in ("emulated", "opencl", "cupy")])
def test_a_broadcast_host_operand_moves_its_distinct_elements_only(backend):
    # broadcast_to(row, shape) is one row in memory: its upload moves the row and broadcasts it
    # again on the device (a view of 2**33 elements of one zero was uploaded whole: MemoryError)
    row = numpy.random.default_rng(11).random(300)
    with backend_context(backend, threshold=0):
        d = npgpu.asarray(numpy.ones((400, 300)))
        before = npgpu.report().as_dict()["totals"]["bytes_to_device"]
        result = d * numpy.broadcast_to(row, (400, 300))
        moved = npgpu.report().as_dict()["totals"]["bytes_to_device"] - before
        numpy.testing.assert_array_equal(numpy.asarray(result), numpy.ones((400, 300)) * row)
        assert moved == row.nbytes
        before = npgpu.report().as_dict()["totals"]["bytes_to_device"]
        zeros = npgpu.asarray(numpy.broadcast_to(numpy.zeros(1), (1 << 20, 2)))
        assert npgpu.report().as_dict()["totals"]["bytes_to_device"] - before == 8
        assert not zeros.flags.writeable and zeros.shape == (1 << 20, 2)
        assert [part.shape for part in npgpu.array_split(zeros, 4)] == [(1 << 18, 2)] * 4
        assert not numpy.asarray(zeros).any()


@pytest.mark.parametrize("backend", [p for p in BACKEND_PARAMS if p.values[0] in ("emulated", "opencl", "cupy")])
def test_ufuncs_made_at_run_time_are_not_kept_alive(backend):
    # frompyfunc (and vectorize) of a bound method at every step: the report and the dispatcher's
    # caches held every such ufunc, and with it the method's object (NumPy's TestLeaks)
    class Model:
        def step(self, x):
            return x + 1

    method = Model.step
    with backend_context(backend, threshold=0):
        d = npgpu.arange(10)
        held = sys.getrefcount(method)
        for _ in range(20):
            model = Model()
            numpy.frompyfunc(model.step, 1, 1)(d)
            npgpu.vectorize(model.step)(d)
        model = None
        gc.collect()
        assert sys.getrefcount(method) == held


_HOST_DATA_CALLS = {
    "where": lambda xp, h: xp.where(h > 2, [10, 20, 30], 0),
    "transpose": lambda xp, h: xp.transpose([h[0], h[1]]),
    "clip": lambda xp, h: xp.clip(h, [1, 2, 3], 4),
    "sum": lambda xp, h: xp.sum([h[0], h[1]], axis=0),
    "concatenate": lambda xp, h: xp.concatenate([h, [[7, 8, 9]]]),
}


@pytest.mark.parametrize("call", sorted(_HOST_DATA_CALLS))
@differential(threshold=0)
def test_host_data_placed_on_the_device_with_lists_of_data(xp, call):
    # host arrays the device takes (above the threshold) with lists beside them: the lists went to
    # the device's function as lists (OpenCL: TypeError, AttributeError). (Values compared: where
    # such work runs is placement's choice, a reduction of host data stays on the host.)
    return numpy.asarray(_HOST_DATA_CALLS[call](xp, numpy.arange(6.0).reshape(2, 3))).tolist()


_HOST_OUT_CALLS = {
    "sum": lambda xp, h, o: xp.sum(h, axis=0, out=o[0]),
    "cumsum": lambda xp, h, o: xp.cumsum(h[0], out=o[0]),
    "clip": lambda xp, h, o: xp.clip(h, 1, 4, out=o[1]),
    "mean": lambda xp, h, o: xp.mean(h, axis=0, out=o[0]),
}


@pytest.mark.parametrize("call", sorted(_HOST_OUT_CALLS))
@differential(threshold=0)
def test_host_data_with_a_host_out_is_written_there(xp, call):
    # host data the device would take, with out= a host array: the CuPy path (emulated) wrote its
    # result into an uploaded copy of out, leaving the caller's zeros
    outs = (numpy.zeros(3), numpy.zeros((2, 3)))
    result = _HOST_OUT_CALLS[call](xp, numpy.arange(6.0).reshape(2, 3), outs)
    return [o.tolist() for o in outs], any(result is o for o in outs)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric", "wrap", "mean"])
@differential()
def test_pad_reads_its_widths_as_numpy_does(xp, mode):
    # NumPy 2's widths by axis (a dict), its TypeError for widths that are not integers (the
    # devices rounded them), widths given as a device array, and a Fortran-ordered array padded
    # into a Fortran-ordered one (NumPy's lib/tests/test_arraypad.py)
    a = xp.asarray(numpy.arange(30.0).reshape(6, 5))
    for bad in (3.4, ((2, 3), (3.0, 2)), "3", None, ((-2.1, 3), (3, 2))):
        with pytest.raises(TypeError, match="integral"):
            xp.pad(a, bad, mode)
    with pytest.raises(ValueError):
        xp.pad(a, ((-1, 2), (0, 0)), mode)
    fortran = xp.pad(xp.asarray(numpy.asfortranarray(numpy.ones((5, 10)))), 5, mode)
    widths = xp.asarray(numpy.array([[2, 3], [3, 2]]))
    return (xp.pad(a, {1: (1, 2)}, mode), xp.pad(a, {-1: 2}, mode), xp.pad(a, widths, mode), xp.pad(a, (1, 2), mode),
            fortran.flags.f_contiguous, xp.pad(a, 2, mode).flags.c_contiguous)


@differential(rtol=1e-10, atol=1e-12)
def test_linalg_results_are_numpys_named_tuples(xp):
    # svd(a).U, qr(a).Q, slogdet(a).logabsdet: CuPy's answer plain tuples (emulated: the CuPy path)
    a = xp.asarray(numpy.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.25], [0.5, 0.25, 2.0]]))
    svd, eigh, qr, slogdet = xp.linalg.svd(a), xp.linalg.eigh(a), xp.linalg.qr(a), xp.linalg.slogdet(a)
    raw = xp.linalg.qr(a, mode="raw")
    return (type(svd).__name__, svd.S, type(eigh).__name__, eigh.eigenvalues, type(qr).__name__,
            abs(qr.R), type(slogdet).__name__, slogdet.logabsdet, type(raw).__name__)


@differential()
def test_broadcast_arrays_of_a_number_and_an_array(xp):
    # broadcast_arrays(0, a): NumPy's 0-d array of the number (OpenCL asked the int for a shape);
    # NumPy 2 gives a tuple (CuPy's is a list)
    original = xp.asarray(numpy.array([1, 2, 3]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # (NumPy's about writing to broadcast results)
        zero, same = xp.broadcast_arrays(0, original)
    kind = type(xp.broadcast_arrays(original, original)).__name__
    return kind, zero, same, xp.broadcast_arrays(original[:, None], 2.5)


@pytest.mark.parametrize("points", [[numpy.nan, 1.0], [0.0, numpy.nan, 2.0], [0.0, 2.0, 1.0, 3.0, 4.0, 5.0], [3, 1, 2],
                                    [0, 1, 1, 2], [0.0, 1.0]])
@differential()
def test_interp_of_sample_points_that_are_not_increasing_is_numpys(xp, points):
    # NumPy's search starts from its guess of the element before: for such sample points only it
    # gives its answer. OpenCL's kernel read xp[-1] for xp = [nan, 1]: 0.0 or NaN by chance.
    sample = numpy.asarray(points)
    x = numpy.linspace(-0.2, 5.2, 17)
    return xp.interp(x, xp.asarray(sample), numpy.arange(sample.size, dtype=float)), xp.interp(0.5, sample, [0, 10])


@differential()
def test_pad_of_a_0d_array_is_its_copy(xp):
    a = xp.ones(())
    with pytest.raises(ValueError):
        xp.pad(a, 1, mode="bogus")
    return xp.pad(a, (2, 1), mode="constant", constant_values=0), xp.pad(a, 3, mode="edge")


@pytest.mark.parametrize("dtype", [numpy.bool_, numpy.int16, numpy.float64, numpy.complex128, numpy.longdouble,
                                   numpy.clongdouble])
@differential()
def test_where_of_numpy_scalars_of_any_dtype(xp, dtype):
    # NumPy's test_multiarray: where(c, longdouble(0), longdouble(1)) of a device condition asked
    # OpenCL's code generator for a long double type (KeyError): a scalar's dtype is an operand's
    c = xp.asarray(numpy.ones(53, dtype=bool))
    results = (xp.where(c, dtype(0), dtype(1)), xp.where(~c, dtype(0), dtype(1)))
    # (values and dtypes: a long double result stays a host array, the devices having none)
    return [(numpy.asarray(r).dtype.str, numpy.asarray(r).tolist()) for r in results]


@pytest.mark.parametrize("code", numpy.typecodes["AllInteger"] + numpy.typecodes["AllFloat"])
@differential()
def test_put_of_a_list_into_any_dtype(xp, code):
    # put of [1, 3, 5] into float16: OpenCL had no int64 -> float16 kernel (KeyError)
    a = xp.zeros(6, dtype=code)
    a.put([1, 3, 5], [1, 3, 5])
    return numpy.asarray(a).dtype.str, numpy.asarray(a).tolist()  # (long doubles stay host arrays)


@differential()
def test_resize_without_a_shape_changes_nothing(xp):
    # a.resize() made a 0-d array of one element, a.resize(None) raised TypeError (test_multiarray)
    a = xp.asarray(numpy.arange(10.0))
    a.resize()
    b = xp.asarray(numpy.arange(6.0).reshape(2, 3))
    b.resize(None)
    c = xp.asarray(numpy.arange(4.0))
    c.resize((2, 3), refcheck=False)
    return a, b, c


@pytest.mark.parametrize("name", ["argmax", "argmin", "max", "sum"])
@differential()
def test_reductions_with_keepdims_into_an_out_and_of_a_number(xp, name):
    # test_multiarray's argmin/argmax keepdims: OpenCL wrote the whole reduction into an out= of any
    # shape (no error), and a number reduced into a device out= met OpenCL's array path (AttributeError)
    f = getattr(xp, name)
    a = xp.asarray(numpy.random.default_rng(5).normal(size=(2, 3, 4)))
    kind = numpy.intp if name.startswith("arg") else numpy.float64
    with pytest.raises(ValueError):
        f(a, axis=None, out=xp.asarray(numpy.empty((2, 1, 1), kind)), keepdims=True)
    out = xp.asarray(numpy.empty((1, 1, 1), kind))
    same = f(a, out=out, keepdims=True) is out
    number = xp.asarray(numpy.empty((), kind))
    f(numpy.float64(0.5), out=number)
    return out, same, number


@differential()
def test_choose_takes_its_choices_one_by_one_as_ndarrays_method_does(xp):
    # a.choose(c0, c1, c2): ndarray's method takes several choices by position (test_multiarray)
    a = xp.asarray(numpy.array([0, 1, 2, 1]))
    choices = [xp.asarray(numpy.arange(4) * 10 + k) for k in range(3)]
    return a.choose(*choices), a.choose(choices), a.choose(choices, mode="clip")
