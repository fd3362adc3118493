"""OpenCL backend against NumPy: elementwise ufuncs for every dtype, views, out=/where=, no-fp64 devices.

Runs on any OpenCL device; on machines without a GPU, PoCL's CPU device.
"""

import os
import subprocess
import sys

import numpy
import pytest

pytest.importorskip("pyopencl")

from npgpu.backends.opencl import CLArray, OpenCLBackend  # noqa: E402
from npgpu.kernels import codegen, ir  # noqa: E402
from npgpu.kernels import ufuncs as table  # noqa: E402

pytestmark = pytest.mark.opencl

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float32", "float64"]
ALL = ["bool"] + INTS + FLOATS



def sample(dtype, shape=(5, 7), seed=0):
    rng = numpy.random.default_rng(seed)
    dt = numpy.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        info = numpy.iinfo(dt)
        lo, hi = max(info.min, -120), min(info.max, 120)
        return rng.integers(lo, hi, shape, endpoint=True).astype(dt)
    x = (rng.normal(size=shape) * 4).astype(dt)
    x.flat[::11] = 0
    return x


def check(got, ref, exact=False):
    ref = numpy.asarray(ref)
    got = numpy.asarray(got)
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    assert got.shape == ref.shape
    if exact or ref.dtype.kind in "biu":
        numpy.testing.assert_array_equal(got, ref)
    else:
        rtol = 1e-13 if ref.dtype == numpy.float64 else 2e-6
        numpy.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol * 4, equal_nan=True)


def run(cl, ufunc, *ops, **kw):
    dev = [cl.from_host(o) if isinstance(o, numpy.ndarray) else o for o in ops]
    res = cl.call_ufunc(ufunc, "__call__", tuple(dev), kw)
    if isinstance(res, tuple):
        return tuple(cl.to_host(r) for r in res)
    return cl.to_host(res)


BINARY = [numpy.add, numpy.subtract, numpy.multiply, numpy.floor_divide, numpy.remainder, numpy.fmod, numpy.maximum,
          numpy.minimum, numpy.equal, numpy.less, numpy.greater_equal, numpy.bitwise_and, numpy.bitwise_xor,
          numpy.logical_and, numpy.logical_xor, numpy.true_divide, numpy.power, numpy.left_shift, numpy.right_shift,
          numpy.copysign, numpy.arctan2, numpy.fmax, numpy.fmin, numpy.gcd]
UNARY = [numpy.negative, numpy.absolute, numpy.sign, numpy.invert, numpy.logical_not, numpy.isnan, numpy.isinf,
         numpy.isfinite, numpy.signbit, numpy.sqrt, numpy.exp, numpy.log1p, numpy.sin, numpy.tanh, numpy.rint,
         numpy.floor, numpy.square, numpy.cbrt, numpy.arcsinh, numpy.expm1]


def _numpy_or_error(ufunc, *ops):
    with numpy.errstate(all="ignore"):
        try:
            return ufunc(*ops), None
        except (TypeError, ValueError) as exc:
            return None, type(exc)


@pytest.mark.parametrize("dtype", ALL)
def test_binary_every_dtype(cl, dtype):
    a, b = sample(dtype, seed=1), sample(dtype, seed=2)
    if numpy.dtype(dtype).kind in "iu":
        b = numpy.where(b == 0, 3, b).astype(dtype)  # keep one zero divisor below
        b.flat[0] = 0
    for uf in BINARY:
        bb = numpy.abs(b) % 9 if uf in (numpy.power, numpy.left_shift, numpy.right_shift) else b
        if uf in (numpy.power, numpy.left_shift, numpy.right_shift) and numpy.dtype(dtype).kind in "iu":
            bb = bb.astype(dtype)
        ref, err = _numpy_or_error(uf, a, bb)
        loop = uf.resolve_dtypes((a.dtype, bb.dtype, None)) if err is None else None
        if err is not None or not table.supports_loop(uf, loop, complex_values=True):
            assert err is not None or not cl.supports_ufunc(uf, "__call__", loop, {})
            continue
        check(run(cl, uf, a, bb), ref, exact=table.UFUNCS[uf.__name__].exact)


@pytest.mark.parametrize("dtype", ALL)
def test_unary_every_dtype(cl, dtype):
    a = sample(dtype)
    for uf in UNARY:
        ref, err = _numpy_or_error(uf, a)
        if err is not None or not table.supports_loop(uf, uf.resolve_dtypes((a.dtype, None)), complex_values=True):
            continue
        check(run(cl, uf, a), ref, exact=table.UFUNCS[uf.__name__].exact)


