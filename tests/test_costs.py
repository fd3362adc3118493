"""Placement's cost model (npgpu/backends/costs.py): break-even sizes from measured costs."""

from __future__ import annotations

import math

import numpy
import pytest

import npgpu
from npgpu import _config, _placement
from npgpu.backends import costs as costs_mod
from npgpu.backends.costs import Costs
from npgpu.backends.emulated import EmulatedBackend

# a GPU-like device: 10 us launches, 2 TB/s; a host at 5 GB/s; a link at 20 GB/s after 15 us
GPU = Costs(launch_s=10e-6, device_bytes_per_s=2e12, host_bytes_per_s=5e9, upload_s=15e-6,
            upload_bytes_per_s=20e9)
# a CPU device slower per byte than NumPy (PoCL on two cores, measured: see backends/opencl/backend.py)
SLOW = Costs(launch_s=150e-6, device_bytes_per_s=7e9, host_bytes_per_s=25e9, upload_s=100e-6,
             upload_bytes_per_s=25e9)


@pytest.mark.parametrize("uses", [1, 2, 4, 10])
@pytest.mark.parametrize("upload", [False, True])
def test_at_the_break_even_size_the_device_is_as_fast_and_faster_beyond(uses, upload):
    n = GPU.break_even_bytes(uses, upload)
    assert math.isfinite(n) and n > 0

    def device(nbytes):
        return uses * GPU.device_op_s(nbytes) + (GPU.upload_time_s(nbytes) if upload else 0.0)

    def host(nbytes):
        return uses * GPU.host_op_s(nbytes)

    assert device(n) == pytest.approx(host(n), rel=1e-9)
    assert device(n * 0.9) > host(n * 0.9)
    assert device(n * 1.1) < host(n * 1.1)


def test_more_uses_pay_for_an_upload_sooner():
    sizes = [GPU.break_even_bytes(uses, upload=True) for uses in (1, 2, 4, 8)]
    assert sizes == sorted(sizes, reverse=True)
    assert GPU.break_even_bytes(4, upload=False) < GPU.break_even_bytes(4, upload=True)


def test_a_device_slower_per_byte_never_pays_and_the_backends_figures_stay():
    assert SLOW.break_even_bytes(4, upload=False) == math.inf
    assert costs_mod.thresholds(SLOW, 16 << 20, 512 << 20) == (16 << 20, 512 << 20)


def test_thresholds_are_the_break_even_sizes_below_their_ceilings():
    create, upload = costs_mod.thresholds(GPU, 1 << 30, 1 << 30)
    assert create == int(GPU.break_even_bytes(costs_mod.USES, upload=False))
    assert upload == int(GPU.break_even_bytes(costs_mod.USES, upload=True))
    assert costs_mod.thresholds(GPU, 1000, 2000) == (1000, 2000)


def test_a_calibrated_backend_places_by_its_measured_costs(monkeypatch):
    backend = EmulatedBackend()
    monkeypatch.setattr("npgpu.backends.base.measure_costs", lambda b: GPU)
    backend.default_threshold_bytes, backend.upload_threshold_bytes = 1 << 30, 1 << 30
    backend.calibrate()
    assert backend.costs is GPU
    state = _config.State(backend=backend)
    assert _placement.threshold_bytes(state) == int(GPU.break_even_bytes(costs_mod.USES, upload=False))
    assert _placement.upload_threshold_bytes(state) == int(GPU.break_even_bytes(costs_mod.USES, upload=True))
    assert state.host_limit == _placement.upload_threshold_bytes(state)  # (the small-call fast path's limit)
    assert _placement.threshold_bytes(_config.State(backend=backend, threshold=123)) == 123


