"""Fusion: recorded elementwise graphs give NumPy's answers, run when needed, and fuse for real."""

from __future__ import annotations

import operator

import numpy
import pytest
from conftest import BACKEND_PARAMS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import npgpu
from npgpu._harness import backend_context
from npgpu.lazy import materialize, recorder, registry

FUSING = [p for p in BACKEND_PARAMS if p.values[0] in ("emulated", "opencl", "cupy")]


@pytest.fixture(params=FUSING)
def fusing(request):
    with backend_context(request.param):
        yield request.param


@pytest.fixture
def taken(monkeypatch):
    """Whether each call of the recorder's short road (``record_binary``) recorded, in order."""
    from npgpu import _hooks

    calls: list[bool] = []
    short = _hooks.core.record_binary

    def counted(*args):
        result = short(*args)
        calls.append(result is not None)
        return result

    monkeypatch.setattr(_hooks.core, "record_binary", counted)
    return calls


def _kernels() -> float:
    return npgpu.report().kernels.get("kernels_launched", 0)


def _e8(xp, a, b, c):
    return ((a * b + c) * a - b) / (c + 1.5) + xp.sqrt(xp.abs(a)) * 0.5 - xp.exp(-b)


@pytest.mark.parametrize("n", [1000, 5000])  # 5000: whole blocks and a partial one in CUDA's contiguous kernel
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_e8_is_one_kernel_with_numpys_answer(fusing, dtype, n):
    rng = numpy.random.default_rng(0)
    host = [rng.standard_normal(n).astype(dtype) for _ in range(3)]
    a, b, c = (npgpu.asarray(h) for h in host)
    npgpu.report(reset=True)
    e = _e8(npgpu, a, b, c)
    assert e._pending is not None and e.shape == (n,) and e.dtype == dtype
    assert _kernels() == 0  # nothing ran yet
    got = npgpu.asnumpy(e)
    assert _kernels() == 1
    assert npgpu.report().kernels["ops_fused"] == 13
    with numpy.errstate(all="ignore"):
        want = _e8(numpy, *host)
    # float32: a device's exp/sqrt may differ from NumPy's by an ulp, and E8 cancels
    tolerance = {"rtol": 1e-5, "atol": 1e-6} if dtype == "float32" else {"rtol": 1e-12, "atol": 1e-12}
    numpy.testing.assert_allclose(got, want, **tolerance)
    assert got.dtype == want.dtype


def test_a_loop_of_e8_launches_one_kernel_per_iteration_without_the_collector(fusing):
    # Intermediates die with their graph by reference counting alone: were anything in the
    # recording or the launch to hold them in a reference cycle, sync() would find them still
    # pending (until a collection) and run each as a kernel of its own.
    import gc

    a, b, c = (npgpu.asarray(numpy.linspace(1.0, 2.0, 3000) + k) for k in range(3))
    npgpu.report(reset=True)
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(3):
            e = _e8(npgpu, a, b, c)
            npgpu.sync()
            del e
    finally:
        if enabled:
            gc.enable()
    assert _kernels() == 3, npgpu.report()


def _operator_chain(a, b):
    p = a * b  # read by two graphs below: computed once, when the second records on it
    r = ((p + 1.5) - a) / (2.0 + b)
    s = -r * r
    t = abs(s) - 0.5 * a
    return p + 1.0, r, 3.0 - t, t * t, p * 2.0, a * a


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8"])
def test_operator_chains_taking_the_short_recording_path_match_numpy(fusing, dtype, taken):
    # Operators on same-shape device arrays and Python floats are recorded by one short function
    # once the dispatcher has seen their loop; the second round below takes it, so it is checked.
    rng = numpy.random.default_rng(5)
    host = [(rng.random(257) * 9 + 1).astype(dtype) for _ in range(2)]
    with numpy.errstate(all="ignore"):
        want = _operator_chain(*host)
        for _ in range(2):
            a, b = (npgpu.asarray(h) for h in host)
            got = _operator_chain(a, b)
            for g, w in zip(got, want):
                g = npgpu.asnumpy(g)
                assert g.dtype == w.dtype
                numpy.testing.assert_allclose(g, w, rtol=1e-5 if w.dtype == numpy.float32 else 1e-12)
    assert any(taken)


