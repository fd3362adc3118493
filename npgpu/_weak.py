"""Weak references whose callbacks run no Python code.

Python runs a weakref callback wherever the referent dies, and an exception raised inside it
can't propagate: it goes to ``sys.unraisablehook``. A KeyboardInterrupt is raised at whatever
Python bytecode runs when the signal arrives, so a callback written in Python can swallow the
program's Ctrl-C. npgpu's callbacks are therefore C functions: a set's ``discard``, a list's
``append``, ``functools.partial`` of a dict's ``pop``.

``IdentityRef`` makes a set of references possible: it hashes and compares by the reference's
own identity (``object``'s C slots), not its referent's, so it stays hashable after the referent
died and for referents that are unhashable (arrays).
"""

from __future__ import annotations

import weakref


class IdentityRef(weakref.ref):  # type: ignore[type-arg]
    """A weak reference hashed and compared by its own identity."""

    __slots__ = ()
    __hash__ = object.__hash__
    __eq__ = object.__eq__
    __ne__ = object.__ne__
