"""NumPy's order of additions (npgpu/kernels/order.py): the model checked against NumPy itself, then
the OpenCL device's float sums checked bit for bit against NumPy's for the layouts the model
places (contiguous, transposed, sliced as Dask's chunks are, several axes, fused expressions)."""

from __future__ import annotations

import warnings

import numpy
import pytest

import npgpu
from npgpu.backends import unavailable_reason
from npgpu.kernels import order

FLOATS = ["float32", "float64", "complex64", "complex128"]


def _values(shape, dtype, seed):
    """Values of widely different magnitudes: any change in the order of additions shows in the bits."""
    rng = numpy.random.default_rng(seed)
    x = rng.standard_normal(shape) * 10.0 ** rng.uniform(-3, 6, shape)
    if numpy.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape) * 10.0 ** rng.uniform(-3, 6, shape)
    return x.astype(dtype)


def _emulated(a: numpy.ndarray, axes: tuple[int, ...], plan: order.SumOrder) -> numpy.ndarray:
    """The sum the model describes, from NumPy's own pairwise sum of contiguous 1-d runs (which
    is the whole of what NumPy does for one)."""
    kept = [d for d in range(a.ndim) if d not in axes]
    ones = [d for d in axes if d not in plan.axes]
    v = numpy.transpose(a, kept + ones + list(plan.axes))
    v = v.reshape(v.shape[: len(kept)] + (-1,))
    out = numpy.empty(v.shape[:-1], a.dtype)
    for index in numpy.ndindex(*out.shape):
        row = numpy.ascontiguousarray(v[index])
        total = a.dtype.type(0)
        for start in range(0, row.size, plan.chunk):
            total = a.dtype.type(total + numpy.add.reduce(row[start:start + plan.chunk]))
        out[index] = total
    return out


