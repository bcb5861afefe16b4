# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Byte-stream helpers: archives and payloads are streamed, never held in memory.

Private to the col_agents.tx9 collection.
"""

from __future__ import annotations

import errno
import gzip
import hashlib
import os
import queue
import shutil
import tempfile
import threading
import zlib
from collections.abc import Callable, Generator, Iterable
from types import ModuleType
from typing import Any, Protocol, cast

try:
    from isal import igzip_threaded, isal_zlib

    HAS_ISAL = True
except ImportError:
    igzip_threaded = isal_zlib = None  # type: ignore[assignment]  # used only when HAS_ISAL
    HAS_ISAL = False

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error


class Readable(Protocol):
    """Anything with a file's read(): a file, a socket's reader, one of the readers below."""

    def read(self, size: int = ..., /) -> bytes:
        """Up to size bytes; fewer, or none, at the end."""


class Writable(Protocol):
    def write(self, data: bytes, /) -> Any:
        """Take all of data."""


class FlushableWriter(Writable, Protocol):
    def flush(self) -> object:
        """Pass on what is buffered."""


CHUNK_SIZE = 1024 * 1024
# ISA-L's threaded igzip at level 1 compresses about 20 times faster than zlib at
# level 6 on two cores, for archives about 5 % larger; its output is ordinary gzip.
# (Level 2 takes a third more time for 0.3 % less, measured on the bench's mix.)
# The standard library's gzip is the fallback where isal is not installed.
ISAL_LEVEL = 1
ISAL_THREADS = 2
GZIP_LEVEL = 6
ISAL_ERRORS = (cast(type[Exception], isal_zlib.error),) if HAS_ISAL else ()
GZIP_ERRORS: tuple[type[Exception], ...] = (zlib.error, *ISAL_ERRORS)


# How many chunks read_ahead may hold ready: with CHUNK_SIZE chunks, a few MiB at most.
READ_AHEAD_DEPTH = 4


def read_ahead(chunks: Iterable[bytes], depth: int = READ_AHEAD_DEPTH) -> Generator[bytes, None, None]:
    """What the iterator chunks yields, made in a thread of its own at most depth items ahead.

    The maker (decrypting, decompressing, parsing) then works while the
    caller hands the previous chunks on (to a socket, a pipe), instead of
    one waiting on the other. An exception raised by chunks is raised here,
    at the point of the stream where it happened. Closing this generator
    (or leaving a loop over it) stops the maker and closes chunks. Memory
    is bounded by depth items.
    """
    ready: queue.Queue[tuple[bool, Any]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def hand_over(item: tuple[bool, Any]) -> bool:
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def make() -> None:
        try:
            for chunk in chunks:
                if not hand_over((True, chunk)):
                    return
            hand_over((False, None))
        except BaseException as exc:  # noqa: BLE001  # handed to the reader, which raises it where the stream failed
            hand_over((False, exc))
        finally:
            close = getattr(chunks, 'close', None)
            if close is not None:
                close()

    maker = threading.Thread(target=make, name='tx9-read-ahead', daemon=True)
    maker.start()
    try:
        while True:
            more, value = ready.get()
            if more:
                yield value
            elif value is not None:
                raise value
            else:
                return
    finally:
        stop.set()
        maker.join()


# A write that failed for want of room: a full filesystem, or the writer's quota.
FULL = (errno.ENOSPC, errno.EDQUOT)
# How a tool (tar, sh) or the engine says so: the C library's words for FULL, in any case.
FULL_WORDS = tuple(os.strerror(code).lower() for code in FULL)


def says_full(output: str) -> bool:
    """Whether a tool's or the engine's message says a write failed for want of room (FULL)."""
    text = output.lower()
    return any(words in text for words in FULL_WORDS)


def write_failure(path: str, exc: BaseException, written: int | None = None) -> Tx9Error:
    """The error of a file that could not be written: NO_SPACE for a full filesystem (naming it, the bytes
    written before it filled and what is free), ARCHIVE_WRITE_FAILED otherwise (a missing directory, rights)."""
    where = os.path.dirname(path) or '.'
    if getattr(exc, 'errno', None) in FULL:
        so_far = f' after {written} bytes of it were written' if written else ''
        return Tx9Error(
            f'{path} cannot be written: the filesystem of {where} is full{so_far} '
            f'({free_bytes(nearest_existing(where))} bytes free there now).',
            'NO_SPACE',
            f'Free space on the filesystem of {where}, or write to one with more room; nothing was kept of this '
            'attempt.',
            details=dict(path=path, written=written),
        )
    return Tx9Error(
        f'{path} cannot be written: {getattr(exc, "strerror", None) or exc}.',
        'ARCHIVE_WRITE_FAILED',
        f'Free space on that disk, or fix the permissions of {where}.',
    )


def free_bytes(path: str) -> int | None:
    """Bytes an unprivileged writer may still use on path's filesystem, or None when it cannot be read."""
    try:
        found = os.statvfs(path)
    except OSError:
        return None
    return found.f_bavail * found.f_frsize


