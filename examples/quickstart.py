"""npgpu in thirty seconds: the same NumPy code, accelerated where a device can run it.

Run from a checkout: python examples/quickstart.py
"""

import os
import sys

import numpy

try:
    import npgpu as np
except ImportError:  # a plain checkout, not yet `pip install -e .`: use the package next door
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import npgpu as np


def compute(xp, x):
    y = xp.sin(x) * 2.0 + x**2  # elementwise: fused into one kernel on a device
    return float(y.mean()), float(y.max())


def main():
    n = 2_000_000
    with np.enable("auto"):
        backend = np.current_backend()
        x = np.linspace(0.0, 1.0, n)  # 16 MB: made on the device when there is one
        mean, peak = compute(np, x)
    expected_mean, expected_peak = compute(numpy, numpy.linspace(0.0, 1.0, n))
    print(f"mean of 2 sin(x) + x^2 over {n} points: {mean:.10f}   (NumPy: {expected_mean:.10f})")
    print(f"max: {peak:.12f}   (NumPy: {expected_peak:.12f})")
    print(f"ran on the {backend!r} backend ('auto' picks cupy on a CUDA GPU, else an OpenCL GPU, else numpy)")
    print()
    print(np.report())


if __name__ == "__main__":
    main()