LAYOUTS = {
    "contiguous": lambda x: x,
    "transposed": lambda x: x.T,
    "reversed": lambda x: x[::-1],
    "fortran": numpy.asfortranarray,
    "every other": lambda x: x[..., ::2],
    "sliced": lambda x: x[1:-1, 2:] if x.ndim > 1 else x[3:],
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_the_model_is_numpys_order(dtype, layout):
    rng = numpy.random.default_rng(abs(hash((dtype, layout))) % 2**32)
    placed = 0
    for trial in range(40):
        ndim = int(rng.integers(1, 4))
        high = 400 if ndim < 3 and trial % 2 else 40
        shape = tuple(int(n) for n in rng.integers(1, high, ndim))
        a = LAYOUTS[layout](_values(shape, dtype, trial))
        if a.size == 0:
            continue
        k = int(rng.integers(1, a.ndim + 1))
        axes = tuple(sorted(int(d) for d in rng.choice(a.ndim, k, replace=False)))
        plan = order.sum_order(a.shape, a.strides, axes, a.itemsize)
        if plan is None:  # (what the model doesn't place; the device sums a contiguous layout's order)
            continue
        placed += 1
        expected = numpy.add.reduce(a, axis=axes)
        numpy.testing.assert_array_equal(_emulated(a, axes, plan), expected,
                                         err_msg=f"{a.shape} strides {a.strides} axes {axes} plan {plan}")
    assert placed >= 20


@pytest.mark.parametrize("shape", [(5, 20_000), (3, 9000), (2, 3, 12_000), (4, 16_389)])
def test_the_model_places_runs_longer_than_numpys_buffer(shape):
    a = _values(shape, "float64", 1)[..., 1:-1]
    axes = tuple(range(a.ndim))
    plan = order.sum_order(a.shape, a.strides, axes, a.itemsize)
    assert plan is not None
    numpy.testing.assert_array_equal(_emulated(a, axes, plan), numpy.add.reduce(a, axis=axes))


@pytest.mark.parametrize(("shape", "strides"),
                         [((0, 2), (4, 4)), ((2, 0), (4, 8)), ((0,), (8,)), ((3, 0, 5), (8, 40, 8))])
def test_an_empty_reduction_has_an_order(shape, strides):
    """Nothing is added where an extent is 0 (hypothesis found the sum of a transposed (2, 0)
    float32 array dividing by a zero block on OpenCL)."""
    plan = order.sum_order(shape, strides, tuple(range(len(shape))), 4)
    assert plan is not None and plan.chunk == 1


def test_the_pairwise_parameters_are_numpys():
    """order.pairwise_split and pairwise_shape replayed in Python give NumPy's 1-d sums."""

    def pairwise(x, dtype):
        lanes, block, small = order.pairwise_shape(dtype)
        t = numpy.dtype(dtype).type
        n = len(x)
        if n < small:
            r = t(-0.0)
            for v in x:
                r = t(r + v)
            return r
        if n <= block:
            lane = list(x[:lanes])
            i = lanes
            while i < n - n % lanes:
                lane = [t(lane[j] + x[i + j]) for j in range(lanes)]
                i += lanes
            while len(lane) > 1:
                lane = [t(lane[j] + lane[j + 1]) for j in range(0, len(lane), 2)]
            r = lane[0]
            for v in x[i:]:
                r = t(r + v)
            return r
        half = order.pairwise_split(n, dtype)
        return t(pairwise(x[:half], dtype) + pairwise(x[half:], dtype))

    for dtype in FLOATS:
        for n in (1, 3, 7, 8, 9, 63, 64, 65, 127, 128, 129, 200, 1000, 4099):
            x = _values(n, dtype, n)
            assert numpy.add.reduce(x) == numpy.dtype(dtype).type(0) + pairwise(x, dtype), (dtype, n)


# -- the OpenCL device -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def opencl():
    reason = unavailable_reason("opencl")
    if reason is not None:
        pytest.skip(reason)
    with npgpu.enable("opencl", threshold=0):
        yield


CASES = [
    ((100_003,), None), ((5,), None), ((300, 200), 0), ((300, 200), 1), ((300, 200), None), ((7, 40_001), 1),
    ((20, 30, 40), (0, 2)), ((20, 30, 40), (1, 2)), ((20, 30, 40), 1), ((64, 3000), 1), ((2, 3, 200_000), None),
]
VIEWS = {
    "contiguous": lambda x: x,
    "transposed": lambda x: x.T,
    "chunk": lambda x: x[..., 1:-1] if x.ndim > 1 else x[2:-1],
    "reversed": lambda x: x[::-1],
}


def _axes(axis, view, ndim):
    if axis is None or view != "transposed":
        return axis
    return tuple(ndim - 1 - d for d in numpy.atleast_1d(axis))


@pytest.mark.parametrize("dtype", FLOATS)
def test_opencl_sums_are_numpys_bits(opencl, dtype):
    npgpu.report(reset=True)  # (the fallbacks counted below are this test's)
    for case, (shape, axis) in enumerate(CASES):
        host = _values(shape, dtype, case)
        device = npgpu.asarray(host)
        for view, make in VIEWS.items():
            h, d = make(host), make(device)
            ax = _axes(axis, view, host.ndim)
            for function in (numpy.sum, numpy.mean, numpy.nansum):
                got = npgpu.asnumpy(function(d, axis=ax))
                numpy.testing.assert_array_equal(got, function(h, axis=ax),
                                                 err_msg=f"{function.__name__} {shape} {view} axis={ax}")
    assert npgpu.report().as_dict()["totals"]["fallback"] == 0


@pytest.mark.parametrize("shape", [(2, 0), (0, 3), (0,), (3, 0, 2)])
def test_opencl_sums_of_empty_arrays_are_numpys(opencl, shape):
    host = numpy.zeros(shape, numpy.float32)
    device = npgpu.asarray(host)
    for view in (lambda x: x, lambda x: x.T):
        for axis in (None, 0, -1):
            for function in (numpy.sum, numpy.prod, numpy.nansum):
                expected = function(view(host), axis=axis)
                got = function(view(device), axis=axis)
                assert numpy.asarray(got).shape == numpy.shape(expected)
                numpy.testing.assert_array_equal(npgpu.asnumpy(got), expected, strict=True)


def test_opencl_fused_sums_and_variances_are_numpys_bits(opencl):
    host = _values((500, 300), "float64", 7)
    x = npgpu.asarray(host)
    for f in (lambda a: (a * a + 1).sum(), lambda a: (a * 2 - 1).sum(axis=1), lambda a: (a / 3).sum(axis=0),
              lambda a: a.var(axis=0), lambda a: a.std(), lambda a: (a[1:] + a[:-1]).sum(axis=1)):
        numpy.testing.assert_array_equal(npgpu.asnumpy(f(x)), f(host))


def test_opencl_products_fold_in_numpys_order(opencl):
    host = 1 + _values((60, 50), "float64", 3) * 1e-7
    x = npgpu.asarray(host)
    for axis in (None, 0, 1):
        numpy.testing.assert_array_equal(npgpu.asnumpy(numpy.prod(x, axis=axis)), numpy.prod(host, axis=axis))


@pytest.mark.parametrize("n", [2, 100_000])
def test_opencl_ordered_sums_report_overflow_as_numpy(opencl, n):
    """The direct kernel (2 values) and the split one (subtrees, combine, fold) both say it."""
    host = numpy.full(n, 1e308)
    for values in (host, npgpu.asarray(host)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            total = npgpu.asnumpy(numpy.sum(values))
        assert total == numpy.inf
        assert [str(w.message) for w in caught] == ["overflow encountered in reduce"]
    with numpy.errstate(over="raise"), pytest.raises(FloatingPointError, match="overflow encountered in reduce"):
        npgpu.asnumpy(numpy.sum(npgpu.asarray(host)))


def _random_view(rng, shape):
    """A view of ``shape`` of a new array: its axes permuted, some reversed or stepped."""
    perm = rng.permutation(len(shape))
    inner = [0] * len(shape)
    for i, k in enumerate(perm):
        inner[k] = shape[i]
    steps = [int(rng.integers(1, 3)) for _ in shape]
    base = numpy.zeros([n * step for n, step in zip(inner, steps)])
    view = base[tuple(slice(None, None, step) for step in steps)]
    view = view[tuple(slice(None, None, -1) if rng.random() < 0.3 else slice(None) for _ in shape)]
    return numpy.transpose(view, perm)


@pytest.mark.parametrize("seed", range(200))
def test_join_axes_is_numpys_concatenate_order(seed):
    # the memory order npgpu's joins lay their results out in (OpenCL's were C-ordered; the fuzz)
    rng = numpy.random.default_rng(seed)
    ndim = int(rng.integers(2, 5))
    shape = [int(rng.choice([1, 2, 3, 4])) for _ in range(ndim)]
    axis = int(rng.integers(ndim))
    operands = []
    for _ in range(int(rng.integers(1, 4))):
        s = list(shape)
        s[axis] = int(rng.integers(1, 4))
        operands.append(_random_view(rng, s))
    want = numpy.concatenate(operands, axis=axis)
    axes = order.join_axes([(o.shape, o.strides) for o in operands])
    laid = numpy.empty([want.shape[d] for d in axes], want.dtype).transpose(numpy.argsort(axes)) \
        if axes is not None else numpy.empty(want.shape)
    assert [s for s, n in zip(laid.strides, laid.shape) if n > 1] == [s for s, n in zip(want.strides, want.shape)
                                                                     if n > 1]
