"""The short roads of loop bodies (issue #14): views taken and written back without the general
dispatch, and an expression assigned into a view computed there by its own kernel, with NumPy's
values, flags and errors."""

from __future__ import annotations

import warnings

import numpy
import pytest

import npgpu
from npgpu import _residency


def _kernels() -> float:
    return npgpu.report().kernels.get("kernels_launched", 0)


@pytest.fixture
def no_moves(monkeypatch):
    """Fusion counted: residency's moves, judged on measured costs and wall time, kept out of it
    (either of its rules could move an array to the host mid-test, its origin then learned)."""
    monkeypatch.setattr(_residency, "SHARE", float("inf"))
    monkeypatch.setattr(_residency, "FLOOR", float("inf"))


def test_in_place_updates_of_views_in_a_loop_are_numpys(device_backend):
    rng = numpy.random.default_rng(3)
    host = [rng.random((12, 9)) for _ in range(3)]
    ex, ey, hz = (h.copy() for h in host)
    with npgpu.enable(device_backend, threshold=0):
        dex, dey, dhz = (npgpu.asarray(h) for h in host)
        for t in range(4):
            for x, y, z in ((ex, ey, hz), (dex, dey, dhz)):
                y[0, :] = float(t)
                y[1:, :] -= 0.5 * (z[1:, :] - z[:-1, :])
                x[:, 1:] -= 0.5 * (z[:, 1:] - z[:, :-1])
                z[:-1, :-1] -= 0.7 * (x[:-1, 1:] - x[:-1, :-1] + y[1:, :-1] - y[:-1, :-1])
        for want, got in ((ex, dex), (ey, dey), (hz, dhz)):
            assert type(got) is npgpu.DeviceArray
            numpy.testing.assert_array_equal(numpy.asarray(got), want)


def _count_backend_calls(backend_name, monkeypatch):
    """The functions the backend is asked to run from now on (a list that fills)."""
    backend = npgpu.backends.get_backend(backend_name)
    calls = []
    call_function = backend.call_function

    def counting(func, args, kwargs):
        calls.append(func)
        return call_function(func, args, kwargs)

    monkeypatch.setattr(backend, "call_function", counting)
    return calls


def test_writing_a_view_back_onto_itself_launches_nothing(device_backend, monkeypatch):
    with npgpu.enable(device_backend, threshold=0):
        a = npgpu.asarray(numpy.arange(20.0))
        view = a[2:7]
        npgpu.sync()
        npgpu.report(reset=True)
        calls = _count_backend_calls(device_backend, monkeypatch)
        a[2:7] = view
        assert _kernels() == 0 and numpy.ndarray.__setitem__ not in calls
        assert npgpu.report().functions["ndarray.__setitem__"].device == 1
        numpy.testing.assert_array_equal(numpy.asarray(a), numpy.arange(20.0))


def test_a_read_only_array_refuses_even_its_own_view(device_backend):
    with npgpu.enable(device_backend, threshold=0):
        a = npgpu.asarray(numpy.arange(6.0))
        a.flags.writeable = False
        with pytest.raises(ValueError, match="read-only"):
            a[1:3] = a[1:3]


def test_an_expression_assigned_into_a_column_is_one_kernel(device_backend, monkeypatch, no_moves):
    rng = numpy.random.default_rng(4)
    img = rng.random((16, 10))
    want = numpy.empty_like(img)
    want[:, 0] = 0.3 * img[:, 0]
    for j in range(1, img.shape[1]):
        want[:, j] = 0.3 * img[:, j] + 0.5 * img[:, j - 1]
    with npgpu.enable(device_backend, threshold=0):
        d = npgpu.asarray(img)
        y = npgpu.empty_like(d)
        y[:, 0] = 0.3 * d[:, 0]
        npgpu.sync()
        npgpu.report(reset=True)
        calls = _count_backend_calls(device_backend, monkeypatch)
        for j in range(1, img.shape[1]):
            y[:, j] = 0.3 * d[:, j] + 0.5 * d[:, j - 1]
        npgpu.sync()
        if npgpu.backends.get_backend(device_backend).supports_fusion:
            assert _kernels() == img.shape[1] - 1  # (one per column, computed in the column:
            assert numpy.ndarray.__setitem__ not in calls  # no temporary copied in)
        numpy.testing.assert_array_equal(numpy.asarray(y), want)


