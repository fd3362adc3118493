"""Threads and asyncio tasks doing device work at once get NumPy's answers (README, "Threads").

The stress runs are short here (CI's budget); tools/stress_threads.py runs the same workload
for as long as asked, on any backend.
"""

from __future__ import annotations

import os
import threading

import numpy
import pytest
from threads_workload import run_in_threads, run_tasks, run_threads

import npgpu
from npgpu.lazy import materialize
from npgpu.lazy import materialize as lazy

#: NPGPU_STRESS_ROUNDS=n repeats each stress run n times (default 1).
ROUNDS = int(os.environ.get("NPGPU_STRESS_ROUNDS", "1"))


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_threads_doing_fused_work_reductions_indexing_and_writes_get_numpys_answers(device_backend, round_):
    problems = run_threads(device_backend, threads=8, steps=24, seed=round_)
    assert problems == []


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_asyncio_tasks_interleaved_mid_expression_get_numpys_answers(device_backend, round_):
    assert run_tasks(device_backend, tasks=6, steps=16, seed=round_) == []


def test_each_thread_reduces_its_own_array(device_backend):
    # A built kernel is shared by every thread, and its arguments were state of that object:
    # two threads setting them at once summed each other's arrays (PoCL: thread 1 got thread 3's
    # total, others garbage, or the process crashed).
    n = 50_000
    seen: list[tuple[int, float]] = []

    def work(k: int) -> None:
        with npgpu.enable(device_backend, threshold=0):
            a = npgpu.asarray(numpy.full(n, float(k)))
            for _ in range(60):
                total = float(numpy.add.reduce(a))
                if total != k * n:
                    seen.append((k, total / n))
                    return

    run_in_threads(work, range(1, 7), switch_interval=1e-6)
    assert seen == []


def test_a_pending_array_needed_by_many_threads_at_once_is_computed_once(device_backend):
    with npgpu.enable(device_backend, threshold=0):
        a = npgpu.asarray(numpy.linspace(0.0, 1.0, 100_000))
        x = (a * 3.0 + 1.0) / 2.0
        want = (numpy.linspace(0.0, 1.0, 100_000) * 3.0 + 1.0) / 2.0
        npgpu.report(reset=True)
        start = threading.Barrier(6)
        got: list[numpy.ndarray] = []

        def read(_: int) -> None:
            start.wait()
            got.append(numpy.asarray(x))

        run_in_threads(read, range(6))
        assert len(got) == 6
        for value in got:
            numpy.testing.assert_array_equal(value, want)
        assert npgpu.report().kernels.get("kernels_launched") == 1


def test_sync_runs_this_threads_recorded_work_and_leaves_other_threads_own(device_backend):
    with npgpu.enable(device_backend, threshold=0):
        a = npgpu.asarray(numpy.arange(50_000.0))
        mine = a * 2.0
        recorded, synced = threading.Event(), threading.Event()
        theirs: list[npgpu.DeviceArray] = []

        def other() -> None:
            with npgpu.enable(device_backend, threshold=0):
                theirs.append(a + 1.0)
                recorded.set()
                synced.wait()
                npgpu.sync()  # runs its own graph

        t = threading.Thread(target=other)
        t.start()
        recorded.wait()
        npgpu.sync()
        assert mine._pending is None  # this thread's graph ran
        assert theirs[0]._pending is not None  # the other thread's is still its own
        synced.set()
        t.join()
        assert theirs[0]._pending is None
        numpy.testing.assert_array_equal(numpy.asarray(theirs[0]), numpy.arange(50_000.0) + 1.0)


def test_a_write_runs_other_threads_graphs_that_read_the_memory_first(device_backend):
    with npgpu.enable(device_backend, threshold=0):
        shared = npgpu.asarray(numpy.arange(50_000.0))
        recorded, written = threading.Event(), threading.Event()
        result: list[npgpu.DeviceArray] = []

        def reader() -> None:
            with npgpu.enable(device_backend, threshold=0):
                result.append(shared * 2.0)  # recorded, not run
                recorded.set()
                written.wait()

        t = threading.Thread(target=reader)
        t.start()
        recorded.wait()
        shared[...] = -1.0  # the reader's graph must see the values before this write
        written.set()
        t.join()
        numpy.testing.assert_array_equal(numpy.asarray(result[0]), numpy.arange(50_000.0) * 2.0)
        numpy.testing.assert_array_equal(numpy.asarray(shared), numpy.full(50_000, -1.0))


def test_a_statement_whose_value_another_thread_computed_first_still_writes_it(device_backend, monkeypatch):
    # ``k[10:20] = k[20:30] + 1`` runs the value's kernel into the view. Another thread's write may
    # compute that value first (its graph reads memory the write changes); the statement then wrote
    # nothing: a lost write, once in eight threads doing fused work. Here that thread's part is
    # played at the moment it came: right after this statement's own before_write. (Other work is
    # pending, as in that program: a write whose graph is all that is pending runs on a shorter
    # road, without before_write, tests/test_write_plans.py.)
    host = numpy.arange(1000, dtype=numpy.int64)
    real = lazy.before_write
    computed: list[bool] = []

    def then_another_thread_computes(backend, native, skip=None, known=None, temporary=None):
        real(backend, native, skip, known, temporary)
        if skip is not None and skip._pending is not None:
            lazy.materialize(skip)
            computed.append(True)

    with npgpu.enable(device_backend, threshold=0):
        k = npgpu.asarray(host.copy())
        other = npgpu.asarray(numpy.ones(100)) * 2.0  # noqa: F841  (pending: not this statement's)
        monkeypatch.setattr(lazy, "before_write", then_another_thread_computes)
        k[10:20] = k[20:30] + 1
        monkeypatch.setattr(lazy, "before_write", real)
        assert computed == [True]  # (the road under test ran)
        host[10:20] = host[20:30] + 1
        numpy.testing.assert_array_equal(numpy.asarray(k), host)


