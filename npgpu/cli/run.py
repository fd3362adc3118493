"""``npgpu run``: an unmodified script with its numpy imports resolved to npgpu, as ``python script.py``."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import types
from collections.abc import Sequence

import npgpu
from npgpu import backends, legacy
from npgpu._config import RANDOM_MODES

#: The runner's own files: a traceback starts below them, in the user's script.
_CLI_DIR = os.path.dirname(os.path.abspath(__file__))
_RUNNER_FILES = {os.path.join(_CLI_DIR, name) for name in ("__init__.py", "run.py")} | {
    os.path.join(os.path.dirname(_CLI_DIR), "legacy.py")}
_BACKEND_CHOICES = ("auto", "numpy", "cupy", "opencl")



def _run_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="npgpu run",
        description="Run an unmodified NumPy script; its numpy imports (and those of modules in its "
        "directory) resolve to npgpu. Everything after the script path is the script's own argv.",
    )
    parser.add_argument("--backend", default="auto", choices=_BACKEND_CHOICES, help="default: %(default)s")
    parser.add_argument(
        "--on-fallback", default=None, choices=("ignore", "warn", "raise", "log"), help="what to do on host fallback"
    )
    parser.add_argument(
        "--threshold", type=int, default=None, metavar="BYTES", help="device from this size on (0: everything)"
    )
    parser.add_argument("--no-fusion", action="store_true", help="launch every elementwise call on its own")
    parser.add_argument("--random", choices=RANDOM_MODES, default=None,
                        help="where large random draws come from: 'auto' (default): NumPy's numbers from "
                        "seeded generators, device streams for unseeded ones; 'numpy': NumPy's numbers always; "
                        "'device': device streams always (fast, other numbers)")
    parser.add_argument("--report", action="store_true", help="print npgpu.report() to stderr at exit")
    parser.add_argument("--report-json", default=None, help=argparse.SUPPRESS)
    parser.add_argument("script")
    return parser


def _split_at_script(tokens: Sequence[str], value_options: set[str]) -> tuple[list[str], list[str]]:
    """Options before the script path, then the script path and its arguments (as python does)."""
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token == "--":
            return list(tokens[:i]), list(tokens[i + 1 :])
        if not token.startswith("-") or token == "-":
            break
        i += 2 if token in value_options else 1
    return list(tokens[:i]), list(tokens[i:])


def _cmd_run(tokens: Sequence[str]) -> int:
    options, script_argv = _split_at_script(
        tokens, {"--backend", "--on-fallback", "--threshold", "--report-json", "--random"}
    )
    parser = _run_parser()
    if not script_argv:
        opts = parser.parse_args(options)  # --help, or the "script is required" error
    opts = parser.parse_args([*options, "--", script_argv[0]])
    script, script_args = opts.script, script_argv[1:]
    if not os.path.isfile(script):
        # python's own wording, so wrappers that grep for it keep working.
        sys.stderr.write(
            f"{sys.executable}: can't open file {os.path.abspath(script)!r}: [Errno 2] No such file or directory\n"
        )
        return 2


    status = _enable(npgpu, opts.backend, opts.on_fallback, opts.threshold, not opts.no_fusion, opts.random)
    if status is not None:
        return status
    try:
        legacy.run_path(script, script_args, restore=False)
    except SystemExit:
        raise  # the interpreter turns it into the exit status, exactly as for `python script.py`
    except KeyboardInterrupt as exc:
        _print_user_traceback(exc)
        # python dies of SIGINT after printing, so the shell sees 130; do the same.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        return 130
    except BaseException as exc:  # noqa: B036 - the top level of a script run, like the interpreter's own
        _print_user_traceback(exc)
        return 1
    finally:
        _finish(npgpu, opts.report, opts.report_json)
    return 0


def _enable(
    npgpu: types.ModuleType, backend: str, on_fallback: str | None, threshold: int | None, fusion: bool,
    random: str | None = None,
) -> int | None:
    """Turn acceleration on for the whole process; an exit status when that is impossible."""

    if backend != "auto":
        reason = backends.unavailable_reason(backend)
        if reason is not None:
            sys.stderr.write(f"npgpu run: the {backend} backend can't run here: {reason}\n")
            return 2
    npgpu.enable(backend, on_fallback=on_fallback, threshold=threshold, fusion=fusion, random=random)
    return None


def _finish(npgpu: types.ModuleType, print_report: bool, report_json: str | None) -> None:
    """Wait for device work, then write/print the report (also after sys.exit and errors)."""
    npgpu.sync()
    if not (print_report or report_json):
        return
    report = npgpu.report()
    if print_report:
        sys.stderr.write(f"{report}\n")
    if report_json:
        payload = {"backend": npgpu.current_backend(), "report": report.as_dict(), "text": str(report)}
        with open(report_json, "w", encoding="utf-8") as f:
            json.dump(payload, f, indent=1, default=str)


def _user_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
    """Drop the runner's own frames at the top, so the traceback starts in the user's script."""
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) in _RUNNER_FILES:
        tb = tb.tb_next
    return tb


def _print_user_traceback(exc: BaseException) -> None:
    tb = _user_traceback(exc.__traceback__)
    exc.__traceback__ = tb
    sys.excepthook(type(exc), exc, tb)


