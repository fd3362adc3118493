"""Conway's Game of Life on a torus, neighbours counted with np.roll.

Usage: python game_of_life.py [grid_size] [generations]   (default 128, 100)
"""

import sys

import numpy as np


def step(board):
    neighbours = sum(
        np.roll(np.roll(board, dy, axis=0), dx, axis=1) for dy in (-1, 0, 1) for dx in (-1, 0, 1) if (dy, dx) != (0, 0)
    )
    return ((neighbours == 3) | ((board == 1) & (neighbours == 2))).astype(np.uint8)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 128
    generations = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    np.random.seed(2024)
    board = (np.random.random((n, n)) < 0.3).astype(np.uint8)
    history = []
    for _ in range(generations):
        board = step(board)
        history.append(int(board.sum()))
    # A checksum of where the live cells are, not only how many.
    weights = np.arange(n * n, dtype=np.int64).reshape(n, n) % 9973
    print(f"board        {n}x{n}, {generations} generations")
    print(f"population   {history[-1]}")
    print(f"min / max    {min(history)} / {max(history)}")
    print(f"checksum     {int(np.sum(board * weights))}")


if __name__ == "__main__":
    main()
