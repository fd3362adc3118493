"""The C wrappers (npgpu/_speedups.c) against the Python ones they mirror.

Each namespace function is built twice, natively and in Python (``native=False``); every call
form below runs through both under every backend, and the two must agree on the result (type,
dtype, values), on the error NumPy raises, and on what npgpu.report() counts. The Python wrappers
are checked against NumPy by the rest of the suite.
"""

from __future__ import annotations

import inspect
import os
import pickle
import subprocess
import sys
import threading

import numpy
import pytest

import npgpu
from npgpu import _hooks, _namespace, _native, _residency
from npgpu.backends.costs import Costs
from npgpu.lazy import materialize as lazy_materialize
from npgpu.lazy import recorder as lazy_recorder

pytestmark = pytest.mark.skipif(not npgpu.native_wrappers(), reason="npgpu._speedups is not built here")

A = numpy.linspace(0.0, 1.0, 12)
B = A[::-1].copy()
M = A.reshape(3, 4)
I8 = numpy.arange(-6, 6, dtype=numpy.int8)
BIG = numpy.linspace(0.0, 1.0, 4000)  # 32 kB: above the threshold the tests set
T3 = numpy.linspace(0.0, 1.0, 24).reshape(2, 3, 4)

# (function, args, kwargs): every kind of wrapper, the call forms its short road reads and the
# ones it must leave to the general road, and calls NumPy rejects.
CALLS = [
    # general functions
    (numpy.where, (A > B, A, B), {}),
    (numpy.where, (A > 0.5,), {}),
    (numpy.clip, (A, 0.25, 0.75), {}),
    (numpy.clip, (A,), {}),  # TypeError in NumPy < 2.1, a copy since
    (numpy.concatenate, ((A, B),), {}),
    (numpy.concatenate, ([A, B],), {"axis": 0}),
    (numpy.concatenate, ((A, M),), {}),  # ValueError: dimensions differ
    (numpy.concatenate, ((A, [1.0, 2.0]),), {}),
    (numpy.stack, ([A, B],), {}),
    (numpy.reshape, (A, (3, -1)), {}),
    (numpy.reshape, (A, (5, 5)), {}),  # ValueError
    (numpy.take, (A, [100]), {}),  # IndexError
    (numpy.cumsum, (A,), {"dtype": numpy.float32}),
    (numpy.cumsum, (A,), {"dtype": numpy.dtype("f4")}),
    (numpy.mean, ([1, 2, 3],), {}),
    (numpy.einsum, ("i,i->", A, B), {}),
    (numpy.dot, (A, B), {}),
    (numpy.diff, (A,), {"n": 2}),
    (numpy.pad, (A, 2), {}),
    (numpy.isclose, (A, B), {}),
    (numpy.histogram, (A,), {"bins": 5}),
    (numpy.where, (BIG > 0.5, BIG, 0.0), {}),
    (numpy.concatenate, ((BIG, BIG),), {}),
    # creation
    (numpy.zeros, (10,), {}),
    (numpy.zeros, ((2, 3),), {"dtype": "f4"}),
    (numpy.zeros, (), {"shape": 5}),
    (numpy.zeros, (numpy.int64(4),), {}),
    (numpy.zeros, (-1,), {}),  # ValueError
    (numpy.zeros, (10000,), {}),
    (numpy.ones, ((3, 3),), {}),
    (numpy.full, (5, 2.0), {}),
    (numpy.full, ((2, 2), 7), {"dtype": int}),
    (numpy.empty, (0,), {}),
    (numpy.arange, (10,), {}),
    (numpy.arange, (1, 10, 2), {}),
    (numpy.arange, (10, 1, -3), {}),
    (numpy.arange, (0.0, 1.0, 0.1), {}),
    (numpy.arange, (5,), {"dtype": "f4"}),
    (numpy.arange, (1, 10, 0), {}),  # ZeroDivisionError
    (numpy.arange, (20000,), {}),
    (numpy.eye, (4,), {}),
    (numpy.eye, (3, 4), {}),
    (numpy.identity, (3,), {}),
    (numpy.linspace, (0, 1), {}),
    (numpy.linspace, (0, 1, 7), {}),
    (numpy.linspace, (0, 1), {"num": 5}),
    (numpy.linspace, (0, 1, -1), {}),  # ValueError
    (numpy.logspace, (0, 2, 4), {}),
    # constructors
    (numpy.asarray, (A,), {}),
    (numpy.asarray, ([1, 2, 3],), {}),
    (numpy.asarray, ((1.0, 2),), {}),
    (numpy.asarray, (3.0,), {}),
    (numpy.asarray, (A,), {"dtype": numpy.float32}),
    (numpy.array, ([[1, 2], [3, 4]],), {}),
    (numpy.array, (A,), {"dtype": "f4"}),
    (numpy.array, ([],), {}),
    (numpy.array, ([1, "a"],), {}),
    (numpy.array, ([1.0, 2.0],), {"dtype": "no-such-dtype"}),  # TypeError
    (numpy.asarray, (BIG,), {}),
    (numpy.asarray, (list(BIG),), {}),
    (numpy.ascontiguousarray, (A[::2],), {}),
    # reductions
    (numpy.sum, (A,), {}),
    (numpy.sum, (M, 0), {}),
    (numpy.sum, (M,), {"axis": 1}),
    (numpy.sum, (M, 2), {}),  # AxisError
    (numpy.sum, (M, None), {}),
    (numpy.sum, (A > 0.5,), {}),
    (numpy.sum, (I8,), {}),
    (numpy.max, (A[:0],), {}),  # ValueError: empty
    (numpy.min, (M,), {"keepdims": True}),
    (numpy.any, (A > 0.5,), {}),
    (numpy.all, (M, 0), {}),
    (numpy.prod, (I8[:4],), {}),
    (numpy.sum, (BIG,), {}),
    (numpy.sum, ([1, 2, 3],), {}),
    # tuple axes (resnet's per-pixel sums): the short road's, and the ones it leaves
    (numpy.sum, (T3,), {"axis": (0, 2)}),
    (numpy.max, (T3, (1, 2)), {}),
    (numpy.any, (T3 > 0.5,), {"axis": (0, 1)}),
    (numpy.sum, (T3,), {"axis": ()}),
    (numpy.sum, (T3,), {"axis": (0, 0)}),  # ValueError: duplicate
    (numpy.sum, (T3,), {"axis": (0, 3)}),  # AxisError
    (numpy.sum, (T3,), {"axis": (0, numpy.int64(1))}),  # (not an exact int: the general road)
    (numpy.sum, (T3[:, :0],), {"axis": (1, 2)}),
    (numpy.min, (T3[:, :0],), {"axis": (1, 2)}),  # ValueError: empty
]

