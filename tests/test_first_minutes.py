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
    assert "python3 -m pytest -q\n" in ci and "NPGPU_PURE_PYTHON=1 python3 -m pytest -q\n" in ci


def _quickstart(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "examples" / "quickstart.py"), *args], cwd=REPO,
                          env=subprocess_env(), capture_output=True, text=True, timeout=300)


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


@pytest.mark.opencl
def test_quickstart_on_a_cpu_opencl_device_uses_it():
    why = npgpu.explain()
    if why.choice != "numpy" or not next(c for c in why.candidates if c.name == "opencl").usable:
        pytest.skip("needs a machine whose only usable OpenCL device is not a GPU")
    got = _quickstart("3000000")
    assert got.returncode == 0, got.stderr
    assert "ran on the 'opencl' backend" in got.stdout