def test_integer_semantics(cl):
    a = numpy.array([-128, -7, 7, 0, 127, -1, 5], numpy.int8)
    b = numpy.array([-1, 2, -2, 0, 0, -1, 0], numpy.int8)
    for uf in (numpy.floor_divide, numpy.remainder, numpy.fmod, numpy.add, numpy.multiply, numpy.subtract):
        with numpy.errstate(all="ignore"):
            check(run(cl, uf, a, b), uf(a, b))
    q, r = run(cl, numpy.divmod, a, b)
    with numpy.errstate(all="ignore"):
        check(q, a // b)
        check(r, a % b)
    check(run(cl, numpy.power, numpy.array([2, 3, -2], numpy.int8), numpy.array([10, 3, 7], numpy.int8)),
          numpy.power(numpy.array([2, 3, -2], numpy.int8), numpy.array([10, 3, 7], numpy.int8)))
    with pytest.raises(ValueError):
        run(cl, numpy.power, a, numpy.array([1, -1, 1, 1, 1, 1, 1], numpy.int8))
    big = numpy.array([2**63 - 1, -(2**63)], numpy.int64)
    check(run(cl, numpy.add, big, big), big + big)


def test_float_special_values(cl):
    x = numpy.array([numpy.nan, 1.0, -0.0, numpy.inf, -numpy.inf, 2.5, -2.5, 0.5, 1.5])
    y = numpy.array([1.0, numpy.nan, 0.0, 0.0, 3.0, -0.0, 2.0, -1.5, numpy.inf])
    for uf in (numpy.maximum, numpy.minimum, numpy.fmax, numpy.fmin, numpy.floor_divide, numpy.remainder,
               numpy.copysign, numpy.heaviside, numpy.nextafter, numpy.logaddexp):
        with numpy.errstate(all="ignore"):
            ref = uf(x, y)
        check(run(cl, uf, x, y), ref, exact=uf is not numpy.logaddexp)
    for uf in (numpy.rint, numpy.sign, numpy.isnan, numpy.isinf, numpy.isfinite, numpy.signbit, numpy.trunc):
        check(run(cl, uf, x), uf(x), exact=True)


def test_scalars_are_weak_and_arguments(cl):
    a = sample("int8")
    check(run(cl, numpy.add, a, 3), a + 3)
    check(run(cl, numpy.multiply, 2.5, a), 2.5 * a)
    check(run(cl, numpy.add, sample("float32"), 1e-3), sample("float32") + 1e-3)
    check(run(cl, numpy.add, a, numpy.int64(3)), a + numpy.int64(3))
    check(run(cl, numpy.less, sample("uint8"), -1), sample("uint8") < -1)
    with pytest.raises(OverflowError):
        run(cl, numpy.add, a, 300)
    n0 = cl.kernels_built
    for v in range(5):  # a new scalar value is a new argument, not a new kernel
        check(run(cl, numpy.add, a, v), a + v)
    assert cl.kernels_built == n0


@pytest.mark.parametrize("dtype", ["int32", "float64"])
def test_views_strides_offsets_broadcasting(cl, dtype):
    base = sample(dtype, shape=(6, 8, 5))
    d = cl.from_host(base)
    views = [
        (slice(None, None, -1), slice(1, None, 2), 3),
        (Ellipsis, slice(None, None, -2)),
        (2, slice(None), slice(1, 4)),
        (slice(1, 5), None, slice(None), 0),
    ]
    for key in views:
        check(cl.to_host(cl.getitem(d, key)), base[key])
        check(cl.to_host(cl.call_ufunc(numpy.add, "__call__", (cl.getitem(d, key), 1), {})), base[key] + 1)
    t = cl.transpose(d, (2, 0, 1))
    check(cl.to_host(t), base.transpose(2, 0, 1))
    row8 = cl.getitem(d, (0, slice(None), 0))  # a strided view broadcast along two axes
    check(cl.to_host(cl.call_ufunc(numpy.multiply, "__call__", (t, row8), {})), base.transpose(2, 0, 1) * base[0, :, 0])
    col = cl.from_host(base[:, :1, 0])
    row = cl.from_host(base[0, :, 0])
    check(cl.to_host(cl.call_ufunc(numpy.subtract, "__call__", (col, row), {})), base[:, :1, 0] - base[0, :, 0])


def test_out_where_casting(cl):
    a, b = sample("float32"), sample("float32", seed=3)
    out = cl.from_host(numpy.zeros((5, 7), numpy.float64))
    cl.call_ufunc(numpy.add, "__call__", (cl.from_host(a), cl.from_host(b)), {"out": (out,)})
    check(cl.to_host(out), (a + b).astype(numpy.float64))
    mask = a > 0
    o = numpy.full((5, 7), -9.0, numpy.float32)
    dev_o = cl.from_host(o)
    cl.call_ufunc(numpy.multiply, "__call__", (cl.from_host(a), 2.0), {"out": (dev_o,), "where": cl.from_host(mask)})
    numpy.multiply(a, 2.0, out=o, where=mask)
    check(cl.to_host(dev_o), o)
    check(run(cl, numpy.add, sample("int8"), sample("int8"), dtype=numpy.int16),
          numpy.add(sample("int8"), sample("int8"), dtype=numpy.int16))
    with pytest.raises(TypeError):
        cl.call_ufunc(numpy.add, "__call__", (cl.from_host(a), cl.from_host(b)),
                      {"out": (cl.from_host(numpy.zeros((5, 7), numpy.int32)),)})
    # in place on an overlapping view: NumPy semantics (as if the input were copied)
    x = numpy.arange(10.0)
    dx = cl.from_host(x)
    cl.call_ufunc(numpy.add, "__call__", (cl.getitem(dx, slice(None, -1)), cl.getitem(dx, slice(1, None))),
                  {"out": (cl.getitem(dx, slice(1, None)),)})
    numpy.add(x[:-1], x[1:], out=x[1:])
    check(cl.to_host(dx), x)


def test_without_fp64_float64_is_refused(cl):
    no64 = OpenCLBackend(fp64=False)
    f8 = numpy.dtype(numpy.float64)
    assert not no64.supports_dtypes((f8,))
    assert not no64.supports_ufunc(numpy.add, "__call__", (f8, f8, f8), {})
    assert no64.supports_ufunc(numpy.add, "__call__", (numpy.dtype("f4"),) * 3, {})
    assert not no64.supports_function(numpy.sum, (f8,), (None,), {})
    i4 = numpy.dtype(numpy.int32)
    assert not no64.supports_ufunc(numpy.true_divide, "__call__", numpy.true_divide.resolve_dtypes((i4, i4, None)), {})
    assert no64.describe()["fp64"] is False


def test_unsupported_says_no(cl):
    c16 = numpy.dtype(numpy.complex128)
    assert not cl.supports_ufunc(numpy.sin, "__call__", (c16, c16), {})  # (complex sin: NumPy's, README)
    assert cl.supports_ufunc(numpy.add, "__call__", (c16, c16, c16), {})
    f8 = numpy.dtype(numpy.float64)
    assert not cl.supports_ufunc(numpy.add, "__call__", (f8, f8, f8), {"order": "F"})
    assert not cl.supports_ufunc(numpy.add, "accumulate", (f8,), {})
    assert not cl.supports_function(numpy.sum, (f8,), (None,), {"bogus": 1})


def test_generated_source_and_cuda_dialect():
    b = ir.GraphBuilder()
    x, y = b.input(numpy.float32), b.input(numpy.float32)
    s = b.scalar(numpy.float32)
    (t,) = b.apply(numpy.multiply, (numpy.dtype("f4"),) * 3, x, y)
    (u,) = b.apply(numpy.add, (numpy.dtype("f4"),) * 3, t, s)
    (v,) = b.apply(numpy.sin, (numpy.dtype("f4"),) * 2, u)
    g = b.build([v])
    src = codegen.elementwise(g, codegen.Layout(1, True), "opencl").source
    assert src.startswith("#pragma OPENCL FP_CONTRACT OFF") and "cl_khr_fp64" not in src
    cuda = codegen.elementwise(g, codegen.Layout(2, False), "cuda")
    assert 'extern "C" __global__ void' in cuda.source and "sinf(" in cuda.source and "__global " not in cuda.source
    assert [k for k, _ in cuda.args].count("scalar") == 1
    assert g == b.build([v]) and hash(g) == hash(b.build([v]))  # structural cache key


def test_kernel_cache_is_bounded(cl, monkeypatch):
    import npgpu.backends.opencl.launch as mod

    monkeypatch.setattr(mod, "KERNEL_CACHE_SIZE", 2)
    a = sample("float32")
    for uf in (numpy.sin, numpy.cos, numpy.exp):
        run(cl, uf, a)
    assert len(cl._kernels) <= 2


def test_device_choice_and_describe():
    info = OpenCLBackend(device=0).describe()
    assert {"device", "vendor", "memory_bytes", "fp64", "compute_units"} <= set(info)
    with pytest.raises(ValueError):
        OpenCLBackend(device="no-such-device-name")
    assert isinstance(OpenCLBackend().from_host(numpy.zeros(3)), CLArray)


def test_vector_width_picks_uniform_float_graphs_of_plain_operations():
    f8, f4, i4 = numpy.dtype("f8"), numpy.dtype("f4"), numpy.dtype("i4")
    b = ir.GraphBuilder()
    x = b.input(f8)
    y = b.apply(numpy.exp, (f8, f8), b.apply(numpy.multiply, (f8, f8, f8), x, b.scalar(f8))[0])[0]
    assert codegen.vector_width(b.build([y])) == 4
    b = ir.GraphBuilder()
    x = b.input(f4)
    assert codegen.vector_width(b.build([b.apply(numpy.sqrt, (f4, f4), x)[0]])) == 8
    b = ir.GraphBuilder()  # a comparison (bool result), a cast, an integer graph: scalar code
    x = b.input(f8)
    assert codegen.vector_width(b.build([b.apply(numpy.less, (f8, f8, numpy.dtype(bool)), x, x)[0]])) == 0
    assert codegen.vector_width(ir.cast_graph(f4, f8)) == 0
    b = ir.GraphBuilder()
    x = b.input(i4)
    assert codegen.vector_width(b.build([b.apply(numpy.add, (i4, i4, i4), x, x)[0]])) == 0
    b = ir.GraphBuilder()  # maximum propagates NaN through a comparison: not a vector builtin
    x = b.input(f8)
    assert codegen.vector_width(b.build([b.apply(numpy.maximum, (f8, f8, f8), x, x)[0]])) == 0


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [1, 7, 4099, 100_003])
def test_vector_kernels_match_numpy_over_chunk_remainders_and_offsets(cl, dtype, n):
    if not cl.is_cpu:
        pytest.skip("vector kernels are the chunked CPU launch")
    import npgpu

    rng = numpy.random.default_rng(n)
    host = [(rng.standard_normal(n + 1) * 3).astype(dtype) for _ in range(3)]
    with npgpu.enable("opencl", threshold=0):
        a, b, c = (npgpu.asarray(h)[1:] for h in host)  # views one element in: unaligned vectors
        got = npgpu.asnumpy(((a * b + c) * a - b) / (c + 1.5) + npgpu.sqrt(npgpu.abs(a)) * 0.5 - npgpu.exp(-b))
        exact = npgpu.asnumpy(a * b - c / (a + 2.0))  # correctly rounded operations only
    ha, hb, hc = (h[1:] for h in host)
    with numpy.errstate(all="ignore"):
        want = ((ha * hb + hc) * ha - hb) / (hc + 1.5) + numpy.sqrt(numpy.abs(ha)) * 0.5 - numpy.exp(-hb)
        want_exact = ha * hb - hc / (ha + 2.0)
    tolerance = {"rtol": 1e-5, "atol": 1e-5} if dtype == "float32" else {"rtol": 1e-12, "atol": 1e-12}
    numpy.testing.assert_allclose(got, want, **tolerance)
    numpy.testing.assert_array_equal(exact, want_exact)  # FP_CONTRACT OFF holds in vector code too
    from npgpu.backends import get_backend

    layouts = [key[2] for key in get_backend("opencl")._kernels if key[0] == "ew"]
    assert any(layout.vector for layout in layouts)