STATES = ["off", "numpy", "emulated", "opencl", "cupy"]


def _context(state: str):
    if state == "off":
        return npgpu.disable()
    reason = npgpu.backends.unavailable_reason(state)
    if reason:
        pytest.skip(reason)
    return npgpu.enable(state, threshold=16 << 10)


def _outcome(wrapper, args, kwargs):
    """What a call gives: (type, dtype, shape, values) or (exception type, message)."""
    try:
        result = wrapper(*args, **kwargs)
    except Exception as exc:  # the outcome compared, NumPy's own error included
        return ("raised", type(exc), str(exc))
    if isinstance(result, tuple):
        return tuple(_summary(r) for r in result)
    return _summary(result)


def _summary(result):
    host = numpy.asarray(result)
    values = host.tolist() if host.dtype != object else repr(host)
    return (type(result), host.dtype, host.shape, values)


def _report_of(func):
    entry = npgpu.report().as_dict()["functions"].get(func.__name__)
    return {k: entry[k] for k in ("device", "host", "fallback")} if entry else None


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize(("func", "args", "kwargs"), CALLS, ids=lambda v: getattr(v, "__name__", None))
def test_native_wrapper_matches_python_wrapper(state, func, args, kwargs):
    native = _namespace._wrapper(func, "npgpu", native=True)
    python = _namespace._wrapper(func, "npgpu", native=False)
    assert type(native).__module__ == "npgpu._speedups" and callable(python)
    with _context(state), numpy.errstate(all="ignore"):
        npgpu.report(reset=True)
        got = _outcome(native, args, kwargs)
        got_counts = _report_of(func)
        npgpu.report(reset=True)
        expected = _outcome(python, args, kwargs)
        expected_counts = _report_of(func)
        npgpu.sync()
    assert got == expected
    assert got_counts == expected_counts


