"""State kept and used by one thread: the first that uses it. A write from any other thread clears
it and ends the keeping for the process (npgpu/_masks.py, npgpu/_scalar_reads.py: another thread's
write could fall between a check there and the kept state's use; the lock orders a store of kept
state against such a write)."""

from __future__ import annotations

import threading
from typing import Any


class OneThread:
    """Which thread keeps a table of state, and whether another thread's write ended the keeping."""

    __slots__ = ("lock", "owner", "ended")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.owner: int | None = None
        self.ended = False

    def mine(self) -> bool:
        """Whether this thread keeps the state (the first thread to ask does, until the keeping ends)."""
        if self.ended:
            return False
        me = threading.get_ident()
        if self.owner != me:
            with self.lock:
                if self.owner is None and not self.ended:
                    self.owner = me
            return self.owner == me
        return True

    def others_write(self, table: dict[Any, Any]) -> bool:
        """A write is about to happen: from a thread other than the keeper, clear ``table``, end
        the keeping and answer True; from the keeper, answer False (the caller drops what it touches)."""
        if self.owner == threading.get_ident():
            return False
        with self.lock:
            self.ended = True
            table.clear()
        return True

    def reset(self, table: dict[Any, Any]) -> None:
        """Clear ``table`` and forget the keeper and the ending (for tests)."""
        with self.lock:
            table.clear()
            self.owner, self.ended = None, False
