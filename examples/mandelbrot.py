"""Escape-time Mandelbrot set on a grid, vectorised over all points at once.

Usage: python mandelbrot.py [width] [max_iter]   (default 200, 50)
"""

import sys

import numpy as np


def main():
    width = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    max_iter = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    height = width * 2 // 3
    x = np.linspace(-2.0, 1.0, width)
    y = np.linspace(-1.0, 1.0, height)
    cr = np.broadcast_to(x, (height, width)).copy()
    ci = np.broadcast_to(y[:, None], (height, width)).copy()
    zr = np.zeros_like(cr)
    zi = np.zeros_like(ci)
    counts = np.zeros((height, width), dtype=np.int32)
    for _ in range(max_iter):
        # Real arithmetic instead of complex: every device supports it.
        inside = zr * zr + zi * zi <= 4.0
        counts += inside
        zr, zi = np.where(inside, zr * zr - zi * zi + cr, zr), np.where(inside, 2.0 * zr * zi + ci, zi)
    in_set = int(np.count_nonzero(counts == max_iter))
    hist = np.bincount(counts.ravel() * 5 // (max_iter + 1), minlength=5)
    print(f"grid          {width}x{height}, {max_iter} iterations")
    print(f"in set        {in_set}")
    print(f"total iters   {int(counts.sum())}")
    print(f"histogram     {' '.join(str(int(h)) for h in hist)}")


if __name__ == "__main__":
    main()
