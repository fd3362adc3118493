"""Chains of elementwise operations: what fusing them into one kernel is worth.

E8 is the reference chain of eight operations; shorter chains show how the gain grows with length.
"""

from __future__ import annotations

from typing import Any

from .common import BACKENDS, BackendBenchmark, random_array

SIZES = [10_000, 1_000_000, 10_000_000]


def e2(np: Any, a: Any, b: Any, c: Any) -> Any:
    return a * b + c


def e4(np: Any, a: Any, b: Any, c: Any) -> Any:
    return (a * b + c) * a - b


def e8(np: Any, a: Any, b: Any, c: Any) -> Any:
    return ((a * b + c) * a - b) / (c + 1.5) + np.sqrt(np.abs(a)) * 0.5 - np.exp(-b)


CHAINS = {"E2": e2, "E4": e4, "E8": e8}


class TimeChains(BackendBenchmark):
    params = [BACKENDS, SIZES, list(CHAINS)]
    param_names = ["backend", "n", "chain"]

    def setup(self, backend: str, n: int, chain: str) -> None:
        self.setup_backend(backend)
        self.a, self.b, self.c = (self.to_backend(random_array(n, seed=s)) for s in (1, 2, 3))
        self.chain = CHAINS[chain]
        self.finish(self.chain(self.xp, self.a, self.b, self.c))  # compile in setup

    def time_chain(self, backend: str, n: int, chain: str) -> None:
        self.finish(self.chain(self.xp, self.a, self.b, self.c))

    def time_chain_then_sum(self, backend: str, n: int, chain: str) -> None:
        # A reduction of a pending chain: one map-reduce kernel when fused.
        float(self.xp.sum(self.chain(self.xp, self.a, self.b, self.c)))
