"""Explicit finite-difference solution of the 2-D heat equation (a five-point stencil).

Usage: python heat_equation.py [grid_size] [steps]   (default 128, 200)
"""

import sys

import numpy as np


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 128
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    alpha = 0.2  # dt * diffusivity / dx**2; below 0.25 the explicit scheme is stable
    u = np.zeros((n, n))
    # A hot square in the middle, the border held at zero.
    u[n // 4 : 3 * n // 4, n // 4 : 3 * n // 4] = 100.0
    start_heat = float(u.sum())
    for _ in range(steps):
        interior = u[1:-1, 1:-1]
        laplacian = u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4.0 * interior
        u[1:-1, 1:-1] = interior + alpha * laplacian
    print(f"grid        {n}x{n}, {steps} steps")
    print(f"heat left   {float(u.sum()) / start_heat:.6f}")
    print(f"max         {float(u.max()):.6f}")
    print(f"center      {float(u[n // 2, n // 2]):.6f}")
    print(f"mean        {float(u.mean()):.6f}")


if __name__ == "__main__":
    main()
