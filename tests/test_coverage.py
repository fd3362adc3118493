"""OpenCL runs every function the CuPy backend routes, or the README says why it doesn't; and
``npgpu info --coverage`` lists, per backend, what runs on the device and what runs in NumPy."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from conftest import REPO, subprocess_env

import npgpu
from npgpu.cli import info

SECTION = "### OpenCL: functions that run in NumPy"
#: a bullet of the section: "- `numpy.name`, `numpy.other`: reason"
BULLET = re.compile(r"^- ((?:`numpy\.[\w.]+`(?:, )?)+): \S")


def readme_exceptions() -> dict[str, str]:
    """The README's listed OpenCL exceptions: function name (as routed_functions spells it) -> its bullet."""
    text = (REPO / "README.md").read_text()
    assert SECTION in text, f"README.md has no section {SECTION!r}"
    body = text.split(SECTION, 1)[1]
    body = re.split(r"^#{1,3} ", body, maxsplit=1, flags=re.M)[0]
    names: dict[str, str] = {}
    for line in body.splitlines():
        if not line.startswith("- "):
            continue
        match = BULLET.match(line)
        assert match, f"README bullet not of the form \"- `numpy.name`, ...: reason\": {line!r}"
        for name in re.findall(r"`numpy\.([\w.]+)`", match.group(1)):
            assert name not in names, f"{name} is listed twice in the README's OpenCL exceptions"
            names[name] = line
    return names


def test_readme_exception_bullets_parse_and_name_numpy_functions() -> None:
    known = set(info.numpy_functions())
    listed = readme_exceptions()
    assert listed, "the README's OpenCL exception list is empty"
    for name, line in listed.items():
        assert name in known, f"{line!r} names {name!r}, which is not one of NumPy's functions npgpu mirrors"


@pytest.mark.opencl
def test_opencl_routes_what_cupy_routes_but_the_readme_exceptions() -> None:
    pytest.importorskip("pyopencl")
    opencl = set(npgpu.routed_functions("opencl"))
    cupy = set(npgpu.routed_functions("emulated"))  # (CuPy's routing table, read without CuPy)
    listed = readme_exceptions()
    missing = sorted(cupy - opencl - set(listed))
    assert not missing, f"routed by CuPy, not by OpenCL, and not in the README's {SECTION!r}: {missing}"
    stale = sorted(name for name in listed if name in opencl)
    assert not stale, f"the README lists these as running in NumPy on OpenCL, but OpenCL routes them: {stale}"


def test_coverage_counts_are_the_registries() -> None:
    doc = info.collect_coverage()
    functions = info.numpy_functions()
    assert doc["functions"] == len(functions) > 300
    assert set(doc["backends"]) == {"opencl", "cupy"}
    cupy = doc["backends"]["cupy"]
    assert cupy["available"]  # (the emulated backend needs no GPU)
    routed = set(npgpu.routed_functions("emulated"))
    assert cupy["on_device"] == len(routed & set(functions))
    assert sorted(cupy["in_numpy"] + cupy["host_by_nature"]) == sorted(set(functions) - routed)
    assert "shape" in cupy["host_by_nature"] and "apply_along_axis" in cupy["in_numpy"]


def test_info_coverage_command() -> None:
    run = subprocess.run([sys.executable, "-m", "npgpu", "info", "--coverage"], capture_output=True, text=True,
                         env=subprocess_env(), cwd=REPO, timeout=300)
    assert run.returncode == 0, run.stderr
    doc = info.collect_coverage()
    assert f"of {doc['functions']} functions: " in run.stdout
    for name, entry in doc["backends"].items():
        if entry["available"]:
            assert f"{name}: {entry['on_device']} of {doc['functions']} run on the device" in run.stdout
            assert f"{len(entry['in_numpy'])} fall back to NumPy" in run.stdout
            assert all(f in run.stdout for f in entry["in_numpy"])
        else:
            assert f"{name}: unavailable here" in run.stdout
    as_json = subprocess.run([sys.executable, "-m", "npgpu", "info", "--coverage", "--json"], capture_output=True,
                             text=True, env=subprocess_env(), cwd=REPO, timeout=300)
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout) == doc
