"""The routing tables are explicit and name real NumPy functions that NumPy lets us override."""

from __future__ import annotations

import numpy
from numpy.testing.overrides import get_overridable_numpy_array_functions

import npgpu
from npgpu._ops import CREATIONS as CREATION_SIZE
from npgpu.backends.cupy.array_module import ROUTED_FUNCTIONS, ROUTED_METHODS
from npgpu.backends.emulated import EmulatedBackend


def test_every_routed_function_is_overridable_or_a_creation_function():
    overridable = get_overridable_numpy_array_functions()
    backend = EmulatedBackend()
    constructors = {numpy.asarray, numpy.array, numpy.asanyarray, numpy.ascontiguousarray}
    methods = {getattr(numpy.ndarray, name) for name in ROUTED_METHODS}
    strays = [f for f in backend.functions
              if f not in overridable and f not in CREATION_SIZE and f not in constructors and f not in methods]
    assert strays == []


def test_routed_names_resolve_in_numpy():
    for dotted in ROUTED_FUNCTIONS:
        obj = numpy
        for part in dotted.split("."):
            obj = getattr(obj, part)
        assert callable(obj), dotted


def test_routed_functions_lists_functions_and_ufuncs():
    names = npgpu.routed_functions("emulated")
    assert {"sum", "concatenate", "linalg.solve", "fft.fft", "add", "sin", "ndarray.astype"} <= set(names)
    assert "polyval" not in names