@pytest.mark.parametrize("pure", ["", "1"], ids=["native", "pure-python"])
def test_process_ending_with_work_queued_exits_cleanly(cl, pure):
    """The last line may leave a large fill queued: the queue is finished before Python frees
    the memory it writes (such a process died of SIGSEGV after its last line on PoCL)."""
    code = "import npgpu as np\nwith np.enable('opencl'):\n    a = np.zeros(10**7)\nprint('done')\n"
    env = {**os.environ, "NPGPU_PURE_PYTHON": pure}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert (done.returncode, done.stdout.strip()) == (0, "done"), done.stderr[-2000:]


def test_a_device_that_cannot_build_kernels_is_unavailable(cl, monkeypatch):
    """A compiler that fails every build (PoCL's LLVM on a CPU it doesn't know) makes the
    backend unavailable, saying why, and "auto" passes over it instead of failing."""
    from npgpu.backends import resolve_auto, unavailable_reason

    monkeypatch.setattr(OpenCLBackend, "_PROBE_SOURCE", "__kernel void broken( { }")
    monkeypatch.setattr(OpenCLBackend, "_probed", {})
    reason = unavailable_reason("opencl")
    assert reason is not None and "can't build kernels here" in reason
    monkeypatch.setattr(OpenCLBackend, "has_gpu", classmethod(lambda cls: True))
    assert resolve_auto() != "opencl"


