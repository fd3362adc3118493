"""Lloyd's k-means clustering of Gaussian blobs, fully vectorised.

Usage: python kmeans.py [n_points] [k]   (default 20000, 8)
"""

import sys

import numpy as np


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    k = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    dims = 4
    rng = np.random.default_rng(3)
    true_centers = rng.uniform(-10.0, 10.0, (k, dims))
    labels_true = rng.integers(0, k, n)
    points = true_centers[labels_true] + rng.standard_normal((n, dims))
    centers = points[:k].copy()
    iterations = 0
    while iterations < 100:
        iterations += 1
        # Squared distances summed one coordinate at a time: elementwise work only, so
        # every backend rounds alike and no near-tie flips a label (|p|^2 - 2p.c + |c|^2
        # via a matmul would be faster but order-dependent in the last bits).
        d2 = sum((points[:, d, None] - centers[None, :, d]) ** 2 for d in range(dims))
        labels = np.argmin(d2, axis=1)
        counts = np.bincount(labels, minlength=k)
        sums = np.zeros((k, dims))
        for d in range(dims):
            sums[:, d] = np.bincount(labels, weights=points[:, d], minlength=k)
        new_centers = np.where(counts[:, None] > 0, sums / np.maximum(counts, 1)[:, None], centers)
        shift = float(np.max(np.abs(new_centers - centers)))
        centers = new_centers
        if shift < 1e-9:
            break
    inertia = float(np.sum((points - centers[labels]) ** 2))
    order = np.lexsort(centers.T[::-1])
    print(f"points     {n}, k={k}, {iterations} iterations")
    print(f"inertia    {inertia:.4f}")
    print(f"sizes      {' '.join(str(int(c)) for c in np.sort(counts))}")
    for c in centers[order]:
        print("center     " + " ".join(f"{float(v):.5f}" for v in c))


if __name__ == "__main__":
    main()
