"""Small host operands that keep feeding device work are uploaded once (npgpu/_transfer.py,
``upload_operand``): the device copy is used again while the host memory holds the same bytes.
Answers are compared with NumPy's, bit for bit, also after the program changes the host data
through NumPy between calls.

The emulated backend runs the device path with a GPU's costs (an upload costs more than reading
the bytes on the host, so copies are kept); on PoCL and CuPy their measured costs decide.
"""

from __future__ import annotations

import re
import threading

import numpy
import pytest
from conftest import BACKEND_PARAMS

import npgpu
from npgpu import _dispatch, _transfer
from npgpu.backends import get_backend
from npgpu.backends.costs import Costs

GPU = Costs(launch_s=10e-6, device_bytes_per_s=1e12, host_bytes_per_s=8e9, upload_s=20e-6,
            upload_bytes_per_s=8e9, host_call_s=1e-6)


@pytest.fixture
def gpu_like(monkeypatch):
    backend = get_backend("emulated")
    monkeypatch.setattr(backend, "costs", GPU)
    _transfer.forget_reused()
    with npgpu.enable("emulated", threshold=0):
        npgpu.report(reset=True)
        yield backend
    _transfer.forget_reused()


def _conv(image, weights):
    """NPBench resnet's loop: each pixel's window times the host weights, summed."""
    k = weights.shape[0]
    out = numpy.empty((image.shape[0] - k + 1, weights.shape[-1]), image.dtype)
    for i in range(out.shape[0]):
        out[i] = numpy.sum(image[i:i + k, :, None] * weights[:, :, :], axis=(0, 1))  # (a new view each time)
    return out


def _reused() -> tuple[float, float]:
    kernels = npgpu.report().kernels
    return kernels.get("reused_uploads", 0), kernels.get("reused_upload_bytes", 0)


def test_host_weights_feeding_a_pixel_loop_are_uploaded_once(gpu_like):
    rng = numpy.random.default_rng(0)
    image = rng.random((40, 16), dtype=numpy.float32)
    weights = rng.random((3, 16, 8), dtype=numpy.float32)
    expected = _conv(image, weights)
    got = _conv(npgpu.asarray(image), weights)
    numpy.testing.assert_array_equal(numpy.asarray(got), expected)
    reused, saved = _reused()
    assert reused == 37  # every pixel but the first uploads nothing
    assert saved == 37 * weights.nbytes
    moved = npgpu.report().functions["multiply"].bytes_to_device
    assert moved == weights.nbytes


def test_a_host_operand_changed_through_numpy_is_uploaded_again(gpu_like):
    x = npgpu.asarray(numpy.arange(1.0, 9.0))
    w = numpy.full(8, 2.0)
    first = numpy.asarray(x * w)
    w[3] = 5.0  # (NumPy's write: npgpu never sees it)
    second = numpy.asarray(x * w)
    numpy.testing.assert_array_equal(first, numpy.arange(1.0, 9.0) * 2.0)
    numpy.testing.assert_array_equal(second, numpy.arange(1.0, 9.0) * numpy.where(numpy.arange(8) == 3, 5.0, 2.0))


def test_bytes_are_compared_bit_for_bit_signed_zero_and_nan_payloads(gpu_like):
    x = npgpu.asarray(numpy.ones(8))
    w = numpy.zeros(8)
    numpy.copysign(x, w)
    w[2] = -0.0  # (equal to 0.0 as a number, not as bits)
    got = numpy.asarray(numpy.copysign(x, w))
    numpy.testing.assert_array_equal(numpy.signbit(got), numpy.signbit(numpy.copysign(numpy.ones(8), w)))
    bits = numpy.full(8, numpy.nan).view(numpy.uint64)
    w = bits.copy().view(numpy.float64)
    a = numpy.asarray(npgpu.asarray(numpy.zeros(8, numpy.uint64)) + w.view(numpy.uint64))
    w.view(numpy.uint64)[5] += 1  # (another NaN: its payload differs)
    b = numpy.asarray(npgpu.asarray(numpy.zeros(8, numpy.uint64)) + w.view(numpy.uint64))
    numpy.testing.assert_array_equal(a, bits)
    numpy.testing.assert_array_equal(b, w.view(numpy.uint64))


def test_same_layout_different_arrays_each_give_their_own_answer(gpu_like):
    x = npgpu.asarray(numpy.arange(12.0).reshape(3, 4))
    ws = [numpy.full(4, float(k)) for k in range(6)]  # (more than the copies kept per layout)
    for _ in range(3):
        for k, w in enumerate(ws):
            numpy.testing.assert_array_equal(numpy.asarray(x + w), numpy.arange(12.0).reshape(3, 4) + k)


def test_strided_views_of_host_data(gpu_like):
    base = numpy.arange(20.0)
    x = npgpu.asarray(numpy.ones(5))
    view = base[::4]
    numpy.testing.assert_array_equal(numpy.asarray(x * view), view)
    base[1] = 100.0  # (outside the view: the kept copy still holds)
    numpy.testing.assert_array_equal(numpy.asarray(x * view), view)
    base[8] = -3.0  # (inside)
    numpy.testing.assert_array_equal(numpy.asarray(x * view), view)
    assert _reused()[0] == 1
    numpy.testing.assert_array_equal(numpy.asarray(x * base[::-4]), base[::-4])


