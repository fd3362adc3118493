"""Index arrays gathered from memory whose value bounds are known skip their bounds check
(npgpu/_bounds.py), and every indexed read and write still gives NumPy's answer and NumPy's
IndexError: the bounds are forgotten when the memory they describe, or the memory an array was
gathered from, is written."""

from __future__ import annotations

import threading

import numpy
import pytest
from conftest import BACKEND_PARAMS

import npgpu
from npgpu import _bounds

#: the backends whose indexed reads and writes check index arrays (the array-module ones)
ARRAY_MODULE = [p for p in BACKEND_PARAMS if p.values[0] in ("emulated", "cupy")]


@pytest.fixture(params=ARRAY_MODULE)
def backend_name(request):
    return request.param


@pytest.fixture(autouse=True)
def _fresh_bounds():
    """Each test starts with no bounds kept and no thread keeping them."""
    _bounds.reset()
    yield
    _bounds.reset()


@pytest.fixture
def checks(monkeypatch, backend_name):
    """What the bounds checks read back: "checked" per check of index arrays on the device, and
    "learned" per value bounds found."""
    seen: list[str] = []
    backend = npgpu._get_backend(backend_name)
    check, learn = type(backend)._outside, type(backend).value_bounds

    def checked(self, indexed):
        seen.append("checked")
        return check(self, indexed)

    def learned(self, native):
        seen.append("learned")
        return learn(self, native)

    monkeypatch.setattr(type(backend), "_outside", checked)
    monkeypatch.setattr(type(backend), "value_bounds", learned)
    return seen


def _mandelbrot_like(xp, steps=6):
    """mandelbrot2's bookkeeping: index arrays selected from a grid's, step after step, then
    writes through them."""
    xi, yi = xp.mgrid[0:40, 0:30]
    xi, yi = xi.reshape(-1), yi.reshape(-1)  # (views of the grid's rows: mandelbrot2 sets their shape)
    z = xp.zeros(40 * 30, xp.complex128)
    c = xp.linspace(-2.0, 1.0, 40 * 30) + 0.5j * xp.linspace(-1.0, 1.0, 40 * 30)
    n = xp.zeros((40, 30), xp.int64)
    for i in range(steps):
        z = z * z + c
        out = abs(z) > 2.0
        n[xi[out], yi[out]] = i + 1
        keep = xp.logical_not(out)
        z, xi, yi, c = z[keep], xi[keep], yi[keep], c[keep]
    return n


def test_selected_index_arrays_learn_their_bounds_once(backend_name, checks):
    want = _mandelbrot_like(numpy)
    with npgpu.enable(backend_name, threshold=0):
        got = _mandelbrot_like(npgpu)
        numpy.testing.assert_array_equal(npgpu.asnumpy(got), want)
    # the first write's index arrays were gathered from the grid's rows and columns: their bounds
    # were read then, and no write after it was checked (every index array since was gathered from
    # arrays of known bounds)
    assert checks == ["learned", "learned"]


def test_an_index_outside_its_axis_still_raises_numpys_error(backend_name, checks):
    with npgpu.enable(backend_name, threshold=0):
        source = npgpu.asarray(numpy.arange(100))
        pick = npgpu.asarray(numpy.arange(100) % 3 == 0)
        target = npgpu.zeros(50)
        rows = source[pick]  # (0 to 99: the source's bounds, learned here, are not inside 50)
        backend = source._backend
        assert not _bounds.within(backend, rows._native, 50) and _bounds.within(backend, rows._native, 100)
        with pytest.raises(IndexError, match="index 51 is out of bounds for axis 0 with size 50"):
            target[rows] = 1.0
        numpy.testing.assert_array_equal(npgpu.asnumpy(target), numpy.zeros(50))  # nothing written
        assert _bounds.known(source._backend, source._native) == (0, 99)
        small = source[pick] % 50  # (computed: no bounds known for it)
        target[small] = 2.0
        want = numpy.zeros(50)
        want[numpy.arange(0, 100, 3) % 50] = 2.0
        numpy.testing.assert_array_equal(npgpu.asnumpy(target), want)


