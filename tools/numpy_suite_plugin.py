"""pytest plugin loaded into each run of NumPy's own test files by tools/numpy_suite.py.

It runs every test's setup, call and teardown under ``npgpu.enable(backend, threshold=0)`` in a
device mode, keeps a deterministic sample of the tests when asked, and writes one JSON line per
test (outcome, exception type, message, where it was raised) for the driver to compare across modes.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import traceback
import zlib
from collections.abc import Generator
from typing import Any

import pytest

_spec = importlib.util.find_spec("npgpu")
#: npgpu's package folder: frames under it are npgpu's (the rewritten tests live in a folder named npgpu too).
NPGPU_DIR = os.path.dirname(_spec.origin) + os.sep if _spec and _spec.origin else "\0"

DEVICE_MODES = ("emulated", "opencl", "cupy")
MODES = ("numpy", "off", *DEVICE_MODES)


def sampled(nodeid: str, fraction: float) -> bool:
    """Whether ``nodeid`` is in the deterministic sample keeping about ``fraction`` of the tests.

    The test is chosen by a CRC of its id, so every mode, process and machine picks the same ones.
    """
    if fraction >= 1.0:
        return True
    return zlib.crc32(nodeid.encode()) % 100_000 < fraction * 100_000


class SuiteTimeout(Exception):  # noqa: N818  (what the record's exception type reads)
    """A test ran past the per-test time limit (raised from SIGALRM in the main thread)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("npgpu-numpy-suite")
    group.addoption("--npgpu-mode", default="numpy", choices=MODES, help="numpy, off or a device backend")
    group.addoption("--npgpu-results", default=None, help="JSON-lines file the per-test records go to")
    group.addoption("--npgpu-sample", type=float, default=1.0, help="fraction of the tests kept (by id hash)")
    group.addoption("--npgpu-done", default=None, help="file of test ids already run (a restart skips them)")
    group.addoption("--npgpu-timeout", type=float, default=0.0, help="seconds per test phase (0: none)")
    group.addoption("--npgpu-host-asserts", action="store_true",
                    help="diagnostic: numpy.testing's assert functions get host copies of device arrays")


class _Recorder:
    """Collects the phases of each test into one record and appends it to the results file."""

    def __init__(self, config: pytest.Config) -> None:
        self.mode: str = config.getoption("--npgpu-mode")
        self.timeout: float = config.getoption("--npgpu-timeout")
        path = config.getoption("--npgpu-results")
        self.out = open(path, "a", encoding="utf-8") if path else None  # noqa: SIM115 (closed at unconfigure)
        self.records: dict[str, dict[str, Any]] = {}
        self.stopped = ""
        self.npgpu: Any = None
        if self.mode in DEVICE_MODES:
            import npgpu

            npgpu.enable(self.mode, threshold=0).__exit__(None, None, None)  # fails here if unavailable
            self.npgpu = npgpu
            if config.getoption("--npgpu-host-asserts"):
                _assert_on_host_copies(npgpu)

    def write(self, record: dict[str, Any]) -> None:
        if self.out is not None:
            self.out.write(json.dumps(record) + "\n")
            self.out.flush()


_recorder: _Recorder | None = None

#: numpy.testing's functions that compare values; ``--npgpu-host-asserts`` hands them host copies.
COMPARING_ASSERTS = ("assert_equal", "assert_array_equal", "assert_almost_equal", "assert_array_almost_equal",
                     "assert_allclose", "assert_array_less", "assert_array_max_ulp", "assert_array_almost_equal_nulp",
                     "assert_approx_equal", "assert_array_compare")


