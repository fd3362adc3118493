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
