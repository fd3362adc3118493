"""npgpu.random against numpy.random: seeded sources give NumPy's numbers bit for bit on every
backend, the generators' states follow the draws; unseeded ones may use device streams."""

from __future__ import annotations

import pickle
import threading
import warnings

import numpy
import pytest

import npgpu
from npgpu import _random
from npgpu._harness import backend_context, differential
from npgpu.backends import random_kernels

N = 600  # elements of a "large" draw: the tests run at threshold 0, so they are made on the device

#: A call of every public method of RandomState (choice twice: its two roads draw differently).
RANDOM_STATE_CALLS = [
    ("beta", (1.5, 2.0, N), {}), ("binomial", (10, 0.3, N), {}), ("bytes", (N,), {}),
    ("chisquare", (3.0, N), {}), ("choice", (10, N), {}), ("choice", (10, N), {"p": [0.1] * 10}),
    ("choice", (10, 5), {"replace": False}), ("dirichlet", ([1.0, 2.0, 3.0], N), {}),
    ("exponential", (2.0, N), {}), ("f", (3.0, 4.0, N), {}), ("gamma", (2.0, 1.0, N), {}),
    ("geometric", (0.3, N), {}), ("get_state", (), {}), ("gumbel", (0.0, 1.0, N), {}),
    ("hypergeometric", (10, 5, 7, N), {}), ("laplace", (0.0, 1.0, N), {}), ("logistic", (0.0, 1.0, N), {}),
    ("lognormal", (0.0, 1.0, N), {}), ("logseries", (0.6, N), {}), ("multinomial", (10, [0.2, 0.3, 0.5], N), {}),
    ("multivariate_normal", ([0.0, 0.0], [[1.0, 0.5], [0.5, 1.0]], N), {}), ("negative_binomial", (5, 0.5, N), {}),
    ("noncentral_chisquare", (3.0, 2.0, N), {}), ("noncentral_f", (3.0, 4.0, 2.0, N), {}),
    ("normal", (1.0, 2.0, N), {}), ("pareto", (3.0, N), {}), ("permutation", (N,), {}), ("poisson", (4.0, N), {}),
    ("power", (2.0, N), {}), ("rand", (N,), {}), ("rand", (3, 200), {}), ("randint", (0, 100, N), {}),
    ("randn", (N,), {}), ("random", (N,), {}), ("random_integers", (1, 6, N), {}), ("random_sample", (N,), {}),
    ("random_sample", (), {"size": (20, 30)}), ("rayleigh", (1.0, N), {}), ("seed", (3,), {}),
    ("set_state", (("MT19937", numpy.arange(624, dtype=numpy.uint32), 9, 0, 0.0),), {}),
    ("shuffle", (numpy.arange(N),), {}), ("standard_cauchy", (N,), {}), ("standard_exponential", (N,), {}),
    ("standard_gamma", (2.0, N), {}), ("standard_normal", (N,), {}), ("standard_t", (5.0, N), {}),
    ("tomaxint", (N,), {}), ("triangular", (0.0, 1.0, 3.0, N), {}), ("uniform", (-1.0, 2.0, N), {}),
    ("uniform", (), {"low": 3, "size": N}), ("vonmises", (0.0, 1.0, N), {}), ("wald", (1.0, 1.0, N), {}),
    ("weibull", (2.0, N), {}), ("zipf", (2.0, N), {}), ("random_sample", (), {}), ("rand", (), {}),
]

