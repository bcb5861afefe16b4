# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The .tx9 archive: container, metadata and payload checks. Private to the col_agents.tx9 collection.

A .tx9 is an uncompressed tar of exactly two regular members, metadata.json
then data.tar.gz or data.tar.gz.gpg (format version 1, which the tx9 Go CLI
writes too, with other metadata keys). Reading is strict and streams: the
payload can be gigabytes and is only ever handled in chunks. Writing and
publishing an archive is writing.py's.
"""

import contextlib
import datetime
import json
import os
import re

from ansible_collections.col_agents.tx9.plugins.module_utils._archive.tarstream import (
    END_OF_ARCHIVE,
    REGULAR,
    Member,
    TarReader,
    canonical_header,
    padding,
    shown,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.validator import (
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
from ansible_collections.col_agents.tx9.plugins.module_utils._version import COLLECTION_VERSION

FORMAT = 'tx9-archive'
FORMAT_VERSION = 1
METADATA_MEMBER = 'metadata.json'
PLAIN_PAYLOAD = 'data.tar.gz'
ENCRYPTED_PAYLOAD = 'data.tar.gz.gpg'
PAYLOAD_MEMBERS = (PLAIN_PAYLOAD, ENCRYPTED_PAYLOAD)
SUFFIX = '.tx9'
MEMBER_MODE = 0o600
# The Go CLI's bound; metadata is a few hundred bytes.
MAX_METADATA_SIZE = 64 * 1024
# Metadata is one flat object; deeper nesting is refused before the JSON parser sees it.
MAX_METADATA_DEPTH = 32

# (key, type) of the metadata this collection writes, in the order it writes them.
METADATA_KEYS = (
    ('format', str),
    ('format_version', int),
    ('box', str),
    ('created_at', str),
    ('tx9_version', str),
    ('image', str),
    ('encrypted', bool),
    ('payload', str),
    ('payload_sha256', str),
    ('payload_size', int),
)
# The tx9 Go CLI's metadata.
CLI_METADATA_KEYS = (
    ('box_name', str),
    ('created_at', str),
    ('cli_version', str),
    ('image_version', str),
    ('encrypted', bool),
    ('format_version', int),
)
# Keys that mark the Go CLI's metadata when "format" is absent.
CLI_ONLY_KEYS = ('box_name', 'cli_version', 'image_version')
SHA256_HEX = re.compile(r'^[0-9a-f]{64}\Z')
JSON_TYPE_NAMES = {str: 'string', int: 'integer', bool: 'boolean'}

INVALID_FIX = 'Give the path of a .tx9 file written by tx9 backup (or the tx9 CLI).'
CORRUPT_FIX = 'The archive is damaged or incomplete; copy it again from its source or use another backup.'


def invalid(path, problem, fix=INVALID_FIX):
    return Tx9Error(f'{path} is not a valid .tx9 archive: {problem}.', 'ARCHIVE_INVALID', fix)


def damaged(path, problem):
    return Tx9Error(f'{path} is damaged: {problem}.', 'ARCHIVE_CORRUPT', CORRUPT_FIX)


# Names and metadata.


def payload_member(encrypted):
    return ENCRYPTED_PAYLOAD if encrypted else PLAIN_PAYLOAD


def utc_now():
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0)


def rfc3339(moment):
    """2026-11-30T02:47:14Z for an aware (or naive UTC) datetime."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(datetime.UTC)
    return moment.strftime('%Y-%m-%dT%H:%M:%SZ')