def test_namespace_uses_the_native_wrappers():
    for func in (npgpu.where, npgpu.zeros, npgpu.asarray, npgpu.sum):
        assert type(func).__module__ == "npgpu._speedups"


def test_wrappers_look_like_the_functions_they_wrap():
    for name in ("where", "clip", "zeros", "arange", "asarray", "sum", "max"):
        wrapper, func = getattr(npgpu, name), getattr(numpy, name)
        assert wrapper.__wrapped__ is func
        assert wrapper.__name__ == wrapper.__qualname__ == func.__name__
        assert wrapper.__doc__ == func.__doc__
        assert wrapper.__module__ == "npgpu"
        assert repr(wrapper).startswith(f"<function {func.__name__} at 0x")
        assert pickle.loads(pickle.dumps(wrapper)) is wrapper
    assert inspect.signature(npgpu.clip) == inspect.signature(numpy.clip)


def test_wrappers_stored_on_a_class_bind_as_numpys_functions_do():
    # numpy.asarray (a C function) is not bound as a method; numpy.sum (dispatched) is, as a Python
    # function is: the C and the Python wrappers alike
    class Holder:
        numpys_asarray = numpy.asarray
        native_asarray = npgpu.asarray
        python_asarray = _namespace._wrapper(numpy.asarray, "npgpu", native=False)
        native_sum = npgpu.sum
        python_sum = _namespace._wrapper(numpy.sum, "npgpu", native=False)

        def __array__(self, dtype=None, copy=None):
            return numpy.arange(3.0)

    h = Holder()
    for unbound in (h.numpys_asarray, h.native_asarray, h.python_asarray):
        numpy.testing.assert_array_equal(unbound([1.0, 2.0]), numpy.array([1.0, 2.0]))
    assert h.native_sum() == h.python_sum() == 3.0  # (h bound as the array: its __array__)
    assert Holder.native_asarray is npgpu.asarray


def test_counter_cell():
    cell = _namespace._speedups.Counter()
    assert (len(cell), cell[0]) == (1, 0)
    cell[0] = 5
    assert cell[0] == 5
    cell[0] += 1
    assert cell[0] == 6
    with pytest.raises(IndexError):
        cell[1]
    with pytest.raises(TypeError):
        cell[0] = "x"


def test_wrapper_rejects_a_bad_kind():
    sp = _namespace._speedups
    with pytest.raises(ValueError):
        sp.Wrapper(99, numpy.sum, numpy.sum, numpy.sum, sp.Counter())
    with pytest.raises(TypeError):
        sp.Wrapper(sp.FUNCTION, numpy.sum, numpy.sum, numpy.sum, [0])