def test_a_writes_remembered_answers_keep_their_arrays_alive(device_backend):
    # The answers are by id. Once another thread computes a graph's inner array, its operands are
    # dropped, and a new array could take one's id and its answer: a False one let a graph reading
    # the written memory run after the write. Every id answered stays an array's while answered.
    with npgpu.enable(device_backend, threshold=0):
        a = npgpu.asarray(numpy.arange(1000.0))
        out = npgpu.asarray(numpy.zeros(1000))
        inner = (a + 1.0) * 2.0  # (a + 1.0 is an operand only this graph holds)
        value = inner - 3.0
        overlapping, known = lazy.write_plan(value, a._backend, out._native)
        lazy.materialize(inner)  # (as another thread would: a + 1.0 is dropped)
        assert not overlapping
        assert len(known) == 4  # a, a + 1.0, inner, value
        assert set(known) <= {id(x) for x in known.held}


def test_one_thread_writes_a_shared_array_others_read_it_after_the_join(device_backend):
    host = numpy.arange(120_000.0)
    with npgpu.enable(device_backend, threshold=0):
        shared = npgpu.asarray(host.copy())

    def writer() -> None:
        with npgpu.enable(device_backend, threshold=0):
            shared[::2] = 5.0
            shared[...] += shared * 0.5  # fused into shared, left for the device to run
    t = threading.Thread(target=writer)
    t.start()
    t.join()
    host[::2] = 5.0
    host += host * 0.5
    totals: list[float] = []

    def reader(_: int) -> None:
        with npgpu.enable(device_backend, threshold=0):
            totals.append(float((shared * 1.0).sum()))

    run_in_threads(reader, range(4))
    assert totals == pytest.approx([host.sum()] * 4, rel=1e-12)


def test_the_pending_registry_is_read_while_other_threads_record(device_backend):
    # Reading the registry while other threads add to it once iterated the dict itself:
    # "dictionary changed size during iteration".
    import sys

    stop = threading.Event()
    errors: list[BaseException] = []

    def record() -> None:
        try:
            with npgpu.enable(device_backend, threshold=0):
                a = npgpu.asarray(numpy.ones(1000))
                while not stop.is_set():
                    keep = [a * float(i) for i in range(300)]
                    del keep
        except Exception as exc:
            errors.append(exc)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    pool = [threading.Thread(target=record) for _ in range(2)]
    for t in pool:
        t.start()
    try:
        for _ in range(2000):
            lazy._pending.alive()
    except RuntimeError as exc:
        errors.append(exc)
    finally:
        stop.set()
        for t in pool:
            t.join()
        sys.setswitchinterval(old)
    assert errors == []


def test_threads_learning_more_error_states_than_are_remembered_get_numpys_answers(device_backend, monkeypatch):
    # Each errstate with its own callback is a new state to learn; past the remembered number the
    # oldest is forgotten. Two threads forgetting the same one at once raised KeyError.
    from npgpu import _fperr

    monkeypatch.setattr(_fperr, "_INTERNED_MAX", 2)  # (every new state forgets one)
    failures: list[BaseException] = []

    def work(k: int) -> None:
        with npgpu.enable(device_backend, threshold=0):
            a = npgpu.asarray(numpy.full(1000, float(k)))
            try:
                for i in range(400):
                    with numpy.errstate(all="call", call=lambda *args, i=i: None):
                        total = float(numpy.add.reduce(a))
                    assert total == 1000.0 * k
            except BaseException as error:  # (collected: a thread's failure fails the test)
                failures.append(error)

    run_in_threads(work, range(1, 7), switch_interval=1e-6)
    assert failures == []


def test_threads_filling_the_graph_table_at_once_evict_without_error(monkeypatch):
    # The table of built graphs evicts its oldest when full: ``next(iter(table))`` then a pop. Another
    # thread's insertion between the two failed the iterator ("dictionary changed size during
    # iteration": once in CI's thread test, after the suite had filled the table).
    monkeypatch.setattr(materialize, "_GRAPHS", {})
    monkeypatch.setattr(materialize, "_GRAPHS_MAX", 8)
    errors: list[str] = []

    def work(k: int) -> None:
        try:
            for i in range(20_000):
                materialize._keep_graph((k, i), None)
        except Exception as exc:
            errors.append(f"thread {k}: {type(exc).__name__}: {exc}")

    run_in_threads(work, range(8), switch_interval=1e-6)
    assert errors == []
    assert len(materialize._GRAPHS) <= 8