def test_a_write_to_the_source_after_the_selection_does_not_lend_its_new_bounds(backend_name, checks):
    """The selection holds the source's values as they were: learning the source's bounds after a
    write would describe other values."""
    with npgpu.enable(backend_name, threshold=0):
        source = npgpu.asarray(numpy.arange(100))
        pick = npgpu.asarray(numpy.arange(100) > 90)
        rows = source[pick]  # 91 to 99
        source[...] = 0  # (now inside any axis)
        assert not _bounds.within(source._backend, rows._native, 60)  # (CuPy would wrap 91 around)
        target = npgpu.zeros(60)
        with pytest.raises(IndexError, match="index 91 is out of bounds for axis 0 with size 60"):
            target[rows] = 1.0
        numpy.testing.assert_array_equal(npgpu.asnumpy(target), numpy.zeros(60))


def test_a_write_into_memory_of_known_bounds_forgets_them(backend_name, checks):
    with npgpu.enable(backend_name, threshold=0):
        source = npgpu.asarray(numpy.arange(20))
        pick = npgpu.asarray(numpy.arange(20) % 2 == 0)
        target = npgpu.zeros(20)
        target[source[pick]] = 1.0  # (learns 0..19)
        assert _bounds.known(source._backend, source._native) == (0, 19)
        source[3:5] = 40  # (a view's write: the owner's bounds go)
        assert _bounds.known(source._backend, source._native) is None
        rows = source[npgpu.asarray(numpy.arange(20) < 6)]  # 0, 1, 2, 40, 40, 5
        assert not _bounds.within(source._backend, rows._native, 20)
        with pytest.raises(IndexError, match="index 40 is out of bounds for axis 0 with size 20"):
            target[rows] = 2.0
        gathered = source[pick]  # (0, 2, 40, 6, ...: the source's bounds are learned again, then hold)
        with pytest.raises(IndexError, match="index 40 is out of bounds for axis 0 with size 20"):
            target[gathered] = 3.0
        assert _bounds.known(source._backend, source._native) == (0, 40)


def test_selected_rows_read_by_index_arrays_match_numpy(backend_name, checks):
    rng = numpy.random.default_rng(3)
    host = rng.random((30, 8))
    rows_host = numpy.arange(30)
    with npgpu.enable(backend_name, threshold=0):
        values = npgpu.asarray(host)
        rows = npgpu.asarray(rows_host)
        for k in range(4):
            keep = npgpu.asarray(rows_host % (k + 2) == 0)
            picked = rows[keep]
            numpy.testing.assert_array_equal(npgpu.asnumpy(values[picked]), host[rows_host[rows_host % (k + 2) == 0]])
            numpy.testing.assert_array_equal(npgpu.asnumpy(values[picked[::-1], 3]),
                                             host[rows_host[rows_host % (k + 2) == 0][::-1], 3])
    assert checks == ["learned"]  # (the first read learned the rows' bounds; a view of a selection shares them)


def test_memory_handed_out_forgets_every_bound(checks):
    with npgpu.enable("emulated", threshold=0):
        source = npgpu.asarray(numpy.arange(10))
        target = npgpu.zeros(10)
        target[source[npgpu.asarray(numpy.arange(10) > 2)]] = 1.0
        assert _bounds.known(source._backend, source._native) == (0, 9)
        source.__dlpack__()  # (the consumer may write it)
        assert _bounds.known(source._backend, source._native) is None


def test_another_threads_write_forgets_every_bound_and_ends_the_keeping():
    with npgpu.enable("emulated", threshold=0):
        source = npgpu.asarray(numpy.arange(10))
        target = npgpu.zeros(10)
        pick = npgpu.asarray(numpy.arange(10) > 2)
        target[source[pick]] = 1.0
        assert _bounds.known(source._backend, source._native) == (0, 9)

        def other_thread():
            with npgpu.enable("emulated", threshold=0):
                target[:2] = 5.0

        worker = threading.Thread(target=other_thread)
        worker.start()
        worker.join()
        assert _bounds.known(source._backend, source._native) is None
        with pytest.raises(IndexError, match="index 10 is out of bounds for axis 0 with size 10"):
            target[source[pick] + 3] = 1.0
        target[source[pick]] = 2.0  # (checked as usual now)
        numpy.testing.assert_array_equal(npgpu.asnumpy(target), [5.0, 5.0, 0.0] + [2.0] * 7)