def test_an_expression_the_program_still_holds_keeps_its_own_values(device_backend):
    with npgpu.enable(device_backend, threshold=0):
        d = npgpu.asarray(numpy.arange(12.0).reshape(3, 4))
        y = npgpu.zeros((3, 4))
        kept = d[:, 1] * 2.0
        y[:, 0] = kept
        y[:, 0] = -1.0  # (a write into y must not change `kept`)
        numpy.testing.assert_array_equal(numpy.asarray(kept), numpy.arange(12.0).reshape(3, 4)[:, 1] * 2.0)
        numpy.testing.assert_array_equal(numpy.asarray(y)[:, 0], [-1.0, -1.0, -1.0])


def test_a_statement_reading_its_own_target_is_one_kernel(device_backend):
    """``h[:-1, :-1] = 0.7 * (h[:-1, :-1] - c + c)`` and ``y[:, 3] = 2.0 * y[:, 3] + 1.0`` read the
    view they write only as that view: their intermediate arrays, which nothing but the statement
    holds, run inside its one kernel instead of each before the write; so does the right side of
    ``h[...] -= expr`` (DeviceArray's in-place operators see that only the statement holds it)."""
    rng = numpy.random.default_rng(11)
    host_h, host_c, host_y = rng.random((20, 20)), rng.random((19, 19)), rng.random((20, 10))
    with npgpu.enable(device_backend, threshold=0):
        h, c, y = (npgpu.asarray(x.copy()) for x in (host_h, host_c, host_y))
        for statement, kernels in (("h[:-1, :-1] = 0.7 * (h[:-1, :-1] - c + c)", 1),
                                   ("y[:, 3] = 2.0 * y[:, 3] + 1.0", 1),
                                   ("h[:-1, :-1] -= 0.7 * (h[:-1, :-1] - c + c)", 1)):
            npgpu.sync()
            npgpu.report(reset=True)
            for _ in range(3):
                exec(statement, {"h": h, "c": c, "y": y})
                exec(statement, {"h": host_h, "c": host_c, "y": host_y})
            npgpu.sync()
            assert _kernels() == 3 * kernels, statement
            numpy.testing.assert_array_equal(numpy.asarray(h), host_h)
            numpy.testing.assert_array_equal(numpy.asarray(y), host_y)


def test_intermediates_the_program_holds_keep_the_values_before_the_write(device_backend):
    """An intermediate array of such a statement that the program holds (by name, in a list,
    or as an operand of another recorded expression it holds) is computed before the write."""
    rng = numpy.random.default_rng(12)
    host_h, host_c = rng.random((20, 20)), rng.random((19, 19))
    want_h = host_h.copy()
    e_want = want_h[:-1, :-1] - host_c
    kept_want = [want_h[:-1, :-1] * 3.0]
    f_want = (want_h[:-1, :-1] + 1.0) * 2.0
    want_h[:-1, :-1] = 0.7 * (e_want + host_c) + kept_want[0] - f_want
    with npgpu.enable(device_backend, threshold=0):
        h, c = npgpu.asarray(host_h.copy()), npgpu.asarray(host_c)
        e = h[:-1, :-1] - c
        kept = [h[:-1, :-1] * 3.0]
        f = (h[:-1, :-1] + 1.0) * 2.0  # (held; its inner array, the sum, only through f's graph)
        h[:-1, :-1] = 0.7 * (e + c) + kept[0] - f
        numpy.testing.assert_array_equal(numpy.asarray(h), want_h)
        g = 0.5 * h[:-1, :-1]  # (the right side of an in-place operator, held by name)
        g_want = 0.5 * want_h[:-1, :-1]
        h[:-1, :-1] -= g
        want_h[:-1, :-1] -= g_want
        numpy.testing.assert_array_equal(numpy.asarray(h), want_h)
        numpy.testing.assert_array_equal(numpy.asarray(g), g_want)
        numpy.testing.assert_array_equal(numpy.asarray(e), e_want)
        numpy.testing.assert_array_equal(numpy.asarray(kept[0]), kept_want[0])
        numpy.testing.assert_array_equal(numpy.asarray(f), f_want)