@pytest.mark.parametrize("scalar", [numpy.float64, numpy.float32, numpy.int64, numpy.int32, numpy.bool_])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "bool"])
def test_numpy_scalar_operands_taking_the_short_recording_path_match_numpy(fusing, dtype, scalar, taken):
    # NumPy's scalars are strong (NEP 50): float32 array * float64 scalar is float64, int32 array +
    # int64 scalar int64. Operators either way round and ufunc calls take the short road once the
    # dispatcher has seen their loop (the second round below), NumPy's scalar on the left included
    # (its operator calls the ufunc, which reaches the device array's __array_ufunc__).
    rng = numpy.random.default_rng(11)
    host = (rng.random(301) * 9 + 1).astype(dtype)
    k = scalar(3)

    def chain(x):
        mixed = (k + x) * k ^ x if x.dtype == bool and type(k) is numpy.bool_ else (k + x) * k - x  # (no bool -)
        return [k * x, x * k, numpy.add(k, x), numpy.multiply(x, k), mixed, x == k]

    with numpy.errstate(all="ignore"):
        want = chain(host)
        for _ in range(2):
            a = npgpu.asarray(host)
            got = chain(a)
            for g, w in zip(got, want):
                assert type(g) is npgpu.DeviceArray
                g = npgpu.asnumpy(g)
                assert g.dtype == w.dtype
                numpy.testing.assert_array_equal(g, w)
    assert taken.count(True) >= 7, taken


@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64", "bool"])
def test_integer_chains_match_numpy_exactly(fusing, dtype):
    rng = numpy.random.default_rng(3)
    host = [rng.integers(0, 100, 5003).astype(dtype) for _ in range(2)]
    a, b = (npgpu.asarray(h) for h in host)

    def chain(x, y):
        if dtype == "bool":
            return (x & ~y) | (x ^ y)
        return (x * 3 + y) // 7 - (x ^ y) + (x > y)

    numpy.testing.assert_array_equal(npgpu.asnumpy(chain(a, b)), chain(*host), strict=True)
    # a contiguous 2-d operand with a broadcast row takes the strided kernel
    grid = npgpu.asarray(host[0][:5000].reshape(50, 100))
    numpy.testing.assert_array_equal(npgpu.asnumpy(chain(grid, b[:100])), chain(host[0][:5000].reshape(50, 100),
                                                                             host[1][:100]), strict=True)


def test_fusion_off(device_backend):
    with backend_context(device_backend, fusion=False):
        a = npgpu.arange(10.0)
        b = a * 2 + 1
        assert b._pending is None


@pytest.mark.parametrize("trigger", ["print", "host", "scalar", "index", "function", "sync", "iterate"])
def test_value_needed_triggers(fusing, trigger, capsys):
    a = npgpu.arange(6.0)
    b = a * 2 + 1
    assert b._pending is not None
    if trigger == "print":
        print(b)
        assert capsys.readouterr().out.strip() == str(numpy.arange(6.0) * 2 + 1)
    elif trigger == "host":
        assert numpy.asarray(b).tolist() == [1, 3, 5, 7, 9, 11]
    elif trigger == "scalar":
        assert float(b[2]) == 5.0
    elif trigger == "index":
        assert b[1:3].tolist() == [3.0, 5.0]
    elif trigger == "function":
        assert npgpu.concatenate([b, b]).shape == (12,)
    elif trigger == "sync":
        npgpu.sync()
    elif trigger == "iterate":
        assert [float(x) for x in b] == [1, 3, 5, 7, 9, 11]
    assert b._pending is None
    assert registry.pending_count() == 0 or trigger not in ("sync",)


