"""Write plans (npgpu/lazy/materialize.py, ``_PLANS``) and the short road: a statement that writes
an expression into device memory (``a[1:] -= expr``, ``b[1:-1] = expr``) runs its graph straight into
the destination, without walking its arrays for overlap or the registry for other work, where one
overlap test per leaf finds no leaf overlapping the destination but as the very same view, no call
below the root reading it, and every pending array registered is the statement's own. A loop
writing the same destination reuses that answer (a plan) while the graph, its leaves' natives and
the destination are the same objects.

Each hazard the long road handles is run here through a write that was planned the iteration
before, or that takes the short road unplanned, as NumPy and as npgpu on every backend: an array
held across the write that reads the destination (this thread's and another's), a leaf that comes
to overlap the destination, an inner array reading the destination, kept mask positions and scalar
reads of the written memory, and a value another thread computes first.
"""

from __future__ import annotations

import contextlib
import threading
import weakref

import numpy
import pytest

import npgpu
from npgpu import _residency
from npgpu._array import DeviceArray
from npgpu._harness import differential
from npgpu.lazy import materialize as lazy


@pytest.fixture
def planned(monkeypatch):
    """Whether each write that found a kept plan could take it (the road under test), in order.
    Residency's moves are kept out (they could put an array on the host mid-loop: a write that
    takes another road), and the test starts from empty tables of plans and marks (the suite's
    earlier writes could fill the marks' table: its clearing mid-loop delays a plan a write)."""
    monkeypatch.setattr(lazy, "_PLANS", {})
    monkeypatch.setattr(lazy, "_MARKS", {})
    monkeypatch.setattr(_residency, "SHARE", float("inf"))
    monkeypatch.setattr(_residency, "FLOOR", float("inf"))
    hits: list[bool] = []
    real = lazy._plan_holds

    def counted(plan, native, inputs, backend):
        held = real(plan, native, inputs, backend)
        hits.append(held)
        return held

    monkeypatch.setattr(lazy, "_plan_holds", counted)
    return hits


@pytest.fixture
def short(monkeypatch):
    """Whether each write ran its graph on the short road (``materialize`` given the write's walk), in order."""
    taken: list[bool] = []
    real = lazy.materialize

    def counted(array, out=None, walked=None):
        if out is not None:
            taken.append(walked is not None)
        return real(array, out, walked)

    monkeypatch.setattr(lazy, "materialize", counted)
    return taken


def _device(xp, *arrays) -> bool:
    return xp is npgpu and all(type(a) is DeviceArray and a._backend.supports_fusion for a in arrays)


def _arrays(xp, *shape, n=3, seed=3):
    rng = numpy.random.default_rng(seed)
    return [xp.asarray(rng.random(shape)) for _ in range(n)]


def _step(ex, ey, hz):
    ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
    ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
    hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])
    ey[1:-1, 1:-1] = 0.2 * (hz[1:-1, 1:-1] + hz[:-2, 1:-1] + hz[2:, 1:-1])


@differential()
def test_a_loop_of_stencil_statements_is_numpys(xp, planned):
    ex, ey, hz = _arrays(xp, 12, 9)
    for _ in range(4):
        _step(ex, ey, hz)
    if _device(xp, ex):
        assert sum(planned) >= 8, "the iterations after the second took their plans (the first marks, the second plans)"
    return ex, ey, hz


@differential()
def test_marks_of_targets_gone_make_room_without_clearing_a_loops_marks(xp, planned):
    # a full table of marks whose targets are gone (earlier loops'): the loop's first iteration
    # marks, and its marks stay until the second plans
    class Target:
        pass

    for i in range(lazy._PLANS_MAX - 2):
        lazy._MARKS[(i, i)] = weakref.ref(Target())
    ex, ey, hz = _arrays(xp, 12, 9)
    for _ in range(4):
        _step(ex, ey, hz)
    if _device(xp, ex):
        assert sum(planned) >= 8, "every statement planned at its second write"
        assert len(lazy._MARKS) <= 4, "the dead marks were dropped"
    return ex, ey, hz


@differential()
def test_a_sweep_over_more_new_views_than_the_marks_table_holds_leaves_other_plans(xp, planned):
    # each iteration a stencil, then a sweep (adi's and deriche's kind) writing more new column
    # views than the marks' table holds. The views' marks die with them; were the table cleared
    # instead, the stencil's mark would be gone at each of its writes and it would never plan.
    a, b = _arrays(xp, 12, 12, n=2)
    x, y = _arrays(xp, 4, lazy._PLANS_MAX + 8, n=2, seed=5)
    for _ in range(4):
        b[1:-1, 1:-1] = 0.25 * (a[1:-1, 2:] + a[1:-1, :-2] + a[2:, 1:-1] + a[:-2, 1:-1])
        for j in range(2, y.shape[1]):
            y[:, j] = 0.5 * x[:, j] + 0.25 * y[:, j - 1] - 0.125 * y[:, j - 2]
        a[1:-1, 1:-1] = 0.25 * (b[1:-1, 2:] + b[1:-1, :-2] + b[2:, 1:-1] + b[:-2, 1:-1])
    if _device(xp, a):
        assert planned.count(True) >= 4, "both stencils planned in the iterations after the second"
    return a, b, y


