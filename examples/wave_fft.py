"""Spectral smoothing of a noisy signal with the FFT: filter, power spectrum, peak search.

Usage: python wave_fft.py [n_samples]   (default 65536)
"""

import sys

import numpy as np


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 65_536
    rng = np.random.default_rng(5)
    t = np.arange(n) / n
    signal = np.sin(2 * np.pi * 50 * t) + 0.5 * np.sin(2 * np.pi * 120 * t)
    noisy = signal + 0.8 * rng.standard_normal(n)
    spectrum = np.fft.rfft(noisy)
    freqs = np.fft.rfftfreq(n, d=1.0 / n)
    power = np.abs(spectrum) ** 2 / n
    peaks = np.argsort(power)[-2:]
    spectrum[freqs > 200] = 0
    smooth = np.fft.irfft(spectrum, n)
    rms_before = float(np.sqrt(np.mean((noisy - signal) ** 2)))
    rms_after = float(np.sqrt(np.mean((smooth - signal) ** 2)))
    print(f"samples        {n}")
    print(f"peak freqs     {' '.join(str(int(f)) for f in np.sort(freqs[peaks]))}")
    print(f"rms noise      {rms_before:.6f}")
    print(f"rms filtered   {rms_after:.6f}")
    print(f"total power    {float(power.sum()):.4f}")


if __name__ == "__main__":
    main()
