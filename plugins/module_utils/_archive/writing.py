# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Writing a .tx9 archive and publishing it. Private to the col_agents.tx9 collection.

The container is written member by member around a payload that is only ever
copied in chunks. Publishing never overwrites: the archive is staged
privately (O_EXCL, 0600), synced, then hard-linked to a free name.
"""

import errno
import os
import secrets
import tarfile

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.container import (
    MEMBER_MODE, METADATA_MEMBER, archive_file_name, metadata_bytes, utc_now)
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.streams import (
    BoundedReader, HashingWriter, copy_stream, write_failure)
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.tarstream import END_OF_ARCHIVE, padding
from ansible_collections.col_agents.tx9.plugins.module_utils._box.names import validate_box_name

# Two publishes in one second get -2, -3, ...; this many means something else is wrong.
MAX_NAME_ATTEMPTS = 1000


def member_header(name, size, mtime):
    """The tar header of a regular 0600 member owned by root (pax when the size needs it)."""
    info = tarfile.TarInfo(name)
    info.size = size
    info.mode = MEMBER_MODE
    info.mtime = int(mtime)
    info.type = tarfile.REGTYPE
    info.uid = info.gid = 0
    info.uname = info.gname = ''
    return info.tobuf(tarfile.PAX_FORMAT, 'utf-8', 'surrogateescape')


def write_archive(out, metadata, payload, mtime=None):
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
        raise Tx9Error('The payload changed while it was written into the archive.', 'ARCHIVE_WRITE_FAILED',
                       'Run the backup again; nothing else may write to its temporary files.')
    out.write(padding(size))
    # The end of a tar: two zero blocks.
    out.write(END_OF_ARCHIVE)


def publish(directory, box, write, moment=None, staging_dir=None):
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
    staging = os.path.join(staging_dir or directory, '.%s.staging-%s' % (archive_file_name(box, moment), secrets.token_hex(8)))
    handle = _create_staging(staging)
    try:
        _write_staging(handle, staging, write)
        return _link_free_name(staging, directory, box, moment)
    finally:
        _remove_quietly(staging)


def publish_at(path, write):
    """Write a new file at exactly path through write(fileobj), mode 0600; never overwrites (DEST_EXISTS)."""
    directory = os.path.dirname(path) or '.'
    staging = os.path.join(directory, '.%s.staging-%s' % (os.path.basename(path), secrets.token_hex(8)))
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


def dest_exists(path):
    return Tx9Error('%s already exists; tx9 never overwrites it.' % path, 'DEST_EXISTS',
                    'Choose another path, or move %s away first.' % path)


def _create_staging(staging):
    try:
        fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, 'O_CLOEXEC', 0), MEMBER_MODE)
    except OSError as exc:
        raise write_failure(staging, exc)
    return os.fdopen(fd, 'wb')


def _write_staging(handle, staging, write):
    try:
        with handle:
            os.fchmod(handle.fileno(), MEMBER_MODE)
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        raise write_failure(staging, exc)


def _link_free_name(staging, directory, box, moment):
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
    raise Tx9Error('%s already holds %d archives of %s from the same second.' % (directory, MAX_NAME_ATTEMPTS, box),
                   'ARCHIVE_WRITE_FAILED', 'Move old archives of %s out of %s.' % (box, directory))


def _sync_directory(directory):
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


def _remove_quietly(path):
    try:
        os.unlink(path)
    except OSError:
        pass
