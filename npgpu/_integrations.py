"""Integrations that load when their library does: ``after_import(module, then)``.

``import npgpu`` never imports Dask, yet Dask must learn about device arrays (chunk type,
dispatch lookups) before its first array of device chunks. Where ``module`` is already imported,
``then`` (an npgpu module, by name) is imported at once; otherwise a finder on ``sys.meta_path``
waits for ``module``'s import and imports ``then`` right after ``module`` has run, then leaves
``sys.meta_path``. It knows nothing of arrays: the module it imports does the registering. (An
installed npgpu also names ``npgpu.dask`` in Dask's ``dask.sizeof`` entry point group, which
Dask reads at ``import dask``; this finder makes a source checkout behave the same.)
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import threading
from typing import Any

_lock = threading.Lock()


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: hands ``module``'s spec on with a loader that imports ``then`` after it."""

    def __init__(self, module: str, then: str) -> None:
        self.module = module
        self.then = then
        self.searching = False

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != self.module or self.searching:
            return None
        self.searching = True  # (the search below asks every finder again, this one included)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self.searching = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _ThenLoader(spec.loader, self)
        return spec


class _ThenLoader(importlib.abc.Loader):
    def __init__(self, loader: Any, finder: _AfterImport) -> None:
        self.loader = loader
        self.finder = finder

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        module.__loader__ = module.__spec__.loader = self.loader  # (the module's own loader, as if never watched)
        self.loader.exec_module(module)
        _forget(self.finder)
        importlib.import_module(self.finder.then)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)


def _forget(finder: _AfterImport) -> None:
    with _lock:
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)


def after_import(module: str, then: str) -> None:
    """Import ``then`` once ``module`` has been imported (at once where it already is)."""
    if module in sys.modules:
        importlib.import_module(then)
        return
    with _lock:
        if not any(isinstance(f, _AfterImport) and f.module == module for f in sys.meta_path):
            sys.meta_path.insert(0, _AfterImport(module, then))