@differential()
def test_a_copy_made_each_iteration_feeds_a_planned_write(xp, planned):
    p, b = _arrays(xp, 20, 20, n=2)
    for _ in range(4):
        pn = p.copy()  # (new natives for the same leaves each iteration: each still reads nothing of p)
        p[1:-1, 1:-1] = 0.25 * (pn[1:-1, 2:] + pn[1:-1, :-2] + pn[2:, 1:-1] + pn[:-2, 1:-1]) - b[1:-1, 1:-1]
        p[:, -1] = p[:, -2]
    if _device(xp, p):
        assert planned.count(True) >= 2, "the iterations after the second took their plans"
    return p


@differential()
def test_a_new_target_each_iteration_takes_the_short_road_and_is_only_marked(xp, planned, short):
    # deriche's and adi's column sweeps write a new view each iteration: no plan is ever found, and
    # a plan for each would fill the table with plans never used; the first write of a graph into a
    # target keeps a mark. Each write's leaves are other columns of the array it writes.
    x, y = _arrays(xp, 16, 12, n=2)
    for j in range(2, 12):
        y[:, j] = 0.5 * x[:, j] + 0.25 * y[:, j - 1] - 0.125 * y[:, j - 2]
    if _device(xp, y):
        assert not any(plan[0]() is not None and plan[0]().dtype == numpy.float64 and plan[0]().shape == (16,)
                       for plan in list(lazy._PLANS.values())), "only marks"
        assert planned == [], "no plan was found to hold or not"
        assert short == [True] * 10, "every column write ran on the short road"
    return y


@differential()
def test_a_first_write_whose_leaves_overlap_the_destination_takes_the_long_road(xp, short):
    x, y = _arrays(xp, 40, n=2)
    x[1:] = 0.5 * x[:-1] + y[1:]  # (a leaf overlapping the destination, not as the same view)
    y[2:] = y[:-2] * 0.25  # (the same graph, other natives)
    z = x[5:] * 2.0  # (an inner array, held, reading the next write's destination)
    x[5:] = z + 1.0
    if _device(xp, x):
        # (the first two compute their value apart and copy it in; the third runs into x after the
        # long road's walks found nothing else to run first)
        assert short == [False]
    return x, y, z


@differential()
def test_a_first_write_beside_other_pending_work_takes_the_long_road(xp, short):
    x, y = _arrays(xp, 40, n=2)
    held = x[3:] + 1.0  # (pending, the program's: it reads what the write changes)
    x[1:] = 0.5 * y[1:]
    if _device(xp, x):
        assert short == [False]
    return x, held


@differential()
def test_a_sweep_of_new_targets_keeps_the_plans_of_others(xp, planned):
    x, y, z = _arrays(xp, 8, 300)
    for _ in range(2):
        x[1:, :] -= 0.5 * (y[1:, :] - y[:-1, :])  # (marked, then planned)
    columns = [z[:, j] for j in range(300)]  # (more targets, all alive, than plans are kept)
    for j in range(1, 300):
        columns[j][...] = 0.5 * columns[j - 1] + 0.25
    planned.clear()
    x[1:, :] -= 0.5 * (y[1:, :] - y[:-1, :])
    if _device(xp, x):
        assert planned == [True], "the sweep's marks evicted no plan"
    return x, y, z


@differential()
def test_an_array_held_across_a_planned_write_keeps_the_values_it_read(xp):
    x, y = _arrays(xp, 40, n=2)
    held = []
    for _ in range(3):
        x[1:] -= 0.5 * (y[1:] - y[:-1])
        held.append(x[1:] * 2.0)  # (pending, held: it reads the memory the next write changes)
        y[1:-1] = 0.3 * (x[2:] + x[:-2])
        held.append(y[1:-1] + 1.0)
    return x, y, held


@differential()
def test_another_threads_pending_array_reading_the_destination_keeps_its_values(xp, planned):
    x, y = _arrays(xp, 40, n=2)
    for _ in range(2):
        x[1:] -= 0.5 * (y[1:] - y[:-1])  # (marked, then planned)
    recorded, written = threading.Event(), threading.Event()
    found = []

    def other() -> None:
        state = npgpu.enable(x._backend.name, threshold=0) if type(x) is DeviceArray else contextlib.nullcontext()
        with state:
            e = x[1:] + 0.0  # (pending in this thread, reading the destination)
            recorded.set()
            written.wait(10)
            found.append(numpy.array(e))

    t = threading.Thread(target=other)
    t.start()
    recorded.wait(10)
    planned.clear()
    x[1:] -= 0.5 * (y[1:] - y[:-1])
    written.set()
    t.join()
    if _device(xp, x):
        assert planned == [True], "the plan held (the registry's count sent the write the other way)"
    return x, xp.asarray(found[0])