#: A call of every public method of Generator.
GENERATOR_CALLS = [
    ("beta", (1.5, 2.0, N), {}), ("binomial", (10, 0.3, N), {}), ("bytes", (N,), {}),
    ("chisquare", (3.0, N), {}), ("choice", (10, N), {}), ("choice", (10, N), {"p": [0.1] * 10}),
    ("choice", (10, 5), {"replace": False}), ("dirichlet", ([1.0, 2.0, 3.0], N), {}),
    ("exponential", (2.0, N), {}), ("f", (3.0, 4.0, N), {}), ("gamma", (2.0, 1.0, N), {}),
    ("geometric", (0.3, N), {}), ("gumbel", (0.0, 1.0, N), {}), ("hypergeometric", (10, 5, 7, N), {}),
    ("integers", (0, 100, N), {}), ("integers", (5,), {"size": N, "dtype": numpy.int32}),
    ("laplace", (0.0, 1.0, N), {}), ("logistic", (0.0, 1.0, N), {}), ("lognormal", (0.0, 1.0, N), {}),
    ("logseries", (0.6, N), {}), ("multinomial", (10, [0.2, 0.3, 0.5], N), {}),
    ("multivariate_hypergeometric", ([3, 4, 5], 6, N), {}),
    ("multivariate_normal", ([0.0, 0.0], [[1.0, 0.5], [0.5, 1.0]], N), {}), ("negative_binomial", (5, 0.5, N), {}),
    ("noncentral_chisquare", (3.0, 2.0, N), {}), ("noncentral_f", (3.0, 4.0, 2.0, N), {}),
    ("normal", (1.0, 2.0, N), {}), ("pareto", (3.0, N), {}), ("permutation", (N,), {}),
    ("permuted", (numpy.arange(N),), {}), ("poisson", (4.0, N), {}), ("power", (2.0, N), {}),
    ("random", (N,), {}), ("random", ((20, 30),), {}), ("random", (N,), {"dtype": numpy.float32}),
    ("random", (), {}), ("rayleigh", (1.0, N), {}), ("shuffle", (numpy.arange(N),), {}), ("spawn", (2,), {}),
    ("standard_cauchy", (N,), {}), ("standard_exponential", (N,), {}), ("standard_gamma", (2.0, N), {}),
    ("standard_normal", (N,), {}), ("standard_t", (5.0, N), {}), ("triangular", (0.0, 1.0, 3.0, N), {}),
    ("uniform", (-1.0, 2.0, N), {}), ("uniform", (2,), {"high": 7.5, "size": (3, 200)}),
    ("vonmises", (0.0, 1.0, N), {}), ("wald", (1.0, 1.0, N), {}), ("weibull", (2.0, N), {}), ("zipf", (2.0, N), {}),
]


def _invoke(source, name, args, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # random_integers
        return getattr(source, name)(*args, **kwargs)


def _call(source, name, args, kwargs):
    """``source.name(*args, **kwargs)`` as something to compare (copies of arrays it mutates)."""
    args = tuple(a.copy() if isinstance(a, numpy.ndarray) else a for a in args)
    result = _invoke(source, name, args, kwargs)
    if name in ("shuffle", "permuted") and result is None:
        return args[0]
    if name == "spawn":
        return [g.random(3) for g in result]
    if name == "get_state":
        return result[:1] + tuple(result[2:]) + (numpy.asarray(result[1]),)
    return result


def _host(x):
    if isinstance(x, npgpu.DeviceArray):
        return npgpu.asnumpy(x)
    if isinstance(x, (list, tuple)):
        return type(x)(_host(v) for v in x)
    return x


def assert_identical(got, want, path="draw"):
    """Same type (a device array standing for an ndarray), dtype, shape and bits."""
    if isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want), path
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_identical(g, w, f"{path}[{i}]")
        return
    if isinstance(want, numpy.ndarray):
        assert isinstance(got, (numpy.ndarray, npgpu.DeviceArray)), f"{path}: {type(got).__name__}"
        got = _host(got)
        assert (got.dtype, got.shape) == (want.dtype, want.shape), path
        assert got.tobytes() == want.tobytes(), f"{path}: values differ"
        return
    got = _host(got)
    if isinstance(got, numpy.ndarray) and got.ndim == 0 and not isinstance(want, numpy.ndarray):
        got = got[()]
    assert type(got) is type(want), f"{path}: {type(got).__name__} != {type(want).__name__}"
    assert got == want or (got != got and want != want), f"{path}: {got!r} != {want!r}"


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value.tolist() if isinstance(value, numpy.ndarray) else value