def test_an_expression_reading_what_it_overwrites_is_numpys(device_backend):
    host = numpy.arange(10.0)
    want = host.copy()
    want[1:] = want[:-1] * 2.0 + 1.0  # (NumPy evaluates the right side first)
    with npgpu.enable(device_backend, threshold=0):
        a = npgpu.asarray(host)
        a[1:] = a[:-1] * 2.0 + 1.0
        numpy.testing.assert_array_equal(numpy.asarray(a), want)
        b = npgpu.asarray(host)
        b[::-1] = b * 3.0  # (the same memory, reversed: not the same view)
        numpy.testing.assert_array_equal(numpy.asarray(b), host[::-1] * 3.0)


def test_an_expression_reading_what_it_overwrites_is_one_kernel(device_backend):
    """The value's kernel runs once, into a temporary the write then copies: its inner arrays,
    which only the statement holds, are not run again as kernels of their own."""
    host = numpy.arange(40.0)
    with npgpu.enable(device_backend, threshold=0):
        a = npgpu.asarray(host)
        npgpu.sync()
        npgpu.report(reset=True)
        a[1:] = a[:-1] * 2.0 + a[1:] * 3.0 - 1.0
        host[1:] = host[:-1] * 2.0 + host[1:] * 3.0 - 1.0
        npgpu.sync()
        if npgpu.backends.get_backend(device_backend).supports_fusion:
            assert _kernels() == 1
        numpy.testing.assert_array_equal(numpy.asarray(a), host)


@pytest.mark.parametrize("order", ["C", "F"])
def test_a_recursion_over_interleaved_views_of_its_target_is_one_kernel_a_step(device_backend, order, no_moves):
    """deriche's filters: ``y[:, j]`` from ``y[:, j - 1]`` and ``y[:, j - 2]`` (columns whose bounds
    overlap, though they share no element), forwards and backwards, over columns and rows. Each
    step is one kernel computed in the written view, with NumPy's values."""
    rng = numpy.random.default_rng(13)
    img = numpy.asarray(rng.random((12, 9)), order=order)
    steps = {
        "y[:, j] = 0.3 * x[:, j] + 0.5 * y[:, j - 1] - 0.2 * y[:, j - 2]": range(2, 9),
        "y[:, j] = 0.4 * x[:, j + 1] + 0.5 * y[:, j + 1] - 0.1 * y[:, j + 2]": range(6, -1, -1),
        "y[j, :] = 0.3 * x[j, :] + 0.5 * y[j - 1, :] - 0.2 * y[j - 2, :]": range(2, 12),
        "y[j, 1:] = 0.3 * x[j, :-1] + 0.5 * y[j - 1, :-1]": range(1, 12),
    }
    with npgpu.enable(device_backend, threshold=0):
        for statement, js in steps.items():
            want = numpy.array(img * 0.5, order=order)
            x, y = npgpu.asarray(img), npgpu.asarray(want)
            npgpu.sync()
            npgpu.report(reset=True)
            for j in js:
                exec(statement, {"x": x, "y": y, "j": j})
                exec(statement, {"x": img, "y": want, "j": j})
            npgpu.sync()
            if npgpu.backends.get_backend(device_backend).supports_fusion:
                assert _kernels() == len(js), statement
            numpy.testing.assert_array_equal(numpy.asarray(y), want)


def test_views_share_memory_exactly_as_numpy_says():
    """The backends' overlap test (``base.elements_overlap``): for views of one buffer with
    overlapping bounds, whether they share a byte is NumPy's exact answer, for any strides, item
    sizes and offsets (odd ones included)."""
    from npgpu.backends.base import elements_overlap

    rng = numpy.random.default_rng(14)
    buffer = numpy.zeros(4096, numpy.uint8)
    checked = shared = 0
    for _ in range(3000):
        itemsize = int(rng.choice([1, 2, 8, 16]))
        views = []
        for _ in range(2):
            ndim = int(rng.choice([1, 1, 2, 3]))
            shape = tuple(int(n) for n in rng.choice([1, 2, 3, 5], ndim))
            strides = tuple(int(k) * itemsize + int(rng.choice([0, 0, 1])) for k in rng.choice([-3, -1, 1, 2, 7], ndim))
            offset = 2000 + int(rng.integers(0, 40)) * itemsize + int(rng.choice([0, 0, 1]))
            view = numpy.lib.stride_tricks.as_strided(buffer[offset:], shape=shape + (itemsize,),
                                                      strides=strides + (1,))
            views.append((offset, shape, strides, view))
        (oa, sa, ta, va), (ob, sb, tb, vb) = views
        if not numpy.may_share_memory(va, vb):
            continue
        want = bool(numpy.shares_memory(va, vb))
        assert elements_overlap(oa, sa, ta, itemsize, ob, sb, tb, itemsize) is want, (oa, sa, ta, ob, sb, tb, itemsize)
        checked += 1
        shared += want
    assert checked > 1000 and 0 < shared < checked


