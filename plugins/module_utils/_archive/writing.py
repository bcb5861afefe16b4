# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Writing a .tx9 archive and publishing it. Private to the col_agents.tx9 collection.

The container is written member by member around a payload that is only ever
copied in chunks. Publishing never overwrites: the archive is staged
privately (O_EXCL, 0600), synced, then hard-linked to a free name.
"""

from __future__ import annotations

import datetime
import errno
import os
import secrets
import tarfile
from collections.abc import Callable
from types import TracebackType
from typing import BinaryIO, Literal, Protocol

from ansible_collections.col_agents.tx9.plugins.module_utils._archive.envelope import MEMBER_MODE, archive_file_name
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.metadata import (
    METADATA_MEMBER,
    MetadataFields,
    metadata_bytes,
    utc_now,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.tarheader import BLOCK
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.tarstream import Readable
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.tarwriter import END_OF_ARCHIVE, padding
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._io import (
    BoundedReader,
    HashingWriter,
    copy_stream,
    write_failure,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._names import validate_box_name

# Two publishes in one second get -2, -3, ...; this many means something else is wrong.
MAX_NAME_ATTEMPTS = 1000
# The room an archive written in place keeps for metadata.json (a few hundred bytes of JSON,
# padded with spaces to exactly this size once the payload's size and SHA-256 are known).
METADATA_ROOM = 2048

# What publish() and publish_at() call with the new file, to write its contents.
WriteFile = Callable[[BinaryIO], object]


class Writable(Protocol):
    """Where write_archive() writes: a file, or a writer that hashes on the way."""

    def write(self, data: bytes, /) -> object:
        """Take all of data."""


def member_header(name: str, size: int, mtime: float) -> bytes:
    """The tar header of a regular 0600 member owned by root (pax when the size needs it)."""
    info = tarfile.TarInfo(name)
    info.size = size
    info.mode = MEMBER_MODE
    info.mtime = int(mtime)
    info.type = tarfile.REGTYPE
    info.uid = info.gid = 0
    info.uname = info.gname = ''
    return info.tobuf(tarfile.PAX_FORMAT, 'utf-8', 'surrogateescape')


def write_archive(out: Writable, metadata: MetadataFields, payload: Readable, mtime: float | None = None) -> None:
    """Write the .tx9 container to out: metadata.json, then payload_size bytes read from payload.

    The payload is copied in chunks and hashed on the way; it must hold
    exactly metadata's payload_size bytes with its payload_sha256.
    """
    if mtime is None:
        mtime = utc_now().timestamp()
    raw = metadata_bytes(metadata)
    out.write(member_header(METADATA_MEMBER, len(raw), mtime))
    out.write(raw + padding(len(raw)))
    size = metadata['payload_size']
    out.write(member_header(metadata['payload'], size, mtime))
    reader = BoundedReader(payload, size)
    digest = HashingWriter(out)
    copy_stream(reader, digest.write)
    if reader.remaining or payload.read(1) or digest.hexdigest() != metadata['payload_sha256']:
        raise Tx9Error(
            'The payload changed while it was written into the archive.',
            'ARCHIVE_WRITE_FAILED',
            'Run the backup again; nothing else may write to its temporary files.',
        )
    out.write(padding(size))
    # The end of a tar: two zero blocks.
    out.write(END_OF_ARCHIVE)


class InPlaceArchive:
    """A new .tx9 file (O_EXCL, 0600) whose payload is written straight into it, once.

    The file starts with room for metadata.json (METADATA_ROOM bytes) and
    the payload's header; the payload's bytes follow as they are written.
    seal() then ends the tar and writes metadata.json, padded with spaces
    (still one JSON object), and the payload's header into their room, so
    the payload is never copied from a temporary file into the archive.
    When they do not fit (a payload of 8 GiB or more needs a pax header,
    or metadata longer than its room) seal() writes nothing before the
    payload and says so; the caller then copies the payload into a new
    archive (payload_offset, payload_size) with write_archive.
    """

    def __init__(self, path: str, mtime: float) -> None:
        self.path = path
        self.mtime = int(mtime)
        self.handle = _create_staging(path)
        self.payload_offset = BLOCK + METADATA_ROOM + BLOCK
        self.payload_size = 0
        self.prefix: bytes | None = None
        # The metadata's header is final already; the rest of the room is written by seal().
        self.metadata_header = member_header(METADATA_MEMBER, METADATA_ROOM, self.mtime)
        self._write(self.metadata_header + b'\0' * (METADATA_ROOM + BLOCK))

    def _write(self, data: bytes) -> None:
        try:
            self.handle.write(data)
        except OSError as exc:
            raise write_failure(self.path, exc, self.payload_offset + self.payload_size)

    def write(self, data: bytes) -> int:
        """Payload bytes, appended."""
        self._write(data)
        self.payload_size += len(data)
        return len(data)

    def flush(self) -> None:
        try:
            self.handle.flush()
        except OSError as exc:
            raise write_failure(self.path, exc)

    def seal(self, metadata: MetadataFields) -> bool:
        """End the tar, then write metadata.json and the payload's header in their room; False when they do not fit."""
        if metadata['payload_size'] != self.payload_size:
            raise Tx9Error(
                f'The payload written ({self.payload_size} bytes) is not the size its metadata records '
                f'({metadata["payload_size"]}).',
                'ARCHIVE_WRITE_FAILED',
                'Run the backup again.',
            )
        self._write(padding(self.payload_size) + END_OF_ARCHIVE)
        self.flush()
        raw = metadata_bytes(metadata)
        header = member_header(metadata['payload'], self.payload_size, self.mtime)
        if len(raw) > METADATA_ROOM or len(header) != BLOCK:
            return False
        self.prefix = self.metadata_header + raw[:-1] + b' ' * (METADATA_ROOM - len(raw)) + b'\n' + header
        try:
            os.pwrite(self.handle.fileno(), self.prefix, 0)
        except OSError as exc:
            raise write_failure(self.path, exc)
        return True

    def sync(self) -> None:
        try:
            os.fsync(self.handle.fileno())
        except OSError as exc:
            raise write_failure(self.path, exc)

    def close(self) -> None:
        try:
            self.handle.close()
        except OSError as exc:
            raise write_failure(self.path, exc)

    def __enter__(self) -> InPlaceArchive:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None
    ) -> Literal[False]:
        try:
            self.close()
        except Tx9Error:
            if kind is None:
                raise
        return False


