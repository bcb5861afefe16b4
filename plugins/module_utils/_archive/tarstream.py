# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one tar reader of the collection. Private to the col_agents.tx9 collection.

Untrusted tar bytes are read here and nowhere else. The reader accepts a
strict subset of tar on which Python's tarfile, GNU tar and Go's archive/tar
(Docker's extractor) agree, and refuses everything else with ARCHIVE_UNSAFE
naming the member, before any work proportional to what a header claims.
What another program reads is written by tarwriter.canonical_header() from
the members the reader and the validator accepted, never passed through.
tarheader.py holds the parsing of one header and its extension records.

The subset (docs/archive-format.md says it for people):
- ustar ("ustar\\0" "00") or GNU ("ustar  \\0") headers; no V7, no star trailer;
- member types: regular file ("0", or NUL when the name does not end in
  "/"), hard link ("1"), symbolic link ("2"), directory ("5"); only regular
  files have data;
- one extension per member: a pax local header ("x", ustar only, at most
  1 MiB, the keywords of PAX_KEYWORDS once each) or GNU long name/link
  ("L"/"K", GNU only, at most one of each); no global header, no sparse
  member or record, no xattr or ACL record, no pax size;
- a GNU header's bytes 345-512 hold only access and change times; a ustar
  header's bytes 500-512 are zero;
- numbers are octal digits (GNU headers may use base-256);
- names and link targets at most 4,096 bytes and 256 components;
- a member's data ends within what the stream can hold.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

from ansible_collections.col_agents.tx9.plugins.module_utils._archive.tarheader import (
    BLOCK,
    DIRECTORY,
    EXTENSIONS,
    FOREIGN,
    FOREIGN_TYPES,
    GNU_LONG_NAME,
    HARDLINK,
    KIND_NAMES,
    MAX_NAME_BYTES,
    MEMBER_TYPES,
    PAX_LOCAL,
    REGULAR,
    SYMLINK,
    Extension,
    Header,
    Member,
    Refusal,
    check_path_limits,
    corrupt,
    extension_rule,
    field,
    long_name,
    parse_pax,
    shown,
    text_of,
    unsafe,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._io import CHUNK_SIZE

MAX_PAX_SIZE = 1024 * 1024
MAX_LONG_NAME_SIZE = MAX_NAME_BYTES + 1
# What may follow the end-of-archive block: padding, never content.
MAX_TRAILER = 1024 * 1024


class Readable(Protocol):
    """A stream of bytes: all the reader needs of a file, a gzip reader or a socket."""

    def read(self, size: int = ..., /) -> bytes:
        """Up to size bytes; fewer, or none, at the end."""


# The error of a member (name, size claimed, room left) whose data would end beyond max_bytes.
Overclaim = Callable[[str, int, int], Tx9Error]


def overclaimed(member: str, size: int, room: int) -> Tx9Error:
    return unsafe(member, f'claims {size} bytes of data, more than the {room} bytes this payload can still hold')


class TarReader:
    """Reads tar members from a stream of bytes (read(n)), strictly, one at a time.

    members() yields each Member; the data of a regular file is read with
    data() or skipped when the caller asks for the next member. max_bytes
    bounds where any member's data may end (what the stream can hold), so a
    header's claim is refused before any work is spent on it.
    """

    def __init__(
        self,
        stream: Readable,
        max_bytes: int | None = None,
        pax_size: bool = False,
        foreign: bool = False,
        overclaim: Overclaim | None = None,
    ) -> None:
        self.stream = stream
        self.max_bytes = max_bytes
        # A pax size record, which only the .tx9 container may use (for a payload over 8 GiB).
        self.pax_size = pax_size
        # Members of other types yielded with kind FOREIGN (the container says what it expected).
        self.foreign = foreign
        self.overclaim = overclaim or overclaimed
        self.offset = 0  # tar bytes consumed
        self._buffer = b''
        self._pos = 0
        self._pending = 0  # data (and padding) of the current member not yet read
        self._pending_data = 0

    # Raw reading.

    def _fill(self, need: int) -> int:
        """Make at least need bytes available (fewer at the end of the stream)."""
        available = len(self._buffer) - self._pos
        if available >= need:
            return available
        # What is left is kept; a drained buffer is replaced by the chunk itself, without a copy.
        parts = [self._buffer[self._pos :]] if available else []
        while available < need:
            chunk = self.stream.read(max(CHUNK_SIZE, need - available))
            if not chunk:
                break
            parts.append(chunk)
            available += len(chunk)
        self._buffer = parts[0] if len(parts) == 1 else b''.join(parts)
        self._pos = 0
        return available

    def _take(self, size: int, what: str) -> bytes:
        if self._fill(size) < size:
            raise corrupt(f'the tar ends inside {what}')
        data = self._buffer[self._pos : self._pos + size]
        self._pos += size
        self.offset += size
        return data

    def _chunks(self, size: int, what: str) -> Iterator[bytes]:
        """size bytes as chunks, without joining them."""
        while size > 0:
            if self._pos >= len(self._buffer):
                if self._fill(1) < 1:
                    raise corrupt(f'the tar ends inside {what}')
            end = min(len(self._buffer), self._pos + size)
            chunk = self._buffer[self._pos : end]
            size -= end - self._pos
            self.offset += end - self._pos
            self._pos = end
            yield chunk

    def _skip(self, size: int, what: str) -> None:
        """Pass over size bytes without copying them."""
        while size > 0:
            if self._pos >= len(self._buffer) and self._fill(1) < 1:
                raise corrupt(f'the tar ends inside {what}')
            step = min(len(self._buffer) - self._pos, size)
            self._pos += step
            self.offset += step
            size -= step

    def _skip_pending(self) -> None:
        if self._pending:
            self._skip(self._pending, "a member's data")
            self._pending = 0
            self._pending_data = 0

    def data(self) -> Iterator[bytes]:
        """The current regular member's data as chunks (then its padding is skipped)."""
        size = self._pending_data
        padding = self._pending - size
        self._pending = self._pending_data = 0
        yield from self._chunks(size, "a member's data")
        if padding:
            self._take(padding, "a member's padding")

    # Members.

    def members(self) -> Iterator[Member]:
        """Every member, then the end of the tar checked."""
        while True:
            self._skip_pending()
            member = self._next()
            if member is None:
                self._check_trailer()
                return
            yield member

    def _next(self) -> Member | None:
        extension = Extension()
        while True:
            block = self._take(BLOCK, 'a header')
            if block.count(0) == BLOCK:
                if extension.kinds:
                    raise corrupt('the tar ends after an extension header, before its member')
                return None
            header = Header(block, extension.path or extension.name)
            if header.typeflag in EXTENSIONS:
                self._extension(header, extension)
                continue
            return self._member(header, extension)

    def _check_trailer(self) -> None:
        """Only zeros may follow the end block; reading to the end makes gzip check its trailer."""
        seen = 0
        while True:
            if self._fill(1) < 1:
                return
            chunk = self._buffer[self._pos :]
            self._pos = len(self._buffer)
            if chunk.count(0) != len(chunk):
                raise corrupt('data follows the end of the tar')
            seen += len(chunk)
            if seen > MAX_TRAILER:
                raise corrupt(f'more than {MAX_TRAILER} bytes of padding follow the end of the tar')

    def _extension(self, header: Header, extension: Extension) -> None:
        """Read one extension header into extension; a rule it breaks waits for the member's name."""
        kind = header.typeflag
        limit = MAX_PAX_SIZE if kind == PAX_LOCAL else MAX_LONG_NAME_SIZE
        size = header.number(124, 136, 'size')
        if size > limit:
            raise unsafe(header.hint, f'has an extension header of {size} bytes; at most {limit} are allowed')
        self._check_claim(header.hint, size)
        data = self._take(size, 'an extension header')
        padding = self._take(-size % BLOCK, "an extension header's padding")
        try:
            extension_rule(kind, header.gnu, extension.kinds)
            if padding.count(0) != len(padding):
                raise Refusal('has data hidden in the padding of an extension header')
            if kind == PAX_LOCAL:
                problem = parse_pax(data, extension, self.pax_size)
                if problem:
                    raise Refusal(problem)
            elif kind == GNU_LONG_NAME:
                extension.name = long_name(data)
            else:
                extension.link = long_name(data)
        except Refusal as refusal:
            if extension.problem is None:
                extension.problem = refusal.args[0]
        extension.kinds.append(kind)

    def _check_claim(self, name: str, size: int) -> None:
        if self.max_bytes is not None and self.offset + size > self.max_bytes:
            raise self.overclaim(name, size, max(self.max_bytes - self.offset, 0))

    def _member(self, header: Header, extension: Extension) -> Member:
        kind = MEMBER_TYPES.get(header.typeflag)
        name = extension.path or extension.name or text_of(header.name())
        if extension.problem is not None:
            raise unsafe(name, extension.problem)
        if kind is None:
            if self.foreign:
                return Member(name, FOREIGN, offset=self.offset)
            typeflag = shown(header.typeflag.decode('latin-1'))
            what = FOREIGN_TYPES.get(header.typeflag, f'of the unknown tar type "{typeflag}"')
            raise unsafe(name, f'is {what}; only regular files, directories, symbolic links and hard links may travel')
        if extension.kinds and header.gnu != (PAX_LOCAL not in extension.kinds):
            raise unsafe(name, 'has extension headers of one tar format and a member header of another')
        name, linkname = self._check_names(header, extension, kind, name)
        size = extension.size if extension.size is not None else header.number(124, 136, 'size')
        if kind != REGULAR and size:
            raise unsafe(name, f'is {KIND_NAMES[kind]} with {size} bytes of data; only regular files carry data')
        self._check_claim(name, size)
        mtime = extension.mtime
        if mtime is None:
            mtime = header.number(136, 148, 'modification time', signed=True)
        mode = header.number(100, 108, 'mode')
        header.number(108, 116, 'owner')
        header.number(116, 124, 'group')
        self._pending_data = size
        self._pending = size + (-size % BLOCK)
        return Member(
            name, kind, size, mode & 0o7777, mtime, linkname if kind in (SYMLINK, HARDLINK) else '', self.offset
        )

    @staticmethod
    def _check_names(header: Header, extension: Extension, kind: str, name: str) -> tuple[str, str]:
        """(name, link target) of a member of one of the four kinds, once they were found within the rules."""
        if header.typeflag == b'\0' and (name.endswith('/') or header.name().endswith(b'/')):
            raise unsafe(name, 'is an old-style regular file whose name ends in "/"')
        if kind != DIRECTORY and name.endswith('/') and name.strip('/.'):
            raise unsafe(name, f'is {KIND_NAMES[kind]} whose name ends in "/"')
        if kind == DIRECTORY:
            name = name.rstrip('/') or name
        linkname = extension.linkpath or extension.link or text_of(field(header.block, 157, 257))
        check_path_limits(name, name)
        if kind == SYMLINK:
            check_path_limits(name, linkname, 'link target')
        elif kind == HARDLINK:
            check_path_limits(name, linkname)
        return name, linkname
