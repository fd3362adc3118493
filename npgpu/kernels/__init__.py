"""Backend-neutral elementwise code generation: ufunc table, expression IR, C emitters.

Used eagerly by the OpenCL (and CuPy) backends for one ufunc call, and by fusion for longer graphs.
"""
