"""The OpenCL device's own random streams (npgpu/backends/opencl/philox.py): Philox4x32-10 as
Random123 defines it, NumPy's ranges, dtypes and shapes, distributions checked statistically
with fixed device seeds, and the choice between device streams and NumPy's in npgpu.random."""

from __future__ import annotations

import math
import threading

import numpy
import pytest

import npgpu
from npgpu._harness import backend_context
from npgpu.backends.opencl import philox
from npgpu.kernels import codegen

pytestmark = pytest.mark.opencl

N = 200_000  # elements of a statistical draw: sigma of a mean of uniforms is 0.00065


def _draw(cl, name, *args, seed=1234, **kwargs):
    return cl.to_host(getattr(cl.random_generator(seed), name)(*args, **kwargs))


def _ks(values, cdf):
    """Kolmogorov-Smirnov statistic of ``values`` against ``cdf``, times sqrt(n)."""
    x = numpy.sort(values.astype(numpy.float64).ravel())
    n = x.size
    f = cdf(x)
    d = max(numpy.max(numpy.arange(1, n + 1) / n - f), numpy.max(f - numpy.arange(n) / n))
    return d * math.sqrt(n)


_ERF = numpy.vectorize(math.erf)
#: sqrt(n) * D beyond this has probability about 2e-4 for the right distribution
KS_BOUND = 2.1


def _within(value, expected, sigma, k=5.0):
    assert abs(value - expected) < k * sigma, (value, expected, sigma)


# -- the generator is Random123's Philox4x32-10 ----------------------------------------------

def _philox_words(cl, source_body, count):
    src = philox._HEADER + "#include <pyopencl-random123/philox.cl>\n" + source_body
    kernel = cl._build(("test-philox", source_body), lambda: codegen.KernelSource(src, "t", "opencl", (), False))
    out = cl.empty((count,), numpy.uint32)
    cl._enqueue(kernel, (1,), (1,), [out.data])
    return cl.to_host(out)


def test_philox_is_random123s(cl):
    """Random123's known answers (kat_vectors: counter and key all 0, all 1s), and the same words
    as PyOpenCL's philox4x32 for counters with carries and varied keys."""
    got = _philox_words(cl, """
__kernel void t(__global uint* out) {
  uint4 w[4];
  npg_philox4(w, 0UL, 0UL, 0u, 0u);
  for (int m = 0; m < 4; m++) out[m] = w[m].s0;
  npg_philox4(w, 0xfffffffffffffffcUL, 0xffffffffffffffffUL, 0xffffffffu, 0xffffffffu);
  for (int m = 0; m < 4; m++) out[4 + m] = w[m].s3;
}""", 8)
    assert [f"{x:08x}" for x in got] == ["6627e8d5", "e169c58d", "bc57ac4c", "9b00dbd8",
                                         "408f276d", "41c83b0e", "a20bc7c6", "6d5451fd"]
    cases = [(0x00000000fffffffc, 7, 1, 2), (0x123456789abcdef0, 0xfedcba9876543210, 0x243f6a88, 0x85a308d3),
             (4 * 10**6, 2**32 + 5, 0xdeadbeef, 0)]
    body = "__kernel void t(__global uint* out) {\n  uint4 w[4];\n"
    for c, (b0, d, k0, k1) in enumerate(cases):
        body += f"""  npg_philox4(w, {b0}UL, {d}UL, {k0}u, {k1}u);
  for (int i = 0; i < 4; i++) {{
    u64 b = {b0}UL + i, d = {d}UL;
    philox4x32_ctr_t c = {{{{(uint)b, (uint)(b >> 32), (uint)d, (uint)(d >> 32)}}}};
    philox4x32_key_t k = {{{{{k0}u, {k1}u}}}};
    philox4x32_ctr_t r = philox4x32(c, k);
    uint mine[4] = {{w[0][i], w[1][i], w[2][i], w[3][i]}};
    for (int m = 0; m < 4; m++) out[{32 * c} + 8 * i + 2 * m] = mine[m], out[{32 * c} + 8 * i + 2 * m + 1] = r.v[m];
  }}
"""
    words = _philox_words(cl, body + "}", 32 * len(cases)).reshape(-1, 2)
    assert (words[:, 0] == words[:, 1]).all()
    assert len(set(words[:, 0].tolist())) == words.shape[0]  # (and not a constant)