def nearest_existing(path: str) -> str:
    """path, or its nearest ancestor that exists (a dangling symbolic link counts as existing)."""
    while not os.path.lexists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path


def file_kind(path: str) -> str:
    """What path is, in words, for a message about something that should be a directory."""
    if os.path.islink(path):
        return 'a symbolic link to nothing' if not os.path.exists(path) else 'a symbolic link to a non-directory'
    return 'a file' if os.path.isfile(path) else 'not a directory'


def refuse_non_directory(path: str, what: str, option: str, fix: str | None = None) -> str:
    """Refuse (ARCHIVE_WRITE_FAILED) a directory path that is, or lies below, something other than a directory.

    what names the directory in the message ("the backup destination"), option the
    option that gave it, fix what to do (by default: set option to a directory).
    Returns the nearest part of path that exists.
    """
    found = nearest_existing(path)
    if os.path.isdir(found):
        return found
    if found == path:
        reason = f'{what} {path} ({option}) is not a directory: it is {file_kind(path)}.'
    else:
        reason = f'{what} {path} ({option}) cannot be created: {found} is {file_kind(found)}, not a directory.'
    raise Tx9Error(
        reason[0].upper() + reason[1:],
        'ARCHIVE_WRITE_FAILED',
        f'{fix or f"Set {option} to a directory"}, or move {found} away.',
    )


def copy_stream(reader: Readable, write: Callable[[bytes], Any], chunk_size: int = CHUNK_SIZE) -> None:
    """Read reader to its end, handing each chunk to write(chunk)."""
    while True:
        chunk = reader.read(chunk_size)
        if not chunk:
            return
        write(chunk)


class BoundedReader:
    """Reads at most size bytes from a file object."""

    def __init__(self, handle: Readable, size: int) -> None:
        self.handle = handle
        self.remaining = size

    def read(self, size: int | None = -1) -> bytes:
        if self.remaining <= 0:
            return b''
        if size is None or size < 0 or size > self.remaining:
            size = self.remaining
        data = self.handle.read(size)
        self.remaining -= len(data)
        return data


class Digester(Protocol):
    """A running digest: hashlib's objects, or Crc32."""

    def update(self, data: bytes, /) -> None:
        """Add data."""

    def hexdigest(self) -> str:
        """The digest so far, in hex."""


class Crc32:
    """CRC-32 (ISA-L's when installed, about 15 times faster than SHA-256), updated and read as hashlib's are.

    A check that bytes came back as they were written (a disk's fault), never
    one against someone changing them: that is SHA-256's.
    """

    def __init__(self) -> None:
        self.value = 0

    def update(self, data: bytes) -> None:
        self.value = (isal_zlib or zlib).crc32(data, self.value)

    def hexdigest(self) -> str:
        return f'{self.value:08x}'


class HashingWriter:
    """Passes writes on to target (when there is one) and keeps their digest (SHA-256 unless told) and size."""

    def __init__(self, target: Writable | None, algorithm: Callable[[], Digester] = hashlib.sha256) -> None:
        self.target = target
        self.digest = algorithm()
        self.size = 0

    def write(self, data: bytes) -> int:
        if self.target is not None:
            self.target.write(data)
        self.digest.update(data)
        self.size += len(data)
        return len(data)

    def flush(self) -> None:
        if self.target is not None and hasattr(self.target, 'flush'):
            self.target.flush()

    def hexdigest(self) -> str:
        return self.digest.hexdigest()