def test_other_ufunc_methods_answer_as_numpy_with_kept_copies(gpu_like):
    x = npgpu.asarray(numpy.arange(6.0))
    w = numpy.arange(6.0) + 0.5
    for _ in range(3):
        numpy.testing.assert_array_equal(numpy.asarray(numpy.maximum(x, w)), numpy.maximum(numpy.arange(6.0), w))
        numpy.testing.assert_array_equal(numpy.asarray(numpy.multiply.outer(x, w)),
                                         numpy.multiply.outer(numpy.arange(6.0), w))
    assert _reused()[0] == 2
    target = npgpu.asarray(numpy.zeros(6))
    expected = numpy.zeros(6)
    for _ in range(2):  # (``at`` writes its first operand: its operands are uploaded each time)
        numpy.add.at(target, [0, 1, 1], w[:3])
        numpy.add.at(expected, [0, 1, 1], w[:3])
    numpy.testing.assert_array_equal(numpy.asarray(target), expected)


def test_no_copies_kept_where_uploading_costs_less_than_comparing(gpu_like, monkeypatch):
    monkeypatch.setattr(gpu_like, "costs", Costs(launch_s=10e-6, device_bytes_per_s=1e12, host_bytes_per_s=8e9,
                                                 upload_s=0.0, upload_bytes_per_s=float("inf")))
    x = npgpu.asarray(numpy.ones(1000))
    w = numpy.arange(1000.0)
    for _ in range(3):
        numpy.testing.assert_array_equal(numpy.asarray(x * w), w)
    assert _reused()[0] == 0


def test_threads_with_same_layout_operands(gpu_like):
    x = npgpu.asarray(numpy.arange(64.0))
    errors = []

    def work(k):
        w = numpy.full(64, float(k))
        for _ in range(50):
            got = numpy.asarray(x * w)
            if not numpy.array_equal(got, numpy.arange(64.0) * k):
                errors.append(k)
                return

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


@pytest.mark.parametrize(("device_dtype", "host_dtype"), [
    ("float32", "float32"), ("float32", "float64"), ("int16", "float32"), ("int64", "uint8"), ("bool", "int8")])
def test_a_loop_of_device_and_host_operands_answers_as_numpy(gpu_like, device_dtype, host_dtype, monkeypatch):
    """mlp's ``maximum(x @ w + b, 0)`` with a small host bias, in a loop: from its second call a
    call of device and host arrays takes the dispatcher's short road (``_fast_host_operands``).
    Its dtypes, values and fused kernels are NumPy's and the general path's, the host operand on
    either side, with Python and NumPy scalars, broadcasting, and host data NumPy changes between
    calls."""
    served = []
    short_road = _dispatch._fast_host_operands

    def spy(*args):
        result = short_road(*args)
        served.append(result is not NotImplemented)
        return result

    monkeypatch.setattr(_dispatch, "_fast_host_operands", spy)
    rng = numpy.random.default_rng(3)
    host_x = (rng.random((4, 6)) * 10).astype(device_dtype)
    b = (rng.random(6) * 10).astype(host_dtype)
    x = npgpu.asarray(host_x)
    for step in range(4):
        if step == 2:
            b[1] = 7  # (through NumPy: the kept copy must not serve)
        launched = npgpu.report().kernels.get("kernels_launched", 0)
        for got, expected in (
                (numpy.maximum(x + b, 0), numpy.maximum(host_x + b, 0)),
                (b * x - 1, b * host_x - 1),
                (numpy.add(x, b) * numpy.float32(2.5), numpy.add(host_x, b) * numpy.float32(2.5)),
                (x[:, :1] + b[None, :], host_x[:, :1] + b[None, :])):
            value = numpy.asarray(got)
            assert value.dtype == expected.dtype and value.shape == expected.shape
            numpy.testing.assert_array_equal(value, expected)
        assert npgpu.report().kernels["kernels_launched"] - launched == 4  # (one fused kernel each)
    assert served[4:] == [True] * 12  # (the first step's calls took the general path: it fills the cache)
    with pytest.raises(ValueError) as numpys:
        host_x + numpy.ones(5, host_dtype)
    with pytest.raises(ValueError, match=re.escape(str(numpys.value))):
        x + numpy.ones(5, host_dtype)


def test_the_short_road_of_host_operands_moves_and_counts_as_the_general_path(gpu_like):
    x = npgpu.asarray(numpy.arange(8.0))
    w = numpy.linspace(0.0, 1.0, 8)
    for _ in range(5):
        numpy.asarray(x * w)
    report = npgpu.report()
    assert report.functions["multiply"].device == 5
    assert report.functions["multiply"].bytes_to_device == w.nbytes  # (once: then the kept copy)
    assert _reused() == (4, 4 * w.nbytes)


@pytest.mark.parametrize("name", [p for p in BACKEND_PARAMS if p.values[0] in ("opencl", "cupy")])
def test_on_real_devices_with_their_measured_costs(name):
    """PoCL and CuPy (marker gpu): the loop answers as NumPy; a kept copy serves where the
    backend's measured upload costs more than reading the bytes."""
    _transfer.forget_reused()
    rng = numpy.random.default_rng(1)
    image = rng.random((30, 16), dtype=numpy.float32)
    weights = rng.random((3, 16, 8), dtype=numpy.float32)
    expected = _conv(image, weights)
    with npgpu.enable(name, threshold=0) as change:
        npgpu.report(reset=True)
        got = numpy.asarray(_conv(npgpu.asarray(image), weights))
        costs = change.state.backend.costs
        worth = costs is not None and costs.host_op_s(weights.nbytes) < costs.upload_time_s(weights.nbytes)
        reused = _reused()[0]
    _transfer.forget_reused()
    numpy.testing.assert_allclose(got, expected, rtol=2e-6)
    assert reused == (27 if worth else 0)