# -- uniform -----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype, bits", [(numpy.float64, 53), (numpy.float32, 24)])
def test_uniform_range_dtype_grid_and_distribution(cl, dtype, bits):
    x = _draw(cl, "random", N + 3, dtype=dtype)
    assert x.dtype == dtype and x.shape == (N + 3,)
    assert x.min() >= 0 and x.max() < 1
    assert (x * 2.0**bits == numpy.floor(x * 2.0**bits)).all()  # multiples of 2**-bits, as NumPy's
    _within(x.mean(dtype=numpy.float64), 0.5, math.sqrt(1 / 12 / x.size))
    _within(x.var(dtype=numpy.float64), 1 / 12, math.sqrt(1 / 180 / x.size))
    assert _ks(x, lambda v: v) < KS_BOUND
    # every bit of the mantissa varies (a word taken short would leave low bits constant)
    low_bits = (x * 2.0**bits).astype(numpy.uint64)
    assert numpy.bitwise_or.reduce(low_bits) == 2**bits - 1


def test_uniform_bounds(cl):
    x = _draw(cl, "uniform", -2.0, 3.0, (400, 500))
    assert x.shape == (400, 500) and x.min() >= -2 and x.max() < 3
    _within(x.mean(), 0.5, 5 / math.sqrt(12 * x.size))
    assert _ks((x + 2) / 5, lambda v: v) < KS_BOUND


def test_legacy_uniform_with_high_below_low(cl):
    """NumPy's legacy uniform draws from (high, low] when high < low; Generator.uniform refuses."""
    x = cl.to_host(cl.random_call("uniform", (3.0, 1.0, 50_000), {}))
    assert x.min() > 1 and x.max() <= 3
    assert not cl.supports_generator("uniform", (3.0, 1.0, 10), {})


# -- normal and exponential --------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [numpy.float64, numpy.float32])
def test_normal_moments_and_distribution(cl, dtype):
    x = _draw(cl, "standard_normal", N + 1, dtype=dtype)
    assert x.dtype == dtype and numpy.isfinite(x).all()
    n = x.size
    x = x.astype(numpy.float64)
    _within(x.mean(), 0.0, 1 / math.sqrt(n))
    _within(x.var(), 1.0, math.sqrt(2 / n))
    _within(numpy.mean(x**4), 3.0, math.sqrt(96 / n))
    assert _ks(x, lambda v: 0.5 * (1 + _ERF(v / math.sqrt(2)))) < KS_BOUND
    # the pairs of Box-Muller are uncorrelated
    assert abs(numpy.corrcoef(x[:-1], x[1:])[0, 1]) < 5 / math.sqrt(n)


def test_normal_loc_scale(cl):
    x = _draw(cl, "normal", 10.0, 3.0, N)
    _within(x.mean(), 10.0, 3 / math.sqrt(N))
    _within(x.std(), 3.0, 3 * math.sqrt(0.5 / N))


def test_exponential(cl):
    x = _draw(cl, "exponential", 2.0, N)
    assert x.min() >= 0 and numpy.isfinite(x).all() and not numpy.signbit(x).any()
    _within(x.mean(), 2.0, 2 / math.sqrt(N))
    _within(x.var(), 4.0, math.sqrt(8 * 4**2 / N))
    assert _ks(x, lambda v: 1 - numpy.exp(-v / 2)) < KS_BOUND


# -- integers ----------------------------------------------------------------------------------