@pytest.mark.parametrize("n", [1, 1000, 1 << 18, 3 << 20])
def test_host_memory_of_a_cpu_device_is_aligned_as_the_device_asks(cl, n):
    # A CPU device (PoCL) uses a buffer's host memory in place only at its base-address alignment
    # and copies it at each kernel otherwise: NumPy's large arrays start 16 bytes past a page, and a
    # kernel on 1M float64 there took twice as long. Small (heap) and large (mmap) sizes.
    if not cl.host_backed:
        pytest.skip("buffers of this device are not host memory")
    alignment = cl.device.mem_base_addr_align // 8
    values = numpy.arange(n, dtype=numpy.float64)
    for native in (cl.from_host(values), cl.empty(n, numpy.float64), cl.call_ufunc(
            numpy.add, "__call__", (cl.from_host(values), 1.0), {}, (numpy.dtype(numpy.float64),) * 3)):
        host = native.data.get_host_array((native.data.size,), numpy.uint8)
        assert host.ctypes.data % alignment == 0
    numpy.testing.assert_array_equal(cl.to_host(cl.from_host(values)), values)


def test_scalar_arguments_reach_a_kernel_exactly(cl):
    # _enqueue declares a kernel's scalar argument dtypes (PyOpenCL set an undeclared NumPy scalar
    # in ~15 us): the declared ones are packed, so extreme values must arrive bit for bit
    import pyopencl

    source = ("__kernel void put(__global long *i, __global double *f, long a, double b, int c, uint d, float e)"
              " { i[0] = a; f[0] = b; i[1] = c; i[2] = d; f[1] = e; }")
    kernel = pyopencl.Program(cl.context, source).build().put
    ints = pyopencl.Buffer(cl.context, pyopencl.mem_flags.READ_WRITE, 24)
    floats = pyopencl.Buffer(cl.context, pyopencl.mem_flags.READ_WRITE, 16)
    cases = [(numpy.int64(-2**63), numpy.float64(5e-324), numpy.int32(-2**31), numpy.uint32(2**32 - 1),
              numpy.float32(-0.0)),
             (numpy.int64(2**63 - 1), numpy.float64(-numpy.inf), numpy.int32(7), numpy.uint32(0),
              numpy.float32(3.4028235e38))]
    for a, b, c, d, e in cases:
        cl._enqueue(kernel, (1,), (1,), [ints, floats, a, b, c, d, e])
        got_i, got_f = numpy.empty(3, numpy.int64), numpy.empty(2, numpy.float64)
        pyopencl.enqueue_copy(cl.queue, got_i, ints)
        pyopencl.enqueue_copy(cl.queue, got_f, floats, is_blocking=True)
        assert got_i.tolist() == [int(a), int(c), int(d)]
        assert got_f[0] == b and got_f[1] == float(e) and numpy.signbit(got_f[1]) == numpy.signbit(e)


