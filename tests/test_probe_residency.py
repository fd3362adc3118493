"""tools/probe_residency.py: residency's windows and charges on a row laid out as NPBench's.

The kernel here is this test's own (an NPBench-shaped folder written to a temporary directory),
not NPBench's: a loop reading a device array element by element, which residency moves to the
host once the emulated device is given a GPU's costs."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

import probe_residency as probe  # noqa: E402  (tools/ is not a package)
from npbench_toy import write_row  # noqa: E402

from npgpu import _residency  # noqa: E402
from npgpu.backends import get_backend  # noqa: E402
from npgpu.backends.costs import Costs  # noqa: E402

KERNEL = """import numpy as np


def kernel(N, x):
    total = 0.0
    for i in range(N):
        total += float(x[i])
    return x * total
"""

INIT = """import numpy as np


def initialize(N):
    return np.linspace(0.0, 1.0, N)
"""

#: a GPU's costs (a launch and a small upload of 60 us, NumPy at 8 GB/s)
GPU = Costs(launch_s=60e-6, device_bytes_per_s=1e12, host_bytes_per_s=8e9, upload_s=60e-6,
            upload_bytes_per_s=8e9, host_call_s=1e-6, host_cached_bytes_per_s=16e9)


def _folder(root: Path) -> Path:
    return write_row(root, {
        "relative_path": "toy/reads", "module_name": "reads", "func_name": "kernel",
        "parameters": {"S": {"N": 3000}},
        "init": {"func_name": "initialize", "input_args": ["N"], "output_args": ["x"]},
        "input_args": ["N", "x"], "array_args": ["x"], "output_args": []}, INIT, KERNEL)


@pytest.fixture
def gpu_costs(monkeypatch):
    """The emulated backend (the one instance the probe's ``enable`` uses) with a GPU's costs, its
    upload threshold 0 (``x`` is uploaded); restored after, with what the probe sets."""
    backend = get_backend("emulated")
    monkeypatch.setattr(backend, "costs", GPU)
    monkeypatch.setattr(backend, "upload_threshold_bytes", 0)
    monkeypatch.setattr(_residency, "OVER_NUMPY", _residency.OVER_NUMPY)  # (the probe sets them)
    monkeypatch.setattr(_residency, "NUMPY_SHARE", _residency.NUMPY_SHARE)
    yield
    _residency._Window.reset()


def test_the_probe_prints_the_windows_that_moved_the_array_and_the_charges_by_kind(tmp_path, capsys, gpu_costs):
    root = _folder(tmp_path)
    assert probe.main(["--root", str(root), "--backend", "emulated", "--preset", "S", "--row", "reads",
                       "--calls", "2"]) == 0
    out = capsys.readouterr().out
    assert "NumPy's add by size" in out and "resnet's pixel both" in out
    first = re.search(r"call 0: NumPy [\d.]+ ms, npgpu [\d.]+ ms \(CPU [\d.]+\); "
                      r"(\d+) windows judged, (\d+) arrays moved", out)
    assert first and int(first[1]) >= 1 and int(first[2]) >= 1, out
    # (the window moves every tracked array of enough excess: in a full test run, arrays other tests
    # left alive too)
    assert re.search(r"window +[\d.]+ ms: excess +[\d.-]+%, NumPy's estimate +[\d.]+%, \d+ charges, [1-9]\d* moved",
                     out), out
    reads = re.search(r"charge_read +n= *(\d+)", out)
    assert reads and int(reads[1]) >= 64  # (a window holds 64 charges at least)
    assert "call 1:" in out


def test_the_rule_and_rate_options_reach_residency_and_the_costs(tmp_path, capsys, gpu_costs):
    root = _folder(tmp_path)
    assert probe.main(["--root", str(root), "--backend", "emulated", "--preset", "S", "--row", "reads",
                       "--calls", "1", "--over-numpy", "inf", "--numpy-share", "0.5", "--large-rate-only"]) == 0
    out = capsys.readouterr().out
    assert "host_cached_bytes_per_s=None" in out and "NUMPY_SHARE 0.50, OVER_NUMPY inf" in out
    assert _residency.OVER_NUMPY == float("inf") and _residency.NUMPY_SHARE == 0.5