def archive_file_name(box, moment, attempt=1):
    """<box>-<YYYYMMDD-HHMMSS>.tx9 in UTC; later attempts in the same second end -2, -3, ..."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(datetime.UTC)
    base = '{}-{}'.format(box, moment.strftime('%Y%m%d-%H%M%S'))
    if attempt > 1:
        base = '%s-%d' % (base, attempt)
    return base + SUFFIX


def new_metadata(box, image, encrypted, payload_sha256, payload_size, created_at=None, tx9_version=COLLECTION_VERSION):
    """The metadata.json object of a new archive."""
    return dict(
        format=FORMAT,
        format_version=FORMAT_VERSION,
        box=box,
        created_at=created_at or rfc3339(utc_now()),
        tx9_version=tx9_version,
        image=image,
        encrypted=bool(encrypted),
        payload=payload_member(encrypted),
        payload_sha256=payload_sha256,
        payload_size=payload_size,
    )


def metadata_bytes(metadata):
    """metadata.json as written: indented UTF-8 JSON, so a person can read it."""
    return (json.dumps(metadata, indent=2, ensure_ascii=False) + '\n').encode('utf-8')


class Metadata:
    """What a reader learned from metadata.json, in this collection's terms.

    An archive of the tx9 Go CLI has no image, tx9_version, payload,
    payload_sha256 or payload_size (they are None) but cli_version and
    image_version instead; `original` is True for it.
    """

    def __init__(self, raw, original):
        self.raw = raw
        self.original = original
        self.format_version = raw['format_version']
        self.encrypted = raw['encrypted']
        self.created_at = raw['created_at']
        self.box = raw['box_name'] if original else raw['box']
        self.image = None if original else raw['image']
        self.tx9_version = None if original else raw['tx9_version']
        self.payload = None if original else raw['payload']
        self.payload_sha256 = None if original else raw['payload_sha256']
        self.payload_size = None if original else raw['payload_size']
        self.cli_version = raw.get('cli_version') if original else None
        self.image_version = raw.get('image_version') if original else None

    def as_dict(self):
        return dict(
            box=self.box,
            created_at=self.created_at,
            encrypted=self.encrypted,
            format_version=self.format_version,
            image=self.image,
            tx9_version=self.tx9_version,
            payload=self.payload,
            payload_sha256=self.payload_sha256,
            payload_size=self.payload_size,
            cli_version=self.cli_version,
            image_version=self.image_version,
            original=self.original,
        )


def _refuse_duplicate_keys(pairs):
    result = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f'the key {key!r} appears twice')
        result[key] = value
    return result


def _refuse_constant(name):
    raise ValueError(f'{name} is not JSON')


def _has_type(value, kind):
    # bool is an int in Python, but not in JSON.
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def json_depth(raw):
    """How deeply the arrays and objects of a JSON text nest, counted without parsing it."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in raw:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:
                escaped = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            deepest = max(deepest, depth)
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return deepest


def parse_metadata(raw, path='The archive'):
    """Metadata from the bytes of metadata.json; ARCHIVE_INVALID when they break the format."""
    if len(raw) > MAX_METADATA_SIZE:
        raise invalid(path, 'metadata.json is larger than %d bytes' % MAX_METADATA_SIZE)
    if json_depth(raw) > MAX_METADATA_DEPTH:
        raise invalid(path, 'metadata.json nests arrays or objects more than %d deep' % MAX_METADATA_DEPTH)
    try:
        data = json.loads(
            raw.decode('utf-8'), object_pairs_hook=_refuse_duplicate_keys, parse_constant=_refuse_constant
        )
    except ValueError as exc:
        raise invalid(path, f'metadata.json is not UTF-8 JSON ({exc})')
    if not isinstance(data, dict):
        raise invalid(path, 'metadata.json is not a JSON object')
    original = 'format' not in data and any(key in data for key in CLI_ONLY_KEYS)
    for key, kind in CLI_METADATA_KEYS if original else METADATA_KEYS:
        if key not in data:
            raise invalid(path, f'metadata.json has no "{key}"')
        if not _has_type(data[key], kind):
            raise invalid(path, f'the metadata key "{key}" is not a {JSON_TYPE_NAMES[kind]}')
    if not original and data['format'] != FORMAT:
        raise invalid(path, 'its format is {!r}, not {!r}'.format(data['format'], FORMAT))
    _check_format_version(path, data['format_version'])
    if not original:
        _check_payload_keys(path, data)
    return Metadata(data, original)


def _check_format_version(path, version):
    if version > FORMAT_VERSION:
        raise invalid(
            path,
            'it has format version %d, newer than the %d this collection reads' % (version, FORMAT_VERSION),
            'Upgrade the col_agents.tx9 collection, then import again.',
        )
    if version < FORMAT_VERSION:
        raise invalid(path, 'it has format version %d, which does not exist' % version)


