"""CUDA GPUs through CuPy (docs/ARCHITECTURE.md): array_module (the routing shared with the emulated
backend) -> staging (pinned transfers), kernels (CUDA sources, NVRTC and its disk cache) -> backend
(CupyBackend). Importing this package imports no CuPy: the backend imports it when it is made.
"""