def _assert_on_host_copies(npgpu: Any) -> None:
    """Diagnostic, not the yardstick: numpy.testing's comparing asserts see NumPy values.

    ``assert_equal`` tests ``isinstance(x, numpy.ndarray)``, which a device array is not, and then
    calls ``bool(desired == actual)``: the "truth value is ambiguous" error hides what the comparison
    would have found. Device arrays (and lists, tuples, dicts of them) become host arrays, 0-d ones
    NumPy scalars. This also hides a device array returned where NumPy returns a scalar, so a run with
    it measures values only. Patched before the test modules import the names.
    """
    import functools

    import numpy.testing
    import numpy.testing._private.utils as utils

    def host(x: Any) -> Any:
        if isinstance(x, npgpu.DeviceArray):
            h = npgpu.asnumpy(x)
            return h[()] if h.ndim == 0 else h
        if type(x) in (list, tuple):
            return type(x)(host(v) for v in x)
        if type(x) is dict:
            return {k: host(v) for k, v in x.items()}
        return x

    for name in COMPARING_ASSERTS:
        original = getattr(utils, name, None)
        if original is None:
            continue

        def wrapper(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            return _original(*(host(a) for a in args), **{k: host(v) for k, v in kwargs.items()})

        functools.update_wrapper(wrapper, original)
        for module in (utils, numpy.testing):
            if getattr(module, name, None) is original:
                setattr(module, name, wrapper)


def pytest_configure(config: pytest.Config) -> None:
    global _recorder
    _recorder = _Recorder(config)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _recorder is not None:
        _recorder.write({"session": int(exitstatus), "stopped": _recorder.stopped})


def pytest_unconfigure(config: pytest.Config) -> None:
    if _recorder is not None and _recorder.out is not None:
        _recorder.out.close()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    fraction = config.getoption("--npgpu-sample")
    done_path = config.getoption("--npgpu-done")
    done: set[str] = set()
    if done_path and os.path.exists(done_path):
        with open(done_path, encoding="utf-8") as f:
            done = {line.rstrip("\n") for line in f if line.strip()}
    keep, drop = [], []
    for item in items:
        (keep if sampled(item.nodeid, fraction) and item.nodeid not in done else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _on_alarm(signum: int, frame: Any) -> None:
    raise SuiteTimeout(f"test phase ran past {_recorder.timeout if _recorder else 0:g} s")


def _phase(item: pytest.Item) -> Generator[None, None, None]:
    """One phase of a test: under the device backend in a device mode, with the time limit armed."""
    rec = _recorder
    assert rec is not None
    armed = rec.timeout > 0 and hasattr(signal, "setitimer")
    if armed:
        old = signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, rec.timeout)
    try:
        if rec.npgpu is not None:
            with rec.npgpu.enable(rec.mode, threshold=0):
                yield
        else:
            yield
    finally:
        if armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    yield from _phase(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    yield from _phase(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    yield from _phase(item)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """A file that fails to import is one record: its tests never ran in this mode."""
    if report.failed and _recorder is not None:
        text = str(report.longrepr)
        _recorder.write({"id": report.nodeid, "outcome": "collect-error", "exc_type": "CollectError",
                         "message": "\n".join(text.strip().splitlines()[-6:])[:1000]})


def pytest_runtest_logstart(nodeid: str, location: Any) -> None:
    if _recorder is not None:
        _recorder.write({"id": nodeid, "start": True})


def _frame_summary(entries: list[traceback.FrameSummary]) -> dict[str, Any]:
    """Where an exception came from: the innermost frame, the innermost npgpu frame, the test's line."""
    def where(fs: traceback.FrameSummary) -> str:
        return f"{_short(fs.filename)}:{fs.lineno}:{fs.name}"

    info: dict[str, Any] = {}
    if entries:
        info["raised_at"] = where(entries[-1])
    npgpu_frames = [fs for fs in entries if fs.filename.startswith(NPGPU_DIR)]
    if npgpu_frames:
        info["npgpu_at"] = where(npgpu_frames[-1])
    test_frames = [fs for fs in entries if os.path.basename(fs.filename).startswith("test_")]
    if test_frames:
        info["test_line"] = (test_frames[-1].line or "").strip()[:200]
    info["via_testing"] = any(f"{os.sep}numpy{os.sep}testing{os.sep}" in fs.filename for fs in entries)
    return info


def _short(path: str) -> str:
    if path.startswith(NPGPU_DIR):
        return "npgpu/" + path[len(NPGPU_DIR):]
    for marker in (f"{os.sep}numpy{os.sep}", f"{os.sep}site-packages{os.sep}"):
        i = path.rfind(marker)
        if i >= 0:
            return path[i + 1:]
    return os.path.basename(path)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    rec = _recorder
    if rec is None:
        return
    record = rec.records.setdefault(item.nodeid, {"id": item.nodeid, "outcome": "passed", "duration": 0.0})
    record["duration"] += report.duration
    if hasattr(report, "wasxfail"):
        record["outcome"] = "xfailed" if report.skipped else "xpassed"
    elif report.failed:
        record["outcome"] = "failed" if call.when == "call" else "error"
        record["when"] = call.when
        if call.excinfo is not None:
            exc = call.excinfo.value
            record["exc_type"] = type(exc).__name__
            record["message"] = _message(exc)
            record.update(_frame_summary(traceback.extract_tb(call.excinfo.tb)))
        if isinstance(call.excinfo.value if call.excinfo else None, SuiteTimeout):
            # A test stopped mid-way may leave npgpu's state (a half-recorded graph) behind: a new
            # process runs the rest.
            item.session.shouldstop = "npgpu numpy-suite: a test timed out; the driver restarts the rest"
            rec.stopped = "timeout"
    elif report.skipped and record["outcome"] == "passed":
        record["outcome"] = "skipped"
        if isinstance(report.longrepr, tuple):
            record["message"] = str(report.longrepr[2])[:300]
    if call.when == "teardown":
        rec.write(rec.records.pop(item.nodeid))


def _message(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception as err:  # noqa: BLE001  (str() of a failing exception must not lose the record)
        text = f"<str() raised {type(err).__name__}>"
    return text.strip()[:1000]
