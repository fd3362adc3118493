"""Direct-sum gravitational n-body simulation, leapfrog integration, all pairs at once.

Usage: python nbody.py [n_bodies] [steps]   (default 256, 10)
"""

import sys

import numpy as np


def accelerations(pos, mass, softening=0.1):
    # All pairwise separations by broadcasting: an (n, n, 3) array.
    delta = pos[None, :, :] - pos[:, None, :]
    dist2 = np.sum(delta * delta, axis=2) + softening * softening
    inv_d3 = dist2**-1.5
    return np.sum(delta * (inv_d3 * mass[None, :])[:, :, None], axis=1)


def energy(pos, vel, mass, softening=0.1):
    kinetic = 0.5 * np.sum(mass * np.sum(vel * vel, axis=1))
    delta = pos[None, :, :] - pos[:, None, :]
    dist = np.sqrt(np.sum(delta * delta, axis=2) + softening * softening)
    pair = np.triu(mass[:, None] * mass[None, :] / dist, k=1)
    return kinetic - np.sum(pair)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    dt = 0.01
    rng = np.random.default_rng(7)
    pos = rng.standard_normal((n, 3))
    vel = rng.standard_normal((n, 3)) * 0.1
    mass = rng.uniform(0.5, 1.5, n) / n
    start = energy(pos, vel, mass)
    acc = accelerations(pos, mass)
    for _ in range(steps):
        vel += 0.5 * dt * acc
        pos += dt * vel
        acc = accelerations(pos, mass)
        vel += 0.5 * dt * acc
    end = energy(pos, vel, mass)
    com = np.sum(pos * mass[:, None], axis=0) / np.sum(mass)
    print(f"bodies           {n}, {steps} steps")
    print(f"energy start     {float(start):.8f}")
    print(f"energy end       {float(end):.8f}")
    print(f"centre of mass   {float(com[0]):.6f} {float(com[1]):.6f} {float(com[2]):.6f}")
    print(f"rms speed        {float(np.sqrt(np.mean(np.sum(vel * vel, axis=1)))):.6f}")


if __name__ == "__main__":
    main()