INT_DTYPES = [numpy.int8, numpy.uint8, numpy.int16, numpy.uint16, numpy.int32, numpy.uint32, numpy.int64, numpy.uint64]


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integers_cover_the_dtype_exactly(cl, dtype):
    """integers(min, max, endpoint=True) reaches both ends of the dtype; a small range hits every
    value, with counts a chi-square test accepts."""
    info = numpy.iinfo(dtype)
    x = _draw(cl, "integers", int(info.min), int(info.max), 50_000, dtype=dtype, endpoint=True)
    assert x.dtype == dtype and x.shape == (50_000,)
    if info.bits <= 8:
        assert x.min() == info.min and x.max() == info.max
    signed_low = -3 if info.min < 0 else 250
    small = _draw(cl, "integers", signed_low, signed_low + 6, 60_000, dtype=dtype)
    counts = numpy.bincount((small.astype(numpy.int64) - signed_low), minlength=6)
    assert counts.size == 6 and counts.min() > 0
    expected = small.size / 6
    assert ((counts - expected) ** 2 / expected).sum() < 25  # chi-square, 5 degrees of freedom: p ~ 1e-4


def test_integers_ranges_and_endpoint(cl):
    x = _draw(cl, "integers", 5, 8, 30_000)
    assert x.dtype == numpy.int64 and set(numpy.unique(x).tolist()) == {5, 6, 7}
    x = _draw(cl, "integers", 5, 8, 30_000, endpoint=True)
    assert set(numpy.unique(x).tolist()) == {5, 6, 7, 8}
    x = _draw(cl, "integers", 7, size=1000)  # high=None: [0, low)
    assert x.min() == 0 and x.max() == 6
    assert (_draw(cl, "integers", 4, 5, 1000) == 4).all()
    b = _draw(cl, "integers", 0, 2, 20_000, dtype=bool)
    assert b.dtype == numpy.bool_ and b.view(numpy.uint8).max() == 1
    _within(b.mean(), 0.5, 0.5 / math.sqrt(b.size))
    r = cl.to_host(cl.random_call("randint", (-5, 5, 20_000), {"dtype": numpy.int16}))
    assert r.dtype == numpy.int16 and r.min() == -5 and r.max() == 4


@pytest.mark.parametrize("high, dtype", [(3 * 2**30, numpy.int64), (3 * 2**61, numpy.int64),
                                         (3 * 2**62, numpy.uint64)])
def test_integers_reject_where_multiplying_would_bias(cl, high, dtype):
    """Ranges where multiply-and-shift without rejection gives some values 3 preimages and others
    2 (x * 3 * 2**k >> bits): value mod 3 is uneven unless the rejections run (about 1 in 8 draws
    at 3 * 2**61)."""
    x = _draw(cl, "integers", 0, high, 120_000, dtype=dtype)
    assert x.min() >= 0 and int(x.max()) < high
    counts = numpy.bincount((x % 3).astype(numpy.int64), minlength=3)
    expected = x.size / 3
    assert ((counts - expected) ** 2 / expected).sum() < 20  # (biased: about 0.375/0.375/0.25)


def test_integers_wide_ranges_use_every_bit(cl):
    u = _draw(cl, "integers", 0, 2**64 - 1, 4000, dtype=numpy.uint64, endpoint=True)
    assert numpy.bitwise_or.reduce(u) == numpy.uint64(2**64 - 1)
    assert numpy.bitwise_and.reduce(u) == 0
    s = _draw(cl, "integers", -2**63, 2**63, 4000)
    assert (s < 0).any() and (s > 0).any()


# -- shapes, streams, seeds ----------------------------------------------------------------------

@pytest.mark.parametrize("size", [(), 0, (3, 0), (1,), 7, (2, 3, 5), [4, 1]])
def test_shapes(cl, size):
    want = numpy.random.default_rng(0).random(size).shape
    for name, args in (("random", ()), ("standard_normal", ()), ("integers", (0, 9)), ("exponential", (1.0,))):
        got = getattr(cl.random_generator(1), name)(*args, size=size)
        assert got.shape == want, (name, size)
        assert cl.to_host(got).shape == want


def test_draws_differ_and_seeds_repeat(cl):
    gen = cl.random_generator(7)
    a, b = cl.to_host(gen.random(1000)), cl.to_host(gen.random(1000))
    assert not numpy.array_equal(a, b)
    assert numpy.array_equal(a, cl.to_host(cl.random_generator(7).random(1000)))
    assert not numpy.array_equal(a, cl.to_host(cl.random_generator(8).random(1000)))
    unseeded = [cl.to_host(cl.random_generator(None).random(1000)) for _ in range(2)]
    assert not numpy.array_equal(*unseeded)
    cl.random_seed(3)
    c = cl.to_host(cl.random_call("rand", (10, 10), {}))
    cl.random_seed(3)
    assert numpy.array_equal(c, cl.to_host(cl.random_call("random_sample", (), {"size": (10, 10)})))


