"""Shared fixtures: the backends a differential test runs under, skipped cleanly where absent."""

from __future__ import annotations

import importlib.util

import pytest

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


@pytest.fixture(params=BACKEND_PARAMS)
def npgpu_backend(request: pytest.FixtureRequest) -> str:
    """Name of the backend a differential test runs under."""
    return request.param


@pytest.fixture(params=[p for p in BACKEND_PARAMS if p.values[0] not in ("off", "numpy")])
def device_backend(request: pytest.FixtureRequest) -> str:
    """Backends whose arrays live on a device (the emulated one included)."""
    return request.param
