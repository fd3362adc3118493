"""Shared fixtures: the backends a differential test runs under, skipped cleanly where absent."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import pytest

from npgpu import _residency
from npgpu.backends import unavailable_reason


def _reason(name: str) -> str | None:
    return unavailable_reason(name)


def _opencl_reason() -> str | None:
    if importlib.util.find_spec("pyopencl") is None:
        return "pyopencl is not installed (pip install 'npgpu[opencl]')"
    return _reason("opencl")


_OPENCL_REASON = _opencl_reason()

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
    after other tests)."""
    _residency._Window.reset()


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
