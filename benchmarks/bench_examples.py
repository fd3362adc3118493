"""Every examples/ script timed in-process at a mid size: NumPy itself vs the script run through npgpu.

npgpu runs use npgpu.legacy.run_path, the same import substitution as `npgpu run`; stdout is discarded.
"""

from __future__ import annotations

import contextlib
import io
import os
import runpy
import sys

from .common import BACKENDS, BackendBenchmark, legacy

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")

#: Mid sizes: long enough for the device to matter, short enough for a benchmark run.
MID_ARGS: dict[str, list[str]] = {
    "black_scholes.py": ["2000000"],
    "monte_carlo_pi.py": ["2000000"],
    "heat_equation.py": ["1024", "100"],
    "mandelbrot.py": ["800", "60"],
    "nbody.py": ["1024", "5"],
    "kmeans.py": ["100000", "8"],
    "game_of_life.py": ["1024", "50"],
    "mlp_forward.py": ["8192"],
    "logistic_regression.py": ["200000", "50"],
    "wave_fft.py": ["1048576"],
}


class TimeExamples(BackendBenchmark):
    params = [BACKENDS, sorted(MID_ARGS)]
    param_names = ["backend", "script"]
    timeout = 300
    number = 1
    repeat = (1, 3, 60.0)

    def setup(self, backend: str, script: str) -> None:
        self.setup_backend(backend)
        self.path = os.path.join(EXAMPLES, script)
        self.argv = MID_ARGS[script]

    def time_script(self, backend: str, script: str) -> None:
        saved = sys.argv[:]
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                if self.xp.__name__ == "numpy":
                    sys.argv = [self.path, *self.argv]
                    runpy.run_path(self.path, run_name="__main__")
                else:
                    legacy.run_path(self.path, self.argv)
            finally:
                sys.argv = saved
        self.sync()
