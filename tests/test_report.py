"""npgpu.report(): calls per function and call site, fallbacks, bytes moved; table and dict."""

from __future__ import annotations

import numpy

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
