"""asv benchmark suites of npgpu: each parametrized over backend (numpy, npgpu-cupy, npgpu-opencl) and size.

Run with `asv run --python=same --set-commit-hash $(git rev-parse HEAD)`; see the README.
"""
