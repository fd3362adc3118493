"""Black-Scholes prices of European call and put options (a classic GPU benchmark).

Usage: python black_scholes.py [n_options]   (default 100000)
"""

import sys

import numpy as np


def norm_cdf(x):
    # NumPy has no erf; the Abramowitz-Stegun polynomial is what the classic GPU
    # versions of this benchmark use too (accurate to about 1e-7).
    k = 1.0 / (1.0 + 0.2316419 * np.abs(x))
    poly = k * (0.319381530 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429))))
    w = 1.0 - 0.3989422804014327 * np.exp(-0.5 * x * x) * poly
    return np.where(x < 0, 1.0 - w, w)


def black_scholes(s, k, t, r, v):
    sqrt_t = np.sqrt(t)
    d1 = (np.log(s / k) + (r + 0.5 * v * v) * t) / (v * sqrt_t)
    d2 = d1 - v * sqrt_t
    discount = np.exp(-r * t)
    call = s * norm_cdf(d1) - k * discount * norm_cdf(d2)
    put = k * discount * norm_cdf(-d2) - s * norm_cdf(-d1)
    return call, put


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    rng = np.random.default_rng(42)
    spot = rng.uniform(5.0, 30.0, n)
    strike = rng.uniform(1.0, 100.0, n)
    years = rng.uniform(0.25, 10.0, n)
    call, put = black_scholes(spot, strike, years, 0.02, 0.30)
    # Put-call parity holds for exact prices: C - P = S - K exp(-rT).
    parity = np.max(np.abs(call - put - (spot - strike * np.exp(-0.02 * years))))
    print(f"options       {n}")
    print(f"mean call     {float(np.mean(call)):.6f}")
    print(f"mean put      {float(np.mean(put)):.6f}")
    print(f"max call      {float(np.max(call)):.6f}")
    print(f"parity holds  {bool(parity < 1e-9)}")


if __name__ == "__main__":
    main()