def test_retired_host_memory_is_recycled_in_batches_and_at_a_sync(cl, monkeypatch):
    # a marker (an OpenCL command) per freed buffer cost a loop of small operations 25-45 us each
    # on PoCL: retired memory goes behind one marker per batch, or at a sync, and is reused only
    # once the marker has run; the answers stay NumPy's
    if not cl.host_backed:
        pytest.skip("buffers of this device are not host memory")
    import pyopencl

    markers = []
    real = pyopencl.enqueue_marker
    monkeypatch.setattr(pyopencl, "enqueue_marker", lambda queue: markers.append(1) or real(queue))
    cl.sync()
    host = numpy.arange(1000.0)
    d = cl.from_host(host)
    for _ in range(3 * cl.retire_batch):
        d = cl.call_ufunc(numpy.add, "__call__", (d, 1.0), {}, (numpy.dtype(numpy.float64),) * 3)
    assert 1 <= len(markers) <= 4  # (not one per step: 24 steps)
    numpy.testing.assert_array_equal(cl.to_host(d), host + 3 * cl.retire_batch)
    cl.sync()
    assert not cl._retired and not cl._in_flight


def test_equal_graphs_share_one_kernel_key_and_keep_their_own_error_sources(cl):
    # kernel caches key by ir.canonical(graph): a lookup with an equal graph that was another
    # object compared the trees node by node at every launch (9.5 us for two operations)
    f8 = numpy.dtype(numpy.float64)

    def graph(ufunc):
        b = ir.GraphBuilder()
        x, y = b.input(f8), b.input(f8)
        s = b.apply(numpy.add, (f8, f8, f8), x, y)[0]
        return b.build([b.apply(ufunc, (f8, f8, f8), s, x)[0]], error_sources=(0, 1) if ufunc is numpy.add else ())

    g1, g2, other = graph(numpy.multiply), graph(numpy.multiply), graph(numpy.subtract)
    assert g1 == g2 and g1 is not g2
    assert ir.canonical(g2) is ir.canonical(g1) is ir.canonical(g1)
    assert ir.canonical(other) is not ir.canonical(g1)
    object.__setattr__(g2, "error_sources", (5,))
    assert g1.error_sources != g2.error_sources  # (a key only: nothing else of a graph is shared)
    built = cl.kernels_built
    for g in (g1, g2):
        d = cl.from_host(numpy.arange(5.0))
        out = cl.empty(5, f8)
        cl.run_elementwise(g, [d, d], [out], [])
        numpy.testing.assert_array_equal(cl.to_host(out), (numpy.arange(5.0) * 2) * numpy.arange(5.0))
    assert cl.kernels_built - built <= 1