@differential()
def test_a_leaf_that_comes_to_overlap_the_destination_takes_the_unplanned_road(xp, planned):
    def step(x, y):
        x[1:] -= 0.5 * (y[1:] - y[:-1])
        x[:-1] = 0.25 * (y[1:] + y[:-1])

    x, y = _arrays(xp, 30, n=2)
    step(x, y)
    step(x, y)
    planned.clear()
    step(x, x[:])  # (the same graphs and destinations: their leaves, views of x, now overlap them)
    if _device(xp, x):
        assert planned == [False, False], "the plans were found and did not hold"
    step(x, y)
    return x, y


@differential()
def test_a_graph_whose_inner_array_reads_the_destination_is_never_planned(xp, planned):
    x, y = _arrays(xp, 30, n=2)
    kept = []
    for _ in range(3):
        t = x[1:] * 2.0  # (held: it must keep the values it read before the write)
        x[1:] = t + y[1:]
        kept.append(t)
        x[1:] = (x[1:] * 3.0) - y[:-1]  # (an inner array reading the destination, as the same view)
    if _device(xp, x):
        destination = x[1:]._native
        assert not any(plan[0]() is destination and plan[2] is not None for plan in list(lazy._PLANS.values())), \
            "no plan kept for it"
    return x, kept


@differential()
def test_a_planned_write_drops_kept_mask_positions_and_scalar_reads(xp):
    values, a, b = _arrays(xp, 50)
    m = values > 0.5
    seen = []
    for _ in range(3):
        seen += [values[m], values[m], float(a[7]), float(a[7])]
        m[1:] = a[1:] > b[:-1]  # (a pending bool value written into the mask: planned after the first)
        a[1:] -= 0.5 * (b[1:] - b[:-1])
        seen += [values[m], float(a[7])]
    return seen, m, a


def test_a_planned_write_whose_value_another_thread_computed_first_still_writes_it(device_backend, monkeypatch):
    # The unplanned road's twin is in tests/test_threads.py. Here the other thread's part is played
    # between the planned road's walk and its launch.
    host = numpy.arange(1000, dtype=numpy.int64)
    real = lazy.materialize
    computed: list[bool] = []

    def then_another_thread_computes(array, out=None, walked=None):
        if walked is not None and array._pending is not None:
            real(array)
            computed.append(True)
        real(array, out, walked)

    with npgpu.enable(device_backend, threshold=0):
        k = npgpu.asarray(host.copy())
        for _ in range(2):
            k[10:20] = k[20:30] + 1
            host[10:20] = host[20:30] + 1
        monkeypatch.setattr(lazy, "materialize", then_another_thread_computes)
        k[10:20] = k[20:30] + 1
        monkeypatch.setattr(lazy, "materialize", real)
        host[10:20] = host[20:30] + 1
        assert computed == [True]  # (the planned road ran)
        numpy.testing.assert_array_equal(numpy.asarray(k), host)


def test_plans_are_bounded_and_forget_dead_natives(device_backend):
    with npgpu.enable(device_backend, threshold=0):
        for n in range(lazy._PLANS_MAX + 20):
            x = npgpu.asarray(numpy.zeros(8 + n % 3))
            y = npgpu.asarray(numpy.ones(8 + n % 3))
            for _ in range(2):  # (the first write marks, the second plans)
                x[1:] = y[1:] * float(n) + 1.0
        assert len(lazy._PLANS) <= lazy._PLANS_MAX and len(lazy._MARKS) <= lazy._PLANS_MAX
        destination = x[1:]._native
        plans = [plan for plan in list(lazy._PLANS.values()) if plan[0]() is destination]
        assert len(plans) == 1
        del x, y, destination
        assert plans[0][0]() is None  # (a dead destination: its id may come again, the plan no more)


def test_an_inner_array_another_thread_computes_during_the_first_write_leaves_no_plan(device_backend, monkeypatch):
    # The plan comes from the write's own walk of its graph. Were it taken from write_plan's later
    # walk, an inner array another thread computed in between (a leaf of fresh memory by then) hid
    # that the graph's inner call reads the target: the next iteration's held array ran after it.
    real = lazy.write_plan

    def computed_meanwhile(array, backend, native):
        for o in array._pending.operands:
            if type(o) is DeviceArray and o._pending is not None:
                lazy.materialize(o)  # (as another thread's write would)
        return real(array, backend, native)

    host_x, host_y = numpy.arange(30.0), numpy.arange(30.0) * 0.5
    with npgpu.enable(device_backend, threshold=0):
        x, y = npgpu.asarray(host_x.copy()), npgpu.asarray(host_y)
        monkeypatch.setattr(lazy, "write_plan", computed_meanwhile)
        t = x[1:] * 2.0
        x[1:] = t + y[1:]
        monkeypatch.setattr(lazy, "write_plan", real)
        held = x[1:] * 2.0  # (reads the target of the next write, and stays the program's)
        x[1:] = held + y[1:]
        got = (npgpu.asnumpy(t), npgpu.asnumpy(held), npgpu.asnumpy(x))
    t = host_x[1:] * 2.0
    host_x[1:] = t + host_y[1:]
    held = host_x[1:] * 2.0
    host_x[1:] = held + host_y[1:]
    for g, w in zip(got, (t, held, host_x)):
        numpy.testing.assert_array_equal(g, w)
