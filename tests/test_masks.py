"""Selections by a boolean mask used more than once (npgpu/_masks.py): kept true positions give
NumPy's selections, and every way of writing the mask's memory drops them first.

Each write road is run between selections by the mask (two before, so its positions are kept where
the backend keeps them, two after) as NumPy and as npgpu on every backend.
"""

from __future__ import annotations

import threading
import warnings

import numpy
import pytest

import npgpu
from npgpu import _masks
from npgpu._array import DeviceArray
from npgpu._harness import differential

N = 64


def _keeps(xp, mask) -> bool:
    """Whether npgpu's backend keeps this mask's positions (a device array on a backend that can)."""
    return xp is npgpu and type(mask) is DeviceArray and mask._backend.keeps_mask_positions


def _fill(xp, m, other):
    m[:5] = True


def _logical_not_positional(xp, m, other):
    xp.logical_not(m, m)


def _logical_not_out(xp, m, other):
    xp.logical_not(m, out=m)


def _in_place_operator(xp, m, other):
    m &= other


def _index_array_write(xp, m, other):
    m[xp.asarray(numpy.array([0, 3, 7]))] = False


def _mask_write(xp, m, other):
    m[other] = True


def _copy_into_view(xp, m, other):
    m[::2] = other[1::2]


def _whole_copy(xp, m, other):
    m[...] = other


def _copyto(xp, m, other):
    xp.copyto(m, other)


def _putmask(xp, m, other):
    xp.putmask(m, other, True)


def _put(xp, m, other):
    xp.put(m, [0, 1, 2], True)


def _put_along_axis(xp, m, other):
    xp.put_along_axis(m, numpy.array([4, 9]), True, axis=0)


def _method_fill(xp, m, other):
    m.fill(False)


def _sort(xp, m, other):
    m.sort()


