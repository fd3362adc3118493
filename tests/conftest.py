"""Shared fixtures: the backends a differential test runs under, skipped cleanly where absent."""

from __future__ import annotations

import importlib
import importlib.util
import os
import time
from pathlib import Path
from typing import Any

import pytest

from npgpu import _residency, _scalar_reads
from npgpu.backends import unavailable_reason


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--clock-scale", type=float, default=None, metavar="F",
        help="npgpu's own clocks read F times the time that passed: F=2 runs the suite as a machine "
             "twice as slow would see itself (its timed windows, launches and transfers), to find "
             "tests that hold only at this machine's speed",
    )


class _ScaledClock:
    """``time`` as a module F times slower (or faster) sees it: ``perf_counter`` advances F times
    the real time since the clock was made; everything else is the real ``time``."""

    def __init__(self, scale: float):
        self.scale, self.origin = scale, time.perf_counter()

    def perf_counter(self) -> float:
        return self.origin + (time.perf_counter() - self.origin) * self.scale

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


#: The modules whose readings of ``time.perf_counter`` decide placement or are reported.
_TIMED_MODULES = ("npgpu._residency", "npgpu.lazy.materialize", "npgpu._transfer", "npgpu.backends.costs")


@pytest.fixture(autouse=True)
def _clock_scale(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``--clock-scale=F``, npgpu's clocks run F times as fast as the real one (a test's own
    patched clock still wins: it patches after this). Scripts run in subprocesses keep real time."""
    scale = request.config.getoption("--clock-scale")
    if scale is None:
        return
    clock = _ScaledClock(scale)
    for name in _TIMED_MODULES:
        monkeypatch.setattr(importlib.import_module(name), "time", clock)
    monkeypatch.setattr(importlib.import_module("npgpu._array"), "_perf_counter", clock.perf_counter)


def _reason(name: str) -> str | None:
    return unavailable_reason(name)


def _opencl_reason() -> str | None:
    if importlib.util.find_spec("pyopencl") is None:
        return "pyopencl is not installed (pip install 'npgpu[opencl]')"
    return _reason("opencl")


_OPENCL_REASON = _opencl_reason()

def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``opencl`` skip, saying why, where no OpenCL device can run npgpu's kernels
    (PoCL's LLVM 14 builds nothing on CPUs it doesn't know), as GPU tests skip without a GPU."""
    if _OPENCL_REASON is None:
        return
    skip = pytest.mark.skip(reason=f"npgpu's OpenCL backend can't run here: {_OPENCL_REASON}")
    for item in items:
        if item.get_closest_marker("opencl") is not None:
            item.add_marker(skip)


BACKEND_PARAMS = [
    pytest.param("off", id="off"),
    pytest.param("numpy", id="numpy"),
    pytest.param("emulated", id="emulated"),
    pytest.param(
        "opencl", id="opencl",
        marks=[pytest.mark.opencl, pytest.mark.skipif(_OPENCL_REASON is not None, reason=str(_OPENCL_REASON))],
    ),
    pytest.param(
        "cupy", id="cupy",
        marks=[pytest.mark.gpu, pytest.mark.skipif(_reason("cupy") is not None, reason=str(_reason("cupy")))],
    ),
]


@pytest.fixture(autouse=True)
def _fresh_residency_window() -> None:
    """Each test starts with residency's window empty and every charge taken: charges left by the
    tests before it (their arrays indexed under measured costs) would otherwise be judged inside
    it, and move its arrays (a loop of 9 column statements on CuPy lost two of its kernels so,
    after other tests). The flag saying the last element read was served from a copy read ahead
    is dropped too: one left by an earlier test whose read nothing charged made this test's first
    element read charged its measured time instead of a round trip (test_speedups' comparison of
    the C and Python roads' charges failed so, after the residency tests)."""
    _residency._Window.reset()
    _scalar_reads.take_served()


@pytest.fixture(params=BACKEND_PARAMS)
def npgpu_backend(request: pytest.FixtureRequest) -> str:
    """Name of the backend a differential test runs under."""
    return request.param


@pytest.fixture(params=[p for p in BACKEND_PARAMS if p.values[0] not in ("off", "numpy")])
def device_backend(request: pytest.FixtureRequest) -> str:
    """Backends whose arrays live on a device (the emulated one included)."""
    return request.param


#: The checkout the tests run from (subprocesses import npgpu from here).
REPO = Path(__file__).resolve().parents[1]


def subprocess_env() -> dict[str, str]:
    """Environment for a script run in a subprocess: this checkout importable, no backend
    enabled from the environment, matplotlib without a display."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    env.pop("NPGPU_BACKEND", None)
    env["MPLBACKEND"] = "Agg"
    return env


@pytest.fixture(scope="module")
def cl() -> Any:
    """An OpenCL backend instance for backend-level tests; skipped where OpenCL can't run."""
    from npgpu.backends.opencl import OpenCLBackend

    reason = OpenCLBackend.unavailable_reason()
    if reason:
        pytest.skip(reason)
    return OpenCLBackend()