@pytest.mark.parametrize("packed", [False, True])
def test_strided_kernel_with_packed_geometry(cl, packed):
    """Layout.packed (what the CUDA launcher uses, to pass one argument instead of the offsets,
    n, extents and strides one by one) computes what the unpacked kernel computes: built here with
    PyOpenCL, its struct given as a NumPy structured scalar, on views with offsets, negative and
    zero (broadcast) strides, against NumPy."""
    import pyopencl as pcl

    f8 = numpy.dtype(numpy.float64)
    b = ir.GraphBuilder()
    x, y, s = b.input(f8), b.input(f8), b.scalar(f8)
    (d,) = b.apply(numpy.subtract, (f8,) * 3, x, y)
    (v,) = b.apply(numpy.multiply, (f8,) * 3, d, s)
    g = b.build([v])
    source = codegen.elementwise(g, codegen.Layout(2, False, packed=packed), "opencl", name="npg_packed")
    assert ("npg_geom_t" in source.source) is packed
    program = pcl.Program(cl.context, source.source).build()
    base = numpy.arange(11 * 13, dtype=f8).reshape(11, 13) ** 1.5
    row = numpy.linspace(-1, 1, 10)
    xs = base[1:-1, 12:2:-1]  # (an offset, a negative stride)
    ys = numpy.broadcast_to(row, (9, 10))  # (a zero stride)
    out = numpy.zeros((13, 12))
    target = out[2:11, 1:11]
    buffers = [pcl.Buffer(cl.context, pcl.mem_flags.READ_WRITE | pcl.mem_flags.COPY_HOST_PTR, hostbuf=a)
               for a in (base, row, out)]
    views = [(buffers[0], xs, base), (buffers[1], ys, row), (buffers[2], target, out)]
    offsets = [numpy.int64(v.__array_interface__["data"][0] - o.__array_interface__["data"][0]) for _, v, o in views]
    integers = [*offsets, 9 * 10, 9, 10, *(st for _, v, _ in views for st in v.strides)]
    if packed:
        args = [buffers[0], buffers[1], buffers[2], numpy.float64(0.5), codegen.pack_geometry(integers)]
    else:
        args = [buffers[0], offsets[0], buffers[1], offsets[1], buffers[2], offsets[2], numpy.float64(0.5),
                *(numpy.int64(i) for i in integers[3:])]
    kernel = program.npg_packed
    kernel.set_args(*args)
    pcl.enqueue_nd_range_kernel(cl.queue, kernel, (128,), None)
    got = numpy.empty_like(out)
    pcl.enqueue_copy(cl.queue, got, buffers[2])
    expected = numpy.zeros_like(out)
    expected[2:11, 1:11] = (xs - ys) * 0.5
    numpy.testing.assert_array_equal(got, expected)


