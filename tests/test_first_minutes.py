"""A new user's first ten minutes (issue #17): the quick start shows acceleration or says what it
would take, ``auto`` explains its choice, and the small things (``--version``, ``py.typed``, the
README's commands) are there."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import typing

import pytest
from conftest import REPO, subprocess_env

import npgpu
from npgpu import backends


def _npgpu(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "npgpu", *args], cwd=REPO, env=subprocess_env(),
                          capture_output=True, text=True, timeout=300)


def test_explain_says_what_auto_picks_and_why():
    why = npgpu.explain()
    assert "explain" in npgpu.__all__
    assert typing.get_type_hints(npgpu.explain)["return"] is type(why)
    assert why.choice == backends.resolve_auto()
    assert [c.name for c in why.candidates] == ["cupy", "opencl", "numpy"]
    for candidate in why.candidates:
        expected = backends.unavailable_reason(candidate.name) is None
        assert candidate.usable == expected, candidate
        assert candidate.why
    assert why.reason
    if why.choice == "numpy":
        assert why.hint  # without a GPU it says what it would take
    text = str(why)
    assert text.startswith(f"auto picks {why.choice}: ")
    assert json.loads(json.dumps(why.as_dict()))["choice"] == why.choice


def test_explain_names_an_installed_opencl_that_cannot_run(monkeypatch):
    # (PoCL 3.0 builds nothing on a Zen 5 CPU: the hint must not say "pip install 'npgpu[opencl]'")
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "pyopencl"
                        else find_spec(name, *a))
    reasons = {"cupy": "no cupy here", "opencl": "the OpenCL device 'cpu' can't build kernels here: unknown CPU"}
    monkeypatch.setattr(backends, "unavailable_reason", lambda name: reasons.get(name))
    monkeypatch.setattr(backends, "resolve_auto", lambda: "numpy")
    why = npgpu.explain()
    assert why.choice == "numpy" and "can't run npgpu's kernels" in why.reason
    assert "npgpu[opencl]" not in why.hint and "npgpu[cuda12]" in why.hint
    assert [c.why for c in why.candidates][:2] == [reasons["cupy"], reasons["opencl"]]


def test_info_prints_autos_choice_and_reason():
    got = _npgpu("info")
    assert got.returncode == 0, got.stderr
    why = npgpu.explain()
    assert f"auto picks {why.choice}: {why.reason}" in got.stdout
    doc = json.loads(_npgpu("info", "--json").stdout)
    assert doc["auto"]["choice"] == doc["auto_picks"] == why.choice
    assert doc["auto"]["reason"] == why.reason


def test_version():
    got = _npgpu("--version")
    assert got.returncode == 0, got.stderr
    assert got.stdout.startswith(f"npgpu {npgpu.__version__} ")
    assert "--version" in _npgpu("--help").stdout


def test_the_package_is_marked_typed():
    assert (REPO / "npgpu" / "py.typed").is_file()
    config = (REPO / "pyproject.toml").read_text()
    section = re.search(r"^\[tool\.setuptools\.package-data\]\n(.*?)(^\[|\Z)", config, re.M | re.S)
    assert section and re.search(r'^npgpu = \[.*"py\.typed".*\]', section.group(1), re.M)


def test_the_readme_documents_info_json_and_the_test_commands():
    readme = (REPO / "README.md").read_text()
    assert "npgpu info --json" in readme and "npgpu --version" in readme and "npgpu.explain()" in readme
    tests = readme[readme.index("## Tests"):]
    assert "minutes" in tests and '-m "not slow"' in tests
    ci = (REPO / ".ci" / "run").read_text()
    # (the README's command with the C extension; the pure-Python reference again, less the slow
    # subprocess tests, which the README says CI runs once)
    assert "\npython3 -m pytest -q\n" in ci and 'NPGPU_PURE_PYTHON=1 python3 -m pytest -q -m "not slow"\n' in ci
    assert "all but those again in pure Python" in tests


def _quickstart(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "examples" / "quickstart.py"), *args], cwd=REPO,
                          env=subprocess_env(), capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_quickstart_runs_where_it_pays_or_says_what_it_would_take():
    got = _quickstart("3000000")  # 24 MB: above every backend's creation threshold
    assert got.returncode == 0, got.stderr
    lines = got.stdout.splitlines()
    for line in lines[:2]:  # NumPy's numbers, to the digits printed
        ours, numpys = line.split("(NumPy: ")
        assert ours.split(": ")[-1].strip() == numpys.rstrip(")").strip()
    why = npgpu.explain()
    opencl_usable = next(c for c in why.candidates if c.name == "opencl").usable
    if why.choice == "numpy" and not opencl_usable:
        assert "To accelerate" in lines[2]
        return
    assert ("'opencl' backend" if why.choice == "numpy" else f"'{why.choice}' backend") in lines[2]
    assert "faster" in lines[3] or "slower" in lines[3]
    summary = next(line for line in lines if line.startswith("npgpu report: "))
    device_calls = int(summary.split("npgpu report: ")[1].split()[0])
    assert device_calls >= 5  # linspace, the fused expression, the product, mean, max
    assert " 0 fallbacks" in summary and "MB to the device" in summary
    assert "fused kernels ran" in summary and " 0 fused kernels" not in summary
    assert "ops_fused=" in got.stdout


@pytest.mark.slow
@pytest.mark.opencl
def test_quickstart_on_a_cpu_opencl_device_uses_it():
    why = npgpu.explain()
    if why.choice != "numpy" or not next(c for c in why.candidates if c.name == "opencl").usable:
        pytest.skip("needs a machine whose only usable OpenCL device is not a GPU")
    got = _quickstart("3000000")
    assert got.returncode == 0, got.stderr
    assert "ran on the 'opencl' backend" in got.stdout


# ----------------------------------------------------------------------------- bench


def _bench(*args: str, cwd) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "npgpu", "bench", *args], cwd=cwd, env=subprocess_env(),
                          capture_output=True, text=True, timeout=300)


TIMING_SCRIPT = """
import sys
import time
import numpy as np

