# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""metadata.json of a .tx9 archive: written and parsed. Private to the col_agents.tx9 collection.

metadata.json is the archive's first member: one flat JSON object, in this
collection's keys or in those of the tx9 Go CLI (format version 1 both).
Parsing is strict: a size and a nesting bound before the JSON parser sees
it, no duplicate key, every key of its kind present with its JSON type.
"""

from __future__ import annotations

import datetime
import json
import re
from typing import Any, NoReturn, TypedDict

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._version import COLLECTION_VERSION

FORMAT = 'tx9-archive'
FORMAT_VERSION = 1
METADATA_MEMBER = 'metadata.json'
PLAIN_PAYLOAD = 'data.tar.gz'
ENCRYPTED_PAYLOAD = 'data.tar.gz.gpg'
PAYLOAD_MEMBERS = (PLAIN_PAYLOAD, ENCRYPTED_PAYLOAD)
# The Go CLI's bound; metadata is a few hundred bytes.
MAX_METADATA_SIZE = 64 * 1024
# Metadata is one flat object; deeper nesting is refused before the JSON parser sees it.
MAX_METADATA_DEPTH = 32

# (key, type) of the metadata this collection writes, in the order it writes them.
METADATA_KEYS: tuple[tuple[str, type], ...] = (
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
CLI_METADATA_KEYS: tuple[tuple[str, type], ...] = (
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


class MetadataFields(TypedDict):
    """metadata.json as this collection writes it (METADATA_KEYS)."""

    format: str
    format_version: int
    box: str
    created_at: str
    tx9_version: str
    image: str
    encrypted: bool
    payload: str
    payload_sha256: str
    payload_size: int


def invalid(path: str, problem: str, fix: str = INVALID_FIX) -> Tx9Error:
    """The ARCHIVE_INVALID refusal of the file at path: it breaks the format."""
    return Tx9Error(f'{path} is not a valid .tx9 archive: {problem}.', 'ARCHIVE_INVALID', fix)


def payload_member(encrypted: bool) -> str:
    return ENCRYPTED_PAYLOAD if encrypted else PLAIN_PAYLOAD


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0)


def rfc3339(moment: datetime.datetime) -> str:
    """2026-11-30T02:47:14Z for an aware (or naive UTC) datetime."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(datetime.UTC)
    return moment.strftime('%Y-%m-%dT%H:%M:%SZ')


def new_metadata(
    box: str,
    image: str,
    encrypted: bool,
    payload_sha256: str,
    payload_size: int,
    created_at: str | None = None,
    tx9_version: str = COLLECTION_VERSION,
) -> MetadataFields:
    """The metadata.json object of a new archive."""
    return MetadataFields(
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


def metadata_bytes(metadata: MetadataFields) -> bytes:
    """metadata.json as written: indented UTF-8 JSON, so a person can read it."""
    return (json.dumps(metadata, indent=2, ensure_ascii=False) + '\n').encode('utf-8')


class Metadata:
    """What a reader learned from metadata.json, in this collection's terms.

    An archive of the tx9 Go CLI has no image, tx9_version, payload,
    payload_sha256 or payload_size (they are None) but cli_version and
    image_version instead; `original` is True for it.
    """

    def __init__(self, raw: dict[str, Any], original: bool) -> None:
        self.raw = raw
        self.original = original
        self.format_version: int = raw['format_version']
        self.encrypted: bool = raw['encrypted']
        self.created_at: str = raw['created_at']
        self.box: str = raw['box_name'] if original else raw['box']
        self.image: str | None = None if original else raw['image']
        self.tx9_version: str | None = None if original else raw['tx9_version']
        self.payload: str | None = None if original else raw['payload']
        self.payload_sha256: str | None = None if original else raw['payload_sha256']
        self.payload_size: int | None = None if original else raw['payload_size']
        self.cli_version: str | None = raw.get('cli_version') if original else None
        self.image_version: str | None = raw.get('image_version') if original else None

    def as_dict(self) -> dict[str, Any]:
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


def _refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f'the key {key!r} appears twice')
        result[key] = value
    return result


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(f'{name} is not JSON')


def _has_type(value: object, kind: type) -> bool:
    # bool is an int in Python, but not in JSON.
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def json_depth(raw: bytes) -> int:
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


def parse_metadata(raw: bytes, path: str = 'The archive', expected_format: str = FORMAT) -> Metadata:
    """Metadata from the bytes of metadata.json; ARCHIVE_INVALID when they break the format.

    expected_format is the format the caller reads (a move's change set is another, see changeset.py);
    an archive of the Go CLI has no format and is read only as a .tx9.
    """
    if len(raw) > MAX_METADATA_SIZE:
        raise invalid(path, f'metadata.json is larger than {MAX_METADATA_SIZE} bytes')
    if json_depth(raw) > MAX_METADATA_DEPTH:
        raise invalid(path, f'metadata.json nests arrays or objects more than {MAX_METADATA_DEPTH} deep')
    try:
        data = json.loads(
            raw.decode('utf-8'), object_pairs_hook=_refuse_duplicate_keys, parse_constant=_refuse_constant
        )
    except ValueError as exc:
        raise invalid(path, f'metadata.json is not UTF-8 JSON ({exc})') from exc
    if not isinstance(data, dict):
        raise invalid(path, 'metadata.json is not a JSON object')
    original = expected_format == FORMAT and 'format' not in data and any(key in data for key in CLI_ONLY_KEYS)
    for key, kind in CLI_METADATA_KEYS if original else METADATA_KEYS:
        if key not in data:
            raise invalid(path, f'metadata.json has no "{key}"')
        if not _has_type(data[key], kind):
            raise invalid(path, f'the metadata key "{key}" is not a {JSON_TYPE_NAMES[kind]}')
    if not original and data['format'] != expected_format:
        raise invalid(path, f'its format is {data["format"]!r}, not {expected_format!r}')
    _check_format_version(path, data['format_version'])
    if not original:
        _check_payload_keys(path, data)
    return Metadata(data, original)


def _check_format_version(path: str, version: int) -> None:
    if version > FORMAT_VERSION:
        raise invalid(
            path,
            f'it has format version {version}, newer than the {FORMAT_VERSION} this collection reads',
            'Upgrade the col_agents.tx9 collection, then import again.',
        )
    if version < FORMAT_VERSION:
        raise invalid(path, f'it has format version {version}, which does not exist')


def _check_payload_keys(path: str, data: dict[str, Any]) -> None:
    if not SHA256_HEX.match(data['payload_sha256']):
        raise invalid(path, 'payload_sha256 is not 64 lowercase hex digits')
    if data['payload_size'] < 0:
        raise invalid(path, 'payload_size is negative')