def _strided_operands(xp, ndim, seed):
    """Views of ``ndim`` dimensions (more than one chunk's elements, rows not a divisor of a
    chunk: chunks start mid-row) with offsets, steps and a negative stride."""
    rng = numpy.random.default_rng(seed)
    shape = {1: (9001,), 2: (67, 93), 3: (17, 23, 29), 4: (5, 7, 11, 37)}[ndim]
    big = tuple(2 * s + 3 for s in shape)
    hosts = [rng.standard_normal(big) * 3 for _ in range(3)]
    picks = tuple(slice(1, 1 + 2 * s, 2) for s in shape)
    flipped = tuple(slice(2 * s, 0, -2) for s in shape)
    a, b, c = (xp.asarray(h) for h in hosts)
    return a[picks], b[flipped], c[picks]


@pytest.mark.parametrize("ndim", [1, 2, 3, 4])
def test_strided_chunks_starting_mid_row_match_numpy(cl, ndim):
    """A chunked strided kernel unravels its first element only and steps the coordinates
    (codegen.elementwise): chunks that start mid-row, a where= mask, an out= that is an operand
    (errors checked inline), and a chunk checked again where a value was not finite (an overflow
    raised as NumPy raises it), each against NumPy."""
    if not cl.is_cpu:
        pytest.skip("chunked kernels are the CPU launch")
    import npgpu

    def body(xp):
        a, b, c = _strided_operands(xp, ndim, ndim)
        first = (a * b + c) * 0.5 - xp.sin(a)
        masked = xp.zeros(a.shape)
        xp.add(a, c * b, out=masked, where=b > 0)
        a += b * c  # (the output overwrites an operand)
        with xp.errstate(over="raise"):
            huge = c * 1e300
            try:
                raised = (huge * huge).sum() is None
            except FloatingPointError:
                raised = True
        return [xp.asarray(v) for v in (first, masked, a)], raised

    want, want_raised = body(numpy)
    with npgpu.enable("opencl", threshold=0):
        got, got_raised = body(npgpu)
        got = [npgpu.asnumpy(v) for v in got]
    assert got_raised == want_raised
    for g, w in zip(got, want):
        numpy.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_launches_of_one_shape_over_other_layouts_each_get_their_own_geometry(cl):
    """An elementwise launch keeps its geometry by its operands' layouts (shape, strides, offset,
    dtype): views of one shape at other offsets, strides and dtypes, launched one after another
    through the same graph, each read their own elements, as NumPy does."""
    import npgpu

    host = numpy.arange(24 * 24, dtype=numpy.float64).reshape(24, 24) * 0.5
    views = [lambda a: a[::2, ::2], lambda a: a[1::2, ::2], lambda a: a[::2, 1::2],
             lambda a: a[::2, ::2].T, lambda a: a[:12, :12], lambda a: a[12:, 12:][::-1]]
    with npgpu.enable("opencl", threshold=0):
        device = npgpu.asarray(host)
        small = npgpu.asarray(host.astype(numpy.float32))
        for _ in range(2):  # (the second pass takes the kept geometries)
            for view in views:
                numpy.testing.assert_array_equal(npgpu.asnumpy(view(device) * 3.0 + 1.0), view(host) * 3.0 + 1.0)
                numpy.testing.assert_array_equal(npgpu.asnumpy(view(small) * 3.0 + 1.0),
                                                 view(host.astype(numpy.float32)) * 3.0 + 1.0)


def test_a_dtype_opencl_does_not_hold_is_refused_in_place_with_a_clear_error():
    # a.dtype = <structured> would need a host copy, which a.dtype = ... can't be: TypeError, and the
    # array keeps its dtype
    import npgpu

    with npgpu.enable("opencl", threshold=0):
        a = npgpu.arange(10, dtype=numpy.float32)
        with pytest.raises(TypeError, match="holds no arrays of"):
            a.dtype = [("int", "<0i4"), ("float", "<2f4")]
        assert a.dtype == numpy.float32 and numpy.asarray(a).tolist() == list(range(10))
