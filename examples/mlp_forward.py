"""Forward pass of a small multi-layer perceptron: matmuls, ReLU, a stable softmax.

Usage: python mlp_forward.py [batch]   (default 512)
"""

import sys

import numpy as np


def main():
    batch = int(sys.argv[1]) if len(sys.argv) > 1 else 512
    sizes = [256, 512, 512, 10]
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal((a, b)) * np.sqrt(2.0 / a) for a, b in zip(sizes[:-1], sizes[1:], strict=True)]
    biases = [rng.standard_normal(b) * 0.01 for b in sizes[1:]]
    x = rng.standard_normal((batch, sizes[0]))
    h = x
    for w, b in zip(weights[:-1], biases[:-1], strict=True):
        h = np.maximum(h @ w + b, 0.0)
    logits = h @ weights[-1] + biases[-1]
    # Subtracting the row maximum keeps exp() from overflowing.
    z = logits - logits.max(axis=1, keepdims=True)
    probs = np.exp(z) / np.sum(np.exp(z), axis=1, keepdims=True)
    predicted = np.argmax(probs, axis=1)
    print(f"batch          {batch}, layers {sizes}")
    print(f"mean max prob  {float(np.mean(np.max(probs, axis=1))):.6f}")
    print(f"row sums       {float(np.min(probs.sum(axis=1))):.6f} {float(np.max(probs.sum(axis=1))):.6f}")
    print(f"class counts   {' '.join(str(int(c)) for c in np.bincount(predicted, minlength=sizes[-1]))}")
    print(f"logit std      {float(np.std(logits)):.6f}")


if __name__ == "__main__":
    main()
