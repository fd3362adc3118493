"""The ``npgpu`` command: ``run`` a legacy script on npgpu, ``bench`` it against NumPy, ``info``.

``npgpu run`` behaves like ``python script.py`` (argv, stdio, exit status, tracebacks);
``npgpu bench`` times fresh processes of both and checks that their outputs agree.
"""

from __future__ import annotations

import platform
import sys
from collections.abc import Sequence

import numpy

import npgpu

from .bench import _cmd_bench, _split_bench_tokens, compare_arrays, compare_runs, compare_text  # noqa: F401
from .info import _cmd_info, collect_info  # noqa: F401
from .run import _cmd_run

_USAGE = """\
usage: npgpu run   [--backend B] [--on-fallback M] script.py [args...]
       npgpu bench [options] script.py [args...]
       npgpu info  [--json] [--coverage]
       npgpu --version

  run    run an unmodified NumPy script with its numpy imports resolved to npgpu
  bench  time the script under plain NumPy and under npgpu, check the outputs agree
  info   versions, backends (and why one can't run here), devices, thresholds (--coverage: functions per backend)

'npgpu <command> --help' describes each command.
"""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``npgpu`` program; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        sys.stdout.write(_USAGE)
        return 0 if args else 2
    if args[0] in ("--version", "-V"):
        sys.stdout.write(f"npgpu {npgpu.__version__} (numpy {numpy.__version__}, python {platform.python_version()})\n")
        return 0
    command, rest = args[0], args[1:]
    if command == "run":
        return _cmd_run(rest)
    if command == "bench":
        return _cmd_bench(rest)
    if command == "info":
        return _cmd_info(rest)
    sys.stderr.write(f"npgpu: unknown command {command!r}\n\n{_USAGE}")
    return 2


