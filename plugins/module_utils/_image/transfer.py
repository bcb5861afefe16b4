# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The box image as a file: build once, export it, load it on the other hosts.

Private to the col_agents.tx9 collection. An export is `docker save` gzipped
into a file, with its SHA-256 taken while it is written and recorded beside it
in `<file>.json`; a load checks the file's SHA-256 against the one it is given
before a single byte reaches `docker load`. Both ends are idempotent by image
ID and stream in bounded pieces, whatever the image's size. An export may
leave out the first layers of the image (omit_layers) when every host that
loads it already holds them (layers.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from typing import IO, Any

from ansible_collections.col_agents.tx9.plugins.module_utils._docker import docker_error, find_image, is_engine_error
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._image.layers import (
    copy_save_without,
    image_layers,
    layers_to_omit,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._io import (
    CHUNK_SIZE,
    FILE_MODE,
    GZIP_ERRORS,
    HashingWriter,
    gzip_reader,
    gzip_writer,
    write_atomic,
    write_failure,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._names import LABEL_ASSETS

RECORD_SUFFIX = '.json'
RECORD_FORMAT = 1
RECORD_KEYS = ('path', 'image', 'image_id', 'assets_hash', 'sha256', 'size', 'omitted_layers')
# docker save and docker load of a 2.5 GB image take minutes on a busy host; a
# read of the engine's stream may wait longer than the connection's usual timeout.
TRANSFER_TIMEOUT = 1800

# What reading a cut or damaged gzip stream of an image raises.
LOAD_ERRORS: tuple[type[Exception], ...] = (EOFError, *GZIP_ERRORS)


def image_facts(image: Any) -> dict[str, Any]:
    """What a play compares between hosts: the image ID and the assets it was built from."""
    return dict(image_id=image.id, assets_hash=(image.labels or {}).get(LABEL_ASSETS, ''))


def present_image(client: Any, tag: str) -> Any:
    """The image tagged tag, or IMAGE_MISSING."""
    image = find_image(client, tag)
    if image is None:
        raise Tx9Error(
            f"The image {tag} is not on this host's Docker engine.",
            'IMAGE_MISSING',
            'Build it here (source=build), or load it from an archive made on a host that has it '
            '(playbooks/build-image.yml does both).',
        )
    return image


def full_id(image_id: str) -> str:
    """An image ID as Docker reports it: sha256:<64 hex>."""
    return image_id if image_id.startswith('sha256:') else 'sha256:' + image_id


def file_sha256(handle: IO[bytes]) -> tuple[str, int]:
    """The SHA-256 and size of what handle reads from its position to its end."""
    digest = HashingWriter(None)
    while True:
        chunk = handle.read(CHUNK_SIZE)
        if not chunk:
            sha256: str = digest.hexdigest()
            size: int = digest.size
            return sha256, size
        digest.write(chunk)


@contextlib.contextmanager
def transfer_timeout(client: Any) -> Iterator[Any]:
    """The engine connection with room for a long save or load, restored afterwards."""
    api = client.api
    previous = api.timeout
    api.timeout = max(previous or 0, TRANSFER_TIMEOUT)
    try:
        yield api
    finally:
        api.timeout = previous


def read_record(path: str) -> dict[str, Any] | None:
    """The record an export left beside path, or None when there is none (or it is unreadable)."""
    try:
        with open(path + RECORD_SUFFIX) as handle:
            record = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get('format') != RECORD_FORMAT:
        return None
    return record


def current_export(path: str, image: Any, omit_layers: int = 0) -> dict[str, Any] | None:
    """The record of the archive at path when it holds image, leaving out omit_layers layers, and its
    bytes still match; else None.

    A file at path that no export of ours wrote is refused: tx9 never overwrites it.
    """
    if not os.path.lexists(path):
        return None
    record = read_record(path)
    if record is None or not os.path.isfile(path):
        raise Tx9Error(
            f'{path} exists and was not written by a tx9 image export '
            f'(no {os.path.basename(path) + RECORD_SUFFIX} beside it); tx9 never overwrites it.',
            'ARCHIVE_WRITE_FAILED',
            'Choose another export_path, or move that file away.',
        )
    if record.get('image_id') != image.id or record.get('omitted_layers', 0) != omit_layers:
        return None
    with open(path, 'rb') as handle:
        sha256, size = file_sha256(handle)
    if (sha256, size) != (record.get('sha256'), record.get('size')):
        return None
    return record


def export_image(
    client: Any, tag: str, path: str, check_mode: bool = False, omit_layers: int = 0
) -> tuple[bool, dict[str, Any]]:
    """Write image tag to path as a gzipped docker save, unless path already holds that image ID.

    omit_layers leaves the files of the image's first that many layers out (for engines that
    hold them already). Returns (changed, record); record carries path, image, image_id,
    assets_hash, sha256, size and omitted_layers (sha256 and size are empty in check mode when
    a write is due).
    """
    image = present_image(client, tag)
    layers = image_layers(image)
    if not 0 <= omit_layers <= len(layers):
        raise Tx9Error(
            f'omit_layers is {omit_layers:d}, but the image {tag} has {len(layers)} layers.',
            'INVALID_ARGUMENT',
            f'Give a number from 0 (the whole image) to {len(layers)}.',
        )
    path = os.path.abspath(os.path.expanduser(path))
    record = current_export(path, image, omit_layers)
    if record is not None:
        return False, public(dict(record, path=path))
    record = dict(
        image_facts(image), format=RECORD_FORMAT, image=tag, path=path, sha256='', size=0, omitted_layers=omit_layers
    )
    if check_mode:
        return True, public(record)
    work, sha256, size = write_saved_image(client, tag, path, layers_to_omit(layers, omit_layers))
    record.update(sha256=sha256, size=size)
    try:
        # The record first: an archive of ours is never found without one.
        write_atomic(path + RECORD_SUFFIX, json.dumps(record, sort_keys=True) + '\n')
        os.rename(work, path)
    except (OSError, Tx9Error) as exc:
        with contextlib.suppress(OSError):
            os.unlink(work)
        raise exc if isinstance(exc, Tx9Error) else write_failure(path, exc)
    return True, public(record)


def public(record: dict[str, Any]) -> dict[str, Any]:
    """What an export returns of its record."""
    return {key: record.get(key) for key in RECORD_KEYS}


def write_saved_image(client: Any, tag: str, path: str, omit: Iterable[str] = ()) -> tuple[str, str, int]:
    """docker save of tag without the layers in omit, gzipped into a new 0600 file beside path;
    returns (its path, sha256, size)."""
    directory = os.path.dirname(path)
    try:
        if not os.path.isdir(directory):
            os.makedirs(directory, 0o700)
        fd, work = tempfile.mkstemp(prefix=f'.{os.path.basename(path)}.', suffix='.partial', dir=directory)
    except OSError as exc:
        raise write_failure(path, exc)
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, 'wb') as handle:
            hashed = HashingWriter(handle)
            with transfer_timeout(client) as api:
                chunks = api.get_image(tag, chunk_size=CHUNK_SIZE)
                with gzip_writer(hashed) as compressed:
                    if omit:
                        copy_save_without(chunks, omit, compressed, spill_dir=directory)
                    else:
                        for chunk in chunks:
                            compressed.write(chunk)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(work)
        if is_engine_error(exc):
            raise docker_error(f'save the image {tag}', exc)
        if isinstance(exc, OSError):
            raise write_failure(path, exc)
        raise
    return work, hashed.hexdigest(), hashed.size


def load_archive(
    client: Any, tag: str, path: str | None, sha256: str | None, image_id: str, check_mode: bool = False
) -> tuple[bool, bool, Any]:
    """Make tag name image_id on this engine, loading path only when the engine lacks that image.

    The archive's SHA-256 must equal sha256 before anything is loaded.
    Returns (changed, loaded, image).
    """
    image_id = full_id(image_id)
    present = find_image(client, image_id)
    if present is not None:
        tagged = find_image(client, tag)
        if tagged is not None and tagged.id == present.id:
            return False, False, present
        if not check_mode:
            tag_image(client, present.id, tag)
        return True, False, present
    if check_mode:
        return True, True, None
    if not path or not sha256:
        raise Tx9Error(
            f'This engine has no image {image_id}, and loading it needs both archive_path and archive_sha256.',
            'INVALID_ARGUMENT',
            'Give the archive exported on a host that has the image, and the sha256 that export returned.',
        )
    path = os.path.abspath(os.path.expanduser(path))
    try:
        handle = open(path, 'rb')
    except OSError as exc:
        raise Tx9Error(
            f'The image archive {path} cannot be read: {exc.strerror}.',
            'INVALID_ARGUMENT',
            'Copy the archive to the host first, or correct archive_path.',
        )
    with handle:
        verify_sha256(handle, path, sha256)
        handle.seek(0)
        docker_load(client, handle, path)
    loaded = find_image(client, image_id)
    if loaded is None:
        raise Tx9Error(
            f'The image archive {path} was loaded but holds no image {image_id}.',
            'IMAGE_ARCHIVE_CORRUPT',
            'Give the image_id and archive_sha256 of the same export (tx9_image with export_path returns both).',
        )
    tag_image(client, loaded.id, tag)
    return True, True, loaded


def verify_sha256(handle: IO[bytes], path: str, expected: str) -> None:
    """IMAGE_ARCHIVE_CORRUPT unless the file's SHA-256 is expected."""
    actual, size = file_sha256(handle)
    if actual != expected.strip().lower():
        raise Tx9Error(
            f'The image archive {path} ({size:d} bytes) has SHA-256 {actual}, not {expected} as exported; '
            'nothing was loaded.',
            'IMAGE_ARCHIVE_CORRUPT',
            'Copy the archive from the host that exported it again (or export it again), then run again.',
        )


def docker_load(client: Any, handle: IO[bytes], path: str) -> None:
    """Stream the gzipped tar in handle into docker load, in bounded pieces."""
    reader = gzip_reader(handle)

    def pieces() -> Iterator[bytes]:
        while True:
            data = reader.read(CHUNK_SIZE)
            if not data:
                return
            yield data

    try:
        with transfer_timeout(client) as api:
            for message in api.load_image(pieces()):
                if isinstance(message, dict) and message.get('error'):
                    raise refused_load(path, message['error'])
    except LOAD_ERRORS as exc:
        raise Tx9Error(
            f'The image archive {path} is not a whole gzip stream: {exc}.',
            'IMAGE_ARCHIVE_CORRUPT',
            'Export the image again on the host that has it, and copy it again.',
        )
    except Tx9Error:
        raise
    except Exception as exc:
        if is_engine_error(exc) and 'layer.tar' in str(exc):
            raise refused_load(path, str(exc))
        if is_engine_error(exc):
            raise docker_error(f'load the image archive {path}', exc)
        if isinstance(exc, OSError):
            raise Tx9Error(
                f'The image archive {path} cannot be read: {exc}.',
                'INVALID_ARGUMENT',
                'Check the disk holding it, copy it again, and run again.',
            )
        raise


def refused_load(path: str, reason: str) -> Tx9Error:
    """IMAGE_ARCHIVE_CORRUPT for an archive docker load refused, naming a layer it left out."""
    fix = 'Export the image again on the host that has it, and copy it again.'
    if 'layer.tar' in reason:
        fix = (
            'The archive leaves out base layers this engine does not hold: export it whole (omit_layers: 0), '
            'or with the present_layers this engine reports, and copy it again.'
        )
    return Tx9Error(f'Docker refused the image archive {path}: {reason.rstrip(".")}.', 'IMAGE_ARCHIVE_CORRUPT', fix)


def tag_image(client: Any, image_id: str, tag: str) -> None:
    repository, _sep, version = tag.rpartition(':')
    if not repository or '/' in version:
        repository, version = tag, 'latest'
    try:
        client.api.tag(image_id, repository, version)
    except Exception as exc:
        if not is_engine_error(exc):
            raise
        raise docker_error(f'tag {image_id} as {tag}', exc)
