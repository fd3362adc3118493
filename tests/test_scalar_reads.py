"""Element reads in a loop read ahead along their step (npgpu/_scalar_reads.py): the answers are
NumPy's, and every way of writing the memory between two reads drops the copy read ahead.

Each write road runs between the first half of a walk (the diagonal, a column, a row backwards)
and its second half, read by the same lines of code, so that the second half's addresses lie in
the copy the first half fetched where the backend reads ahead.
"""

from __future__ import annotations

import threading
import warnings

import numpy
import pytest

import npgpu
from npgpu import _report, _residency, _scalar_reads
from npgpu._array import DeviceArray
from npgpu._harness import differential

N = 48
#: positions the second half of each walk reads from the copy its first half fetched (a copy of 32
#: from the third read on): the diagonal's and column's rows 24-33, row N - 7's columns 23-14
D, C = N // 2 + 3, N // 2 - 4


def _diagonal(g, start, stop):
    return [g[i, i] for i in range(start, stop)]


def _column(g, start, stop):
    return [g[i, 3] for i in range(start, stop)]


def _backwards(v, start, stop):  # (a negative step: v[stop - 1], v[stop - 2], ...)
    return [v[i] for i in range(stop - 1, start - 1, -1)]


def _walks(g, half):
    start, stop = (0, N // 2) if half == 0 else (N // 2, N)
    back = (N // 2, N) if half == 0 else (0, N // 2)
    return _diagonal(g, start, stop), _column(g, start, stop), _backwards(g[N - 7], *back)


def _element(xp, g, other):
    g[D, D] = -1.0
    g[D + 1, 3] = -2.0
    g[N - 7, C] = -3.0


def _negative_element(xp, g, other):
    g[D - N, D - N] = -1.0
    g[-7][C] = -3.0  # (through the row's view)


def _rows(xp, g, other):
    g[D:D + 2] = 0.5
    g[N - 7, :C + 1] = 0.25


def _in_place_operator(xp, g, other):
    g += 1.0


def _ufunc_out(xp, g, other):
    xp.multiply(g, 2.0, out=g)


def _ufunc_positional_out(xp, g, other):
    xp.negative(g, g)


def _copyto(xp, g, other):
    xp.copyto(g, other)


def _whole_copy(xp, g, other):
    g[...] = other


def _fill(xp, g, other):
    g.fill(3.0)


def _putmask(xp, g, other):
    xp.putmask(g, other > 0.5, 0.0)


def _put(xp, g, other):
    xp.put(g, [N * D + D, N * (D + 1) + 3, N * (N - 7) + C], 9.0)


def _index_array_write(xp, g, other):
    g[xp.asarray(numpy.array([D, N - 7]))] = 7.0


def _mask_write(xp, g, other):
    g[other > 0.5] = 1.0


def _through_a_view(xp, g, other):
    view = g[N // 2:]
    view[...] = 4.0


def _through_a_transposed_view(xp, g, other):
    g.T[3, D + 1] = 5.0
    g.T[D, D] = 6.0
    g.T[C, N - 7] = 7.0


def _through_a_flat_view(xp, g, other):
    g.reshape(-1)[N * D + D] = 8.0


def _fill_diagonal(xp, g, other):
    xp.fill_diagonal(g, 0.0)


def _sort(xp, g, other):
    g.sort(axis=0)


def _place(xp, g, other):  # (a host function on every device: NumPy runs it, the result is written back)
    xp.place(g, other > 0.5, [1.0, 2.0])


def _matmul_out(xp, g, other):
    xp.matmul(other, other, out=g)


def _fused_statement(xp, g, other):  # (recorded work written into a view)
    g[N // 2:, :] = other[N // 2:, :] * 2.0 + g[N // 2:, :]


def _reshaped(xp, g, other):  # (not a write: a new native for the same array)
    with warnings.catch_warnings():  # (NumPy 2.5 deprecates setting shape; 2.4 does not)
        warnings.simplefilter("ignore", DeprecationWarning)
        g.shape = (N * N,)
        g.shape = (N, N)


WRITES = [_element, _negative_element, _rows, _in_place_operator, _ufunc_out, _ufunc_positional_out, _copyto,
          _whole_copy, _fill, _putmask, _put, _index_array_write, _mask_write, _through_a_view,
          _through_a_transposed_view, _through_a_flat_view, _fill_diagonal, _sort, _place, _matmul_out,
          _fused_statement, _reshaped]


@pytest.fixture(autouse=True)
def _fresh_lines():
    """Each test starts with no line remembered and no thread reading ahead (another test's threads
    may have ended the reading ahead for the process)."""
    _scalar_reads.reset()
    yield
    _scalar_reads.reset()


@pytest.fixture(autouse=True)
def _kept_on_the_device(monkeypatch):
    """These tests read device memory ahead; residency, under a GPU's measured costs, rightly moves
    a 48 x 48 array read element by element to the host (on the H200 a window holding a write
    road's first kernel compilation was judged so), after which nothing is read ahead. Its moves
    are tested in test_residency.py; here they are kept from happening."""
    monkeypatch.setattr(_residency, "migrate", lambda root, ledger: False)


def _served() -> float:
    return _report._kernels["scalar_reads_served"]


@pytest.mark.parametrize("write", WRITES, ids=[w.__name__.strip("_") for w in WRITES])
@differential()
def test_reads_after_a_write_are_numpys(xp, write):
    rng = numpy.random.default_rng(5)
    g = xp.asarray(rng.random((N, N)))
    other = xp.asarray(rng.random((N, N)))
    before = _walks(g, 0)
    write(xp, g, other)
    after = _walks(g, 1)
    return before, after, _walks(g, 0), g


@differential()
def test_reads_of_every_dtype_and_view_are_numpys(xp):
    rng = numpy.random.default_rng(9)
    out = []
    for dtype in (numpy.float32, numpy.int64, numpy.uint8, numpy.complex128, numpy.bool_):
        g = xp.asarray((rng.random((N, N)) * 100).astype(dtype))
        out += [_walks(g, 0), _walks(g, 1)]
        window = g[5:40:3, 30:2:-2]  # (a strided view read past its own end stays inside g)
        out += [_diagonal(window, 0, min(window.shape)), _backwards(window[1], 0, window.shape[1])]
        out += [_diagonal(g.T, 0, N), _column(g[::-1], 0, N)]
    ints = xp.asarray(numpy.arange(N * N, dtype=numpy.int32))
    floats = ints.view(numpy.float32)  # (the same memory read as another dtype by the same line)
    out += [_backwards(ints, 0, N), _backwards(floats, 0, N)]
    return out


@differential()
def test_a_read_past_the_end_raises_numpys_index_error(xp):
    g = xp.asarray(numpy.arange(N * N, dtype=numpy.float64).reshape(N, N))
    got = []
    with pytest.raises(IndexError):
        for i in range(N + 1):
            got.append(g[i, i])
    with pytest.raises(IndexError):
        for i in range(N + 1):
            got.append(g[-1 - i, 0])
    return got


def test_reads_ahead_on_device_backends_and_counts_them(device_backend):
    with npgpu.enable(device_backend, threshold=0):
        g = npgpu.asarray(numpy.arange(N * N, dtype=numpy.float64).reshape(N, N))
        if type(g) is not DeviceArray or not g._backend.reads_ahead:
            pytest.skip(f"{device_backend} does not read ahead")
        npgpu.report(reset=True)
        assert _diagonal(g, 0, N) == [float(i * (N + 1)) for i in range(N)]
        stats = npgpu.report().kernels
        assert stats["scalar_read_aheads"] >= 1
        assert stats["scalar_reads_served"] >= N // 2, "most of the walk comes from the copies read ahead"


def test_another_threads_write_drops_every_copy_and_ends_reading_ahead():
    with npgpu.enable("emulated", threshold=0):
        g = npgpu.asarray(numpy.arange(N * N, dtype=numpy.float64).reshape(N, N))
        expected = numpy.arange(N * N, dtype=numpy.float64).reshape(N, N)
        assert _diagonal(g, 0, N // 2) == [expected[i, i] for i in range(N // 2)]

        def other_thread():
            with npgpu.enable("emulated", threshold=0):
                g[D, D] = -1.0  # (written from here: no copy can be trusted any more)

        worker = threading.Thread(target=other_thread)
        worker.start()
        worker.join()
        expected[D, D] = -1.0
        served = _served()
        assert _diagonal(g, N // 2, N) == [expected[i, i] for i in range(N // 2, N)]
        assert _diagonal(g, 0, N) == [expected[i, i] for i in range(N)]
        assert _served() == served, "no read is served from a copy once another thread has written"


def test_handing_memory_out_drops_every_copy():
    with npgpu.enable("emulated", threshold=0):
        g = npgpu.asarray(numpy.arange(N * N, dtype=numpy.float64).reshape(N, N))
        assert _diagonal(g, 0, N // 2) == [float(i * (N + 1)) for i in range(N // 2)]
        host = numpy.from_dlpack(g)  # (the emulated backend's memory is NumPy's: a writable view of it)
        host[D, D] = -1.0
        expected = [float(i * (N + 1)) for i in range(N // 2, N)]
        expected[D - N // 2] = -1.0
        assert _diagonal(g, N // 2, N) == expected


@differential()
def test_a_loop_that_writes_what_it_reads_next_gets_numpys_values(xp):
    # (lu's pattern: each read's copy is dropped by the write that follows it; the line stops
    # reading ahead, and every value read is the one written just before)
    g = xp.asarray(numpy.arange(N * N, dtype=numpy.float64).reshape(N, N) + 1.0)
    got = []
    for j in range(N - 1):
        pivot = g[j, j]
        got.append(pivot)
        g[j + 1, j + 1] = g[j + 1, j + 1] / pivot + j
    return got, g


def test_a_line_whose_copies_are_dropped_unused_stops_reading_ahead():
    with npgpu.enable("emulated", threshold=0):
        g = npgpu.asarray(numpy.arange(N * N, dtype=numpy.float64).reshape(N, N))
        for j in range(N):
            if j == 16:  # (from here on: Python's bytecode has settled, the read's site is one)
                npgpu.report(reset=True)
            g[j, j]  # noqa: B018
            g[j, j] = -1.0
        stats = npgpu.report().kernels
        assert _scalar_reads._WASTED == 2
        assert stats.get("scalar_read_aheads", 0) <= 2, "two copies dropped unused, then one element a read"
        assert stats.get("scalar_reads_served", 0) == 0