@pytest.mark.parametrize("write", ["iadd", "setitem", "copyto", "fill", "out"])
def test_writes_run_the_graphs_that_read_the_memory_first(fusing, write):
    x = npgpu.arange(5.0)
    view = x[1:]
    y = x * 2  # reads x
    z = view + 10  # reads x through a view
    if write == "iadd":
        x += 100
    elif write == "setitem":
        x[...] = 100
    elif write == "copyto":
        npgpu.copyto(x, 100.0)
    elif write == "fill":
        x.fill(100)
    else:
        npgpu.add(x, 0, out=x) if False else npgpu.multiply(x, 0, out=x)
    assert y.tolist() == [0, 2, 4, 6, 8]
    assert z.tolist() == [11, 12, 13, 14]


def test_inplace_chain_runs_into_target(fusing):
    a = npgpu.asarray(numpy.arange(8.0))
    b = npgpu.asarray(numpy.full(8, 2.0))
    npgpu.report(reset=True)
    a += b * b - 1
    a *= 0.5
    expected = (numpy.arange(8.0) + 3) * 0.5
    assert a.tolist() == expected.tolist()
    assert _kernels() == 2  # each statement one kernel, no temporaries


def test_overlapping_inplace_is_as_if_buffered(fusing):
    host = numpy.arange(10.0)
    a = npgpu.asarray(host.copy())
    a[1:] += a[:-1] * 1
    host[1:] += host[:-1] * 1
    assert a.tolist() == host.tolist()


_INPLACE_CASES = [
    # (target dtype, target shape, other: a dtype and shape, or a scalar, the operator)
    ("float64", (3, 4), ("float64", (3, 4)), operator.isub),
    ("float64", (3, 4), ("float64", (4,)), operator.iadd),  # broadcast into the target
    ("float32", (5,), ("float64", (5,)), operator.imul),  # same-kind narrowing store
    ("float32", (5,), 1e40, operator.iadd),  # a weak float overflowing float32
    ("int8", (6,), 100, operator.iadd),  # wraps
    ("int8", (6,), 300, operator.iadd),  # Python int out of range: OverflowError
    ("uint8", (6,), 1, operator.isub),  # wraps below zero
    ("int32", (4,), 0.5, operator.iadd),  # float into int: UFuncTypeError (casting)
    ("int32", (4,), ("float64", (4,)), operator.imul),  # the same, from an array
    ("int64", (4,), ("int64", (4,)), operator.ifloordiv),  # division by zero among them
    ("bool", (4,), True, operator.iadd),
    ("float64", (4,), ("float64", (3, 4)), operator.iadd),  # result doesn't fit the target
    ("float64", (2, 3), numpy.float32(2.5), operator.itruediv),
    ("complex128", (3,), 1j, operator.imul),
]


@pytest.mark.parametrize("case", _INPLACE_CASES, ids=lambda c: f"{c[0]}{c[1]}-{c[3].__name__}-{c[2]}")
def test_inplace_operators_give_numpys_answers_and_errors(fusing, case):
    dtype, shape, other, op = case
    rng = numpy.random.default_rng(3)
    host = (rng.standard_normal(shape) * 50).astype(dtype)
    if isinstance(other, tuple):
        other_host = (rng.integers(-3, 4, other[1]) if "int" in other[0] else rng.standard_normal(other[1]))
        other_host = other_host.astype(other[0])
        other_dev = npgpu.asarray(other_host)
    else:
        other_host = other_dev = other
    target = npgpu.asarray(host.copy())
    want = host.copy()
    with numpy.errstate(all="ignore"):
        try:
            op(want, other_host)
        except Exception as exc:  # NumPy's error: the same type, and the target left as it was
            with pytest.raises(type(exc)):
                op(target, other_dev)
            assert npgpu.asnumpy(target).tolist() == host.tolist()
            return
        result = op(target, other_dev)
    assert result is target
    numpy.testing.assert_array_equal(npgpu.asnumpy(target), want)
    assert npgpu.asnumpy(target).dtype == want.dtype


