"""``npgpu info``: versions, backends (and why one can't run here), devices, thresholds; with
``--coverage``, how many of NumPy's functions each device backend runs and which go to NumPy."""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import types
from collections.abc import Sequence
from dataclasses import replace
from importlib import metadata
from typing import Any

import numpy
from numpy.testing.overrides import get_overridable_numpy_array_functions

import npgpu
from npgpu import _config, _ops, _placement, backends


def _cmd_info(tokens: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="npgpu info", description="Versions, backends, devices and thresholds.")
    parser.add_argument("--json", action="store_true", help="print as JSON")
    parser.add_argument("--coverage", action="store_true",
                        help="per device backend: how many of NumPy's functions run on the device, which run in NumPy")
    opts = parser.parse_args(tokens)
    if opts.coverage:
        cover = collect_coverage()
        if opts.json:
            json.dump(cover, sys.stdout, indent=1)
            sys.stdout.write("\n")
        else:
            sys.stdout.write(_coverage_text(cover))
        return 0
    doc = collect_info()
    if opts.json:
        json.dump(doc, sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(_info_text(doc))
    return 0


def _probe_version(module: str) -> dict[str, Any]:
    """Import ``module`` in a child process: a driver that crashes on import can't take us down."""
    code = f"import sys, {module}; sys.stdout.write(str({module}.__version__))"
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return {"importable": False, "why": "importing it did not finish within 120 s"}
    if proc.returncode == 0:
        return {"importable": True, "version": proc.stdout.strip()}
    if proc.returncode < 0:
        return {"importable": False, "crashed": True, "why": f"importing it crashed (signal {-proc.returncode})"}
    last = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
    return {"importable": False, "why": last}


def collect_info() -> dict[str, Any]:
    """Everything ``npgpu info`` shows, as plain data."""

    doc: dict[str, Any] = {
        "npgpu": getattr(npgpu, "__version__", None) or _dist_version("npgpu"),
        "python": f"{platform.python_version()} ({sys.executable})",
        "platform": platform.platform(),
        "numpy": numpy.__version__,
        "packages": {},
        "backends": {},
        "active_backend": npgpu.current_backend(),
    }
    explanation = npgpu.explain()  # (auto's choice, why, and what would accelerate more)
    doc["auto_picks"] = explanation.choice
    doc["auto"] = explanation.as_dict()
    crashed = set()
    for package, backend in (("cupy", "cupy"), ("pyopencl", "opencl")):
        probe = _probe_version(package)
        doc["packages"][package] = probe
        if probe.get("crashed"):
            crashed.add(backend)
    available: dict[str, Any] = {}
    for name in backends.BACKEND_NAMES:
        entry: dict[str, Any] = {}
        if name in crashed:
            entry["reason"] = f"importing {'cupy' if name == 'cupy' else 'pyopencl'} crashes the interpreter"
        else:
            entry["reason"] = backends.unavailable_reason(name)
        entry["available"] = entry["reason"] is None
        if entry["available"]:
            available[name] = backends.get_backend(name)
            entry["describe"] = available[name].describe()
        doc["backends"][name] = entry
    doc["thresholds"] = _thresholds(available)
    return doc


def _dist_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _thresholds(available: dict[str, Any]) -> dict[str, Any]:
    """The placement thresholds (bytes; host below, device above): in force now and per backend."""

    state = _config.current()
    found: dict[str, Any] = {"explicit (enable(threshold=...))": state.threshold}
    if state.backend is not None:
        found[f"in force now ({state.backend.name}) creation bytes"] = _placement.threshold_bytes(state)
        found[f"in force now ({state.backend.name}) upload bytes"] = _placement.upload_threshold_bytes(state)
    for name, backend in available.items():
        if backend.is_host:
            continue  # NumPy itself: nothing to place
        default = replace(state, backend=backend, threshold=None)
        found[f"{name} creation bytes"] = _placement.threshold_bytes(default)
        found[f"{name} upload bytes"] = _placement.upload_threshold_bytes(default)
        if backend.costs is not None:  # (what the thresholds were computed from: backends/costs.py)
            for key, value in backend.costs.as_dict().items():
                found[f"{name} measured {key}"] = round(value, 2)
    return found


def _human(key: str, value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 2**20 and ("mem" in key or "bytes" in key):
        return f"{value / 2**30:.2f} GiB" if value >= 2**30 else f"{value / 2**20:.1f} MiB"
    return str(value)


def _info_text(doc: dict[str, Any]) -> str:
    lines = [
        f"npgpu     {doc['npgpu']}",
        f"python    {doc['python']}",
        f"platform  {doc['platform']}",
        f"numpy     {doc['numpy']}",
    ]
    for package, probe in doc["packages"].items():
        lines.append(f"{package:<9} {probe['version'] if probe['importable'] else 'not importable: ' + probe['why']}")
    auto = doc["auto"]
    lines += ["", f"auto picks {auto['choice']}: {auto['reason']}"]
    if auto["hint"]:
        lines.append(f"  to accelerate here: {auto['hint']}")
    lines += ["", f"backends (active: {doc['active_backend'] or 'none'}; auto picks {doc['auto_picks']})"]
    for name, entry in doc["backends"].items():
        lines.append(f"  {name:<7} {'can run here' if entry['available'] else 'unavailable: ' + entry['reason']}")
        for key, value in (entry.get("describe") or {}).items():
            if isinstance(value, list):
                for i, item in enumerate(value):
                    text = ", ".join(f"{k}={_human(k, v)}" for k, v in item.items()) if isinstance(item, dict) else item
                    lines.append(f"      {key}[{i}]: {text}")
            elif isinstance(value, dict):
                lines.append(f"      {key}: " + ", ".join(f"{k}={_human(k, v)}" for k, v in value.items()))
            else:
                lines.append(f"      {key}: {_human(key, value)}")
    lines += ["", "placement thresholds"]
    for key, value in doc["thresholds"].items():
        lines.append(f"  {key}: {_human(key, value)}")
    return "\n".join(lines) + "\n"


# -- coverage: NumPy's functions on each device backend ------------------------------------------
_FUNCTION_TYPES = (types.FunctionType, types.BuiltinFunctionType, type(numpy.sum))
#: functions that are host work by nature: metadata, memory overlap, files and text, reading files
_HOST_BY_NATURE = _ops.METADATA | _ops.MEMORY | _ops.HOST_IO | (_ops.CONSTRUCTORS - _ops.IN_MEMORY_CONSTRUCTORS)
#: the backends whose coverage is listed, and the registry each is read from
_COVERAGE_BACKENDS = (("opencl", "opencl"), ("cupy", "emulated"))
_DENOMINATOR = ("NumPy's public functions of numpy, numpy.linalg and numpy.fft that npgpu's namespace "
                "mirrors and that take arrays (the ufuncs and the functions NumPy dispatches through "
                "__array_function__)")


def numpy_functions() -> list[str]:
    """The denominator of the coverage: NumPy's array functions that npgpu mirrors, spelled as
    ``npgpu.routed_functions`` spells them (``sum``, ``linalg.svd``, ``fft.fft``)."""
    overridable = get_overridable_numpy_array_functions()
    names: set[str] = set()
    for module in (numpy, numpy.linalg, numpy.fft):
        for attr in dir(module):
            obj = getattr(module, attr)
            if attr.startswith("_") or isinstance(obj, type):
                continue
            if isinstance(obj, numpy.ufunc):
                names.add(obj.__name__)
            elif isinstance(obj, _FUNCTION_TYPES) and (obj in overridable or hasattr(obj, "_implementation")):
                names.add(npgpu._function_name(obj))
    return sorted(names)


def collect_coverage() -> dict[str, Any]:
    """Per device backend: how many of ``numpy_functions()`` run on the device and which don't."""
    functions = numpy_functions()
    host_work = {npgpu._function_name(f) for f in _HOST_BY_NATURE}
    doc: dict[str, Any] = {"denominator": _DENOMINATOR, "functions": len(functions), "backends": {}}
    for name, registry in _COVERAGE_BACKENDS:
        reason = backends.unavailable_reason(registry)
        if reason is not None:
            doc["backends"][name] = {"available": False, "reason": reason}
            continue
        routed = set(npgpu.routed_functions(registry))
        entry: dict[str, Any] = {
            "available": True, "on_device": sum(f in routed for f in functions),
            "host_by_nature": [f for f in functions if f not in routed and f in host_work],
            "in_numpy": [f for f in functions if f not in routed and f not in host_work],
        }
        if registry != name:
            entry["read_from"] = f"the {registry} backend's registry: the {name} backend's code, run without {name}"
        doc["backends"][name] = entry
    return doc


def _coverage_text(doc: dict[str, Any]) -> str:
    lines = [f"of {doc['functions']} functions: {doc['denominator']}"]
    for name, entry in doc["backends"].items():
        lines.append("")
        if not entry["available"]:
            lines.append(f"{name}: unavailable here: {entry['reason']}")
            continue
        source = f" (read from {entry['read_from']})" if "read_from" in entry else ""
        lines.append(f"{name}: {entry['on_device']} of {doc['functions']} run on the device{source}")
        lines.append(f"  {len(entry['host_by_nature'])} are host work by nature (metadata, files, text):")
        lines += _wrapped(entry["host_by_nature"])
        lines.append(f"  {len(entry['in_numpy'])} fall back to NumPy (counted in npgpu.report() on device arrays):")
        lines += _wrapped(entry["in_numpy"])
    return "\n".join(lines) + "\n"


def _wrapped(names: list[str], width: int = 100) -> list[str]:
    lines: list[str] = []
    row: list[str] = []
    for func in names:
        if row and len("    " + " ".join([*row, func])) > width:
            lines.append("    " + " ".join(row))
            row = []
        row.append(func)
    if row:
        lines.append("    " + " ".join(row))
    return lines