def test_a_different_dtype_or_shape_is_cast_and_broadcast_as_numpy_does(device_backend):
    host = numpy.zeros((3, 4), dtype=numpy.int32)
    want = host.copy()
    want[:, 1:3] = numpy.arange(2.0) * 1.7
    with npgpu.enable(device_backend, threshold=0):
        a = npgpu.asarray(host)
        a[:, 1:3] = npgpu.asarray(numpy.arange(2.0)) * 1.7
        numpy.testing.assert_array_equal(numpy.asarray(a), want)
        assert a.dtype == numpy.int32


_COPIES = ["a[1:] = a[:-1]", "a[:-1] = a[1:]", "a[::-1] = a", "a[:, 0] = a[0, :4]", "a[0] = a[1]",
           "a[1:3] = a[0:1]", "a[1:3] = a[None, 0:2]", "a[1:3] = a[None, None, 0:2]", "a[..., 1] = a[:, 2]",
           "a[2:2] = a[0:0]", "a.T[1:3] = a.T[0:2]", "a[1:, 1:] = a[:-1, :-1]", "a[0, 0] = a[1, 1]",
           "a[1:3] = a[0:3]", "a[1:3] = a[None, None, 0:1, 0:2]",
           # (values of two dimensions into views of more: they raised AssertionError, a bound check
           # read the value's leading dimensions with a negative count; found by tools/fuzz_programs.py)
           "a[None, 1:3] = a[0:2]", "a[None, None, 1:3] = a[0:2, :1]", "a[None, 1:3] = a[0:3, :1]"]


@pytest.mark.parametrize("dtype", [numpy.float64, numpy.int8, numpy.bool_, numpy.complex128])
@pytest.mark.parametrize("order", ["C", "F"])
def test_a_computed_value_copied_into_a_view_is_numpys(device_backend, dtype, order):
    # (correlation's corr[i + 1:M, i] = corr[i, i + 1:M]: a device value of the view's dtype is
    # one copy kernel into the view; one sharing its memory is read whole before the write)
    host = numpy.asarray(numpy.arange(1, 25).reshape(4, 6) % 7, dtype=dtype, order=order)
    with npgpu.enable(device_backend, threshold=0):
        for statement in _COPIES:
            want, got = host.copy(order="K"), npgpu.asarray(host.copy(order="K"))
            want_error = got_error = None
            try:
                exec(statement, {"a": want})
            except ValueError as exc:
                want_error = str(exc)
            try:
                exec(statement, {"a": got})
            except ValueError as exc:
                got_error = str(exc)
            assert got_error == want_error, statement
            assert type(got) is npgpu.DeviceArray and got.dtype == dtype
            numpy.testing.assert_array_equal(numpy.asarray(got), want, err_msg=statement)


def test_a_copy_into_a_view_runs_recorded_work_that_reads_the_old_values(device_backend):
    host = numpy.arange(10.0)
    with npgpu.enable(device_backend, threshold=0):
        a, b = npgpu.asarray(host), npgpu.asarray(host * 2.0)
        before = a * 3.0  # (recorded, pending: it reads a[2:5] as it was)
        a[2:5] = b[5:8]
        want = host.copy()
        want[2:5] = host[5:8] * 2.0
        numpy.testing.assert_array_equal(numpy.asarray(a), want)
        numpy.testing.assert_array_equal(numpy.asarray(before), host * 3.0)