class ChunkReader:
    """A file-like read() over an iterable of byte chunks (a Docker SDK stream)."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self._chunk = b''
        self._pos = 0

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            rest = [self._chunk[self._pos :]] + list(self._chunks)
            self._chunk, self._pos = b'', 0
            return b''.join(rest)
        while self._pos >= len(self._chunk):
            try:
                self._chunk, self._pos = next(self._chunks), 0
            except StopIteration:
                return b''
        data = self._chunk[self._pos : self._pos + size]
        self._pos += len(data)
        return data


class GunzipReader:
    """read() of the bytes a gzip stream holds, decompressed in bounded pieces.

    zlib_module is ISA-L's isal_zlib (several times faster) or the standard
    zlib; both check every member's CRC and length trailer. Consecutive gzip
    members are read as one stream, as gzip itself does. A stream that ends
    inside a member raises EOFError.
    """

    def __init__(self, src: Readable, zlib_module: ModuleType) -> None:
        self.src = src
        self.zlib = zlib_module
        self.inflater = zlib_module.decompressobj(31)

    def read(self, size: int | None = CHUNK_SIZE) -> bytes:
        if size is None or size < 0:
            size = CHUNK_SIZE
        while True:
            inflater = self.inflater
            if inflater.unconsumed_tail:
                data: bytes = inflater.decompress(inflater.unconsumed_tail, size)
            elif inflater.eof:
                rest = inflater.unused_data or self.src.read(CHUNK_SIZE)
                if not rest:
                    return b''
                self.inflater = self.zlib.decompressobj(31)
                data = self.inflater.decompress(rest, size)
            else:
                chunk = self.src.read(CHUNK_SIZE)
                if not chunk:
                    raise EOFError('the gzip stream ends before its end')
                data = inflater.decompress(chunk, size)
            if data:
                return data


def gzip_writer(target: FlushableWriter) -> Any:
    """A gzip stream writing into target: ISA-L's threaded igzip when installed, else zlib.

    Either is a binary file object opened for writing (write, flush, close, a with block).
    """
    if HAS_ISAL:
        opener: Any = igzip_threaded.open
        return opener(target, 'wb', compresslevel=ISAL_LEVEL, threads=ISAL_THREADS)
    return gzip.GzipFile(filename='', fileobj=target, mode='wb', compresslevel=GZIP_LEVEL, mtime=0)


def gzip_reader(fileobj: Readable) -> GunzipReader:
    """A reader of the gzip stream in fileobj: ISA-L's inflate when installed, else zlib's."""
    return GunzipReader(fileobj, isal_zlib or zlib)


class TeeReader:
    """Reads from src and hands every chunk read to sink(chunk) too.

    A failing sink is ARCHIVE_WRITE_FAILED, so a reader of this stream (the
    validator) never mistakes a full disk for a damaged archive.
    """

    def __init__(self, src: Readable, sink: Callable[[bytes], Any], name: str = 'the archive') -> None:
        self.src = src
        self.sink = sink
        self.name = name

    def read(self, size: int = -1) -> bytes:
        data = self.src.read(size)
        if data:
            try:
                self.sink(data)
            except OSError as exc:
                raise write_failure(self.name, exc) from exc
        return data


def remove_left_by_dead_processes(parent: str, prefix: str) -> None:
    """Remove what killed runs left under parent: entries named prefix, a process ID, then anything,
    whose process is gone."""
    try:
        entries = os.listdir(parent)
    except OSError:
        return
    for entry in entries:
        owner = entry[len(prefix) :].split('-', 1)[0]
        if entry.startswith(prefix) and owner.isdigit() and not os.path.exists(f'/proc/{owner}'):
            shutil.rmtree(os.path.join(parent, entry), ignore_errors=True)


# The state home's and every private file's modes.
DIR_MODE = 0o700
FILE_MODE = 0o600


def ensure_dir(path: str) -> str:
    """Create path (and parents) as 0700; tighten an existing one."""
    try:
        os.makedirs(path, DIR_MODE)
    except OSError as exc:
        if exc.errno != errno.EEXIST:
            raise Tx9Error(
                f'The tx9 state directory {path} cannot be created: {exc.strerror}.',
                'STATE_HOME',
                f'Make {path} writable, or set TX9_HOME to a writable directory.',
            ) from exc
    if not os.path.isdir(path):
        raise Tx9Error(
            f'{path} exists but is not a directory.',
            'STATE_HOME',
            f'Move {path} away, or set TX9_HOME to another directory.',
        )
    if os.stat(path).st_mode & 0o777 != DIR_MODE:
        os.chmod(path, DIR_MODE)
    return path


def write_atomic(path: str, data: bytes | str) -> None:
    """Write bytes or text to path as 0600, replacing it in one rename: a write that fails (a full or
    read-only filesystem) leaves the old file as it was and no temporary file (write_failure's error)."""
    if isinstance(data, str):
        data = data.encode('utf-8')
    directory = os.path.dirname(path) or '.'
    try:
        fd, tmp = tempfile.mkstemp(prefix=f'.{os.path.basename(path)}.', suffix='.tmp', dir=directory)
    except OSError as exc:
        raise write_failure(path, exc) from exc
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, 'wb') as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.rename(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise write_failure(path, exc) from exc
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
