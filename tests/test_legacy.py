"""Import substitution for unmodified scripts (npgpu.legacy): what resolves to npgpu and what doesn't.

In-process checks of the import hook, plus real scripts that hand npgpu arrays to SciPy and matplotlib.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy
import pytest
from conftest import subprocess_env

import npgpu
from npgpu import legacy


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=subprocess_env(), capture_output=True, text=True, timeout=120)


def _exec_legacy(source: str) -> dict:
    namespace = {"__builtins__": legacy.legacy_builtins(), "__name__": "legacy_test"}
    exec(textwrap.dedent(source), namespace)
    return namespace


def test_import_forms_resolve_to_npgpu() -> None:
    ns = _exec_legacy(
        """
        import numpy as np
        import numpy
        import numpy.linalg as la
        import numpy.random
        from numpy import sin, float64
        from numpy.fft import fft
        from numpy.random import default_rng
        """
    )
    assert ns["np"] is npgpu
    assert ns["numpy"] is npgpu
    assert ns["la"] is npgpu.linalg
    assert ns["numpy"].random is npgpu.random
    assert ns["sin"] is npgpu.sin
    assert ns["float64"] is numpy.float64
    assert ns["fft"] is npgpu.fft.fft
    assert ns["default_rng"] is npgpu.random.default_rng


def test_star_import_and_unmirrored_submodules() -> None:
    ns = _exec_legacy(
        """
        from numpy import *
        from numpy.lib.stride_tricks import sliding_window_view
        import numpy.polynomial.polynomial as P
        from numpy import testing
        """
    )
    assert ns["sin"] is npgpu.sin
    assert ns["sliding_window_view"] is not None
    assert ns["P"].polyval(3.0, [1.0, 2.0]) == 7.0  # NumPy's module where npgpu has none
    assert hasattr(ns["testing"], "assert_allclose")


def test_other_imports_untouched() -> None:
    ns = _exec_legacy("import math, json\nfrom os import path\n")
    assert ns["path"] is os.path
    assert sys.modules["numpy"] is numpy


def test_run_path_restores_the_process(tmp_path: Path) -> None:
    (tmp_path / "helper_mod_legacy.py").write_text("import numpy as np\nKIND = np.__name__\n")
    script = tmp_path / "main.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            import numpy as np
            import helper_mod_legacy
            RESULT = (__name__, np.__name__, helper_mod_legacy.KIND, sys.argv[1:], sys.path[0])
            """
        )
    )
    argv, path0, main = sys.argv[:], sys.path[0], sys.modules["__main__"]
    ns = legacy.run_path(str(script), ["a", "b"])
    assert ns["RESULT"] == ("__main__", "npgpu", "npgpu", ["a", "b"], str(tmp_path.resolve()))
    assert (sys.argv, sys.path[0], sys.modules["__main__"]) == (argv, path0, main)
    assert "helper_mod_legacy" not in sys.modules
    assert sys.modules["numpy"] is numpy


def test_installed_libraries_below_the_script_dir_keep_numpy() -> None:
    import scipy

    finder = legacy.ScriptDirFinder(os.path.abspath(os.sep))
    assert not finder._redirects(scipy.__file__)
    assert not finder._redirects(npgpu.__file__)
    assert not finder._redirects(numpy.__file__)


SCIPY_SCRIPT = """
import sys

import numpy as np
import scipy.linalg
import scipy.ndimage
import scipy.special

a = np.arange(16.0).reshape(4, 4) + np.eye(4) * 10
b = np.linspace(0.0, 1.0, 4)
x = scipy.linalg.solve(a, b)
print("solve", np.round(x, 10).tolist())
img = np.sin(np.linspace(0.0, 6.0, 400)).reshape(20, 20)
print("filter", round(float(scipy.ndimage.gaussian_filter(img, 1.5).sum()), 10))
print("expit", round(float(scipy.special.expit(np.linspace(-3.0, 3.0, 101)).mean()), 12))
print("scipy returns", type(scipy.linalg.solve(a, b)).__name__, "and sees", sys.modules["numpy"].__name__)
"""

MPL_SCRIPT = """
import sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

x = np.linspace(0.0, 10.0, 5000)
y = np.sin(x) * np.exp(-x / 5)
fig, ax = plt.subplots()
ax.plot(x, y)
ax.hist(y, bins=20)
fig.savefig(sys.argv[1])
print("limits", [round(float(v), 6) for v in ax.get_ylim()])
print("max", round(float(y.max()), 12))
"""


def _backends() -> list:
    params = [pytest.param("numpy", id="numpy")]
    params.append(
        pytest.param(
            "opencl",
            id="opencl",
            marks=[
                pytest.mark.opencl,
                pytest.mark.skipif(importlib.util.find_spec("pyopencl") is None, reason="pyopencl not installed"),
            ],
        )
    )
    return params


@pytest.mark.parametrize("backend", _backends())
def test_npgpu_arrays_reach_scipy_as_host_arrays(tmp_path: Path, backend: str) -> None:
    script = tmp_path / "with_scipy.py"
    script.write_text(SCIPY_SCRIPT)
    want = _run([sys.executable, str(script)], tmp_path)
    report = tmp_path / "report.json"
    options = ["--backend", backend, "--threshold", "0", "--report-json", str(report)]
    got = _run([sys.executable, "-m", "npgpu", "run", *options, str(script)], tmp_path)
    assert want.returncode == 0, want.stderr
    assert got.returncode == 0, got.stderr
    assert got.stdout == want.stdout
    assert "scipy returns ndarray and sees numpy" in got.stdout
    if backend != "numpy":
        # Not vacuous: the arrays were on the device and SciPy pulled them to the host.
        totals = json.loads(report.read_text())["report"]["totals"]
        assert totals["device"] > 0 and totals["bytes_to_host"] > 0


@pytest.mark.parametrize("backend", _backends())
def test_npgpu_arrays_reach_matplotlib(tmp_path: Path, backend: str) -> None:
    pytest.importorskip("matplotlib")
    script = tmp_path / "with_mpl.py"
    script.write_text(MPL_SCRIPT)
    want = _run([sys.executable, str(script), str(tmp_path / "a.png")], tmp_path)
    got = _run(
        [
            sys.executable,
            "-m",
            "npgpu",
            "run",
            "--backend",
            backend,
            "--threshold",
            "0",
            str(script),
            str(tmp_path / "b.png"),
        ],
        tmp_path,
    )
    assert want.returncode == 0, want.stderr
    assert got.returncode == 0, got.stderr
    assert got.stdout == want.stdout
    assert (tmp_path / "b.png").stat().st_size > 1000
