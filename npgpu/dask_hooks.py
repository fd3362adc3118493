"""Dask's ``dask.sizeof`` entry point of an installed npgpu (read at ``import dask``, before
``dask.array`` exists, so this module imports no part of Dask).

Importing npgpu makes ``npgpu.dask`` load right after ``dask.array`` (``npgpu._integrations``);
device arrays' sizes are registered here at once, for ``distributed`` code that never imports
``dask.array``.
"""

from __future__ import annotations

from typing import Any

import npgpu


def _device_bytes(x: npgpu.DeviceArray) -> int:
    return int(x.nbytes)


def register_sizeof(sizeof_dispatch: Any) -> None:
    """Register device arrays' sizes with Dask's ``sizeof`` (the bytes they hold on the device)."""
    sizeof_dispatch.register(npgpu.DeviceArray, _device_bytes)
