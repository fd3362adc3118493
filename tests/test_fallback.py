"""Fallback: what the backend can't do runs in NumPy, counted, and ignore/warn/raise/log as asked."""

from __future__ import annotations

import logging

import numpy
import pytest

import npgpu
from npgpu import _report
from npgpu._harness import backend_context


def _unrouted(xp):
    # numpy.polyval is not in any backend's routing table: it must fall back.
    return xp.polyval(xp.asarray(numpy.array([1.0, 2.0, 3.0])), xp.asarray(numpy.array([0.5, 2.0])))


def test_fallback_is_counted_and_result_placed(device_backend):
    npgpu.report(reset=True)
    with backend_context(device_backend):
        result = _unrouted(npgpu)
    assert isinstance(result, npgpu.DeviceArray)  # inputs were on the device: so is the result
    numpy.testing.assert_allclose(npgpu.asnumpy(result), _unrouted(numpy))
    counts = npgpu.report().as_dict()["functions"]["polyval"]
    assert counts["fallback"] == 1
    assert any("has no polyval" in reason for reason in counts["reasons"])


def test_small_fallback_results_stay_on_host_above_threshold(device_backend):
    with backend_context(device_backend, threshold=1 << 30):
        a = npgpu.asarray(numpy.arange(3.0))
    with backend_context(device_backend, threshold=0):
        a = npgpu.asarray(numpy.arange(3.0))
    with backend_context(device_backend, threshold=1 << 30):
        result = npgpu.polyval(a, a)
    assert type(result) is numpy.ndarray


def test_warn_mode(device_backend):
    with backend_context(device_backend, on_fallback="warn"):
        with pytest.warns(npgpu.FallbackWarning, match="polyval ran in NumPy on the host"):
            _unrouted(npgpu)


def test_raise_mode_raises_before_any_work(device_backend):
    with backend_context(device_backend, on_fallback="raise"):
        with pytest.raises(npgpu.FallbackError, match="polyval"):
            _unrouted(npgpu)


def test_log_mode(device_backend, caplog):
    with caplog.at_level(logging.WARNING, logger="npgpu"):
        with backend_context(device_backend, on_fallback="log"):
            _unrouted(npgpu)
    assert any("polyval" in record.getMessage() for record in caplog.records)


def test_unsupported_dtype_falls_back_with_reason(device_backend):
    npgpu.report(reset=True)
    with backend_context(device_backend, on_fallback="warn"):
        a = npgpu.arange(4.0)
        with pytest.warns(npgpu.FallbackWarning):
            b = a.astype("datetime64[s]")
    assert b.dtype == numpy.dtype("datetime64[s]") and type(b) is numpy.ndarray


def test_fallback_writes_back_into_device_out(device_backend):
    with backend_context(device_backend):
        a = npgpu.arange(6.0)
        out = npgpu.zeros(6)
        view = out[::2]
        npgpu.copyto(view, 1.0, where=npgpu.asarray(numpy.array([True, False, True])))
    assert npgpu.asnumpy(out).tolist() == [1.0, 0, 0, 0, 1.0, 0]
    assert npgpu.asnumpy(a).tolist() == [0, 1, 2, 3, 4, 5]


def test_host_work_below_threshold_is_not_a_fallback(device_backend):
    npgpu.report(reset=True)
    with backend_context(device_backend, threshold=1 << 20, on_fallback="raise"):
        small = npgpu.arange(10.0)  # made below the threshold: a NumPy array, counted on the host
        result = npgpu.sin(small)  # NumPy's own ufunc on a NumPy array: no npgpu code runs
        product = npgpu.dot(small, small)  # small host operands: straight to NumPy, counted as host
    assert type(small) is numpy.ndarray and type(result) is numpy.ndarray and type(product) is numpy.float64
    numpy.testing.assert_array_equal(result, numpy.sin(numpy.arange(10.0)))
    totals = npgpu.report().totals()
    assert totals.host == 2 and totals.fallback == 0 and totals.device == 0
    report = npgpu.report()
    assert report.functions["dot"].host == 1 and report.sites[_report.SMALL_CALLS_SITE].host == 1
    assert "sin" not in report.functions  # NumPy's own ufunc: not seen by npgpu


def _pocl_or_skip():
    from npgpu.backends import unavailable_reason

    reason = unavailable_reason("opencl")
    if reason is not None:
        pytest.skip(reason)


def test_host_work_reads_a_cpu_devices_memory_in_place():
    """On a CPU OpenCL device (PoCL) device memory is host memory: NumPy's work on device operands
    reads it where it is (nothing downloaded, nothing booked), with NumPy's answers."""
    _pocl_or_skip()
    host = numpy.random.default_rng(0).standard_normal((300, 300))
    with npgpu.enable("opencl", threshold=0):
        d = npgpu.asarray(host)
        if not d._backend.host_backed:
            pytest.skip("not a device that computes in host memory")
        npgpu.report(reset=True)
        q, r = numpy.linalg.qr(d)  # (LAPACK: NumPy's, README "OpenCL: functions that run in NumPy")
        totals = npgpu.report().as_dict()["totals"]
    want_q, want_r = numpy.linalg.qr(host)
    numpy.testing.assert_array_equal(npgpu.asnumpy(q), want_q)
    numpy.testing.assert_array_equal(npgpu.asnumpy(r), want_r)
    assert totals["bytes_to_host"] == 0 and totals["fallback"] == 1


def test_host_results_never_alias_device_memory():
    """NumPy returns views of its operands (transpose, an operand as it is): a host result made
    from device memory in place is copied, so later device writes don't show through it."""
    _pocl_or_skip()
    from npgpu import _fallback

    with npgpu.enable("opencl", threshold=0):
        d = npgpu.asarray(numpy.arange(12.0).reshape(3, 4))
        if not d._backend.host_backed:
            pytest.skip("not a device that computes in host memory")
        view = _fallback.run_on_host("transpose", numpy.transpose, (d,), {}, [], record=None)
        same = _fallback.run_on_host("asarray", numpy.asarray, (d,), {}, [], record=None)
        d += 100
        npgpu.sync()
    numpy.testing.assert_array_equal(view, numpy.arange(12.0).reshape(3, 4).T)
    numpy.testing.assert_array_equal(same, numpy.arange(12.0).reshape(3, 4))
