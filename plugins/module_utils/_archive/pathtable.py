# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A compact table of many archive paths and their kinds. Private to the col_agents.tx9 collection.

The payload validator remembers every member it has seen (to refuse a name
given twice, a member below a file, a hard link to what is not an earlier
regular file), for up to a million members. As Python strings in a dict that
costs about 135 bytes a member. This table keeps, per path, one 64-bit word:
a 62-bit keyed digest of the path and its kind in the 2 low bits, in a single
array with open addressing, at most half full: 16 to 32 bytes a member.

The digest is BLAKE2b keyed with a random key of the table's own, so whoever
writes an archive cannot choose two names that share one. A lookup of a path
that is not in the table finds another's digest with a chance of n * 2^-62
(below 10^-12 for a million paths). The validator then refuses a valid
archive, or accepts a missing parent or a hard link to a missing file, which
extraction creates or refuses; the rules that keep members inside the root
(names, and everything about symbolic links) use exact names, never this table.
"""

from __future__ import annotations

import array
import hashlib
import os
from collections.abc import Sequence

INITIAL_SLOTS = 1024
KEY_BYTES = 16


class PathTable:
    """path -> kind, for kinds given as up to four distinct strings (see kinds)."""

    def __init__(self, kinds: Sequence[str], slots: int = INITIAL_SLOTS) -> None:
        if len(kinds) > 4:
            raise ValueError('a PathTable holds at most four kinds')
        if slots & (slots - 1):
            raise ValueError('the number of slots must be a power of two')
        self._kinds = tuple(kinds)
        self._codes = {kind: code for code, kind in enumerate(self._kinds)}
        self._key = os.urandom(KEY_BYTES)
        self._slots = array.array('Q', [0]) * slots
        self._mask = slots - 1
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def __contains__(self, path: str) -> bool:
        return self._find(self._digest(path))[1] != 0

    @property
    def nbytes(self) -> int:
        """The bytes the table's slots take."""
        return len(self._slots) * self._slots.itemsize

    def get(self, path: str) -> str | None:
        """The kind path was added with, or None."""
        entry = self._find(self._digest(path))[1]
        return self._kinds[entry & 3] if entry else None

    def add(self, path: str, kind: str) -> bool:
        """Add path with its kind; a path added before keeps its first kind (False is returned)."""
        digest = self._digest(path)
        index, entry = self._find(digest)
        if entry:
            return False
        self._slots[index] = (digest << 2) | self._codes[kind]
        self._count += 1
        if 2 * self._count > len(self._slots):
            self._grow()
        return True

    def _digest(self, path: str) -> int:
        raw = hashlib.blake2b(path.encode('utf-8', 'surrogateescape'), digest_size=8, key=self._key).digest()
        # 62 bits, never 0: an entry of 0 is an empty slot.
        return (int.from_bytes(raw, 'little') >> 2) or 1

    def _find(self, digest: int) -> tuple[int, int]:
        """(slot index, entry): digest's own entry, or 0 and the free slot where it would go."""
        slots = self._slots
        mask = self._mask
        index = digest & mask
        while True:
            entry = slots[index]
            if entry == 0 or entry >> 2 == digest:
                return index, entry
            index = (index + 1) & mask

    def _grow(self) -> None:
        old = self._slots
        self._slots = array.array('Q', [0]) * (2 * len(old))
        self._mask = len(self._slots) - 1
        for entry in old:
            if entry:
                index = self._find(entry >> 2)[0]
                self._slots[index] = entry