def publish_sealed(path: str, directory: str, box: str, moment: datetime.datetime) -> str:
    """Give the synced archive at path (on directory's filesystem) a free <box>-<time>.tx9 name; that name."""
    validate_box_name(box)
    try:
        return _link_free_name(path, directory, box, moment)
    finally:
        _remove_quietly(path)


def staging_path(directory: str, box: str, moment: datetime.datetime) -> str:
    """A new private name in directory for an archive of box being written: hidden, never ending in .tx9."""
    return os.path.join(directory, f'.{archive_file_name(box, moment)}.staging-{secrets.token_hex(8)}')


def publish(
    directory: str,
    box: str,
    write: WriteFile,
    moment: datetime.datetime | None = None,
    staging_dir: str | None = None,
) -> str:
    """Write a new .tx9 into directory through write(fileobj); return its path.

    Never overwrites: the archive is written to a private staging file
    (O_EXCL, 0600), synced, then hard-linked to <box>-<YYYYMMDD-HHMMSS>.tx9,
    or -2, -3, ... when that name is taken. Whatever fails, only files this
    call created are removed.
    """
    validate_box_name(box)
    moment = moment or utc_now()
    # The staging file may live in a private work directory on the same filesystem,
    # so that whoever cleans that directory also cleans a killed run's staging file.
    staging = staging_path(staging_dir or directory, box, moment)
    handle = _create_staging(staging)
    try:
        _write_staging(handle, staging, write)
        return _link_free_name(staging, directory, box, moment)
    finally:
        _remove_quietly(staging)


def publish_at(path: str, write: WriteFile) -> str:
    """Write a new file at exactly path through write(fileobj), mode 0600; never overwrites (DEST_EXISTS)."""
    directory = os.path.dirname(path) or '.'
    staging = os.path.join(directory, f'.{os.path.basename(path)}.staging-{secrets.token_hex(8)}')
    handle = _create_staging(staging)
    try:
        _write_staging(handle, staging, write)
        try:
            os.link(staging, path)
        except OSError as exc:
            if exc.errno == errno.EEXIST:
                raise dest_exists(path)
            raise write_failure(path, exc)
        _sync_directory(directory)
        return path
    finally:
        _remove_quietly(staging)


def dest_exists(path: str) -> Tx9Error:
    return Tx9Error(
        f'{path} already exists; tx9 never overwrites it.',
        'DEST_EXISTS',
        f'Choose another path, or move {path} away first.',
    )


def _create_staging(staging: str) -> BinaryIO:
    try:
        fd = os.open(
            staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, 'O_CLOEXEC', 0), MEMBER_MODE
        )
    except OSError as exc:
        raise write_failure(staging, exc)
    return os.fdopen(fd, 'wb')


def _write_staging(handle: BinaryIO, staging: str, write: WriteFile) -> None:
    try:
        with handle:
            os.fchmod(handle.fileno(), MEMBER_MODE)
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        raise write_failure(staging, exc)


def _link_free_name(staging: str, directory: str, box: str, moment: datetime.datetime) -> str:
    for attempt in range(1, MAX_NAME_ATTEMPTS + 1):
        final = os.path.join(directory, archive_file_name(box, moment, attempt))
        try:
            os.link(staging, final)
        except OSError as exc:
            if exc.errno == errno.EEXIST:
                continue
            raise write_failure(final, exc)
        _sync_directory(directory)
        return final
    raise Tx9Error(
        f'{directory} already holds {MAX_NAME_ATTEMPTS} archives of {box} from the same second.',
        'ARCHIVE_WRITE_FAILED',
        f'Move old archives of {box} out of {directory}.',
    )


def _sync_directory(directory: str) -> None:
    """Make the new name durable; a filesystem that cannot sync a directory still has the file."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
