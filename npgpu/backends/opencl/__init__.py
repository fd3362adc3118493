"""The OpenCL backend, one module per concern (docs/ARCHITECTURE.md):

array (CLArray, layout arithmetic) -> routing (the function registry, ``implements``) -> device
(choice, probe, faults) -> memory (allocation, recycling, transfers) -> launch (kernel build cache,
launches, error flags) -> elementwise, creation, reductions, movement, indexing, linalg (the work)
-> backend (OpenCLBackend, made of those parts).
"""

from .array import CLArray
from .backend import OpenCLBackend

__all__ = ["CLArray", "OpenCLBackend"]