@pytest.mark.parametrize("key", [(1, 2), (slice(1, None), 0), (Ellipsis, 1), (None, slice(None, None, -2)), 3, ()])
def test_basic_views_are_numpys(device_backend, key):
    host = numpy.arange(24.0).reshape(4, 6)
    with npgpu.enable(device_backend, threshold=0):
        a = npgpu.asarray(host)
        got, want = a[key], host[key]
        assert type(got) is (npgpu.DeviceArray if isinstance(want, numpy.ndarray) else type(want))
        numpy.testing.assert_array_equal(numpy.asarray(got), want)
        if isinstance(want, numpy.ndarray) and want.ndim:
            assert got.base is a
            got[...] = -1.0
            host[key] = -1.0
            numpy.testing.assert_array_equal(numpy.asarray(a), host)
        a.flags.writeable = False
        view = a[key]
        if isinstance(view, npgpu.DeviceArray):
            assert not view.flags.writeable


def test_a_sweep_makes_each_column_view_once(device_backend, monkeypatch, no_moves):
    """An array that keeps more views than it may forgets the oldest, not all: a column sweep's
    statement reads the last two columns it wrote (deriche's ``y[:, j - 1]``, ``y[:, j - 2]``).
    (Residency kept out: a move to the host mid-sweep, rightly at this size, would end the views.)"""
    backend = npgpu.backends.get_backend(device_backend)
    made = []
    basic_view = backend.basic_view
    monkeypatch.setattr(backend, "basic_view", lambda native, key: made.append(key) or basic_view(native, key))
    host = numpy.arange(300.0).reshape(6, 50)
    with npgpu.enable(device_backend, threshold=0):
        y = npgpu.asarray(host)
        for j in range(2, 50):
            y[:, j] = 0.5 * y[:, j - 1] - 0.25 * y[:, j - 2]
            host[:, j] = 0.5 * host[:, j - 1] - 0.25 * host[:, j - 2]
        numpy.testing.assert_array_equal(numpy.asarray(y), host)
    assert len(made) == 50, "each column's view made once"


@pytest.mark.parametrize("hashable", [False, True])
def test_views_kept_on_an_array_are_numpys(device_backend, hashable, monkeypatch):
    """A loop body's views are made once and kept on their array (``_dispatch._view``): the same
    key gives the same values as NumPy's view each time, keys that differ never share a kept view
    (a slice against ints and newaxes that spell alike), and an array that takes a new native
    (its shape set) makes its views afresh. Slices are dict keys as they are from Python 3.12, or
    spelled as tuples before."""
    import sys

    from npgpu import _dispatch

    if hashable and sys.version_info < (3, 12):
        pytest.skip("slices are hashable from Python 3.12")
    monkeypatch.setattr(_dispatch, "_HASHABLE_SLICES", hashable)
    backend = npgpu.backends.get_backend(device_backend)
    made = []
    basic_view = backend.basic_view
    monkeypatch.setattr(backend, "basic_view", lambda native, key: made.append(key) or basic_view(native, key))
    host = numpy.arange(24.0).reshape(4, 6)
    keys = [(slice(1, None), slice(None, -1)), slice(1, None, None), (1, None, None), (1, None), 2,
            (Ellipsis, slice(None, None, -2)), (slice(1, None), slice(None, -1))]
    with npgpu.enable(device_backend, threshold=0):
        a = npgpu.asarray(host)
        for _ in range(3):
            for key in keys:
                numpy.testing.assert_array_equal(numpy.asarray(a[key]), host[key])
            a[1:, :-1] += 1.0  # (written through a kept view: every view sees it)
            host[1:, :-1] += 1.0
        assert len(made) == len(keys) - 1  # (the repeated key once, the write into it included)
        with warnings.catch_warnings():  # (NumPy 2.5 deprecates setting shape)
            warnings.simplefilter("ignore", DeprecationWarning)
            a.shape = (6, 4)
        host = host.reshape(6, 4)
        for key in keys:
            numpy.testing.assert_array_equal(numpy.asarray(a[key]), host[key])
        for i in range(40):  # (more keys than an array keeps: it forgets them and goes on)
            numpy.testing.assert_array_equal(numpy.asarray(a[i % 6, 1:]), host[i % 6, 1:])