def test_numpys_time_runs_at_the_cached_rate_on_small_operations_and_the_large_rate_on_large_ones():
    cached = Costs(launch_s=10e-6, device_bytes_per_s=2e12, host_bytes_per_s=5e9, upload_s=15e-6,
                   upload_bytes_per_s=20e9, host_cached_bytes_per_s=20e9)
    small, large = costs_mod.CACHED_ELEMENTS * 8, costs_mod.MEASURE_ELEMENTS * 8
    assert cached.host_op_s(small) == pytest.approx(small / 20e9)
    assert cached.host_op_s(small // 3) == pytest.approx(small // 3 / 20e9)
    assert cached.host_op_s(large) == pytest.approx(large / 5e9)
    assert cached.host_op_s(4 * large) == pytest.approx(4 * large / 5e9)
    sizes = numpy.geomspace(small / 4, large * 4, 200)
    times = [cached.host_op_s(n) for n in sizes]
    assert times == sorted(times)  # (more bytes never take less time)
    per_byte = [t / n for t, n in zip(times, sizes, strict=True)]
    assert per_byte == sorted(per_byte) or numpy.allclose(numpy.diff(per_byte).clip(max=0), 0)
    # (measured as no faster than the large rate, or not at all: the large rate throughout)
    for same in (GPU, Costs(**{**vars(cached), "host_cached_bytes_per_s": 1e9})):
        assert all(same.host_op_s(n) == pytest.approx(n / 5e9) for n in sizes)


def test_the_measurement_runs_on_a_real_backend(device_backend):
    backend = npgpu.backends.get_backend(device_backend)
    measured = costs_mod.measure(backend)
    figures = measured.as_dict()
    assert all(math.isfinite(v) and v > 0 for v in figures.values()), figures
    assert measured.host_cached_bytes_per_s >= measured.host_bytes_per_s
    if backend.calibrated:
        assert backend.costs is not None
        assert backend.default_threshold_bytes <= backend.upload_threshold_bytes


def test_the_report_says_where_placement_moves_host_data_and_why(device_backend):
    with npgpu.enable(device_backend):
        line = npgpu.report().placement
        state = _config.current()
        assert f"from {_placement.upload_threshold_bytes(state)} bytes" in line
        assert line in str(npgpu.report())
        backend = state.backend
        if backend.costs is not None:
            assert f"launch {backend.costs.launch_s * 1e6:.0f} us" in line
    with npgpu.enable(device_backend, threshold=4096):
        assert "from 4096 bytes" in npgpu.report().placement
        assert "enable(threshold=4096)" in npgpu.report().placement
    with npgpu.disable():
        assert npgpu.report().as_dict()["placement"].startswith("placement: acceleration off")


def test_a_large_product_of_small_host_vectors_is_made_on_the_device(device_backend):
    """outer(u, v) of vectors below the upload threshold, whose result is above it (gemver's
    A += outer(u1, v1)): placement weighs the result, as host data of its size."""
    u, v = numpy.linspace(0.0, 1.0, 30), numpy.arange(40.0)
    with npgpu.enable(device_backend, threshold=4096):
        big = npgpu.outer(u, v)  # 9600 bytes from two of 240 and 320
        small = npgpu.outer(u[:5], v[:5])
    assert type(big) is npgpu.DeviceArray and type(small) is numpy.ndarray
    numpy.testing.assert_array_equal(numpy.asarray(big), numpy.outer(u, v))
    numpy.testing.assert_array_equal(small, numpy.outer(u[:5], v[:5]))


def test_a_reduction_of_host_data_moves_only_where_its_one_pass_pays_for_the_upload(monkeypatch):
    """A reduction reads host data once, and the device's copy is dropped after it: at the H200's
    figures (link 8 GB/s, NumPy 8.5 GB/s) the upload alone takes NumPy's time, so the sum stays in
    NumPy; over a link much faster than NumPy's pass (here 200 GB/s) it moves."""
    h200 = Costs(launch_s=34e-6, device_bytes_per_s=1e12, host_bytes_per_s=8.5e9, upload_s=30e-6,
                 upload_bytes_per_s=8.2e9)
    host = numpy.random.default_rng(0).random((8, 3, 3, 128, 32))  # (resnet's per-pixel product: 2.4 MB)
    expected = numpy.sum(host, axis=(1, 2, 3))
    backend = npgpu._get_backend("emulated")
    for costs, where in ((h200, "host"), (Costs(launch_s=10e-6, device_bytes_per_s=2e12, host_bytes_per_s=5e9,
                                                upload_s=15e-6, upload_bytes_per_s=200e9), "device")):
        monkeypatch.setattr(backend, "costs", costs)
        with npgpu.enable("emulated", threshold=1 << 20):
            npgpu.report(reset=True)
            got = npgpu.sum(host, axis=(1, 2, 3))
            counts = npgpu.report().functions["sum"]
        assert (counts.host, counts.device) == ((1, 0) if where == "host" else (0, 1))
        numpy.testing.assert_array_equal(numpy.asarray(got), expected)


@pytest.mark.parametrize("func, kwargs", [
    (numpy.sum, {"axis": (1, 2, 3)}),
    (numpy.sum, {"axis": 0, "keepdims": True}),
    (numpy.mean, {"axis": (0, 2), "dtype": numpy.float32}),
    (numpy.max, {}),
    (numpy.all, {"axis": (0, 1)}),  # (the ufunc reduction NumPy's function ends in, called directly)
    (numpy.prod, {"axis": 2}),
    (numpy.min, {"axis": None}),
    (numpy.sum, {"dtype": numpy.float32}),
    (numpy.sum, {"axis": 1, "where": numpy.arange(32) > 3}),  # (an array option: the general path)
])
def test_a_host_reduction_that_stays_in_numpy_answers_and_counts_as_the_general_path(monkeypatch, func, kwargs):
    """The one-pass rule's short road (``_dispatch._host_reduction``) and the general path give
    NumPy's answer and one host call with the rule at the caller's line."""
    h200 = Costs(launch_s=34e-6, device_bytes_per_s=1e12, host_bytes_per_s=8.5e9, upload_s=30e-6,
                 upload_bytes_per_s=8.2e9)
    host = numpy.random.default_rng(1).random((8, 3, 3, 128, 32))
    expected = func(host, **kwargs)
    monkeypatch.setattr(npgpu._get_backend("emulated"), "costs", h200)
    with npgpu.enable("emulated", threshold=1 << 20):
        npgpu.report(reset=True)
        got = getattr(npgpu, func.__name__)(host, **kwargs)
        report = npgpu.report()
    assert type(got) is type(expected)
    numpy.testing.assert_array_equal(got, expected)
    assert got.dtype == expected.dtype
    counts = report.functions[func.__name__]
    assert (counts.host, counts.device) == (1, 0)
    rules = report.as_dict()["placement_rules"]
    assert any("a reduction of host data reads it once" in name for site in rules.values() for name in site)
