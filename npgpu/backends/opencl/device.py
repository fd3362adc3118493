"""The OpenCL device: choice, probe, description, the dtypes it holds and its faults."""

from __future__ import annotations

import importlib.util
import os
import re
import warnings
from typing import Any, ClassVar, NoReturn

import numpy

from ..._errors import DeviceLostError, DeviceMemoryError
from ..base import Backend
from .array import _storable


class Device(Backend):
    """Choosing the OpenCL device, probing that it builds kernels, describing it, what dtypes it
    holds, and translating its faults into npgpu's errors."""

    @classmethod
    def _devices(cls) -> tuple[list[Any], str | None]:
        """All OpenCL devices, or ([], why there are none); never raises for a missing platform."""
        try:
            import pyopencl as cl
        except ImportError:
            return [], "the opencl backend needs pyopencl: pip install 'npgpu[opencl]'"
        try:
            platforms = cl.get_platforms()
        except cl.Error as exc:  # the ICD loader raises when no platform is installed
            return [], f"no OpenCL platform found ({exc}); install an OpenCL driver or PoCL (pocl-binary-distribution)"
        if not platforms:
            return [], "no OpenCL platform found; install an OpenCL driver or PoCL (pocl-binary-distribution)"
        devices = []
        for p in platforms:
            try:
                devices.extend(p.get_devices())
            except cl.Error:  # a platform with no device raises DEVICE_NOT_FOUND
                continue
        if not devices:
            names = ", ".join(p.name.strip() for p in platforms)
            return [], f"OpenCL is installed (platforms: {names}) but reports no device"
        return devices, None

    @classmethod
    def unavailable_reason(cls, **options: Any) -> str | None:
        devices, reason = cls._devices()
        if reason is not None:
            return reason
        device = options.get("device")
        if device is None:
            device = os.environ.get("NPGPU_OPENCL_DEVICE") or None
        if device is None:
            return cls._build_failure(None)
        names = ", ".join(f"{i}: {d.name.strip()}" for i, d in enumerate(devices))
        if isinstance(device, int) or (isinstance(device, str) and device.isdigit()):
            if not 0 <= int(device) < len(devices):
                return f"OpenCL device index {int(device)} is out of range: there are {len(devices)} ({names})"
            return cls._build_failure(int(device))
        if not any(str(device).lower() in d.name.lower() for d in devices):
            return f"no OpenCL device name contains {device!r} (devices: {names})"
        return cls._build_failure(device)

    #: A kernel every OpenCL C compiler builds: if it fails, the device's compiler can't work here.
    _PROBE_SOURCE = "__kernel void npgpu_probe(__global float *a) { a[get_global_id(0)] += 1.0f; }"
    _probed: ClassVar[dict[Any, str | None]] = {}
    #: the probe's context per device, handed to the first backend made for it (a context costs
    #: about a second on NVIDIA's OpenCL)
    _probe_contexts: ClassVar[dict[Any, Any]] = {}

    @classmethod
    def _build_failure(cls, device: int | str | None) -> str | None:
        """Why the chosen device can't build a trivial kernel, or None; once per device.

        PoCL 3.0's bundled LLVM 14 fails every build on CPUs it doesn't know (seen on an AMD
        EPYC: "unknown target CPU 'generic'"); that is a backend that can't run here, said as
        such, rather than a failure at the first array operation.
        """
        import pyopencl as cl

        chosen = _choose_device(cl, device)
        key = chosen.int_ptr
        if key not in cls._probed:
            try:
                context = cl.Context([chosen])
                with warnings.catch_warnings():  # (a compiler's chatter about the probe is no news)
                    warnings.simplefilter("ignore", cl.CompilerWarning)
                    cl.Program(context, cls._PROBE_SOURCE).build(options=["-w"])
                cls._probed[key] = None
                cls._probe_contexts[key] = context
            except cl.Error as exc:  # the build (or context) failed; the message holds its log
                # (without the objects' addresses pyopencl's message names: the reason is the same
                # text in every process, as `npgpu info --json` reports it)
                log = re.sub(r" at 0x[0-9a-fA-F]+", "", " ".join(str(exc).split()))
                cls._probed[key] = (f"the OpenCL device {chosen.name.strip()!r} can't build kernels here: "
                                    f"{log[:300]}")
        return cls._probed[key]

    @classmethod
    def has_gpu(cls) -> bool:
        """True when any OpenCL GPU device exists here (``npgpu.enable("auto")`` asks); never raises."""
        if importlib.util.find_spec("pyopencl") is None:
            return False
        devices, _ = cls._devices()
        import pyopencl as cl

        return any(d.type & cl.device_type.GPU for d in devices)

    def describe(self) -> dict[str, Any]:
        d = self.device
        return {
            "backend": self.name,
            "device": d.name.strip(),
            "vendor": d.vendor.strip(),
            "platform": d.platform.name.strip(),
            "memory_bytes": int(d.global_mem_size),
            "fp64": self.fp64,
            "compute_units": int(d.max_compute_units),
            "unified_memory": self.unified_memory,
        }

    def supports_dtypes(self, dtypes: tuple[numpy.dtype, ...]) -> bool:
        for dt in dtypes:
            if isinstance(dt, type):
                continue
            dt = numpy.dtype(dt)
            if not _storable(dt):
                return False
            if dt in (numpy.float64, numpy.complex128) and not self.fp64:
                return False
        return True

    # -- faults: PyOpenCL's errors at this boundary, translated into npgpu's (npgpu._errors) ---------
    #: Codes meaning the device (or its driver) stopped working; -9999 is NVIDIA's for a kernel that
    #: faulted (an illegal address), after which its context is unusable.
    _LOST_CODES = frozenset({-1, -2, -33, -34, -36, -9999})  # DEVICE_NOT_FOUND/AVAILABLE, INVALID_DEVICE/CONTEXT/QUEUE
    #: MEM_OBJECT_ALLOCATION_FAILURE, OUT_OF_HOST_MEMORY, INVALID_BUFFER_SIZE; OUT_OF_RESOURCES (-5)
    #: counts as memory where the command allocates (NVIDIA allocates buffers at first use).
    _MEMORY_CODES = frozenset({-4, -6, -61})

    def _no_memory(self, nbytes: int, detail: str = "") -> DeviceMemoryError:
        return DeviceMemoryError(f"OpenCL device {self.device.name.strip()!r}", nbytes or None,
                                 per_array=self.max_alloc_bytes, total=int(self.device.global_mem_size), detail=detail)

    def _raise_fault(self, exc: Any, doing: str, nbytes: int = 0) -> NoReturn:
        """Raise ``exc`` (a PyOpenCL error met while ``doing``) as npgpu's error where it is one."""
        code = getattr(exc, "code", None)
        if code in self._MEMORY_CODES or (code == -5 and nbytes):
            raise self._no_memory(nbytes, " ".join(str(exc).split())[:200]) from exc
        if code in self._LOST_CODES or code == -5:
            raise DeviceLostError(
                f"npgpu: the OpenCL device {self.device.name.strip()!r} stopped working during {doing} "
                f"({' '.join(str(exc).split())[:200]}). Arrays on it are lost; restart the process, or enable "
                "another backend (npgpu.enable('numpy')) to go on without it.") from exc
        raise exc


def _choose_device(cl: Any, device: int | str | None) -> Any:
    devices, reason = Device._devices()
    if reason is not None:
        raise RuntimeError(reason)
    if device is None:
        device = os.environ.get("NPGPU_OPENCL_DEVICE") or None
    if device is not None:
        if isinstance(device, int) or (isinstance(device, str) and device.isdigit()):
            index = int(device)
            if not 0 <= index < len(devices):
                raise ValueError(f"OpenCL device index {index} out of range: {len(devices)} device(s)")
            return devices[index]
        for d in devices:
            if str(device).lower() in d.name.lower():
                return d
        names = ", ".join(d.name.strip() for d in devices)
        raise ValueError(f"no OpenCL device name contains {device!r}; devices: {names}")
    gpus = [d for d in devices if d.type & cl.device_type.GPU]
    return (gpus or devices)[0]