def _state(bit_generator):
    return _plain(bit_generator.state)


# -- seeded legacy scripts --------------------------------------------------------------------

def _legacy_script(xp):
    xp.random.seed(1234)
    draws = [xp.random.rand(3, 4), xp.random.random(1001), xp.random.random_sample(size=(10, 10)),
             xp.random.ranf(7), xp.random.sample(5), xp.random.uniform(-2, 3, 500), xp.random.randn(100),
             xp.random.normal(1, 2, size=50), xp.random.randint(0, 10, 300), xp.random.standard_normal(20),
             xp.random.exponential(2.0, 30), xp.random.standard_exponential(10), xp.random.choice(10, 40),
             xp.random.permutation(20), xp.random.rand(), xp.random.random(), xp.random.uniform(5, 6)]
    state = xp.random.get_state()
    return draws, (state[0], state[1].tolist(), state[2], state[3], state[4])


def test_seeded_legacy_script_gives_numpys_numbers(npgpu_backend):
    want = _legacy_script(numpy)
    with backend_context(npgpu_backend):
        got = _legacy_script(npgpu)
    assert_identical(got, want)
    if npgpu_backend not in ("off", "numpy"):
        assert all(isinstance(d, npgpu.DeviceArray) for d in got[0][:12])


def test_seeded_draws_of_both_sizes_interleave(device_backend):
    """Small draws are NumPy's on the host, large ones the device's: one stream, as in NumPy,
    which a host draw after them continues."""
    sizes = [3, 5000, 1, 4096, 7, 6000, 2, 1000]

    def script(xp):
        xp.random.seed(99)
        rng = xp.random.default_rng(99)
        out = []
        for n in sizes:
            out += [xp.random.random(n), rng.random(n), xp.random.uniform(1, 3, n), rng.uniform(-1, 1, n)]
        return out

    want = script(numpy)
    want_after = numpy.random.random(4)
    with backend_context(device_backend, threshold=8 * 1000):
        got = script(npgpu)
    assert_identical(got, want)
    assert numpy.random.random(4).tolist() == want_after.tolist()  # NumPy's own draws continue the stream
    for i, n in enumerate(sizes):
        expected = npgpu.DeviceArray if n >= 1000 else numpy.ndarray
        assert all(type(d) is expected for d in got[4 * i: 4 * i + 4]), n


def test_seeded_scripts_need_no_flag():
    """The default (random="auto") is what makes a seeded script print NumPy's numbers."""
    assert npgpu.enable("numpy").state.random == "auto"
    npgpu.disable()


# -- Generator, default_rng, RandomState --------------------------------------------------------

def _generators(xp):
    return [xp.random.default_rng(5), xp.random.default_rng(xp.random.SeedSequence(6)),
            xp.random.Generator(xp.random.PCG64(7)), xp.random.Generator(xp.random.MT19937(8)),
            xp.random.Generator(xp.random.Philox(9)), xp.random.Generator(xp.random.PCG64DXSM(10)),
            xp.random.default_rng(xp.random.SFC64(11))]


@pytest.mark.parametrize("which", range(7))
def test_generator_methods_give_numpys_numbers(npgpu_backend, which):
    def body(xp):
        rng = _generators(xp)[which]
        return [_call(rng, name, args, kwargs) for name, args, kwargs in GENERATOR_CALLS], _state(rng.bit_generator)

    want = body(numpy)
    with backend_context(npgpu_backend):
        got = body(npgpu)
    assert_identical(got, want)


@pytest.mark.parametrize("seed", [17, "pcg64"])
def test_random_state_methods_give_numpys_numbers(npgpu_backend, seed):
    legacy_only = () if seed == 17 else ("get_state", "set_state", "seed")  # (MT19937's state)

    def body(xp):
        rs = xp.random.RandomState(17 if seed == 17 else xp.random.PCG64(17))
        return ([_call(rs, name, args, kwargs) for name, args, kwargs in RANDOM_STATE_CALLS if name not in legacy_only],
                _state(rs._bit_generator))

    want = body(numpy)
    with backend_context(npgpu_backend):
        got = body(npgpu)
    assert_identical(got, want)


