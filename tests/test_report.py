"""npgpu.report(): calls per function and call site, fallbacks, bytes moved; table and dict."""

from __future__ import annotations

import numpy
import pytest

import npgpu


def test_report_counts_devices_hosts_bytes_and_sites():
    npgpu.report(reset=True)
    host = numpy.arange(1000.0)
    with npgpu.enable("emulated", threshold=0):
        a = npgpu.asarray(host)  # one upload of 8000 bytes
        b = npgpu.sin(a) + 1
        total = float(b.sum())  # one download of a 0-d result
    assert total == float((numpy.sin(host) + 1).sum())
    report = npgpu.report()
    data = report.as_dict()
    assert data["functions"]["sin"]["device"] == 1 and data["functions"]["add"]["device"] == 1
    assert data["totals"]["bytes_to_device"] == 8000
    assert data["totals"]["bytes_to_host"] == 8
    sites = [site for site in data["call_sites"] if site.endswith(".py:" + str(_line_of("npgpu.sin(a) + 1")))]
    assert sites and __file__ in sites[0]
    text = str(report)
    assert "sin" in text and "call site" in text and "MB->dev" in text


def test_reset_empties():
    with npgpu.enable("numpy"):
        npgpu.arange(3)
    assert npgpu.report(reset=True).functions
    assert not npgpu.report().functions
    assert "nothing recorded" in str(npgpu.report())


def test_off_records_nothing():
    npgpu.report(reset=True)
    npgpu.sin(numpy.arange(3.0))
    assert not npgpu.report().functions


def _line_of(text: str) -> int:
    with open(__file__) as source:
        for number, line in enumerate(source, 1):
            if text in line and "_line_of" not in line:
                return number
    raise AssertionError(text)


def test_report_says_per_call_site_which_rule_placed_a_call_and_the_other_choices_cost():
    """#14: npgpu.report() names, per call site, the placement rule behind its calls and, from the
    measured costs, what the other choice would have cost."""
    from npgpu import _placement
    from npgpu.backends import unavailable_reason

    if unavailable_reason("opencl") is not None:
        pytest.skip(unavailable_reason("opencl"))
    host = numpy.random.default_rng(0).random(300_000)
    npgpu.report(reset=True)
    with npgpu.enable("opencl", threshold=0):
        d = npgpu.asarray(host)
        for _ in range(2):
            numpy.testing.assert_array_equal(npgpu.asnumpy(numpy.cumsum(d)), numpy.cumsum(host))  # device
            numpy.testing.assert_array_equal(npgpu.asnumpy(numpy.sort(d)), numpy.sort(host))
        cpu = d._backend.is_cpu
    rules = {rule: cell for site, by_rule in npgpu.report().as_dict()["placement_rules"].items()
             if site.endswith("test_report.py:" + str(_line_of("numpy.cumsum(d)"))) or
             site.endswith("test_report.py:" + str(_line_of("numpy.sort(d)"))) for rule, cell in by_rule.items()}
    device = rules[f"device: {_placement.DEVICE_OPERANDS}"]
    assert device["calls"] == 2 and device["other_choice_ms"] > 0  # (a download and NumPy's pass)
    if cpu:  # (PoCL sorts in NumPy by choice: the device's radix sort measured 10-80x slower)
        host_choice = rules[f"host: {_placement.FASTER_ON_HOST}"]
        assert host_choice["calls"] == 2 and host_choice["other_choice_ms"] > 0
    text = str(npgpu.report())
    assert "why (calls placed one by one" in text and _placement.DEVICE_OPERANDS in text


def test_arrays_made_from_nothing_are_named_by_their_own_rule_and_other_choice(monkeypatch):
    """zeros/arange of a size the wrapper can't read at once reach the dispatcher: the report names
    the creation rule (not host data's upload threshold) and, by the measured costs, what making
    it the other way would have cost: NumPy writing the bytes, or a launch and the device's rate."""
    import dataclasses

    from npgpu import _placement
    from npgpu.backends import get_backend
    from npgpu.backends.costs import Costs

    costs = Costs(launch_s=60e-6, device_bytes_per_s=1e12, host_bytes_per_s=8e9, upload_s=60e-6,
                  upload_bytes_per_s=8e9, host_call_s=1e-6)
    monkeypatch.setattr(get_backend("emulated"), "costs", dataclasses.replace(costs))
    npgpu.report(reset=True)
    with npgpu.enable("emulated", threshold=1 << 20):
        large = npgpu.zeros(shape=(300_000,))  # (a keyword shape: the wrapper's short road can't size it)
        small = npgpu.zeros(shape=(10,))
    assert type(large) is npgpu.DeviceArray and type(small) is numpy.ndarray
    numpy.testing.assert_array_equal(numpy.asarray(large), numpy.zeros(300_000))
    rules = {rule: cell for by_rule in npgpu.report().as_dict()["placement_rules"].values()
             for rule, cell in by_rule.items()}
    made = rules[f"device: {_placement.MADE_ON_DEVICE}"]
    assert made["calls"] == 1
    assert made["other_choice_ms"] == pytest.approx((costs.host_call_s + costs.host_op_s(2_400_000)) * 1e3)
    kept = rules[f"host: {_placement.MADE_IN_NUMPY}"]
    assert kept["calls"] == 1 and kept["other_choice_ms"] == pytest.approx(costs.device_op_s(80) * 1e3)
    assert not any(_placement.ABOVE_THRESHOLD in rule or _placement.BELOW_THRESHOLD in rule for rule in rules)