start = time.perf_counter()
x = np.linspace(0.0, 1.0, int(sys.argv[1]))
print("sum", float(np.sqrt(x).sum()))
print(f"elapsed {time.perf_counter() - start + time.time() % 1:.6f} s")
"""


@pytest.mark.slow
def test_bench_suggests_ignoring_lines_that_are_timings(tmp_path):
    script = tmp_path / "timed.py"
    script.write_text(TIMING_SCRIPT)
    got = _bench(str(script), "1000", "--backend", "numpy", "--repeat", "1", "--warmup", "0", cwd=tmp_path)
    assert got.returncode == 1, got.stdout + got.stderr
    assert "OUTPUTS DIFFER" in got.stdout
    assert "run again with --ignore '^elapsed'" in got.stdout
    again = _bench(str(script), "1000", "--backend", "numpy", "--repeat", "1", "--warmup", "0",
                   "--ignore", "^elapsed", cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "outputs agree" in again.stdout


def test_ignore_suggestion_only_when_every_difference_is_a_timing():
    from npgpu.cli import bench

    assert bench.ignore_suggestion("x 1.5\nt 0.20 s\n", "x 1.5\nt 0.31 s\n") == ["^t"]
    assert bench.ignore_suggestion("took 12 ms\n", "took 15 ms\n") == ["^took"]
    assert bench.ignore_suggestion("3.1 seconds\n", "2.9 seconds\n") == ["seconds"]
    assert bench.ignore_suggestion("x 1.5\nt 0.20 s\n", "x 1.6\nt 0.31 s\n") == []  # a value differs too
    assert bench.ignore_suggestion("mean 0.5\n", "mean 0.6\n") == []  # not a timing
    assert bench.ignore_suggestion("t 1 s\n", "t 1 s\nextra\n") == []


def _doc(speedup: float, **more) -> dict:
    doc = {"script": "/somewhere/heat_equation.py", "args": ["256", "100"], "backend": "opencl", "agree": True,
           "speedup": speedup, "numpy": {"median": 1.0}, "npgpu": {"median": 1.0 / speedup},
           "startup": {"numpy": 0.1, "npgpu": 0.4}, "report": None}
    doc.update(more)
    return doc


def test_the_plot_title_carries_the_arguments_and_says_faster_or_slower():
    from npgpu.cli import bench

    fast, slow = bench.plot_title(_doc(2.5)), bench.plot_title(_doc(0.5))
    assert fast.startswith("heat_equation.py 256 100 (opencl): ") and "2.50x faster" in fast
    assert "2.00x slower" in slow and "faster" not in slow


def test_the_diagnosis_says_where_the_time_went():
    from npgpu.cli import bench

    report = {"totals": {"device": 10, "host": 30, "fallback": 4, "bytes_to_device": 128_000_000,
                         "bytes_to_host": 40, "transfer_seconds": 0.5, "device_wait_seconds": 2.5},
              "functions": {"astype": {"device": 0, "host": 0, "fallback": 3, "reasons": {"no str dtype": 3}},
                            "save": {"device": 0, "host": 2, "fallback": 0, "reasons": {}},
                            "take": {"device": 0, "host": 0, "fallback": 1, "reasons": {"no take": 1}}},
              "kernels": {"kernels_launched": 5, "ops_fused": 20, "fused_seconds": 0.01}}
    lines = bench.diagnosis(_doc(0.25, report=report))
    text = "\n".join(lines)
    assert lines[0].startswith("why npgpu was slower (4.000 s against NumPy's 1.000 s")
    assert "10 on the device (23%), 30 on the host, 4 fallbacks" in text
    assert "128.0 MB to the device" in text and "0.500 s moving them" in text
    assert "2.500 s waiting for device work" in text
    fallback_lines = [line for line in lines if line.strip().startswith("fallback")]
    assert fallback_lines == ["  fallback   astype x3: no str dtype", "  fallback   take x1: no take"]
    assert "save x2" in text
    hints = [line for line in lines if line.startswith("  hint: ")]
    assert any("fallback" in h for h in hints) and any("stayed on the host" in h for h in hints)
    assert any("device's own work" in h for h in hints) and any("moving data" in h for h in hints)


@pytest.mark.slow
def test_bench_ends_with_a_diagnosis_when_slower(tmp_path):
    script = tmp_path / "small.py"
    script.write_text("import numpy as np\nprint(float(np.arange(10.0).sum()))\n")
    got = _bench(str(script), "--backend", "numpy", "--repeat", "1", "--warmup", "0", "--json", cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    doc = json.loads(got.stdout)
    if doc["speedup"] >= 1:  # (the numpy backend is NumPy plus npgpu's start-up: slower, unless by noise)
        assert doc["diagnosis"] == []
        return
    assert doc["diagnosis"][0].startswith("why npgpu was slower")
    assert any("numpy backend, which is NumPy itself" in line for line in doc["diagnosis"])