def _check_payload_keys(path, data):
    if not SHA256_HEX.match(data['payload_sha256']):
        raise invalid(path, 'payload_sha256 is not 64 lowercase hex digits')
    if data['payload_size'] < 0:
        raise invalid(path, 'payload_size is negative')


# Sniffing.


def sniff(head):
    """'gzip', 'openpgp' or None, from the first bytes of a payload."""
    if head[:2] == b'\x1f\x8b':
        return 'gzip'
    if head[:1] and ord(head[:1]) & 0x80:
        return 'openpgp'
    return None


# Reading.


class Archive:
    """A .tx9 file whose container, metadata, size and checksum were checked."""

    def __init__(self, path, metadata, payload_name, payload_offset, payload_size, payload_sha256):
        self.path = path
        self.metadata = metadata
        self.payload_name = payload_name
        self.payload_offset = payload_offset
        self.payload_size = payload_size
        self.payload_sha256 = payload_sha256

    @property
    def encrypted(self):
        return self.metadata.encrypted

    def as_dict(self):
        info = dict(
            path=self.path,
            payload=self.payload_name,
            payload_size=self.payload_size,
            payload_sha256=self.payload_sha256,
        )
        info['metadata'] = self.metadata.as_dict()
        return info


def read_archive(path, expected_sha256=None):
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
        raise invalid(path, 'it cannot be opened (%s)' % (exc.strerror or exc), 'Check the path of the archive.')
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if expected_sha256 is None:
            metadata, payload_info, head, digest = _read_container(handle, path, size)
        else:
            whole = HashingWriter(None)
            try:
                metadata, payload_info, head, digest = _read_container(TeeReader(handle, whole.write, path), path, size)
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


def _check_whole(path, whole, expected_sha256):
    if whole.hexdigest() != expected_sha256.lower():
        raise damaged(
            path,
            f'its SHA-256 is {whole.hexdigest()}, not the {expected_sha256.lower()} it was expected to have (archive_sha256); it changed '
            'after it was written or on its way here',
        )


def _read_container(handle, path, size):
    """(metadata, payload member, its first bytes, its SHA-256): the two members, checked as they are read."""
    reader = TarReader(
        handle,
        size,
        pax_size=True,
        foreign=True,
        overclaim=lambda member, size, room: damaged(path, f'it ends inside the member "{shown(member)}"'),
    )
    members = []
    raw = head = digest = None
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
        raise damaged(path, 'it cannot be read (%s)' % (exc.strerror or exc))
    if len(members) != 2:
        raise invalid(path, 'it holds %d member(s); a .tx9 holds metadata.json and the payload' % len(members))
    return parse_metadata(raw, path), members[1], head, digest


def _container_error(path, err, started):
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


def _hash_payload(reader):
    digest = HashingWriter(None)
    head = b''
    for chunk in reader.data():
        if len(head) < 2:
            head += chunk[: 2 - len(head)]
        digest.write(chunk)
    return head, digest.hexdigest()


def _check_container_member(path, index, info):
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
            'its {} member is "{}", not {}'.format(
                'first' if index == 0 else 'second', name, ' or '.join(f'"{each}"' for each in expected)
            ),
        )
    if info.kind != REGULAR:
        raise invalid(path, f'the member "{name}" is not a regular file')
    if info.size > MAX_METADATA_SIZE and index == 0:
        raise invalid(path, 'metadata.json is larger than %d bytes' % MAX_METADATA_SIZE)


def _check_payload_member(path, metadata, info):
    if metadata.payload is not None and metadata.payload != info.name:
        raise invalid(
            path, f'its metadata names the payload "{metadata.payload}" but the payload member is "{info.name}"'
        )
    if info.name != payload_member(metadata.encrypted):
        raise invalid(
            path,
            'its payload is "{}" but its metadata says encrypted={}'.format(
                info.name, 'true' if metadata.encrypted else 'false'
            ),
        )
    if metadata.payload_size is not None and metadata.payload_size != info.size:
        raise damaged(
            path, 'the payload holds %d bytes, not the %d its metadata records' % (info.size, metadata.payload_size)
        )