def test_buffered_32_bit_half_survives_a_device_draw(device_backend):
    """PCG64 keeps half of a 64-bit word for the next 32-bit draw; a device draw of doubles
    leaves it there, as NumPy's draw does."""
    def body(xp):
        rng = xp.random.default_rng(3)
        a = rng.integers(0, 2**31, dtype=numpy.int32)
        b = rng.random(5000)
        return [a, b, rng.integers(0, 2**31, 4, dtype=numpy.int32)], _state(rng.bit_generator)

    want = body(numpy)
    with backend_context(device_backend):
        got = body(npgpu)
    assert_identical(got, want)
    assert isinstance(got[0][1], npgpu.DeviceArray)


@differential()
def test_types_reprs_and_identity(xp):
    rng, rs = xp.random.default_rng(1), xp.random.RandomState(2)
    return (isinstance(rng, numpy.random.Generator), isinstance(rng, xp.random.Generator),
            isinstance(rs, numpy.random.RandomState), isinstance(rs, xp.random.RandomState),
            str(rng), str(rs), type(rng).__name__, type(rs).__name__, xp.random.default_rng(rng) is rng,
            type(rng.spawn(1)[0]).__name__, repr(rng.bit_generator).split(" at ")[0])


@pytest.mark.parametrize("call", [
    "random(-1)", "random((2, -1))", "rand(2.5)", "rand(2, 3, x=1)", "random_sample(3, 4)", "uniform(0, numpy.inf, 5)",
    "uniform(numpy.nan, 1, 5)", "uniform(0, 10**400, 5)", "randint(5, 2, 10)", "uniform(0, 1, 5, size=3)",
    "normal(0, -1, 10)", "random(size='x')",
])
@differential()
def test_legacy_errors(xp, call):
    xp.random.seed(0)
    return eval("xp.random." + call, {"xp": xp, "numpy": numpy})  # noqa: S307 (our own table)


@pytest.mark.parametrize("call", [
    "random(-1)", "random(3, dtype=numpy.int64)", "random(3, out=numpy.empty(4))", "uniform(0, numpy.inf, 5)",
    "uniform(low=1, low2=3)", "integers(5, 2, 10)", "random(size=(2.5,))", "random((2, 3), 'f8')",
    "random(4, dtype='float64')", "standard_normal(4, out=numpy.empty(5))", "uniform(3, 1, 5)", "uniform(2, 2, 5)",
])
@differential()
def test_generator_errors_and_arguments(xp, call):
    return eval("xp.random.default_rng(0)." + call, {"xp": xp, "numpy": numpy})  # noqa: S307 (our own table)


@pytest.mark.parametrize("bad", ["'seed'", "1.5", "[-1]"])
@differential()
def test_bad_seeds(xp, bad):
    return xp.random.default_rng(eval(bad)).random(3)  # noqa: S307 (our own table)