def test_gpu_layout_gives_the_same_stream(cl):
    """A draw depends on the seed and the count of draws, not on the launch: the grid-stride walk
    of GPUs (run here) makes the CPU's numbers."""
    from npgpu.backends.opencl import OpenCLBackend

    gpu_like = OpenCLBackend()
    gpu_like.is_cpu = False
    for name, args in (("random", (10_001,)), ("standard_normal", (9_999,)), ("integers", (0, 3 * 2**61, 5_003))):
        want = cl.to_host(getattr(cl.random_generator(5), name)(*args))
        assert numpy.array_equal(gpu_like.to_host(getattr(gpu_like.random_generator(5), name)(*args)), want)


def _in_threads(worker, count):
    threads = [threading.Thread(target=worker) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_threads_get_independent_streams(cl):
    """Threads drawing from one stream at once get different draws (each its own counters); an
    unseeded generator per thread, a stream of its own."""
    draws: list[numpy.ndarray] = []
    lock = threading.Lock()
    shared = cl.random_generator(11)

    def worker():
        own = cl.random_generator(None)
        for _ in range(5):
            values = [cl.to_host(shared.random(3000)), cl.to_host(own.random(3000))]
            with lock:
                draws.extend(values)

    _in_threads(worker, 4)
    values = numpy.concatenate(draws)
    assert values.size == 4 * 5 * 2 * 3000
    assert numpy.unique(values).size == values.size  # 2**53 possible values: no repeats by chance


def test_no_fp64_device_draws_float32_only():
    from npgpu.backends.opencl import OpenCLBackend

    reason = OpenCLBackend.unavailable_reason()
    if reason:
        pytest.skip(reason)
    no_fp64 = OpenCLBackend(fp64=False)
    assert not no_fp64.supports_generator("random", (10,), {})
    assert no_fp64.supports_generator("random", (10,), {"dtype": numpy.float32})
    assert no_fp64.supports_generator("integers", (0, 10, 10), {})
    assert not no_fp64.supports_random("randn", (10,), {})


# -- which calls the device takes: NumPy's dtype and shape for each, NumPy's for the others ------

ACCEPTED = [
    ("legacy", "rand", (3, 4), {}), ("legacy", "randn", (5,), {}), ("legacy", "random", ((2, 3),), {}),
    ("legacy", "random_sample", (), {"size": 6}), ("legacy", "ranf", (6,), {}), ("legacy", "sample", ([2, 2],), {}),
    ("legacy", "standard_normal", (numpy.int64(4),), {}), ("legacy", "uniform", (1, 2.5, 7), {}),
    ("legacy", "uniform", (), {"high": 4, "size": 3}), ("legacy", "normal", (1.0, 0.0, 5), {}),
    ("legacy", "randint", (10, None, 8), {}), ("legacy", "randint", (-3, 3), {"size": 4, "dtype": "i2"}),
    ("legacy", "randint", (0, 2, 5, bool), {}), ("legacy", "randint", (0, 2**64 - 1, 5, numpy.uint64), {}),
    ("legacy", "exponential", (3.0, 4), {}), ("legacy", "standard_exponential", ((2, 2),), {}),
    ("generator", "random", (5,), {"dtype": numpy.float32}), ("generator", "random", (5, "f8"), {}),
    ("generator", "random", (), {"size": (2, 2), "dtype": float}), ("generator", "standard_normal", (5, "f4"), {}),
    ("generator", "uniform", (2, 2, 3), {}), ("generator", "normal", (0, 2, (3,)), {}),
    ("generator", "integers", (5,), {"size": 3}), ("generator", "integers", (1, 6, 4), {"endpoint": True}),
    ("generator", "integers", (0, 256, 4, numpy.uint8), {}),
    ("generator", "integers", (0, 1), {"size": 3, "dtype": bool, "endpoint": True}),
    ("generator", "integers", (numpy.int8(-128), 127), {"size": 9, "dtype": numpy.int8, "endpoint": True}),
    ("generator", "exponential", (), {"size": 3}),
]

REFUSED = [  # NumPy's to draw: it raises its error, or takes arguments the kernels don't
    ("legacy", "rand", (2.5,), {}), ("legacy", "rand", (True,), {}), ("legacy", "random", (-1,), {}),
    ("legacy", "random_sample", (3, 4), {}), ("legacy", "uniform", (0, numpy.inf, 5), {}),
    ("legacy", "uniform", (numpy.nan, 1, 5), {}), ("legacy", "uniform", (0, 10**400, 5), {}),
    ("legacy", "uniform", (-1e308, 1e308, 5), {}), ("legacy", "normal", (0, -1, 10), {}),
    ("legacy", "normal", (numpy.zeros(3), 1), {}), ("legacy", "randint", (5, 2, 10), {}),
    ("legacy", "randint", (0, 3.5, 3), {}), ("legacy", "randint", (0, 300, 3, numpy.int8), {}),
    ("legacy", "randint", (0, 3, 3, ">i2"), {}), ("legacy", "randint", (0, 3, 3, numpy.float64), {}),
    ("legacy", "exponential", (-1.0, 3), {}), ("legacy", "uniform", (0, 1, 5), {"size": 3}),
    ("legacy", "choice", (5, 3), {}), ("generator", "random", (3, numpy.int64), {}),
    ("generator", "random", (3, ">f8"), {}), ("generator", "random", (3,), {"out": numpy.empty(3)}),
    ("generator", "standard_normal", (3,), {"dtype": numpy.float16}), ("generator", "uniform", (3, 1, 5), {}),
    ("generator", "integers", (5, 5, 3), {}), ("generator", "integers", (-1, 2, 3, numpy.uint8), {}),
    ("generator", "integers", (0.5, 3, 3), {}), ("generator", "integers", (0, 2, 3), {"dtype": bool, "endpoint": True}),
    ("generator", "integers", (0, 10, (2, -1)), {}), ("generator", "random", (), {"size": "x"}),
    ("generator", "uniform", (), {"low2": 3}), ("generator", "exponential", (2.0, numpy.array([2, 3])), {}),
]


def _numpy_call(api, name, args, kwargs):
    source = numpy.random.RandomState(0) if api == "legacy" else numpy.random.default_rng(0)
    return getattr(source if hasattr(source, name) else numpy.random, name)(*args, **kwargs)  # (ranf, sample)


@pytest.mark.parametrize("api, name, args, kwargs", ACCEPTED)
def test_accepted_calls_have_numpys_dtype_and_shape(cl, api, name, args, kwargs):
    want = _numpy_call(api, name, args, kwargs)
    supports = cl.supports_random if api == "legacy" else cl.supports_generator
    assert supports(name, args, kwargs)
    if api == "legacy":
        got = cl.random_call(name, args, kwargs)
    else:
        got = getattr(cl.random_generator(0), name)(*args, **kwargs)
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    if want.dtype.kind in "iub":
        host = cl.to_host(got)
        low = min(numpy.iinfo(want.dtype).min if want.dtype.kind != "b" else 0, 0)
        assert host.min() >= low


@pytest.mark.parametrize("api, name, args, kwargs", REFUSED)
def test_refused_calls_go_to_numpy(cl, api, name, args, kwargs):
    supports = cl.supports_random if api == "legacy" else cl.supports_generator
    assert not supports(name, args, kwargs)


# -- through npgpu.random on the opencl backend --------------------------------------------------

def _global_key():
    return numpy.random.get_state()[1].tolist()


def test_unseeded_draws_are_the_devices_and_seeded_ones_numpys(cl):
    npgpu.report(reset=True)
    npgpu.random.seed(None)
    before = _global_key()
    with backend_context("opencl", on_fallback="raise"):
        rng = npgpu.random.default_rng()
        drawn = [npgpu.random.rand(300, 3), npgpu.random.randint(0, 10, 5000), npgpu.random.randn(4000),
                 npgpu.random.uniform(-1, 1, size=()), rng.random(3000, dtype=numpy.float32),
                 rng.integers(0, 2, 3000, dtype=bool), rng.standard_normal((30, 40)), rng.exponential(2.0, 100)]
        assert _global_key() == before  # NumPy's generator did not move
        seeded = npgpu.random.default_rng(3).integers(0, 10, 5000)
    assert all(isinstance(d, npgpu.DeviceArray) for d in drawn)
    want = [numpy.random.rand(300, 3), numpy.random.randint(0, 10, 5000), numpy.random.randn(4000),
            numpy.random.uniform(-1, 1, size=()), numpy.random.default_rng().random(3000, dtype=numpy.float32),
            numpy.random.default_rng().integers(0, 2, 3000, dtype=bool),
            numpy.random.default_rng().standard_normal((30, 40)), numpy.random.default_rng().exponential(2.0, 100)]
    assert [(d.dtype, d.shape) for d in drawn] == [(w.dtype, w.shape) for w in want]
    assert npgpu.asnumpy(seeded).tolist() == numpy.random.default_rng(3).integers(0, 10, 5000).tolist()
    functions = npgpu.report().as_dict()["functions"]
    assert functions["random.RandomState.randint"]["device"] == 1
    assert functions["random.Generator.integers"]["device"] == 1
    assert npgpu.report().totals().fallback == 0


def test_random_device_mode_repeats_a_seed_on_the_device(cl):
    try:
        with backend_context("opencl", random="device"):
            npgpu.random.seed(21)
            before = _global_key()
            a = npgpu.asnumpy(npgpu.random.random(2000))
            npgpu.random.seed(21)
            b = npgpu.asnumpy(npgpu.random.random(2000))
            c = npgpu.asnumpy(npgpu.random.default_rng(4).normal(0, 1, 2000))
            d = npgpu.asnumpy(npgpu.random.default_rng(4).normal(0, 1, 2000))
            assert _global_key() == before
    finally:
        npgpu.random.seed(None)  # (the tests after this one find the global generator unseeded)
    assert numpy.array_equal(a, b) and numpy.array_equal(c, d)
    numpy.random.seed(21)
    assert not numpy.array_equal(a, numpy.random.random(2000))  # the device's numbers, not NumPy's


def test_refused_arguments_raise_numpys_errors_unseeded(cl):
    npgpu.random.seed(None)
    with backend_context("opencl"):
        rng = npgpu.random.default_rng()
        for call, error in ((lambda: rng.integers(5, 2, 10), ValueError), (lambda: rng.uniform(3, 1, 10), ValueError),
                            (lambda: npgpu.random.uniform(0, numpy.inf, 10), OverflowError),
                            (lambda: npgpu.random.randint(0, 300, 10, dtype=numpy.int8), ValueError),
                            (lambda: rng.random(10, dtype=numpy.int64), TypeError),
                            (lambda: npgpu.random.normal(0, -1, 10), ValueError)):
            with pytest.raises(error):
                call()


def test_threads_draw_from_the_global_device_stream(cl):
    """Threads drawing unseeded through npgpu.random at once share the device's legacy stream
    without repeating its numbers."""
    npgpu.random.seed(None)
    draws: list[numpy.ndarray] = []
    lock = threading.Lock()

    def worker():
        with backend_context("opencl"):
            for _ in range(5):
                values = npgpu.asnumpy(npgpu.random.random(2000))
                with lock:
                    draws.append(values)

    _in_threads(worker, 3)
    values = numpy.concatenate(draws)
    assert values.size == 30_000 and numpy.unique(values).size == values.size


def test_every_draw_npgpu_places_has_a_kernel():
    """npgpu.random sends these names to a device stream (_random._LEGACY, _GENERATOR): the
    OpenCL streams take each of them."""
    from npgpu import _random

    assert set(_random._LEGACY) <= set(philox.LEGACY)
    assert set(_random._GENERATOR) <= set(philox.GENERATOR)
