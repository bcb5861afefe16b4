# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The .tx9 archive's outer tar: its name, reading it, and its payload. Private to the col_agents.tx9 collection.

A .tx9 is an uncompressed tar of exactly two regular members, metadata.json
then data.tar.gz or data.tar.gz.gpg (format version 1, which the tx9 Go CLI
writes too, with other metadata keys). Reading is strict and streams: the
payload can be gigabytes and is only ever handled in chunks. metadata.json
itself is metadata.py's; writing and publishing an archive is writing.py's.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ansible_collections.col_agents.tx9.plugins.module_utils._archive.metadata import (
    FORMAT,
    MAX_METADATA_SIZE,
    METADATA_MEMBER,
    PAYLOAD_MEMBERS,
    Metadata,
    invalid,
    parse_metadata,
    payload_member,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.tarheader import (
    CORRUPT_FIX,
    REGULAR,
    Member,
    shown,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.tarstream import Readable, TarReader
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.tarwriter import (
    END_OF_ARCHIVE,
    canonical_header,
    padding,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.validator import (
    PayloadSummary,
    PayloadValidator,
    iter_members,
    validate_stream,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._io import (
    CHUNK_SIZE,
    BoundedReader,
    HashingWriter,
    TeeReader,
    copy_stream,
)

if TYPE_CHECKING:
    from ansible_collections.col_agents.tx9.plugins.module_utils._archive.gpg import Gpg

SUFFIX = '.tx9'
MEMBER_MODE = 0o600


def damaged(path: str, problem: str) -> Tx9Error:
    """The ARCHIVE_CORRUPT refusal of the file at path: it was damaged."""
    return Tx9Error(f'{path} is damaged: {problem}.', 'ARCHIVE_CORRUPT', CORRUPT_FIX)


def archive_file_name(box: str, moment: datetime.datetime, attempt: int = 1) -> str:
    """<box>-<YYYYMMDD-HHMMSS>.tx9 in UTC; later attempts in the same second end -2, -3, ..."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(datetime.UTC)
    base = f'{box}-{moment.strftime("%Y%m%d-%H%M%S")}'
    if attempt > 1:
        base = f'{base}-{attempt}'
    return base + SUFFIX


# Sniffing.


def sniff(head: bytes) -> str | None:
    """'gzip', 'openpgp' or None, from the first bytes of a payload."""
    if head[:2] == b'\x1f\x8b':
        return 'gzip'
    if head[:1] and ord(head[:1]) & 0x80:
        return 'openpgp'
    return None


# Reading.


class Archive:
    """A .tx9 file whose container, metadata, size and checksum were checked."""

    def __init__(
        self,
        path: str,
        metadata: Metadata,
        payload_name: str,
        payload_offset: int,
        payload_size: int,
        payload_sha256: str,
    ) -> None:
        self.path = path
        self.metadata = metadata
        self.payload_name = payload_name
        self.payload_offset = payload_offset
        self.payload_size = payload_size
        self.payload_sha256 = payload_sha256

    @property
    def encrypted(self) -> bool:
        return self.metadata.encrypted

    def as_dict(self) -> dict[str, Any]:
        info: dict[str, Any] = dict(
            path=self.path,
            payload=self.payload_name,
            payload_size=self.payload_size,
            payload_sha256=self.payload_sha256,
        )
        info['metadata'] = self.metadata.as_dict()
        return info


def read_archive(path: str, expected_sha256: str | None = None, expected_format: str = FORMAT) -> Archive:
    """Check everything about the file at path but the payload's contents; return an Archive.

    Refuses with ARCHIVE_INVALID what breaks the format and ARCHIVE_CORRUPT
    what was damaged (a short file, a size or checksum that does not match,
    or a whole file whose SHA-256 is not expected_sha256 when one is given).
    One pass: the payload (and, with expected_sha256, the whole file) is
    hashed as the container is read.
    """
    try:
        handle = open(path, 'rb')
    except OSError as exc:
        raise invalid(path, f'it cannot be opened ({exc.strerror or exc})', 'Check the path of the archive.') from exc
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if expected_sha256 is None:
            metadata, payload_info, head, digest = _read_container(handle, path, size, expected_format)
        else:
            whole = HashingWriter(None)
            try:
                metadata, payload_info, head, digest = _read_container(
                    TeeReader(handle, whole.write, path), path, size, expected_format
                )
            finally:
                # A file that is not the one expected is refused for that, whatever else is wrong with it.
                copy_stream(handle, whole.write)
                _check_whole(path, whole, expected_sha256)
    _check_payload_member(path, metadata, payload_info)
    _check_sniffed(path, metadata, head)
    if metadata.payload_sha256 is not None and digest != metadata.payload_sha256:
        raise damaged(
            path,
            f'the SHA-256 of {payload_info.name} is {digest}, not the {metadata.payload_sha256} its metadata records',
        )
    return Archive(path, metadata, payload_info.name, payload_info.offset, payload_info.size, digest)


def _check_whole(path: str, whole: HashingWriter, expected_sha256: str) -> None:
    if whole.hexdigest() != expected_sha256.lower():
        raise damaged(
            path,
            f'its SHA-256 is {whole.hexdigest()}, not the {expected_sha256.lower()} it was expected to have '
            '(archive_sha256); it changed after it was written or on its way here',
        )


def _read_container(
    handle: Readable, path: str, size: int, expected_format: str = FORMAT
) -> tuple[Metadata, Member, bytes, str]:
    """(metadata, payload member, its first bytes, its SHA-256): the two members, checked as they are read."""
    reader = TarReader(
        handle,
        size,
        pax_size=True,
        foreign=True,
        overclaim=lambda member, size, room: damaged(path, f'it ends inside the member "{shown(member)}"'),
    )
    members: list[Member] = []
    raw = head = b''
    digest = ''
    try:
        for info in reader.members():
            _check_container_member(path, len(members), info)
            members.append(info)
            if len(members) == 1:
                raw = b''.join(reader.data())
            else:
                head, digest = _hash_payload(reader)
    except Tx9Error as err:
        raise _container_error(path, err, started=bool(members))
    except OSError as exc:
        raise damaged(path, f'it cannot be read ({exc.strerror or exc})') from exc
    if len(members) != 2:
        raise invalid(path, f'it holds {len(members)} member(s); a .tx9 holds metadata.json and the payload')
    return parse_metadata(raw, path, expected_format), members[1], head, digest


def _container_error(path: str, err: Tx9Error, started: bool) -> Tx9Error:
    """The reader's refusals, said of the container rather than of a payload."""
    if err.cause not in ('ARCHIVE_CORRUPT', 'ARCHIVE_UNSAFE') or err.reason.startswith(path + ' '):
        return err
    detail = err.reason.split('(', 1)[-1].rsplit(')', 1)[0] if err.cause == 'ARCHIVE_CORRUPT' else err.reason
    if not started:
        return invalid(path, f'it is not an uncompressed tar file ({detail})')
    if 'follows the end' in detail:
        return invalid(path, 'data follows the end of its tar')
    if err.cause == 'ARCHIVE_CORRUPT':
        return damaged(path, f'its tar ends early or is broken ({detail})')
    return invalid(path, f'its tar is not of the accepted form ({detail})')


def _hash_payload(reader: TarReader) -> tuple[bytes, str]:
    digest = HashingWriter(None)
    head = b''
    for chunk in reader.data():
        if len(head) < 2:
            head += chunk[: 2 - len(head)]
        digest.write(chunk)
    return head, digest.hexdigest()


def _check_container_member(path: str, index: int, info: Member) -> None:
    name = shown(info.name)
    if index >= 2:
        raise invalid(path, f'it has a third member, "{name}"')
    if '/' in info.name:
        raise invalid(path, f'the member "{name}" has a path separator in its name')
    expected = (METADATA_MEMBER,) if index == 0 else PAYLOAD_MEMBERS
    if info.name not in expected:
        if index == 0 and info.name in PAYLOAD_MEMBERS:
            raise invalid(path, f'its first member is "{name}"; metadata.json must come first')
        raise invalid(
            path,
            f'its {"first" if index == 0 else "second"} member is "{name}", not '
            + ' or '.join(f'"{each}"' for each in expected),
        )
    if info.kind != REGULAR:
        raise invalid(path, f'the member "{name}" is not a regular file')
    if info.size > MAX_METADATA_SIZE and index == 0:
        raise invalid(path, f'metadata.json is larger than {MAX_METADATA_SIZE} bytes')


def _check_payload_member(path: str, metadata: Metadata, info: Member) -> None:
    if metadata.payload is not None and metadata.payload != info.name:
        raise invalid(
            path, f'its metadata names the payload "{metadata.payload}" but the payload member is "{info.name}"'
        )
    if info.name != payload_member(metadata.encrypted):
        raise invalid(
            path,
            f'its payload is "{info.name}" but its metadata says encrypted={_json_bool(metadata.encrypted)}',
        )
    if metadata.payload_size is not None and metadata.payload_size != info.size:
        raise damaged(
            path, f'the payload holds {info.size} bytes, not the {metadata.payload_size} its metadata records'
        )


def _check_sniffed(path: str, metadata: Metadata, head: bytes) -> None:
    kind = sniff(head)
    if kind is None:
        raise invalid(path, 'its payload is neither gzip nor OpenPGP data')
    if (kind == 'openpgp') != metadata.encrypted:
        raise invalid(
            path,
            f'its payload is {"OpenPGP" if kind == "openpgp" else "gzip"} data '
            f'but its metadata says encrypted={_json_bool(metadata.encrypted)}',
        )


def _json_bool(value: bool) -> str:
    return 'true' if value else 'false'


@contextlib.contextmanager
def open_payload(archive: Archive) -> Iterator[Readable]:
    """The payload member's bytes as stored (gzip, or OpenPGP when encrypted), as a reader.

    Every pass is checked against the SHA-256 read_archive computed: a file
    changed between validation and extraction is refused, never extracted.
    """
    digest = HashingWriter(None)
    completed = False
    with open(archive.path, 'rb') as handle:
        handle.seek(archive.payload_offset)
        try:
            yield TeeReader(BoundedReader(handle, archive.payload_size), digest.write, archive.path)
            completed = True
        finally:
            # Only a pass that ended without error is judged; an error already explains itself.
            if completed and (digest.size != archive.payload_size or digest.hexdigest() != archive.payload_sha256):
                raise damaged(
                    archive.path,
                    'the payload read now is not the payload that was checked (the file '
                    'changed, or was not read to its end)',
                )


@contextlib.contextmanager
def plain_payload(archive: Archive, passphrase: str | None = None, gpg: Gpg | None = None) -> Iterator[Readable]:
    """The payload's gzip stream, decrypted on the fly when the archive is encrypted.

    For an encrypted archive, gpg's verdict comes when the block ends: read
    to the end, and trust nothing read until the block has ended cleanly.
    """
    with open_payload(archive) as stored:
        plain: contextlib.AbstractContextManager[Readable]
        if archive.encrypted:
            plain = (gpg or _new_gpg(passphrase)).decrypting(stored, passphrase)
        else:
            plain = contextlib.nullcontext(stored)
        with plain as stream:
            yield stream


# Deflate never expands more than 1032 to 1; an OpenPGP message may itself be
# compressed, so an encrypted payload can expand by that factor twice.
DEFLATE_MAX_RATIO = 1032


def expansion_bound(archive: Archive) -> int:
    """The most tar bytes the archive's payload can decompress to: where any member's data must end."""
    return payload_expansion_bound(archive.payload_size, archive.encrypted)


def payload_expansion_bound(stored_size: int, encrypted: bool) -> int:
    ratio = DEFLATE_MAX_RATIO * (DEFLATE_MAX_RATIO if encrypted else 1)
    return stored_size * ratio + 64 * 1024


def validate_payload(
    archive: Archive, passphrase: str | None = None, gpg: Gpg | None = None, **limits: Any
) -> PayloadSummary:
    """Validate the payload's contents (decrypting when needed) before anything is extracted.

    Returns the validator's PayloadSummary; limits go to PayloadValidator.
    """
    with plain_payload(archive, passphrase, gpg) as stream:
        summary = validate_stream(stream, validator=PayloadValidator(**limits), max_bytes=expansion_bound(archive))
    return summary


class CanonicalStream:
    """The payload rewritten as a canonical tar, for an extractor to read: an iterable of chunks.

    Each member is read by our reader, checked again by a fresh validator,
    and written by canonical_header() with permission bits only, owned by
    uid:gid; the payload's own bytes never leave this process. The stored
    bytes are hashed as they are read and must match the validated archive.
    An error is kept in .error (a caller of an HTTP client may see it
    wrapped) and raised again by check().

    With end_mark (a name no archive can know in advance), an empty file of
    that name is the last member, written only once the whole payload was
    read, validated and found to be the one checked: an extractor that finds
    it knows that the stream it read was complete, not cut at a member boundary.
    """

    def __init__(
        self,
        archive: Archive,
        passphrase: str | None,
        gpg: Gpg | None,
        uid: int,
        gid: int,
        chunk_size: int = CHUNK_SIZE,
        end_mark: str | None = None,
    ) -> None:
        self.archive = archive
        self.passphrase = passphrase
        self.gpg = gpg
        self.uid = uid
        self.gid = gid
        self.chunk_size = chunk_size
        self.end_mark = end_mark
        self.error: Exception | None = None
        self.summary: PayloadSummary | None = None

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._chunks()
        except Exception as exc:
            self.error = exc
            raise

    def _chunks(self) -> Iterator[bytes]:
        validator = PayloadValidator()
        with plain_payload(self.archive, self.passphrase, self.gpg) as stream:
            members = iter_members(stream, max_bytes=expansion_bound(self.archive), with_reader=True)
            yield from canonical_chunks(members, validator.feed, self.uid, self.gid, self.chunk_size)
            self.summary = validator.finish()
        yield end_of_stream(self.end_mark, self.uid, self.gid)

    def check(self) -> PayloadSummary:
        if self.error is not None:
            raise self.error
        if self.summary is None:
            raise Tx9Error('The payload was not read to its end while it was restored.', 'ARCHIVE_CORRUPT', CORRUPT_FIX)
        return self.summary


def canonical_chunks(
    members: Iterator[tuple[Member, TarReader]],
    path_of: Callable[[Member], str],
    uid: int,
    gid: int,
    chunk_size: int = CHUNK_SIZE,
) -> Iterator[bytes]:
    """Each member rewritten by canonical_header() under path_of(member) (which may refuse it), then its data,
    in chunks of about chunk_size bytes."""
    parts: list[bytes] = []
    held = 0
    for member, reader in members:
        parts.append(canonical_header(path_of(member), member, uid, gid))
        held += len(parts[-1])
        if member.kind == REGULAR:
            for data in reader.data():
                parts.append(data)
                held += len(data)
                if held >= chunk_size:
                    yield b''.join(parts)
                    parts, held = [], 0
            parts.append(padding(member.size))
        if held >= chunk_size:
            yield b''.join(parts)
            parts, held = [], 0
    if parts:
        yield b''.join(parts)


def end_of_stream(end_mark: str | None, uid: int, gid: int) -> bytes:
    """The end of a canonical stream: the end mark's empty file when there is one, then the end of the tar."""
    if end_mark is None:
        return END_OF_ARCHIVE
    mark = Member(end_mark, REGULAR, size=0, mode=0o600)
    return canonical_header(end_mark, mark, uid, gid) + END_OF_ARCHIVE


def digest_plaintext(
    src: Readable,
    encrypted: bool,
    passphrase: str | None = None,
    gpg: Gpg | None = None,
    algorithm: Callable[[], Any] = hashlib.sha256,
) -> tuple[str, int]:
    """(hex digest, size) of a stored payload's gzip bytes, decrypting when encrypted; SHA-256 unless told.

    Backup's read-back: the stored payload must decrypt to the bytes whose
    digest was computed while writing them.
    """
    digest = HashingWriter(None, algorithm)
    if encrypted:
        gpg = gpg or _new_gpg(passphrase)
        gpg.decrypt_stream(src, digest.write, passphrase)
    else:
        copy_stream(src, digest.write)
    return digest.hexdigest(), digest.size


def _new_gpg(passphrase: str | None) -> Gpg:
    from ansible_collections.col_agents.tx9.plugins.module_utils._archive.gpg import Gpg
    from ansible_collections.col_agents.tx9.plugins.module_utils._archive.gpgsupport import check_passphrase

    # A missing passphrase is the person's first problem, whether or not gpg is installed.
    check_passphrase(passphrase)
    return Gpg()