def test_numpys_draws_move_from_the_upload_threshold(device_backend):
    """A draw the device computes is made there from the creation threshold; a draw NumPy makes
    is host data, uploaded from the upload threshold like any other."""
    computes = "PCG64" in npgpu.backends.get_backend(device_backend).random_streams
    with npgpu.enable(device_backend) as change:
        n = max(-(-change.state.create_limit // 8), 1)  # (at least the creation threshold's bytes)
        assert n * 8 < change.state.host_limit
        rng = npgpu.random.default_rng(1)
        made, drawn = rng.random(n), rng.standard_normal(n)
    with backend_context(device_backend):
        moved = rng.standard_normal(n)
    assert type(made) is (npgpu.DeviceArray if computes else numpy.ndarray)
    assert (type(drawn), type(moved)) == (numpy.ndarray, npgpu.DeviceArray)


def test_out_is_filled_and_returned(device_backend):
    out, want = numpy.empty(5000), numpy.random.default_rng(2).random(5000)
    with backend_context(device_backend):
        assert npgpu.random.default_rng(2).random(out=out) is out
    assert out.tobytes() == want.tobytes()


def test_pickle_and_copy_keep_class_and_stream(device_backend):
    with backend_context(device_backend):
        rng, rs = npgpu.random.default_rng(4), npgpu.random.RandomState(4)
        rng.random(10), rs.random_sample(10), rs.randn(3)  # randn leaves a gaussian cached in rs
        for source, draw in ((rng, "random"), (rs, "randn")):
            clone = pickle.loads(pickle.dumps(source))
            assert type(clone) is type(source)
            assert_identical(getattr(clone, draw)(5000), _host(getattr(source, draw)(5000)))


def test_draws_from_threads_take_one_stream(device_backend):
    """Concurrent draws from one seeded generator split NumPy's stream between them, each draw
    a contiguous run (the bit generator's lock holds across a device draw)."""
    draws: list[numpy.ndarray] = []

    def worker(rng):
        with backend_context(device_backend):
            for _ in range(10):
                draws.append(_host(rng.random(2000)))

    rng = npgpu.random.default_rng(21)
    threads = [threading.Thread(target=worker, args=(rng,)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    want = numpy.random.default_rng(21).random(40000).reshape(20, 2000)
    assert sorted(d.tobytes() for d in draws) == sorted(w.tobytes() for w in want)


# -- unseeded draws, random="device" / "numpy" ----------------------------------------------------

def _global_key():
    return numpy.random.get_state()[1].tolist()


def test_unseeded_draws_land_on_the_device(device_backend):
    """Unseeded: the device's own stream where the backend has one (NumPy's generator does not
    move), else NumPy's, made on the device all the same."""
    backend = npgpu.backends.get_backend(device_backend)
    has_stream = backend.has_random_stream
    npgpu.random.seed(None)
    before = _global_key()
    with backend_context(device_backend):
        draws = [npgpu.random.random(100_000), npgpu.random.rand(300, 300), npgpu.random.default_rng().random(90_000),
                 npgpu.random.RandomState().random_sample(90_000)]
        normal = npgpu.random.default_rng().standard_normal(90_000)
        assert (_global_key() == before) == has_stream
        on_host = npgpu.random.normal(numpy.zeros(2), 1)  # array-valued parameters: NumPy's
    assert all(isinstance(d, npgpu.DeviceArray) for d in [*draws, normal]) and type(on_host) is numpy.ndarray
    for d in draws:
        values = _host(d)
        assert values.dtype == numpy.float64 and 0 <= values.min() and values.max() < 1
        assert abs(values.mean() - 0.5) < 0.01 and abs(values.var() - 1 / 12) < 0.005
    values = _host(normal)
    assert abs(values.mean()) < 0.02 and abs(values.std() - 1) < 0.02


def test_random_device_opts_into_device_streams(device_backend):
    backend = npgpu.backends.get_backend(device_backend)
    has_stream = backend.has_random_stream
    with backend_context(device_backend, random="device"):
        npgpu.random.seed(8)
        before = _global_key()
        x = npgpu.random.random(5000)
    assert isinstance(x, npgpu.DeviceArray)
    assert (_global_key() == before) == has_stream  # device streams leave NumPy's generator alone


def test_random_numpy_gives_numpys_stream_unseeded(device_backend):
    npgpu.random.seed(None)
    rng = npgpu.random.default_rng()
    state, rng_state = numpy.random.get_state(), rng.bit_generator.state
    with backend_context(device_backend, random="numpy"):
        x, y, z = npgpu.random.random(5000), rng.random(5000), rng.standard_normal(500)
    numpy.random.set_state(state)
    replay = numpy.random.default_rng()
    replay.bit_generator.state = rng_state
    assert _host(x).tobytes() == numpy.random.random(5000).tobytes()
    assert _host(y).tobytes() == replay.random(5000).tobytes()
    assert _host(z).tobytes() == replay.standard_normal(500).tobytes()


def test_random_option_is_checked():
    with pytest.raises(ValueError, match="random must be one of"):
        npgpu.enable("numpy", random="gpu")


# -- accounting -----------------------------------------------------------------------------------

def test_seeded_draws_are_device_or_host_work_never_fallbacks(device_backend):
    npgpu.report(reset=True)
    with backend_context(device_backend, on_fallback="raise"):
        rng = npgpu.random.default_rng(1)
        rng.random(5000), rng.standard_normal(5000)
    counts = npgpu.report().as_dict()["functions"]
    computes = "PCG64" in npgpu.backends.get_backend(device_backend).random_streams
    assert counts["random.Generator.random"]["device" if computes else "host"] == 1
    normal = counts["random.Generator.standard_normal"]
    assert normal["host"] == 1 and normal["bytes_to_device"] == 5000 * 8
    assert npgpu.report().totals().fallback == 0


# -- NumPy's own methods that draw through overridden ones ----------------------------------------

@pytest.mark.parametrize("cls, calls", [(numpy.random.RandomState, RANDOM_STATE_CALLS),
                                        (numpy.random.Generator, GENERATOR_CALLS)])
def test_numpy_methods_that_call_back_are_listed(cls, calls):
    """Every NumPy method that draws through a method npgpu overrides (choice -> random) runs as
    NumPy inside npgpu (_CALLS_BACK), so that NumPy's code never gets a device array."""
    public = {n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n))}
    assert public == {name for name, _, _ in calls}, "a NumPy method is missing from the table"
    overridden = public & set(_random._LEGACY if cls is numpy.random.RandomState else _random._GENERATOR)
    seen: list[str] = []

    def spy(name):
        def method(self, *args, **kwargs):
            seen.append(name)
            return getattr(cls, name)(self, *args, **kwargs)
        return method

    spying = type("Spy", (cls,), {name: spy(name) for name in overridden})
    calling_back = set()
    for name, args, kwargs in calls:
        source = spying(0) if cls is numpy.random.RandomState else spying(numpy.random.PCG64(0))
        seen.clear()
        _invoke(source, name, tuple(a.copy() if isinstance(a, numpy.ndarray) else a for a in args), kwargs)
        if name not in overridden and seen:
            calling_back.add(name)
    assert calling_back == set(_random._CALLS_BACK[cls.__name__])


# -- the kernels, against NumPy -------------------------------------------------------------------

def test_pcg64_jump_is_numpys_advance():
    for steps in (0, 1, 2, 3, 1000, 2**40 + 17, 2**64 - 1):
        bit_generator = numpy.random.PCG64(steps % 97)
        state = bit_generator.state
        bit_generator.advance(steps)
        assert random_kernels.pcg64_after(state, steps)["state"] == bit_generator.state["state"]


KERNEL_CASES = [(0, 1), (0, 312), (0, 313), (1, 624), (311, 5000), (623, 1), (0, 100_003)]


def _kernel_cases(kind):
    """(state before, NumPy's draw, state after) for draws from varied positions: odd MT19937
    positions (one 32-bit word drawn), a PCG64 with a buffered 32-bit half."""
    for before, n in KERNEL_CASES:
        bit_generator = getattr(numpy.random, kind)(before + n)
        rng = numpy.random.Generator(bit_generator)
        rng.random(before)
        if before % 2:
            bit_generator.random_raw(1) if kind == "MT19937" else rng.integers(0, 9, dtype=numpy.int32)
        state = bit_generator.state
        yield state, rng.random(n), bit_generator.state


def _check_kernel(draw, to_host, kind):
    for state, want, after in _kernel_cases(kind):
        native, state_after = draw(state, want.shape)
        assert to_host(native).tobytes() == want.tobytes(), (kind, want.size)
        assert _state_equal(state_after, after)


def _state_equal(a, b):
    if a["bit_generator"] == "MT19937":
        return (a["state"]["pos"] == b["state"]["pos"]
                and numpy.array_equal(a["state"]["key"], b["state"]["key"]))
    return a == b


@pytest.mark.opencl
@pytest.mark.parametrize("kind", ["PCG64", "MT19937"])
def test_opencl_kernels_are_bit_exact(cl, kind):
    _check_kernel(lambda state, shape: random_kernels.opencl_doubles(cl, state, shape), cl.to_host, kind)


@pytest.mark.opencl
def test_opencl_grid_stride_walk_is_bit_exact(cl):
    """The GPU layout of the PCG64 kernel (element j on work-item j mod items), run here."""
    for state, want, _ in _kernel_cases("PCG64"):
        n = want.size
        out = cl.empty((n,), numpy.float64)
        geometry = random_kernels.gpu_geometry(n)
        random_kernels._opencl_launch(cl, "npg_pcg64_doubles", geometry[0], 64,
                                      [out.data, *random_kernels._pcg64_arguments(state, n, *geometry)])
        assert cl.to_host(out).tobytes() == want.tobytes(), n


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["PCG64", "MT19937"])
def test_cupy_kernels_are_bit_exact(kind):
    pytest.importorskip("cupy")
    from npgpu.backends import unavailable_reason

    reason = unavailable_reason("cupy")
    if reason:
        pytest.skip(reason)
    backend = npgpu.backends.get_backend("cupy")
    assert kind in backend.random_streams
    _check_kernel(backend.random_doubles, lambda a: a.get(), kind)


@pytest.mark.gpu
def test_cupy_seeded_script_uses_the_kernels():
    """On CuPy a seeded legacy script's uniform draws are made by the kernels (device calls)."""
    from npgpu.backends import unavailable_reason

    reason = unavailable_reason("cupy")
    if reason:
        pytest.skip(reason)
    npgpu.report(reset=True)
    want = _legacy_script(numpy)
    with backend_context("cupy"):
        got = _legacy_script(npgpu)
    assert_identical(got, want)
    counts = npgpu.report().as_dict()["functions"]
    assert counts["random.RandomState.rand"]["device"] == counts["random.RandomState.random"]["device"] == 1


@differential()
def test_shuffling_a_device_array_is_numpys(xp):
    # NumPy took a device array for a sequence: a UserWarning (an error under pytest's filter) and
    # a Python swap per element; the permutations must be NumPy's, the stream moved as NumPy's
    xp.random.seed(3)
    a = xp.asarray(numpy.arange(50.0))
    xp.random.shuffle(a)
    rows = xp.asarray(numpy.arange(12).reshape(4, 3))
    generator = xp.random.default_rng(5)
    generator.shuffle(rows)
    generator.shuffle(rows, axis=1)
    state = xp.random.RandomState(7)
    state.shuffle(a[::2])  # (a view: the shuffle lands in its base)
    read_only = xp.asarray(numpy.arange(5))
    read_only.flags.writeable = False
    with pytest.raises(ValueError):
        generator.shuffle(read_only)
    return a, rows, generator.random(3), xp.random.random(2), state.random(2), read_only


@differential()
def test_drawing_into_a_device_array_is_numpys(xp):
    # NumPy refused the device array ("Supplied output array must be contiguous, writable, ...")
    generator = xp.random.default_rng(9)
    out = xp.asarray(numpy.zeros(6))
    returned = generator.random(out=out)
    normals = xp.asarray(numpy.zeros((2, 3)))
    generator.standard_normal(out=normals)
    singles = xp.asarray(numpy.zeros(4, numpy.float32))
    generator.random(dtype=numpy.float32, out=singles)
    with pytest.raises(ValueError):  # (not contiguous: NumPy's own refusal)
        generator.random(out=xp.asarray(numpy.zeros(8))[::2])
    with pytest.raises(TypeError):  # (a float32 out for a float64 draw)
        generator.random(out=xp.asarray(numpy.zeros(3, numpy.float32)))
    return returned is out, out, normals, singles, generator.random(2)