@pytest.mark.parametrize("other", [[1.5, -2.0, 3.0], (1, 2, 3), [[1], [2]], numpy.float32(0.25), numpy.int8(3),
                                   [1e40, 0.0, 1.0], [[1, 2], [3, 4]]],
                         ids=["list", "tuple", "nested", "float32", "int8", "list-overflow", "mismatched"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32"])
def test_inplace_with_sequences_and_numpy_scalars_is_numpys(fusing, other, dtype):
    # (sequences leave the in-place short road: the general path converts them as NumPy does)
    host = numpy.arange(6, dtype=dtype).reshape(2, 3)
    a = npgpu.asarray(host.copy())
    want = host.copy()
    with numpy.errstate(all="ignore"):
        try:
            want += other
        except Exception as exc:  # NumPy's error: the same type, and the target as it was
            with pytest.raises(type(exc)):
                a += other
            assert npgpu.asnumpy(a).tolist() == host.tolist()
            return
        a += other
    numpy.testing.assert_array_equal(npgpu.asnumpy(a), want)
    assert npgpu.asnumpy(a).dtype == want.dtype


def test_inplace_into_a_read_only_array_raises_numpys_error(fusing):
    a = npgpu.asarray(numpy.arange(4.0))
    a.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        a += 1.0
    with pytest.raises(ValueError, match="read-only"):
        npgpu.add(a, a, out=a)
    assert npgpu.asnumpy(a).tolist() == [0, 1, 2, 3]


def test_inplace_into_a_pending_target_and_a_held_reader(fusing):
    host = numpy.arange(6.0)
    a = npgpu.asarray(host.copy())
    x = a * 3  # pending, held: must see a before the write below
    y = a + 1
    y += a  # y is pending: computed, then written into
    a -= 2
    assert npgpu.asnumpy(x).tolist() == (host * 3).tolist()
    assert npgpu.asnumpy(y).tolist() == (host + 1 + host).tolist()
    assert npgpu.asnumpy(a).tolist() == (host - 2).tolist()


def test_a_held_operand_of_the_written_expression_keeps_the_old_values(fusing):
    # y is read by the statement's own graph and held by the program: it must be computed
    # from a before the write (a kernel computing it inside would leave y pending on the new a)
    host = numpy.arange(6.0)
    a = npgpu.asarray(host.copy())
    y = a * 2
    w = a[:-1] + 1  # (reads a through another view)
    a += y
    a[1:] -= w * 3
    want = host + host * 2
    want[1:] -= (host[:-1] + 1) * 3
    assert npgpu.asnumpy(a).tolist() == want.tolist()
    assert npgpu.asnumpy(y).tolist() == (host * 2).tolist()
    assert npgpu.asnumpy(w).tolist() == (host[:-1] + 1).tolist()


def test_views_and_host_operands_mix(fusing):
    host = numpy.arange(12.0).reshape(3, 4)
    a = npgpu.asarray(host)
    r = a.T * 2 + numpy.arange(3.0) - a[::-1].T + a[:, ::2].T[:1]
    want = host.T * 2 + numpy.arange(3.0) - host[::-1].T + host[:, ::2].T[:1]
    assert npgpu.asnumpy(r).tolist() == want.tolist()


def test_reductions_of_pending_graphs_are_one_kernel(fusing):
    rng = numpy.random.default_rng(1)
    hx, hy = rng.standard_normal((50, 40)), rng.standard_normal((50, 40))
    x, y = npgpu.asarray(hx), npgpu.asarray(hy)
    npgpu.report(reset=True)
    total = npgpu.sum(x * y)
    mse = npgpu.mean((x - y) ** 2, axis=0)
    peak = npgpu.max(npgpu.abs(x - y))
    cols = (x * 2).sum(axis=1, keepdims=True)
    numpy.testing.assert_allclose(float(total), (hx * hy).sum(), rtol=1e-12, atol=1e-12)
    numpy.testing.assert_allclose(npgpu.asnumpy(mse), ((hx - hy) ** 2).mean(axis=0), rtol=1e-12)
    assert float(peak) == numpy.abs(hx - hy).max()
    assert npgpu.asnumpy(cols).shape == (50, 1)
    want_cols = (hx * 2).sum(axis=1, keepdims=True)
    numpy.testing.assert_allclose(npgpu.asnumpy(cols), want_cols, rtol=1e-12, atol=1e-12)
    if fusing != "cupy":  # CuPy fuses sum/mean/prod; max of a graph runs as graph + reduction there
        assert _kernels() >= 4


def test_graph_size_limit(fusing):
    a = npgpu.arange(4.0)
    b = a
    for _ in range(recorder.MAX_NODES + 5):
        b = b + 1
    assert b._pending is not None and b._pending.nodes <= recorder.MAX_NODES
    assert b.tolist() == (numpy.arange(4.0) + recorder.MAX_NODES + 5).tolist()


def test_scalar_values_are_arguments_not_source(fusing):
    a = npgpu.arange(4.0)
    npgpu.asnumpy(a * 1.5 + 2)  # compile once
    backend = a._backend
    before = _cache_size(backend)
    results = [npgpu.asnumpy(a * float(k) + k).tolist() for k in range(5)]
    assert results[3] == (numpy.arange(4.0) * 3.0 + 3).tolist()
    if before is not None:
        assert _cache_size(backend) == before


def _cache_size(backend):
    if hasattr(backend, "_kernels"):
        return len(backend._kernels)
    info = getattr(backend, "cache_info", None)
    return None if info is None else info().get("size", info().get("currsize")) if isinstance(info(), dict) else None


def test_casts_are_graph_nodes(fusing):
    i8 = npgpu.asarray(numpy.array([100, 120, -128], dtype=numpy.int8))
    f32 = npgpu.asarray(numpy.array([0.5, 1.5, 2.5], dtype=numpy.float32))
    r = (i8 + i8) * f32 + 1  # int8 wraps first, then promotes to float32
    hi8, hf32 = numpy.array([100, 120, -128], dtype=numpy.int8), numpy.array([0.5, 1.5, 2.5], dtype=numpy.float32)
    want = (hi8 + hi8) * hf32 + 1
    assert r.dtype == want.dtype
    assert npgpu.asnumpy(r).tolist() == want.tolist()


def test_report_shows_fusion(fusing):
    npgpu.report(reset=True)
    a = npgpu.arange(100.0)
    npgpu.asnumpy(npgpu.sin(a) * 2 + a**2)
    kernels = npgpu.report().kernels
    assert kernels["kernels_launched"] == 1 and kernels["ops_fused"] == 4
    assert kernels["temporary_bytes_avoided"] == 2 * 3 * 800
    assert "kernels_launched=1" in str(npgpu.report())


# -- property tests: random expression trees against NumPy ------------------------------------

DTYPES = ["bool", "int8", "int32", "int64", "uint8", "uint16", "float32", "float64"]
BINARY = [numpy.add, numpy.subtract, numpy.multiply, numpy.maximum, numpy.minimum, numpy.less, numpy.equal,
          numpy.true_divide, numpy.logical_and]
UNARY = [numpy.absolute, numpy.negative, numpy.sqrt, numpy.sin, numpy.logical_not, numpy.square]
OPERATORS = {numpy.add: operator.add, numpy.subtract: operator.sub, numpy.multiply: operator.mul,
             numpy.true_divide: operator.truediv, numpy.less: operator.lt, numpy.equal: operator.eq,
             numpy.absolute: operator.abs, numpy.negative: operator.neg}


@st.composite
def expressions(draw):
    shapes = draw(st.sampled_from([[(6,), (6,), (1,)], [(3, 4), (4,), (3, 1)], [(2, 1, 3), (4, 1), (3,)],
                                   [(7,), (7,), (7,)], [(2, 3), (2, 3), (2, 3)]]))
    dtypes = [draw(st.sampled_from(DTYPES)) for _ in shapes]
    seeds = draw(st.lists(st.integers(0, 2**16), min_size=3, max_size=3))

    def tree(depth):
        choice = draw(st.integers(0, 9 if depth < 3 else 3))
        if choice <= 2:
            return ("leaf", choice)
        if choice == 3:
            return ("scalar", draw(st.sampled_from([2, -3, 0.5, True, numpy.float32(1.25), numpy.int16(7)])))
        # the last item: whether to write the call as a Python operator where it has one (a + b, -a)
        if choice <= 6:
            return ("unary", draw(st.sampled_from(UNARY)), tree(depth + 1), draw(st.booleans()))
        return ("binary", draw(st.sampled_from(BINARY)), tree(depth + 1), tree(depth + 1), draw(st.booleans()))

    return shapes, dtypes, seeds, tree(0)


def _host(shape, dtype, seed):
    rng = numpy.random.default_rng(seed)
    dt = numpy.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) > 0.5
    if dt.kind in "iu":
        return rng.integers(0 if dt.kind == "u" else -20, 20, shape).astype(dt)
    return (rng.standard_normal(shape) * 4).astype(dt)


def _build(xp, node, leaves):
    kind = node[0]
    if kind == "leaf":
        return leaves[node[1]]
    if kind == "scalar":
        return node[1]
    ufunc = getattr(xp, node[1].__name__)
    if kind == "unary":
        operand = _build(xp, node[2], leaves)
        if node[3] and node[1] in OPERATORS and node[2][0] != "scalar":
            return OPERATORS[node[1]](operand)
        return ufunc(operand)
    left, right = _build(xp, node[2], leaves), _build(xp, node[3], leaves)
    if node[4] and node[1] in OPERATORS and (node[2][0], node[3][0]).count("scalar") < 2:
        return OPERATORS[node[1]](left, right)  # (on two scalars Python itself would compute it)
    return ufunc(left, right)


_THROUGH_FLOAT32 = {numpy.dtype(d) for d in ("float32", "int16", "uint16")}


def _property(backend, case):
    shapes, dtypes, seeds, node = case
    hosts = [_host(s, d, seed) for s, d, seed in zip(shapes, dtypes, seeds)]
    try:
        with numpy.errstate(all="ignore"):
            want = numpy.asarray(_build(numpy, node, hosts))
    except (TypeError, OverflowError) as error:  # NumPy refuses (e.g. negative of bool): so must npgpu
        with backend_context(backend), numpy.errstate(all="ignore"):
            with pytest.raises(type(error)):
                _build(npgpu, node, [npgpu.asarray(h) for h in hosts])
        return
    with backend_context(backend), numpy.errstate(all="ignore"):
        got = _build(npgpu, node, [npgpu.asarray(h) for h in hosts])
        got = npgpu.asnumpy(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind == "f":
        # float32 anywhere on the way (float32 inputs; int16/uint16 go through float32 in sin, exp, ...):
        # the device's float32 libm may differ from the host's by an ulp, also under a float64 result
        narrow = want.dtype == numpy.float32 or any(numpy.dtype(d) in _THROUGH_FLOAT32 for d in dtypes)
        rtol = 1e-5 if narrow else 1e-12
        numpy.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, equal_nan=True)
    else:
        numpy.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("backend", FUSING)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=expressions())
def test_random_expression_trees_match_numpy(backend, case):
    _property(backend, case)


def test_graph_cache_reuses_graphs_and_tells_shared_operands_apart(fusing):
    host = numpy.arange(6.0)
    a, b = npgpu.asarray(host), npgpu.asarray(host + 10)
    numpy.testing.assert_array_equal(npgpu.asnumpy(a * b + 1), host * (host + 10) + 1)
    cached = len(materialize._GRAPHS)
    c, d = npgpu.asarray(host + 1), npgpu.asarray(host + 2)  # the same expression over new arrays
    numpy.testing.assert_array_equal(npgpu.asnumpy(c * d + 1), (host + 1) * (host + 2) + 1)
    assert len(materialize._GRAPHS) == cached
    # one array read twice has another signature than two arrays: a graph of its own, right values
    numpy.testing.assert_array_equal(npgpu.asnumpy(c * c + 1), (host + 1) ** 2 + 1)
    numpy.testing.assert_array_equal(npgpu.asnumpy(d * c + 1), (host + 2) * (host + 1) + 1)
