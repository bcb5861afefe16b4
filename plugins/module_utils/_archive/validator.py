# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The member-by-member validator of a .tx9 payload. Private to the col_agents.tx9 collection.

A payload is a gzip-compressed tar of a box's /data. Nothing of it may be
created or extracted before every rule of the format's "What a valid payload
may contain" holds, so this reads the tar as a stream, member by
member, keeps only names and kinds (never contents), and refuses the first
violation with ARCHIVE_UNSAFE naming the member; a damaged gzip or tar is
ARCHIVE_CORRUPT.

Two ways in:
- validate_stream(fileobj) reads a whole gzip (or plain) tar stream;
- PayloadValidator().feed(member) per tarheader.Member, then finish(), for a caller
  that parses the tar itself while doing something else with the bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Literal, overload

from ansible_collections.col_agents.tx9.plugins.module_utils._archive.pathtable import PathTable
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.tarheader import (
    CONTROL,
    DIRECTORY,
    HARDLINK,
    KIND_NAMES,
    REGULAR,
    SYMLINK,
    UNSAFE_FIX,
    Member,
    corrupt,
    normalise,
    shown,
    unsafe,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.tarstream import Readable, TarReader
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._io import GZIP_ERRORS, gzip_reader

MAX_MEMBERS = 1000000
# The kernel's own limit on links followed in one path lookup (MAXSYMLINKS).
MAX_SYMLINK_HOPS = 40
# Members may come before their directory; this many names may wait for theirs.
MAX_WAITING_BYTES = 1024 * 1024
# What a file occupies on disk is counted in blocks of this size.
DISK_BLOCK = 4096
SPECIAL_BITS = 0o7000

REQUIRED_DIRECTORIES = ('home', 'home/agent')

# The error of a payload (member name, bytes on disk so far, the bound) that takes more room than it may.
DiskExceeded = Callable[[str, int, int], Exception]

# What reading a damaged or cut payload raises: the stream's end, the disk, gzip.
READ_ERRORS: tuple[type[Exception], ...] = (EOFError, OSError, *GZIP_ERRORS)


def parent_of(path: str) -> str:
    return path.rpartition('/')[0]


def chain_key(key: int, part: str) -> int:
    """The key of a path one component longer: computed left to right, so every prefix costs one step."""
    return hash((key, part))


def chain_keys(parts: list[str]) -> list[int]:
    keys = []
    key = 0
    for part in parts:
        key = chain_key(key, part)
        keys.append(key)
    return keys


class PayloadSummary:
    """What a valid payload holds: member counts, the bytes of its regular files, and what restoring drops."""

    def __init__(
        self,
        members: int = 0,
        files: int = 0,
        directories: int = 0,
        symlinks: int = 0,
        hardlinks: int = 0,
        size: int = 0,
        disk: int = 0,
        special_modes: int = 0,
    ) -> None:
        self.members = members
        self.files = files
        self.directories = directories
        self.symlinks = symlinks
        self.hardlinks = hardlinks
        self.size = size
        # Bytes the members take on disk once extracted (files rounded up to blocks, a block per other member).
        self.disk = disk
        # Members with setuid, setgid or sticky bits, which a restore drops.
        self.special_modes = special_modes

    def as_dict(self) -> dict[str, int]:
        return dict(
            members=self.members,
            files=self.files,
            directories=self.directories,
            symlinks=self.symlinks,
            hardlinks=self.hardlinks,
            size=self.size,
        )

    def __repr__(self) -> str:
        return f'PayloadSummary({self.as_dict()!r})'


class PayloadValidator:
    """Checks members one at a time; finish() does the checks that need them all.

    feed() refuses what one member shows on its own (name, type, root, hard
    links to earlier members, members below a known link). finish() refuses
    what only the whole archive shows: a parent that never appeared, a missing
    home or home/agent, and symbolic links, which may point at later members.
    Every check costs time linear in the length of the names involved.
    """

    def __init__(
        self,
        max_members: int = MAX_MEMBERS,
        max_hops: int = MAX_SYMLINK_HOPS,
        max_disk: int | None = None,
        on_disk_exceeded: DiskExceeded | None = None,
    ) -> None:
        if max_disk is not None and on_disk_exceeded is None:
            raise ValueError('a PayloadValidator with max_disk needs on_disk_exceeded')
        self.max_members = max_members
        self.max_hops = max_hops
        self.max_disk = max_disk
        self.on_disk_exceeded = on_disk_exceeded
        self.summary = PayloadSummary()
        # normalised path -> kind, for every member: compact, as a payload may hold a million.
        self._kinds = PathTable((DIRECTORY, REGULAR, SYMLINK, HARDLINK))
        self._names: dict[str, str] = {}  # normalised path of a symlink -> member name, for messages
        self._links: dict[str, str] = {}  # normalised path of a symlink -> target
        self._link_keys: dict[int, str] = {}  # chain key of a symlink's path -> its path
        self._waiting: dict[str, str] = {}  # parent not yet seen -> name of the first member inside it
        self._waiting_bytes = 0
        self._resolved: dict[str, tuple[str, int]] = {}  # symlink path -> (resolved path, hops), see _resolve
        self._last_directory: str | None = None  # the directory _nearest_known found last

    def feed(self, member: Member) -> str:
        """Check one member (a tarheader.Member); raise ARCHIVE_UNSAFE naming it at the first rule it breaks."""
        name = member.name
        self.summary.members += 1
        if self.summary.members > self.max_members:
            raise unsafe(name, f'is one more than the {self.max_members} members an archive may hold')
        path = self._check_name(name)
        kind = member.kind
        self._check_place(name, path, kind)
        if kind == SYMLINK:
            self._check_link_target(name, member.linkname, SYMLINK)
            self._links[path] = member.linkname
            self._names[path] = name
            self._link_keys[chain_keys(path.split('/'))[-1]] = path
        elif kind == HARDLINK:
            self._check_hardlink_target(name, member.linkname)
        self._kinds.add(path, kind)
        self._count(kind, member)
        return path

    def finish(self) -> PayloadSummary:
        """Check what needs the whole archive; return the PayloadSummary."""
        if self._waiting:
            parent, child = next(iter(self._waiting.items()))
            raise unsafe(child, f'sits in "{shown(parent)}", which is not a directory in the archive')
        for required in REQUIRED_DIRECTORIES:
            if required not in self._kinds:
                raise Tx9Error(
                    f'The payload has no "{required}" directory, which every box has; the archive is refused.',
                    'ARCHIVE_UNSAFE',
                    UNSAFE_FIX,
                    details=dict(member=required),
                )
        for path in self._links:
            self._check_link_resolves(path)
        return self.summary

    def _check_name(self, name: str) -> str:
        if not name:
            raise unsafe(name, 'has an empty name')
        if CONTROL.search(name):
            raise unsafe(name, 'has a control character in its name')
        if name.startswith('/'):
            raise unsafe(name, 'has an absolute name')
        if '..' in name.split('/'):
            raise unsafe(name, 'has a ".." component in its name')
        path = normalise(name)
        if path in self._kinds:
            raise unsafe(name, f'names "{shown(path) or "."}" a second time')
        return path

    def _check_place(self, name: str, path: str, kind: str) -> None:
        """The root, home and home/agent are directories, and every parent is a real directory."""
        if path == '':
            if kind != DIRECTORY:
                raise unsafe(name, f'is the root of the archive but {KIND_NAMES[kind]}, not a directory')
            return
        if path in REQUIRED_DIRECTORIES and kind != DIRECTORY:
            raise unsafe(name, f'is {KIND_NAMES[kind]}, but "{path}" must be a directory')
        child = self._waiting.pop(path, None)
        if child is not None:
            self._waiting_bytes -= len(path)
            if kind != DIRECTORY:
                # A member named earlier sits inside this one.
                raise unsafe(child, self._below(path, kind))
        parent = parent_of(path)
        if parent == '':
            return
        link = self._link_at_or_above(parent)
        if link is not None:
            # Checked on the links' exact names, so no digest collision can hide one.
            raise unsafe(name, self._below(link, SYMLINK))
        if parent in self._waiting:
            # Its parents were checked when it started waiting.
            return
        known = self._nearest_known(parent)
        if known is not None and known[1] != DIRECTORY:
            raise unsafe(name, self._below(*known))
        if known is None or known[0] != parent:
            self._wait(parent, name)

    def _wait(self, parent: str, name: str) -> None:
        self._waiting_bytes += len(parent)
        if self._waiting_bytes > MAX_WAITING_BYTES:
            raise unsafe(
                name, f'comes before its directory "{shown(parent)}", and too many names already wait for theirs'
            )
        self._waiting[parent] = name

    def _link_at_or_above(self, path: str) -> str | None:
        """The symbolic link that path or one of its parents is, or None; linear in the length of path."""
        if not self._links:
            return None
        key = 0
        end = -1
        for part in path.split('/'):
            key = chain_key(key, part)
            end += len(part) + 1
            candidate = self._link_keys.get(key)
            if candidate is not None and candidate == path[:end]:
                return candidate
        return None

    def _nearest_known(self, path: str) -> tuple[str, str] | None:
        """The closest of path and its parents already seen, and its kind (None when none was)."""
        if path == self._last_directory:
            # Members of one directory mostly follow each other.
            return path, DIRECTORY
        while path:
            kind = self._kinds.get(path)
            if kind is not None:
                if kind == DIRECTORY:
                    self._last_directory = path
                return path, kind
            path = parent_of(path)
        return None

    @staticmethod
    def _below(parent: str, parent_kind: str) -> str:
        if parent_kind == SYMLINK:
            return f'sits below the symbolic link "{shown(parent)}"'
        return f'sits below "{shown(parent)}", which is {KIND_NAMES[parent_kind]}, not a directory'

    @staticmethod
    def _check_link_target(name: str, target: str, kind: str) -> None:
        what = KIND_NAMES[kind]
        if not target:
            raise unsafe(name, f'is {what} with an empty target')
        if CONTROL.search(target):
            raise unsafe(name, f'is {what} with a control character in its target')
        if target.startswith('/'):
            raise unsafe(name, f'is {what} to the absolute path "{shown(target)}"')

    def _check_hardlink_target(self, name: str, target: str) -> None:
        self._check_link_target(name, target, HARDLINK)
        if '..' in target.split('/'):
            raise unsafe(name, f'is a hard link whose target "{shown(target)}" leaves the root')
        path = normalise(target)
        kind = self._kinds.get(path)
        if kind is None:
            raise unsafe(name, f'is a hard link to "{shown(target)}", which is not an earlier member')
        if kind != REGULAR:
            raise unsafe(name, f'is a hard link to "{shown(target)}", which is {KIND_NAMES[kind]}, not a regular file')

    def _count(self, kind: str, member: Member) -> None:
        summary = self.summary
        if member.mode & SPECIAL_BITS:
            summary.special_modes += 1
        if kind == REGULAR:
            summary.files += 1
            summary.size += member.size
            summary.disk += -(-member.size // DISK_BLOCK) * DISK_BLOCK
        else:
            summary.disk += DISK_BLOCK
            if kind == DIRECTORY:
                summary.directories += 1
            elif kind == SYMLINK:
                summary.symlinks += 1
            else:
                summary.hardlinks += 1
        if self.max_disk is not None and self.on_disk_exceeded is not None and summary.disk > self.max_disk:
            raise self.on_disk_exceeded(member.name, summary.disk, self.max_disk)

    def _check_link_resolves(self, path: str) -> None:
        try:
            self._resolve(path, [])
        except LinkRefused as refusal:
            raise unsafe(self._names[path], f'is a symbolic link to "{shown(self._links[path])}", which {refusal.rule}')

    def _resolve(self, path: str, stack: list[str]) -> tuple[str, int]:
        """Where the link at path leads (a normalised path) and the hops it took.

        Resolution is physical, like the kernel's: a ".." after a link applies
        to where the link led, not to the link's name. Every parent of a link
        is a real directory (checked before), so a link's result never depends
        on how it was reached and is remembered. Each prefix is looked up by its
        chain key, so a target costs time linear in its length.
        """
        known = self._resolved.get(path)
        if known is not None:
            return known
        stack.append(path)
        parts = [part for part in parent_of(path).split('/') if part]
        keys = chain_keys(parts)
        hops = 1
        for part in self._links[path].split('/'):
            if part in ('', '.'):
                continue
            if part == '..':
                if not parts:
                    raise LinkRefused(self._via('leads out of the root', path, stack))
                parts.pop()
                keys.pop()
                continue
            parts.append(part)
            keys.append(chain_key(keys[-1] if keys else 0, part))
            here = self._link_keys.get(keys[-1])
            if here is None or here != '/'.join(parts):
                continue
            if here in stack:
                raise LinkRefused(self._via('is part of a cycle of links', here, stack))
            led_to, taken = self._resolve(here, stack)
            hops += taken
            if hops > self.max_hops:
                raise LinkRefused(f'takes more than {self.max_hops} hops to resolve')
            parts = led_to.split('/') if led_to else []
            keys = chain_keys(parts)
        stack.pop()
        # Kept as one string: a tuple of parts would cost a string object per component.
        self._resolved[path] = ('/'.join(parts), hops)
        return self._resolved[path]

    @staticmethod
    def _via(rule: str, where: str, stack: list[str]) -> str:
        if where == stack[0]:
            return rule
        return f'{rule} (at the link "{shown(where)}")'


class LinkRefused(Exception):
    """A symbolic link that does not resolve inside the root; carries the rule it broke."""

    def __init__(self, rule: str) -> None:
        super().__init__(rule)
        self.rule = rule


@overload
def iter_members(
    fileobj: Readable, compressed: bool = ..., max_bytes: int | None = ..., with_reader: Literal[False] = ...
) -> Iterator[Member]:
    """The members, each with its data reader when with_reader is true."""


@overload
def iter_members(
    fileobj: Readable, compressed: bool, max_bytes: int | None, with_reader: Literal[True]
) -> Iterator[tuple[Member, TarReader]]:
    """The members, each with its data reader when with_reader is true."""


@overload
def iter_members(
    fileobj: Readable, compressed: bool = ..., max_bytes: int | None = ..., *, with_reader: Literal[True]
) -> Iterator[tuple[Member, TarReader]]:
    """The members, each with its data reader when with_reader is true."""


def iter_members(
    fileobj: Readable, compressed: bool = True, max_bytes: int | None = None, with_reader: bool = False
) -> Iterator[Member] | Iterator[tuple[Member, TarReader]]:
    """Every member of a tar stream (Member), then its end checked; ARCHIVE_CORRUPT when damaged.

    The data of each member is skipped unless the caller reads it through
    the TarReader (with_reader=True yields (member, reader) pairs).
    """
    try:
        source = gzip_reader(fileobj) if compressed else fileobj
        reader = TarReader(source, max_bytes)
        for member in reader.members():
            yield (member, reader) if with_reader else member
    except READ_ERRORS as exc:
        raise corrupt(f'{exc}' or type(exc).__name__) from exc


def validate_stream(
    fileobj: Readable,
    compressed: bool = True,
    validator: PayloadValidator | None = None,
    max_bytes: int | None = None,
) -> PayloadSummary:
    """Validate a whole payload stream, reading it to its end; return the PayloadSummary.

    fileobj only needs read(); nothing of the payload is kept in memory.
    """
    validator = validator or PayloadValidator()
    for member in iter_members(fileobj, compressed, max_bytes):
        validator.feed(member)
    return validator.finish()