def test_threads_with_different_states_each_get_their_own():
    """The C side remembers the last State it read: threads alternating between an enabled
    and a disabled context must each still see their own."""
    errors: list[str] = []

    def work(enabled: bool) -> None:
        ctx = npgpu.enable("emulated", threshold=16) if enabled else npgpu.disable()
        with ctx:
            for _ in range(2000):
                on_device = type(npgpu.zeros(64)) is not numpy.ndarray
                if on_device != enabled:
                    errors.append(f"enabled={enabled} got a {'device' if on_device else 'host'} array")
                    return

    threads = [threading.Thread(target=work, args=(i % 2 == 0,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_pure_python_switch():
    code = "import npgpu, numpy; print(npgpu.native_wrappers(), npgpu.sum(numpy.arange(4)), type(npgpu.sum).__name__)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("NPGPU_")}
    env["NPGPU_PURE_PYTHON"] = "1"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.split() == ["False", "6", "function"]


# -- the fusion recorder ---------------------------------------------------------------------

EXPRESSIONS = {
    "e8": lambda xp, a, b, c: ((a * b + c) * a - b) / (c + 1.5) + xp.sqrt(xp.abs(a)) * 0.5 - xp.exp(-b),
    "reflected floats": lambda xp, a, b, c: 2.0 * a - b / 3.0 + (1.5 - c),
    "numpy scalars": lambda xp, a, b, c: (numpy.float64(0.5) * a + b * numpy.float32(2.0) - numpy.int64(3) * c
                                          + xp.add(numpy.float64(1.0), a) + xp.multiply(a.astype(xp.float32),
                                                                                      numpy.float32(1.5))),
    "same operand twice": lambda xp, a, b, c: a * a + a,
    "python int": lambda xp, a, b, c: (a + 1) * 2,
    "unary chain": lambda xp, a, b, c: -xp.sqrt(xp.abs(-(a - b))),
    "views": lambda xp, a, b, c: a[::2] + b[1::2] * 2.0,
    "broadcast": lambda xp, a, b, c: a * c[:1] + b,
    "mixed dtypes": lambda xp, a, b, c: a.astype(xp.float32) * 2.0 + b,
    "comparison": lambda xp, a, b, c: (a > b) & (c < 0.5),
    "value read twice": lambda xp, a, b, c: (lambda t: (t + 1.0) * (t * 2.0))(a * b),
    "long chain": lambda xp, a, b, c: _chain(a, 70),
}


def _chain(a, n):
    for _ in range(n):
        a = a + 1.0
    return a


@pytest.fixture(params=[True, False], ids=["native", "python"])
def recorder(request):

    lazy_recorder.use_native(request.param)
    yield request.param
    lazy_recorder.use_native(True)


def _recorded(name, backend):
    """E(a, b, c) recorded on ``backend``: (walk key by the Python walk, values, dtype, report)."""

    rng = numpy.random.default_rng(7)
    host = [rng.random(64) for _ in range(3)]
    with npgpu.enable(backend, threshold=0):
        npgpu.report(reset=True)
        a, b, c = (npgpu.asarray(h) for h in host)
        result = EXPRESSIONS[name](npgpu, a, b, c)
        key = None
        if result._pending is not None:
            state = lazy_materialize._GraphState()
            state._walk(result)
            key = (tuple(state.signature), [p.nodes for p in state.pendings])
        values = numpy.asarray(result)
        report = npgpu.report().as_dict()
        counts = {k: v for k, v in report["kernels"].items() if k != "fused_seconds"}
        sites = {site: (c["device"], c["host"], c["fallback"]) for site, c in report["call_sites"].items()}
    return key, values, counts, sites


@pytest.mark.parametrize("name", EXPRESSIONS)
def test_native_recorder_records_what_the_python_one_does(device_backend, name):

    reason = npgpu.backends.unavailable_reason(device_backend)
    if reason:
        pytest.skip(reason)
    try:
        lazy_recorder.use_native(False)
        expected = _recorded(name, device_backend)
        lazy_recorder.use_native(True)
        assert _hooks.core.record_binary is _native.speedups.record_binary
        got = _recorded(name, device_backend)
    finally:
        lazy_recorder.use_native(True)
    assert got[0] == expected[0]
    assert got[1].dtype == expected[1].dtype
    numpy.testing.assert_array_equal(got[1], expected[1])
    assert got[2] == expected[2]
    assert got[3] == expected[3] and any("test_speedups.py" in site for site in got[3])


def test_operators_are_fronted_in_c_only_with_the_native_recorder(recorder):
    kinds = {type(vars(npgpu.DeviceArray)[name]).__name__ for name in ("__mul__", "__rsub__", "__neg__",
                                                                      "__array_ufunc__")}
    assert kinds == ({"FastMethod"} if recorder else {"function"})
    a = npgpu.DeviceArray.__mul__
    assert a.__name__ == "__mul__" and a.__qualname__ == "DeviceArray.__mul__"


@pytest.mark.parametrize("name", EXPRESSIONS)
def test_native_walk_matches_python_walk(recorder, name):

    rng = numpy.random.default_rng(3)
    with npgpu.enable("emulated", threshold=0):
        a, b, c = (npgpu.asarray(rng.random(32)) for _ in range(3))
        result = EXPRESSIONS[name](npgpu, a, b, c)
        assert result._pending is not None  # every expression here is recorded
        python = lazy_materialize._GraphState()
        python._walk(result)
        key, inputs, scalars, pendings = _namespace._speedups.walk(result, numpy.dtype("f8"))
        assert key == (*python.signature, numpy.dtype("f8"))
        assert [id(x) for x in inputs] == [id(x) for x in python.inputs]
        assert [(type(s), s) for s in scalars] == [(type(s), s) for s in python.scalars]
        assert [id(p) for p in pendings] == [id(p) for p in python.pendings]
        npgpu.sync()


def test_recorder_rejects_what_is_not_a_device_array():
    sp = _namespace._speedups
    with pytest.raises(TypeError):
        sp.record_binary(numpy.add, numpy.ones(3), 1.0, False, None, {})
    with pytest.raises(TypeError):
        sp.record_unary(numpy.negative, [1.0], None, {})
    with pytest.raises(TypeError):
        sp.walk(numpy.ones(3), numpy.dtype("f8"))


# -- views a device array keeps: __getitem__'s C road (kept_view) against the Python one --------

VIEW_KEYS = [
    (slice(1, None), slice(None)),
    (slice(None, -1), slice(None, -1)),
    (slice(None), 3),
    slice(2, 5),
    4,
    (Ellipsis, slice(None, None, 2)),
    (None, slice(1, 3)),
    (2, 3),  # an element: read back, never a kept view's road
    (Ellipsis, 2, 3),  # a 0-d view
    (slice(1, None), numpy.int64(0)),  # (not an exact int: the general road)
    (slice(1, None), True),  # (a bool index adds an axis: never aliased with the key 1)
    [1, 2],  # (fancy indexing)
]


def _views_of(state_costs, readonly):
    """Each key of VIEW_KEYS taken three times (the second and third are kept views) from a root
    array and from a view of it, with residency tracking the root: what each gave, what the
    report counted at each line and the root's charged total."""
    seen = []
    host = numpy.arange(48.0).reshape(6, 8)
    with npgpu.enable("emulated", threshold=0):
        npgpu.report(reset=True)
        root = npgpu.asarray(host.copy())
        if readonly:
            root.flags.writeable = False
        sub = root[1:, :]
        for array, name in ((root, "root"), (sub, "sub")):
            for key in VIEW_KEYS:
                for _ in range(3):
                    try:
                        got = array[key]
                    except Exception as exc:  # (NumPy's error, compared between the roads)
                        seen.append((name, repr(key), "raised", type(exc), str(exc)))
                        continue
                    values = numpy.asarray(got)
                    base = getattr(got, "_base", None)
                    seen.append((name, repr(key), type(got).__name__, values.dtype, values.shape, values.tolist(),
                                 base is root, getattr(got, "_readonly", None)))
        report = npgpu.report().as_dict()
        ledger = _residency.tracked.get(id(root))
        charged = None if ledger is None else round(ledger.total, 12)
    sites = {site: (c["device"], c["host"], c["fallback"]) for site, c in report["call_sites"].items()}
    return seen, sites, charged, state_costs


@pytest.fixture
def charged_costs(monkeypatch):
    """The emulated backend with a GPU's costs, residency charging index work and never moving an
    array (a move's moment depends on the wall time a window took); C roads back on afterwards."""
    costs = Costs(launch_s=60e-6, device_bytes_per_s=1e12, host_bytes_per_s=8e9, upload_s=60e-6,
                  upload_bytes_per_s=8e9, host_call_s=1e-6)
    monkeypatch.setattr(npgpu._get_backend("emulated"), "costs", costs)
    monkeypatch.setattr(_residency, "SHARE", float("inf"))
    monkeypatch.setattr(_residency, "FLOOR", float("inf"))
    try:
        yield costs
    finally:
        _native.use_native(True)
        _residency._Window.reset()


@pytest.mark.parametrize("readonly", [False, True], ids=["writeable", "read-only"])
def test_kept_views_in_c_are_the_python_roads(charged_costs, readonly):
    """The C road for a view an array keeps (``a[1:, :]`` again in a loop) gives what the Python
    method gives: the same arrays (values, base, read-only flag), errors, report counts per line and
    residency charges; keys it does not take (an element, fancy or non-int keys) go to Python."""
    _native.use_native(False)
    assert not hasattr(npgpu.DeviceArray.__getitem__, "_method")
    expected = _views_of(charged_costs, readonly)
    _native.use_native(True)
    assert type(npgpu.DeviceArray.__getitem__).__name__ == "FastMethod"
    got = _views_of(charged_costs, readonly)
    assert got[0] == expected[0]
    assert got[1] == expected[1] and any("test_speedups.py" in site for site in got[1])
    assert got[2] == expected[2] and got[2] is not None and got[2] != 0.0


def test_kept_views_in_c_answer_as_numpy_does(device_backend):
    """Views taken again in a loop (the C road from the second on) hold NumPy's values, and writes
    through them reach the array, as NumPy's views do."""
    host = numpy.arange(60.0).reshape(6, 10)
    with npgpu.enable(device_backend, threshold=0):
        a = npgpu.asarray(host.copy())
        for i in range(4):
            view = a[1:, 2:]
            numpy.testing.assert_array_equal(numpy.asarray(view), host[1:, 2:])
            view[0, 0] = -i  # (through the view, into a)
            host[1, 2] = -i
            assert a[1:, 2:]._base is a
        numpy.testing.assert_array_equal(numpy.asarray(a), host)


# -- a kept view written back onto itself: __setitem__'s C road (same_view_write) against Python --

def _writes_back(readonly):
    """In-place statements on views a device array keeps (``a[1:, :] -= x``: the view written back
    onto itself after its kernel, the C road's case from the second time on), and writes it does
    not take (another view, a scalar, a host value, a fancy key), with residency tracking the root:
    the values, errors, the report's counts at each line and the root's charged total."""
    host = numpy.arange(48.0).reshape(6, 8)
    seen = []
    with npgpu.enable("emulated", threshold=0):
        npgpu.report(reset=True)
        root = npgpu.asarray(host.copy())
        other = npgpu.asarray(numpy.linspace(0.0, 1.0, 48).reshape(6, 8))
        if readonly:
            root.flags.writeable = False
        for _ in range(3):
            try:
                root[1:, :] -= 0.5 * (other[1:, :] - other[:-1, :])
                root[:, 2] += other[:, 3]
                root[1:, :] = root[1:, :]  # (the very view, as a statement of its own)
                root[2:4, 1:] = root[1:3, 1:]  # (another view of the same memory: copied)
                root[0, :] = 1.5
                root[[0, 1]] = other[:2]
            except Exception as exc:  # (NumPy's error, compared between the roads)
                seen.append(("raised", type(exc), str(exc)))
            seen.append(numpy.asarray(root).tolist())
        report = npgpu.report().as_dict()
        ledger = _residency.tracked.get(id(root))
        charged = None if ledger is None else round(ledger.total, 12)
    sites = {site: (c["device"], c["host"], c["fallback"]) for site, c in report["call_sites"].items()}
    return seen, sites, charged


@pytest.mark.parametrize("readonly", [False, True], ids=["writeable", "read-only"])
def test_views_written_back_in_c_are_the_python_roads(charged_costs, readonly):
    """The C road for ``a[key] = a[key]``'s very view (what ``a[1:, :] -= x`` ends with) does what the
    Python method does: nothing written, the write counted at its line, the same residency charge;
    every other write goes to Python, and a read-only array raises NumPy's error on both."""
    _native.use_native(False)
    expected = _writes_back(readonly)
    _native.use_native(True)
    assert type(npgpu.DeviceArray.__setitem__).__name__ == "FastMethod"
    got = _writes_back(readonly)
    assert got[0] == expected[0]
    assert got[1] == expected[1] and any("test_speedups.py" in site for site in got[1])
    assert got[2] == expected[2]
    if not readonly:
        assert got[2] is not None and got[2] != 0.0


def test_views_written_back_in_c_answer_as_numpy_does(device_backend):
    """In-place statements on kept views (the C road from the second iteration) give NumPy's values."""
    host = numpy.arange(60.0).reshape(6, 10)
    step = numpy.linspace(-1.0, 1.0, 60).reshape(6, 10)
    with npgpu.enable(device_backend, threshold=0):
        a = npgpu.asarray(host.copy())
        b = npgpu.asarray(step)
        for _ in range(4):
            a[1:, :] -= 0.5 * (b[1:, :] - b[:-1, :])
            a[:-1, :-1] *= 1.0001
            host[1:, :] -= 0.5 * (step[1:, :] - step[:-1, :])
            host[:-1, :-1] *= 1.0001
        numpy.testing.assert_allclose(numpy.asarray(a), host, rtol=1e-15)