def _check_sniffed(path, metadata, head):
    kind = sniff(head)
    if kind is None:
        raise invalid(path, 'its payload is neither gzip nor OpenPGP data')
    if (kind == 'openpgp') != metadata.encrypted:
        raise invalid(
            path,
            'its payload is {} data but its metadata says encrypted={}'.format(
                'OpenPGP' if kind == 'openpgp' else 'gzip', 'true' if metadata.encrypted else 'false'
            ),
        )


@contextlib.contextmanager
def open_payload(archive):
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
def plain_payload(archive, passphrase=None, gpg=None):
    """The payload's gzip stream, decrypted on the fly when the archive is encrypted.

    For an encrypted archive, gpg's verdict comes when the block ends: read
    to the end, and trust nothing read until the block has ended cleanly.
    """
    with open_payload(archive) as stored:
        if archive.encrypted:
            plain = (gpg or _new_gpg(passphrase)).decrypting(stored, passphrase)
        else:
            plain = contextlib.nullcontext(stored)
        with plain as stream:
            yield stream


# Deflate never expands more than 1032 to 1; an OpenPGP message may itself be
# compressed, so an encrypted payload can expand by that factor twice.
DEFLATE_MAX_RATIO = 1032


def expansion_bound(archive):
    """The most tar bytes the archive's payload can decompress to: where any member's data must end."""
    return payload_expansion_bound(archive.payload_size, archive.encrypted)


def payload_expansion_bound(stored_size, encrypted):
    ratio = DEFLATE_MAX_RATIO * (DEFLATE_MAX_RATIO if encrypted else 1)
    return stored_size * ratio + 64 * 1024


def validate_payload(archive, passphrase=None, gpg=None, **limits):
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

    def __init__(self, archive, passphrase, gpg, uid, gid, chunk_size=CHUNK_SIZE, end_mark=None):
        self.archive = archive
        self.passphrase = passphrase
        self.gpg = gpg
        self.uid = uid
        self.gid = gid
        self.chunk_size = chunk_size
        self.end_mark = end_mark
        self.error = None
        self.summary = None

    def __iter__(self):
        try:
            yield from self._chunks()
        except Exception as exc:
            self.error = exc
            raise

    def _chunks(self):
        validator = PayloadValidator()
        parts, held = [], 0
        with plain_payload(self.archive, self.passphrase, self.gpg) as stream:
            for member, reader in iter_members(stream, max_bytes=expansion_bound(self.archive), with_reader=True):
                path = validator.feed(member)
                parts.append(canonical_header(path, member, self.uid, self.gid))
                held += len(parts[-1])
                if member.kind == REGULAR:
                    for data in reader.data():
                        parts.append(data)
                        held += len(data)
                        if held >= self.chunk_size:
                            yield b''.join(parts)
                            parts, held = [], 0
                    parts.append(padding(member.size))
                if held >= self.chunk_size:
                    yield b''.join(parts)
                    parts, held = [], 0
            self.summary = validator.finish()
        if self.end_mark is not None:
            mark = Member(self.end_mark, REGULAR, size=0, mode=0o600)
            parts.append(canonical_header(self.end_mark, mark, self.uid, self.gid))
        parts.append(END_OF_ARCHIVE)
        yield b''.join(parts)

    def check(self):
        if self.error is not None:
            raise self.error
        if self.summary is None:
            raise Tx9Error('The payload was not read to its end while it was restored.', 'ARCHIVE_CORRUPT', CORRUPT_FIX)
        return self.summary


def digest_plaintext(src, encrypted, passphrase=None, gpg=None):
    """(sha256 hex, size) of a stored payload's gzip bytes, decrypting when encrypted.

    Backup's read-back: the stored payload must decrypt to the bytes whose
    digest was computed while writing them.
    """
    digest = HashingWriter(None)
    if encrypted:
        gpg = gpg or _new_gpg(passphrase)
        gpg.decrypt_stream(src, digest.write, passphrase)
    else:
        copy_stream(src, digest.write)
    return digest.hexdigest(), digest.size


def _new_gpg(passphrase):
    from ansible_collections.col_agents.tx9.plugins.module_utils._archive.gpg import Gpg, check_passphrase

    # A missing passphrase is the person's first problem, whether or not gpg is installed.
    check_passphrase(passphrase)
    return Gpg()