def test_bad_basic_keys_raise_numpys_errors(device_backend):
    host = numpy.arange(6.0)
    with npgpu.enable(device_backend, threshold=0):
        a = npgpu.asarray(host)
        for key in (6, -7, (0, 0)):
            with pytest.raises(IndexError):
                host[key]
            with pytest.raises(IndexError):
                a[key]


def test_a_host_operand_of_device_work_moves_and_fuses_with_what_follows(device_backend):
    """resnet's sum(x[..., None] * w, axis=...) with small host weights: w moves to the device at
    the call, and the product is recorded, so the sum reduces its graph; a later write into w
    does not change the pending product (NumPy computed it at the call)."""
    rng = numpy.random.default_rng(5)
    x_host, w = rng.random((6, 5, 4)), rng.random((4, 3))
    want = numpy.sum(x_host[:, :, :, None] * w[None, None, :, :], axis=(1, 2))
    with npgpu.enable(device_backend, threshold=0):
        x = npgpu.asarray(x_host)
    with npgpu.enable(device_backend, threshold=1 << 20):  # (w stays a host array)
        product = x[:, :, :, None] * w[None, None, :, :]
        if npgpu.backends.get_backend(device_backend).supports_fusion:
            assert product._pending is not None  # (recorded: the sum below reduces the graph)
        w[...] = 0.0
        got = npgpu.sum(product, axis=(1, 2))
    assert type(got) is npgpu.DeviceArray
    numpy.testing.assert_allclose(numpy.asarray(got), want, rtol=1e-14)


@pytest.mark.parametrize("axis", [(1, 2, 3), (0, -1), (2,), (), (3, 0, 1, 2)])
@pytest.mark.parametrize("func", ["sum", "max", "mean", "prod"])
def test_reductions_over_a_tuple_of_axes_take_the_short_road(device_backend, func, axis, monkeypatch):
    """resnet's ``sum(x[:, i:i + k, j:j + k, :, None] * w, axis=(1, 2, 3))`` at every pixel: a
    tuple of axes reduces on the device without the general path (which scanned the arguments
    again at each of 9 408 pixels), of a recorded product and of a computed array, with NumPy's
    values, dtypes and shapes, keepdims included."""
    from npgpu import _dispatch

    rng = numpy.random.default_rng(11)
    x_host, w = rng.random((3, 5, 4, 6)), rng.random((5, 4, 6))
    roads = []
    original = _dispatch._reduce_array

    def spy(*args, **kwargs):
        result = original(*args, **kwargs)
        roads.append(result is not NotImplemented)
        return result

    monkeypatch.setattr(_dispatch, "_reduce_array", spy)
    reduce = getattr(numpy, func)
    with npgpu.enable(device_backend, threshold=0):
        x, dw = npgpu.asarray(x_host), npgpu.asarray(w)
        for keepdims in (False, True):
            for got, want in ((getattr(npgpu, func)(x * dw, axis=axis, keepdims=keepdims),
                               reduce(x_host * w, axis=axis, keepdims=keepdims)),
                              (getattr(npgpu, func)(x, axis), reduce(x_host, axis)),
                              (getattr(x, func)(axis=axis, keepdims=keepdims),
                               reduce(x_host, axis=axis, keepdims=keepdims))):
                got = numpy.asarray(got)
                assert got.dtype == want.dtype and got.shape == want.shape
                numpy.testing.assert_allclose(got, want, rtol=1e-13)
    assert roads and all(roads)


def _small_fused_reductions():
    """(name, host operands, the expression over them, its reduction): resnet's per-pixel sums and
    other small reductions of a recorded expression whose innermost axis is kept, in float64 and
    float32 (NumPy folds each output's values in order there), a product, an integer sum and a
    reversed view."""
    rng = numpy.random.default_rng(21)
    x, w = rng.standard_normal((8, 6, 6, 16)), rng.standard_normal((3, 3, 16, 12))
    a, b = rng.standard_normal((50, 40)), rng.standard_normal((50, 40))
    near_one = 1.0 + rng.standard_normal((30, 20)) / 50
    ints = rng.integers(-1000, 1000, (40, 30))

    def pixel(np, x, w):
        return np.sum(x[:, 1:4, 2:5, :, None] * w[None], axis=(1, 2, 3))

    return [
        ("pixel float64", (x, w), pixel),
        ("pixel float32", (x.astype(numpy.float32), w.astype(numpy.float32)), pixel),
        ("columns", (a, b), lambda np, a, b: np.sum(a * b + 0.5, axis=0)),
        ("product", (near_one, near_one[::-1]), lambda np, p, q: np.prod(p * q, axis=0)),
        ("integers", (ints, ints), lambda np, i, j: np.sum(i * j - 7, axis=0)),
        ("reversed", (a, b), lambda np, a, b: np.sum(a[::-1, ::2] - b[:, ::2], axis=0)),
    ]


