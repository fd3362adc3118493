"""The one build step pyproject.toml can't express: NumPy's header path for npgpu._speedups.

The extension (the namespace wrappers' per-call check in C) is optional: without a C compiler the
install goes on and npgpu uses the same checks written in Python (slower on small arrays, same
results). Everything else about the package is in pyproject.toml.
"""

import numpy
from setuptools import Extension, setup

setup(ext_modules=[Extension("npgpu._speedups", ["npgpu/_speedups.c"], include_dirs=[numpy.get_include()],
                             optional=True)])
