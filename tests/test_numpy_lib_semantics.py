"""NumPy's statistics, averages and array-like arguments on device arrays, against NumPy.

Found by running NumPy's own numpy/lib test files against the device path
(``tools/numpy_suite.py --files lib/tests/test_nanfunctions.py,...``): each test here failed on a
backend before its fix.
"""

from __future__ import annotations

import warnings

import numpy
import pytest

from npgpu._harness import differential


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