@pytest.mark.parametrize("case", _small_fused_reductions(), ids=lambda case: case[0])
def test_small_fused_sums_are_numpys_bits(device_backend, case):
    """A small reduction of a recorded expression whose innermost axis is kept folds each output's
    values in NumPy's order on every device backend (OpenCL's map-reduce kernels; on CuPy the same
    generated kernel, where CuPy's reduction added in its own order): NumPy's bits, dtype and shape."""
    _, hosts, expression = case
    want = expression(numpy, *hosts)
    with npgpu.enable(device_backend, threshold=0):
        got = expression(npgpu, *(npgpu.asarray(h) for h in hosts))
        assert type(got) is npgpu.DeviceArray
        got = numpy.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    numpy.testing.assert_array_equal(got, want)


@pytest.mark.gpu
def test_small_fused_sums_run_npgpus_kernel_on_cupy():
    """On CuPy a small fused reduction runs the code generator's map-reduce kernel
    (CupyBackend._small_map_reduce); a sum NumPy adds pairwise (its innermost axis reduced) and a
    large one stay CuPy's reduction."""
    pytest.importorskip("cupy")
    from npgpu.backends.cupy import backend as cupy_backend

    rng = numpy.random.default_rng(5)
    x, w = rng.standard_normal((8, 6, 6, 16)), rng.standard_normal((3, 3, 16, 12))
    taken = []
    original = cupy_backend.CupyBackend._small_map_reduce

    def spy(self, *args):
        result = original(self, *args)
        taken.append(result is not None)
        return result

    cupy_backend.CupyBackend._small_map_reduce = spy
    try:
        with npgpu.enable("cupy", threshold=0):
            dx, dw = npgpu.asarray(x), npgpu.asarray(w)
            numpy.asarray(npgpu.sum(dx[:, 1:4, 2:5, :, None] * dw[None], axis=(1, 2, 3)))
            numpy.asarray(npgpu.sum(dx * 2.0, axis=3))  # (pairwise in NumPy: CuPy's reduction)
            big = npgpu.asarray(rng.standard_normal((2, 5000)))
            numpy.asarray(npgpu.sum(big * 2.0, axis=0))  # (5000 outputs of 2 values: small)
            numpy.asarray(npgpu.sum(big.T * 2.0, axis=0))  # (5000 values an output: too long for one thread)
    finally:
        cupy_backend.CupyBackend._small_map_reduce = original
    assert taken == [True, False, True, False]


def test_bad_tuples_of_axes_raise_numpys_errors(device_backend):
    """A repeated axis, one out of range or one that is no integer: NumPy's exception types, on a
    recorded product and on a computed array, and the array is unchanged."""
    host = numpy.arange(24.0).reshape(2, 3, 4)
    with npgpu.enable(device_backend, threshold=0):
        a = npgpu.asarray(host)
        for axis in ((0, 0), (1, -2), (0, 3), (-4,), (0, 1.0), (0, None)):
            with pytest.raises(Exception) as want:
                numpy.sum(host * 2.0, axis=axis)
            for operand in (a * 2.0, a):
                with pytest.raises(want.type):
                    npgpu.sum(operand, axis=axis)
        numpy.testing.assert_array_equal(numpy.asarray(a), host)
        for axis in ((0, 1), (2, 0)):  # (the same tuples, good, once a bad one was refused)
            numpy.testing.assert_array_equal(numpy.asarray(npgpu.sum(a * 2.0, axis=axis)),
                                             numpy.sum(host * 2.0, axis=axis))