def _through_a_view(xp, m, other):
    view = m[N // 2:]
    view[...] = True


def _place(xp, m, other):  # (a host function on every device: NumPy runs it, the result is written back)
    xp.place(m, other, [True, False])


def _reshaped(xp, m, other):  # (not a write: a new native for the same mask)
    with warnings.catch_warnings():  # (NumPy 2.5 deprecates setting shape; 2.4 does not)
        warnings.simplefilter("ignore", DeprecationWarning)
        m.shape = (N // 8, 8)
        m.shape = (N,)


WRITES = [_fill, _logical_not_positional, _logical_not_out, _in_place_operator, _index_array_write, _mask_write,
          _copy_into_view, _whole_copy, _copyto, _putmask, _put, _put_along_axis, _method_fill, _sort,
          _through_a_view, _place, _reshaped]


@pytest.mark.parametrize("write", WRITES, ids=[w.__name__.strip("_") for w in WRITES])
@differential()
def test_selections_after_a_write_into_the_mask_are_numpys(xp, write):
    rng = numpy.random.default_rng(7)
    values = xp.asarray(rng.random(N))
    rows = xp.asarray(rng.random((N, 3)))
    m = values > 0.5
    other = xp.asarray(rng.random(N)) > 0.3
    before = (values[m], rows[m])
    if _keeps(xp, m):
        assert _masks.kept() >= 1, "a mask selected twice keeps its positions"
    write(xp, m, other)
    if _keeps(xp, m) and write is not _reshaped:
        assert not any(e[0]() is m and e[3] is not None for e in _masks._SEEN.values()), "the write dropped them"
    after = (values[m], rows[m], values[m])
    return before, after, m


@differential()
def test_a_mask_that_is_a_view_is_dropped_when_its_base_is_written(xp):
    rng = numpy.random.default_rng(3)
    flags = xp.asarray(rng.random((2, N))) > 0.5
    values = xp.asarray(rng.random(N))
    mask = flags[1]
    first = (values[mask], values[mask])
    flags[...] = xp.asarray(rng.random((2, N))) > 0.5  # (the base, another view of the same memory)
    second = (values[mask], values[mask])
    xp.logical_not(flags, out=flags)
    return first, second, values[mask], values[mask]


@differential()
def test_masked_selections_of_every_shape_are_numpys(xp):
    rng = numpy.random.default_rng(5)
    grid = xp.asarray(rng.random((6, 5, 4)))
    mask2 = grid[..., 0] > 0.5
    mask3 = grid > 0.5
    empty = xp.asarray(numpy.zeros((6, 0)))
    mask_none = xp.asarray(numpy.zeros(6, bool))
    strided = grid[:, ::2, 1]  # (a non-contiguous array selected by a kept mask)
    out = []
    for _ in range(3):
        out += [grid[mask2], grid[mask3], empty[mask_none], grid[:, 0, 0][mask_none], strided[mask2[:, ::2]]]
    return out


@pytest.fixture(autouse=True)
def _fresh_masks():
    """Each test starts with no mask remembered and no thread keeping positions (another test's
    threads may have ended the keeping for the process)."""
    _masks.reset()
    yield
    _masks.reset()


def test_another_threads_write_drops_every_kept_mask_and_ends_the_keeping():
    with npgpu.enable("emulated", threshold=0):
        values = npgpu.asarray(numpy.arange(10.0))
        mask = values > 4
        values[mask], values[mask]  # noqa: B018
        assert _masks.kept() == 1
        selected = []

        def other_thread():
            with npgpu.enable("emulated", threshold=0):
                selected.append((npgpu.asnumpy(values[mask]), npgpu.asnumpy(values[mask])))  # (not this one's)
                mask[:2] = True  # (written from here: nothing kept can be trusted any more)

        worker = threading.Thread(target=other_thread)
        worker.start()
        worker.join()
        assert _masks.kept() == 0
        for got in selected[0]:
            numpy.testing.assert_array_equal(got, numpy.arange(5.0, 10.0))
        for _ in range(3):  # (no positions kept from now on: every selection counts afresh)
            numpy.testing.assert_array_equal(npgpu.asnumpy(values[mask]), numpy.r_[0.0, 1.0, 5.0:10.0])
        assert _masks.kept() == 0
        mask2 = values > 7
        values[mask2], values[mask2]  # noqa: B018
        assert _masks.kept() == 0


def test_large_masks_keep_no_positions(monkeypatch):
    monkeypatch.setattr(_masks, "_MAX_ELEMENTS", 8)
    with npgpu.enable("emulated", threshold=0):
        values = npgpu.asarray(numpy.arange(10.0))
        mask = values > 4
        for _ in range(3):
            numpy.testing.assert_array_equal(npgpu.asnumpy(values[mask]), numpy.arange(5.0, 10.0))
        assert _masks.kept() == 0
        small = values[:8] > 4
        values[:8][small], values[:8][small]  # noqa: B018
        assert _masks.kept() == 1


def test_handing_memory_out_drops_every_kept_mask():
    with npgpu.enable("emulated", threshold=0):
        values = npgpu.asarray(numpy.arange(10.0))
        mask = values > 4
        values[mask], values[mask]  # noqa: B018
        assert _masks.kept() >= 1
        mask.__dlpack__()
        assert _masks.kept() == 0
        mask2 = values > 2
        values[mask2], values[mask2]  # noqa: B018
        assert _masks.kept() == 1
        del mask2
        assert _masks.kept() == 0, "a mask that dies is forgotten"


@differential()
def test_writes_by_a_kept_mask_are_numpys(xp):
    rng = numpy.random.default_rng(11)
    z = xp.asarray(rng.random(N) + 1j * rng.random(N))
    c = xp.asarray(rng.random(N) + 0.5j)
    counts = xp.asarray(numpy.zeros(N, numpy.int64))
    rows = xp.asarray(rng.random((N, 3)))
    out = []
    for step in range(4):  # (mandelbrot1's step: the mask's later uses find its positions kept)
        mask = xp.less(abs(z), 0.9)
        counts[mask] = step
        z[mask] = z[mask] ** 2 + c[mask]
        rows[mask] = rows[mask][:, :1] * 2.0  # (a value broadcast along the rows)
        rows[mask] = xp.asarray(numpy.arange(3.0))  # (one row for every selected row)
        counts[mask] = numpy.int64(-step)
        out += [counts.copy(), z.copy(), rows.copy()]
    mask = z.real > 0.5
    z[mask], z[mask]  # noqa: B018
    ints = xp.asarray(numpy.zeros(N, numpy.uint8))
    ints[mask], ints[mask]  # noqa: B018
    with pytest.raises(OverflowError):
        ints[mask] = 300  # (NumPy's conversion of the value)
    with pytest.raises(ValueError):
        ints[mask] = float("nan")
    with pytest.raises(ValueError):  # (a value of the wrong length: NumPy's own error)
        z[mask] = xp.asarray(numpy.ones(3, complex))
    z[mask] = z[::-1][mask]  # (a value sharing the target's memory: read whole first)
    strided = xp.asarray(rng.random(2 * N))[::2]
    strided[mask], strided[mask]  # noqa: B018
    strided[mask] = 7.0  # (a non-contiguous target)
    own = mask.copy()
    own[own], own[own]  # noqa: B018
    own[own] = False  # (the mask written by itself)
    return out, z, ints, strided, own, z[mask], own.sum()


def test_a_masks_first_selection_keeps_its_positions(monkeypatch):
    """The first selection by a mask finds its positions (a count the device waits for either way);
    every later one gathers them, counting nothing again."""
    from npgpu.backends import get_backend

    backend = get_backend("emulated")
    found = []
    original = backend.mask_positions
    monkeypatch.setattr(backend, "mask_positions", lambda mask: found.append(1) or original(mask))
    with npgpu.enable("emulated", threshold=0):
        values = npgpu.asarray(numpy.arange(10.0))
        rows = npgpu.asarray(numpy.arange(30.0).reshape(10, 3))
        mask = values > 4
        numpy.testing.assert_array_equal(npgpu.asnumpy(values[mask]), numpy.arange(5.0, 10.0))
        assert _masks.kept() == 1 and len(found) == 1
        numpy.testing.assert_array_equal(npgpu.asnumpy(rows[mask]), numpy.arange(30.0).reshape(10, 3)[5:])
        numpy.testing.assert_array_equal(npgpu.asnumpy(values[mask]), numpy.arange(5.0, 10.0))
        assert len(found) == 1
