"""Every figure of npgpu.report() is what it says (issue #17).

Transfer time is time moving bytes (the wait for queued device work is its own column); call
sites are the user's lines (never npgpu's, the standard library's or a library's); host work on
large arrays is not called small; host I/O is not a fallback; fallback warnings point at the
user's line and name only what was asked.
"""

from __future__ import annotations

import concurrent.futures
import importlib
import io
import sys
import typing
import warnings

import numpy
import pytest

import npgpu
from npgpu import _callsite, _config, _report, _transfer

HERE = __file__


def _line_of(text: str) -> int:
    with open(HERE) as source:
        for number, line in enumerate(source, 1):
            if text in line and "_line_of" not in line:
                return number
    raise AssertionError(text)


def _site(text: str) -> str:
    return f"{HERE}:{_line_of(text)}"


class _Clock:
    """A fake perf_counter: advances only when told to."""

    def __init__(self) -> None:
        self.now = 100.0

    def perf_counter(self) -> float:
        return self.now


def test_waiting_for_kernels_at_a_download_is_device_time_not_transfer_time(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(_transfer, "time", clock)
    with npgpu.enable("emulated", threshold=0):
        backend = _config.current().backend
        x = npgpu.arange(10_000.0)  # 80 kB: from _transfer.SPLIT_BYTES the wait is timed apart
        y = npgpu.sin(x) * 2.0
        moved = backend.to_host

        def slow_sync() -> None:  # the queued kernels take 5 s
            clock.now += 5.0

        def download(native):  # moving the bytes takes 2 ms
            clock.now += 0.002
            return moved(native)

        monkeypatch.setattr(backend, "sync", slow_sync)
        monkeypatch.setattr(backend, "to_host", download)
        npgpu.report(reset=True)
        host = npgpu.asnumpy(y)  # the download of y
        small = npgpu.asnumpy(y[:10])  # a small download: its time is the round trip, all waiting
    numpy.testing.assert_array_equal(host, numpy.sin(numpy.arange(10_000.0)) * 2.0)
    numpy.testing.assert_array_equal(small, host[:10])
    assert _transfer.SPLIT_BYTES <= 80_000
    little = npgpu.report().sites[_site("small = npgpu.asnumpy(y[:10])")]
    assert little.bytes_to_host == 80 and little.transfer_seconds == 0.0
    assert little.device_wait_seconds == pytest.approx(0.002)
    site = npgpu.report().sites[_site("host = npgpu.asnumpy(y)  # the download of y")]
    assert site.bytes_to_host == 80_000
    assert site.transfer_seconds == pytest.approx(0.002)
    assert site.device_wait_seconds == pytest.approx(5.0)
    text = str(npgpu.report())
    assert "wait ms" in text and "xfer ms" in text
    row = next(line for line in text.splitlines() if line.startswith("<conversion to host>"))
    assert row.split()[-2:] == ["2.00", "5002.00"]  # (the small download's 2 ms are waiting)


def test_a_large_upload_waits_for_queued_work_as_device_time_a_small_one_not_at_all(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(_transfer, "time", clock)
    large = _transfer.UPLOAD_SPLIT_BYTES // 8
    with npgpu.enable("emulated", threshold=0):
        backend = _config.current().backend
        syncs = []
        monkeypatch.setattr(backend, "sync", lambda: (syncs.append(1), setattr(clock, "now", clock.now + 1.0)))
        npgpu.report(reset=True)
        npgpu.asarray(numpy.ones(10_000))  # 80 kB: the queued kernels go on while it copies
        assert not syncs
        npgpu.asarray(numpy.ones(large))
        assert len(syncs) == 1
    totals = npgpu.report().totals()
    assert totals.bytes_to_device == 80_000 + large * 8
    assert totals.device_wait_seconds == pytest.approx(1.0) and totals.transfer_seconds == 0.0


def _user_function(x):
    return npgpu.asnumpy(npgpu.sin(x))  # (called from the standard library's worker thread)


def test_call_sites_are_user_lines_also_from_standard_library_threads():
    npgpu.report(reset=True)
    with npgpu.enable("emulated", threshold=0):
        x = npgpu.arange(100.0)
        state = _config.current()

        def in_thread(func, *args):
            with npgpu.enable(state.backend.name, threshold=0):
                return func(*args)

        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pool.submit(in_thread, _user_function, x).result()
            pool.submit(npgpu.sin, x).result()  # no user code on the worker's stack
    sites = npgpu.report().sites
    assert sites[_site("return npgpu.asnumpy(npgpu.sin(x))  # (called from")].device == 1
    for site in sites:
        assert "concurrent" not in site and "threading" not in site and "npgpu/" not in site.replace(HERE, "")
    assert all(site.startswith((HERE, "(", "<")) for site in sites), sorted(sites)


def test_the_rule_knows_the_standard_library_and_libraries(tmp_path):
    assert _callsite.kind_of_file(concurrent.futures.thread.__file__) == _callsite.INTERNAL
    assert _callsite.kind_of_file(typing.__file__) == _callsite.INTERNAL
    assert _callsite.kind_of_file(numpy.__file__) == _callsite.INTERNAL
    assert _callsite.kind_of_file(npgpu.__file__) == _callsite.INTERNAL
    assert _callsite.kind_of_file(pytest.__file__) == _callsite.LIBRARY
    assert _callsite.kind_of_file(HERE) == _callsite.USER


def test_a_library_call_is_counted_at_the_users_line(tmp_path, monkeypatch):
    library = tmp_path / "site-packages"
    library.mkdir()
    (library / "h17_fakelib.py").write_text("import numpy\n\ndef total(x):\n    return numpy.sum(x)\n")
    monkeypatch.syspath_prepend(str(library))
    fakelib = importlib.import_module("h17_fakelib")
    npgpu.report(reset=True)
    with npgpu.enable("emulated", threshold=0):
        x = npgpu.arange(100.0)
        got = fakelib.total(x)  # the library's numpy.sum on a device array
    assert got == numpy.arange(100.0).sum()
    sites = npgpu.report().sites
    assert sites[_site("got = fakelib.total(x)")].host == 1
    assert not any("site-packages" in site for site in sites)
    sys.modules.pop("h17_fakelib", None)


def test_host_work_on_large_arrays_is_not_called_small():
    large = numpy.ones(1 << 22)  # 32 MB
    npgpu.report(reset=True)
    with npgpu.enable("numpy"):  # NumPy's own calls, whatever their size
        npgpu.sum(large)
        npgpu.asarray(large)
        npgpu.random.default_rng(0).random(1 << 22)
    report = npgpu.report()
    assert report.functions["sum"].host == 1 and report.sites[_site("npgpu.sum(large)")].host == 1
    assert not any("small" in site for site in report.sites)
    text = str(report)
    assert "small NumPy calls" not in text
    assert _report.SMALL_CALLS_NOTE in text and "of any size" in text


@pytest.mark.parametrize("backend", ["emulated", pytest.param("opencl", marks=pytest.mark.opencl)])
def test_writing_files_is_host_work_not_a_fallback(backend):
    if backend == "opencl" and npgpu.backends.unavailable_reason("opencl"):
        pytest.skip(npgpu.backends.unavailable_reason("opencl"))
    npgpu.report(reset=True)
    with npgpu.enable(backend, threshold=0, on_fallback="raise"):
        x = npgpu.arange(10.0)
        buffer = io.BytesIO()
        npgpu.save(buffer, x)
        npgpu.savetxt(io.StringIO(), x)
        text = npgpu.array2string(x)
    assert text == numpy.array2string(numpy.arange(10.0))
    buffer.seek(0)
    numpy.testing.assert_array_equal(numpy.load(buffer), numpy.arange(10.0))
    report = npgpu.report()
    for name in ("save", "savetxt", "array2string"):
        assert report.functions[name].host == 1 and report.functions[name].fallback == 0, name
    assert report.totals().fallback == 0


def test_fallback_warnings_point_at_the_users_line_and_name_only_what_was_asked():
    with npgpu.enable("emulated", threshold=0, on_fallback="warn"):
        x = npgpu.arange(4.0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = x.astype(str)  # the emulated backend has no str dtype
    numpy.testing.assert_array_equal(got, numpy.arange(4.0).astype(str))
    assert len(caught) == 1, [str(w.message) for w in caught]
    warning = caught[0]
    assert issubclass(warning.category, npgpu.FallbackWarning)
    assert (warning.filename, warning.lineno) == (HERE, _line_of("got = x.astype(str)  # the emulated"))
    message = str(warning.message)
    assert "dtype" in message and not any(name in message for name in ("casting", "copy", "order"))


@pytest.mark.opencl
def test_an_indexing_fallback_warns_at_the_users_line():
    if npgpu.backends.unavailable_reason("opencl"):
        pytest.skip(npgpu.backends.unavailable_reason("opencl"))
    with npgpu.enable("opencl", threshold=0, on_fallback="warn"):
        x = npgpu.arange(12.0).reshape(3, 4)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = x[[0, 2], [1, 3]]  # fancy indexing of two axes: NumPy on the host
    numpy.testing.assert_array_equal(got, numpy.arange(12.0).reshape(3, 4)[[0, 2], [1, 3]])
    fallbacks = [w for w in caught if issubclass(w.category, npgpu.FallbackWarning)]
    assert fallbacks, "expected a fallback (if OpenCL now does this on the device, pick another index)"
    assert {(w.filename, w.lineno) for w in fallbacks} == {(HERE, _line_of("got = x[[0, 2], [1, 3]]"))}
