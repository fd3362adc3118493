"""NumPy's uniform doubles of a bit generator computed from its state, as a device would.

Backends that compute NumPy's streams themselves declare ``random_streams`` and implement
``random_doubles``: a bit generator's ``state`` dict in, the draw and the state after it out,
as NumPy's ``random()`` leaves it. ``numpy_doubles`` is the emulated backend's stand-in.
"""

from __future__ import annotations

from typing import Any

import numpy


def numpy_doubles(state: dict[str, Any], shape: tuple[int, ...]) -> tuple[numpy.ndarray, dict[str, Any]]:
    """NumPy's own draw from ``state`` (the emulated backend's stand-in for the kernels)."""
    bit_generator = getattr(numpy.random, state["bit_generator"])()
    bit_generator.state = state
    values = numpy.random.Generator(bit_generator).random(shape)
    return values, bit_generator.state
