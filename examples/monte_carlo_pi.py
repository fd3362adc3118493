"""Monte-Carlo estimate of pi: the fraction of random points inside the unit quarter circle.

Usage: python monte_carlo_pi.py [n_points]   (default 1000000)
"""

import sys

import numpy as np


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    np.random.seed(1234)
    batches = 4
    inside = 0
    for _ in range(batches):
        x = np.random.random(n)
        y = np.random.random(n)
        inside += int(np.count_nonzero(x * x + y * y <= 1.0))
    total = batches * n
    estimate = 4.0 * inside / total
    print(f"points   {total}")
    print(f"inside   {inside}")
    print(f"pi       {estimate:.6f}")
    print(f"error    {abs(estimate - np.pi):.6f}")


if __name__ == "__main__":
    main()
