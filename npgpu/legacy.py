"""Run unmodified NumPy scripts on npgpu: their ``numpy`` imports resolve to npgpu.

Only the script and the modules it imports from its own directory are redirected;
third-party libraries (SciPy, matplotlib, pandas, npgpu itself) keep the real NumPy.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import sysconfig
import types
from collections.abc import Iterator, Sequence
from typing import Any

import npgpu

__all__ = ["legacy_import", "legacy_builtins", "redirect_numpy", "run_path", "ScriptDirFinder"]

_real_import = builtins.__import__


def _is_numpy_name(name: str) -> bool:
    return name == "numpy" or name.startswith("numpy.")


def _resolve_module(numpy_name: str) -> types.ModuleType:
    """npgpu's counterpart of the NumPy module ``numpy_name``, else the real NumPy module.

    npgpu mirrors ``numpy``, ``numpy.linalg``, ``numpy.fft`` and ``numpy.random``;
    submodules it doesn't mirror (``numpy.polynomial``, ``numpy.lib.stride_tricks``,
    ...) stay NumPy's, whose functions still reach npgpu through ``__array_function__``.
    """
    module: Any = npgpu
    parts = numpy_name.split(".")[1:]
    for i, part in enumerate(parts):
        child = getattr(module, part, None)
        if isinstance(child, types.ModuleType):
            module = child
            continue
        candidate = "npgpu." + ".".join(parts[: i + 1])
        try:
            module = importlib.import_module(candidate)
        except ModuleNotFoundError as exc:
            # Only "npgpu has no such module" means "use NumPy's"; a missing module
            # *inside* npgpu's own imports is a bug that must surface.
            if exc.name is None or not candidate.startswith(exc.name):
                raise
            return importlib.import_module(numpy_name)
    return module


def _view(base: types.ModuleType, extra: dict[str, Any]) -> types.ModuleType:
    """A module that has ``extra`` and otherwise forwards attribute reads to ``base``."""
    view = types.ModuleType(base.__name__, getattr(base, "__doc__", None))
    view.__dict__.update(extra)
    view.__getattr__ = lambda name: getattr(base, name)  # type: ignore[method-assign]
    return view


def legacy_import(
    name: str,
    globals: dict[str, Any] | None = None,
    locals: dict[str, Any] | None = None,
    fromlist: Sequence[str] | None = (),
    level: int = 0,
) -> types.ModuleType:
    """``builtins.__import__`` for legacy code: ``numpy`` names resolve to npgpu."""
    if level != 0 or not _is_numpy_name(name):
        return _real_import(name, globals, locals, fromlist or (), level)
    target = _resolve_module(name)
    if fromlist:
        if "*" in fromlist or all(hasattr(target, item) for item in fromlist):
            return target
        # `from numpy import testing`: a name npgpu lacks comes from NumPy.
        missing = {item: _resolve_module(f"{name}.{item}") for item in fromlist if not hasattr(target, item)}
        return _view(target, missing)
    # `import numpy.linalg` binds the top-level name; the chain of attributes
    # (`numpy.linalg.norm`, or `as la` which reads `.linalg`) must then lead to `target`.
    parts = name.split(".")[1:]
    if not parts:
        return npgpu
    node: Any = npgpu
    for part in parts:
        node = getattr(node, part, None)
        if node is None:
            break
    if node is target:
        return npgpu
    chain: types.ModuleType = target
    for depth in range(len(parts) - 1, 0, -1):
        parent = _resolve_module("numpy." + ".".join(parts[:depth]))
        chain = _view(parent, {parts[depth]: chain})
    return _view(npgpu, {parts[0]: chain})


_builtins_cache: dict[str, Any] | None = None


def legacy_builtins() -> dict[str, Any]:
    """A builtins namespace whose ``__import__`` is :func:`legacy_import`.

    Code executed with ``{"__builtins__": legacy_builtins()}`` as its globals sees
    npgpu for ``numpy``; nothing else in the process changes (``sys.modules["numpy"]``
    stays NumPy, so SciPy and friends are untouched).
    """
    global _builtins_cache
    if _builtins_cache is None:
        namespace = dict(builtins.__dict__)
        namespace["__import__"] = legacy_import
        _builtins_cache = namespace
    return _builtins_cache


class _LegacySourceLoader(importlib.machinery.SourceFileLoader):
    """Loads a module of the script's directory with legacy builtins.

    The bytecode is unchanged (so ``.pyc`` caching stays valid and shared with
    plain Python); only the builtins its frames see differ.
    """

    def exec_module(self, module: types.ModuleType) -> None:
        module.__dict__["__builtins__"] = legacy_builtins()
        super().exec_module(module)


def _excluded_roots() -> list[str]:
    roots = {os.path.dirname(os.path.realpath(npgpu.__file__ or ""))}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            roots.add(os.path.realpath(path))
    return sorted(roots)


def _is_under(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:  # different drives on Windows
        return False


class ScriptDirFinder(importlib.abc.MetaPathFinder):
    """Meta-path finder: modules whose file lies under ``root`` get legacy builtins.

    It finds nothing itself; it asks the finders after it and swaps the loader of
    the plain-source modules of the script's directory.  Installed libraries are
    excluded even when they sit below ``root`` (a virtualenv inside a project).
    """

    def __init__(self, root: str) -> None:
        self.root = os.path.realpath(root)
        self.excluded = [r for r in _excluded_roots() if r != self.root]
        self.loaded: list[str] = []

    def _redirects(self, origin: str) -> bool:
        path = os.path.realpath(origin)
        if not _is_under(path, self.root):
            return False
        parts = path.split(os.sep)
        if "site-packages" in parts or "dist-packages" in parts:
            return False
        return not any(_is_under(path, r) for r in self.excluded)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if _is_numpy_name(fullname) or fullname.split(".")[0] == "npgpu":
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is None:
                continue
            loader = spec.loader
            if type(loader) is importlib.machinery.SourceFileLoader and spec.origin and self._redirects(spec.origin):
                spec.loader = _LegacySourceLoader(loader.name, loader.path)
                self.loaded.append(fullname)
            return spec
        return None


@contextlib.contextmanager
def redirect_numpy(root: str) -> Iterator[ScriptDirFinder]:
    """While active, modules imported from under ``root`` see npgpu for numpy.

    On exit the finder is removed and the modules it loaded are dropped from
    ``sys.modules``, so a later plain import gets a NumPy-bound copy again.
    """
    finder = ScriptDirFinder(root)
    sys.meta_path.insert(0, finder)
    try:
        yield finder
    finally:
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(finder)
        for name in finder.loaded:
            sys.modules.pop(name, None)


def run_path(path: str, argv: Sequence[str] | None = None, *, restore: bool = True) -> dict[str, Any]:
    """Execute the script at ``path`` as ``__main__``, its NumPy being npgpu.

    Like ``python path args...``: ``__name__ == "__main__"``, ``sys.argv`` is
    ``[path, *argv]``, ``sys.path[0]`` is the script's directory, ``__file__`` is
    absolute.  Exceptions (``SystemExit`` included) propagate to the caller.
    With ``restore`` (for in-process use: benchmarks, tests) ``sys.argv``,
    ``sys.path`` and ``sys.modules["__main__"]`` are put back afterwards.
    Returns the script's globals.
    """
    abspath = os.path.abspath(path)
    with open(abspath, "rb") as f:
        source = f.read()
    code = compile(source, abspath, "exec", dont_inherit=True)
    script_dir = os.path.dirname(os.path.realpath(abspath))

    module = types.ModuleType("__main__")
    module.__dict__.update(
        {
            "__file__": abspath,
            "__cached__": None,
            "__spec__": None,
            "__package__": None,
            "__loader__": importlib.machinery.SourceFileLoader("__main__", abspath),
            "__builtins__": legacy_builtins(),
        }
    )
    saved_argv, saved_path, saved_main = sys.argv[:], sys.path[:], sys.modules.get("__main__")
    sys.argv = [path, *(argv or [])]
    if sys.path:
        sys.path[0] = script_dir
    else:
        sys.path.append(script_dir)
    sys.modules["__main__"] = module
    try:
        with redirect_numpy(script_dir) if restore else _keep_redirect(script_dir):
            exec(code, module.__dict__)
    finally:
        if restore:
            sys.argv, sys.path[:] = saved_argv, saved_path
            if saved_main is not None:
                sys.modules["__main__"] = saved_main
    return module.__dict__


@contextlib.contextmanager
def _keep_redirect(root: str) -> Iterator[ScriptDirFinder]:
    # A script run as the process's main program may import lazily (in atexit
    # handlers, threads); the finder stays for the rest of the process.
    finder = ScriptDirFinder(root)
    sys.meta_path.insert(0, finder)
    yield finder
