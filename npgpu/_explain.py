"""``npgpu.explain()``: which backend ``enable("auto")`` picks here, why, and what would change it.

The choice itself is ``backends.resolve_auto``'s (one rule); this module only says why, from
the same facts it reads: whether CuPy can run, whether an OpenCL device can and is a GPU.
"""

from __future__ import annotations

import importlib.util
from dataclasses import asdict, dataclass
from typing import Any

from . import _config, backends

_CPU_OPENCL_HINT = (
    "enable('opencl') (npgpu run --backend opencl) runs on it: fused elementwise work and reductions over "
    "large arrays (millions of elements) run on all its cores and can beat NumPy; small arrays, matmul and "
    "data moved in and out don't")


@dataclass(frozen=True)
class Candidate:
    """One backend as ``auto`` sees it: whether it can run here and what that means."""

    name: str
    usable: bool
    why: str


@dataclass(frozen=True)
class Explanation:
    """``auto``'s choice here (``choice``), why (``reason``), each backend it considered
    (``candidates``, in the order it asks), and what would accelerate more (``hint``, or None
    when auto already picks a GPU)."""

    choice: str
    reason: str
    candidates: tuple[Candidate, ...]
    hint: str | None
    active: str | None

    def as_dict(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["candidates"] = list(doc["candidates"])
        return doc

    def __str__(self) -> str:
        lines = [f"auto picks {self.choice}: {self.reason}"]
        lines += [f"  {c.name:<7} {'usable' if c.usable else 'not usable'}: {c.why}" for c in self.candidates]
        if self.hint:
            lines.append(f"to accelerate here: {self.hint}")
        lines.append(f"active now: {self.active or 'none (acceleration off)'}")
        return "\n".join(lines)

    __repr__ = __str__


def _opencl() -> tuple[Candidate, bool]:
    """The OpenCL candidate, and whether its device is a GPU."""
    if importlib.util.find_spec("pyopencl") is None:
        return Candidate("opencl", False, "pyopencl is not installed (pip install 'npgpu[opencl]' brings it and "
                                          "PoCL, an OpenCL for the CPU)"), False
    reason = backends.unavailable_reason("opencl")
    if reason is not None:
        return Candidate("opencl", False, reason), False
    backend = backends.get_backend("opencl")
    info = backend.describe()
    device = f"{info.get('device', '?')} ({info.get('platform', '?')}, {info.get('compute_units', '?')} compute units)"
    if backend.has_gpu():
        return Candidate("opencl", True, f"an OpenCL GPU is usable: {device}"), True
    return Candidate("opencl", True, f"its only device is not a GPU: {device}; auto passes over it"), False


def explain() -> Explanation:
    """Why ``npgpu.enable("auto")`` picks the backend it picks on this machine, and what would
    accelerate more (print it, or read its fields; ``.as_dict()`` for machines)."""
    choice = backends.resolve_auto()
    cupy_reason = backends.unavailable_reason("cupy")
    cupy = Candidate("cupy", cupy_reason is None, "a CUDA GPU is usable through CuPy" if cupy_reason is None
                     else cupy_reason)
    opencl, opencl_gpu = _opencl()
    numpy_entry = Candidate("numpy", True, "NumPy itself, on the host: always there")
    candidates = (cupy, opencl, numpy_entry)
    hint: str | None = None
    if choice == "cupy":
        reason = cupy.why
    elif choice == "opencl":
        reason = opencl.why
    else:
        reason = "no GPU is usable here (neither CuPy on a CUDA GPU nor an OpenCL GPU), so npgpu is NumPy"
        if opencl.usable and not opencl_gpu:
            reason += "; the OpenCL device here is not a GPU"
            hint = _CPU_OPENCL_HINT
        elif importlib.util.find_spec("pyopencl") is not None:  # (installed, and its devices can't run here)
            reason += "; the OpenCL devices here can't run npgpu's kernels (opencl below says why)"
            hint = ("a GPU: an NVIDIA GPU with CuPy (pip install 'npgpu[cuda12]'), or any OpenCL GPU with its "
                    "vendor's driver")
        else:
            hint = ("a GPU: an NVIDIA GPU with CuPy (pip install 'npgpu[cuda12]'), or any OpenCL GPU with its "
                    "vendor's driver; without one, pip install 'npgpu[opencl]' and enable('opencl') run "
                    "large elementwise work on the CPU's cores")
    active = _config.current_backend()
    return Explanation(choice, reason, candidates, hint, active)
