"""Logistic regression trained by full-batch gradient descent on synthetic data.

Usage: python logistic_regression.py [n_samples] [epochs]   (default 10000, 100)
"""

import sys

import numpy as np


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    features = 20
    rng = np.random.default_rng(11)
    true_w = rng.standard_normal(features)
    x = rng.standard_normal((n, features))
    y = (x @ true_w + 0.5 * rng.standard_normal(n) > 0).astype(np.float64)
    w = np.zeros(features)
    b = 0.0
    lr = 0.5
    for _ in range(epochs):
        p = 1.0 / (1.0 + np.exp(-(x @ w + b)))
        grad = p - y
        w -= lr * (x.T @ grad) / n
        b -= lr * float(np.mean(grad))
    p = 1.0 / (1.0 + np.exp(-(x @ w + b)))
    eps = 1e-12
    loss = -np.mean(y * np.log(p + eps) + (1.0 - y) * np.log(1.0 - p + eps))
    accuracy = np.mean((p > 0.5) == (y > 0.5))
    cosine = float(w @ true_w) / float(np.linalg.norm(w) * np.linalg.norm(true_w))
    print(f"samples     {n}, {epochs} epochs")
    print(f"loss        {float(loss):.6f}")
    print(f"accuracy    {float(accuracy):.6f}")
    print(f"cosine      {cosine:.6f}")
    print(f"bias        {b:.6f}")


if __name__ == "__main__":
    main()
