"""Every examples/ script, run small: plain python vs npgpu run (numpy and OpenCL backends).

The outputs must agree number for number within a tight tolerance, as ``npgpu bench`` checks them.
"""

from __future__ import annotations

import functools
import importlib.util
import subprocess
import sys

import pytest
from conftest import REPO, subprocess_env

from npgpu.cli import compare_text

EXAMPLES = REPO / "examples"
pytestmark = pytest.mark.slow  # (a subprocess per example and backend: -m "not slow" leaves them out)

#: Small sizes so that the whole matrix stays within seconds.
SMALL_ARGS: dict[str, list[str]] = {
    "black_scholes.py": ["20000"],
    "monte_carlo_pi.py": ["50000"],
    "heat_equation.py": ["64", "50"],
    "mandelbrot.py": ["120", "30"],
    "nbody.py": ["64", "5"],
    "kmeans.py": ["3000", "4"],
    "game_of_life.py": ["48", "30"],
    "mlp_forward.py": ["64"],
    "logistic_regression.py": ["2000", "30"],
    "wave_fft.py": ["4096"],
}
#: (dask_*.py import npgpu and Dask themselves: tests/test_dask.py runs them)
SCRIPTS = sorted(p.name for p in EXAMPLES.glob("*.py") if p.name != "quickstart.py" and not p.name.startswith("dask_"))



def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=REPO, env=subprocess_env(), capture_output=True, text=True, timeout=300)


@functools.cache
def _plain(name: str) -> str:
    got = _run([sys.executable, str(EXAMPLES / name), *SMALL_ARGS[name]])
    assert got.returncode == 0, got.stderr
    return got.stdout


def test_every_example_has_small_arguments() -> None:
    assert len(SCRIPTS) >= 8
    assert set(SCRIPTS) == set(SMALL_ARGS)
    for name in SCRIPTS:
        source = (EXAMPLES / name).read_text()
        assert "import numpy as np" in source and "npgpu" not in source, name


def _backend_params() -> list:
    opencl_missing = importlib.util.find_spec("pyopencl") is None
    return [
        pytest.param("numpy", id="numpy"),
        pytest.param(
            "opencl",
            id="opencl",
            marks=[pytest.mark.opencl, pytest.mark.skipif(opencl_missing, reason="pyopencl not installed")],
        ),
    ]


@pytest.mark.parametrize("backend", _backend_params())
@pytest.mark.parametrize("name", SCRIPTS)
def test_example_matches_numpy(name: str, backend: str) -> None:
    want = _plain(name)
    # Small sizes sit below the placement threshold; --threshold 0 sends them to the
    # device anyway, so the device code is what gets compared.
    options = ["--backend", backend] + (["--threshold", "0"] if backend != "numpy" else [])
    got = _run([sys.executable, "-m", "npgpu", "run", *options, str(EXAMPLES / name), *SMALL_ARGS[name]])
    assert got.returncode == 0, got.stderr
    assert compare_text(want, got.stdout, rtol=1e-9, atol=1e-12) == []


def test_quickstart() -> None:
    got = _run([sys.executable, str(EXAMPLES / "quickstart.py")])
    assert got.returncode == 0, got.stderr
    lines = got.stdout.splitlines()
    assert "backend" in lines[2]
    # The accelerated numbers are printed next to NumPy's, to the same digits.
    for line in lines[:2]:
        ours, numpys = line.split("(NumPy: ")
        assert ours.split(": ")[-1].strip() == numpys.rstrip(")").strip()
