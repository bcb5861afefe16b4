# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tx9_logs export: both volumes' durable logs as one portable tar.gz, mode 0600, never overwriting.

Private to the col_agents.tx9 collection. Each container's /data/logs is
copied out through Docker's archive endpoint (which works on a stopped
container too), read member by member with the collection's one tar reader,
and only regular files named like a tx9 log are kept. Each is spooled to a
private temporary file with the box token replaced (across chunk edges), then
written with canonical headers under tx9-<box>-logs/<volume>/, followed by a
manifest.json that lists every file with its size and SHA-256 and what was
left out. Readable with `tar -xzf` alone.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator
from typing import IO, Any

from ansible_collections.col_agents.tx9.plugins.module_utils._archive.metadata import rfc3339, utc_now
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.tarheader import REGULAR, Member
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.tarstream import TarReader
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.tarwriter import (
    END_OF_ARCHIVE,
    canonical_header,
    padding,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.writing import dest_exists, publish_at
from ansible_collections.col_agents.tx9.plugins.module_utils._box.objects import ROLES, BoxObjects
from ansible_collections.col_agents.tx9.plugins.module_utils._docker import docker_error, is_engine_error, is_not_found
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._io import ChunkReader, refuse_non_directory
from ansible_collections.col_agents.tx9.plugins.module_utils._version import COLLECTION_VERSION

SCHEMA = 'tx9.logbundle.v1'
LOG_MEMBER = re.compile(r'^logs/([a-z0-9][a-z0-9_.-]{0,79}\.jsonl(\.[0-9]{1,3})?)\Z')
# Rotation keeps a log under 20 MiB a file by default; a file past this is left out and listed.
MAX_MEMBER_BYTES = 256 * 1024 * 1024
# Where any member of Docker's copy of one log directory may end.
MAX_VOLUME_BYTES = 8 * 1024 * 1024 * 1024
REDACTED = b'[REDACTED]'
COPY_CHUNK = 1024 * 1024


def scrub_chunks(chunks: Iterable[bytes], secret: str | None) -> Iterator[bytes]:
    """The bytes of chunks with every occurrence of secret replaced, also where one spans two chunks."""
    if not secret:
        yield from chunks
        return
    needle = secret.encode('utf-8')
    keep = len(needle) - 1
    carry = b''
    for chunk in chunks:
        data = (carry + chunk).replace(needle, REDACTED)
        cut = max(len(data) - keep, 0)
        if cut:
            yield data[:cut]
        carry = data[cut:]
    if carry:
        yield carry


class LogBundle:
    """Writes the bundle of one box's logs into a file object."""

    def __init__(self, client: Any, objects: BoxObjects, secret: str | None, spool_dir: str) -> None:
        self.client = client
        self.objects = objects
        self.secret = secret
        self.spool_dir = spool_dir
        self.root = f'tx9-{objects.box}-logs'
        self.files: list[dict[str, Any]] = []
        self.left_out: list[dict[str, Any]] = []

    def write(self, handle: IO[bytes]) -> None:
        now = int(time.time())
        out = gzip.GzipFile(filename='', fileobj=handle, mode='wb', mtime=now)
        for role in ROLES:
            for name, spool, size, digest, mtime in self.volume_logs(role):
                self.add(out, f'{role}/{name}', size, mtime, spool)
                self.files.append(dict(volume=role, name=name, size=size, sha256=digest))
        manifest = json.dumps(self.manifest(), indent=1, sort_keys=True).encode('utf-8') + b'\n'
        self.add(out, 'manifest.json', len(manifest), now, manifest)
        out.write(END_OF_ARCHIVE)
        out.close()

    def add(self, out: gzip.GzipFile, name: str, size: int, mtime: int, content: bytes | IO[bytes]) -> None:
        out.write(canonical_header(f'{self.root}/{name}', Member(name, REGULAR, size, 0o600, mtime), 0, 0))
        if isinstance(content, bytes):
            out.write(content)
        else:
            shutil.copyfileobj(content, out, COPY_CHUNK)
        out.write(padding(size))

    def manifest(self) -> dict[str, Any]:
        return dict(
            schema=SCHEMA,
            box=self.objects.box,
            created_at=rfc3339(utc_now()),
            tx9_version=COLLECTION_VERSION,
            files=self.files,
            left_out=self.left_out,
        )

    def volume_logs(self, role: str) -> Iterator[tuple[str, IO[bytes], int, str, int]]:
        """(name, spooled scrubbed data, size, sha256, mtime) of each log file of role's volume."""
        attrs = self.objects.containers[role]
        if attrs is None:
            self.left_out.append(dict(volume=role, name=None, reason=f'the {role} container is missing'))
            return
        try:
            stream, _stat = self.client.api.get_archive(attrs['Id'], '/data/logs')
        except Exception as exc:
            if not is_engine_error(exc):
                raise
            if is_not_found(exc):
                self.left_out.append(dict(volume=role, name=None, reason='the volume has no logs directory'))
                return
            raise docker_error(f'copy /data/logs out of {self.objects.names[role]}', exc)
        reader = TarReader(ChunkReader(stream), MAX_VOLUME_BYTES, foreign=True)
        try:
            for member in reader.members():
                found = self.keep(role, member)
                if found:
                    with tempfile.TemporaryFile(dir=self.spool_dir) as spool:
                        size, digest = self.spool(reader, spool)
                        yield found, spool, size, digest, member.mtime
        except Tx9Error as err:
            raise Tx9Error(
                f"Docker's copy of /data/logs of {self.objects.names[role]} could not be read: {err.reason}",
                'DOCKER_ERROR',
                'Look at the files in /data/logs of that container, then run again.',
            )

    def keep(self, role: str, member: Member) -> str | None:
        """The log file name of member when it goes into the bundle, else None (listed when it is a file)."""
        if member.kind != REGULAR:
            return None
        match = LOG_MEMBER.match(member.name)
        if not match or member.size > MAX_MEMBER_BYTES:
            reason = 'not a tx9 log file name' if not match else f'larger than {MAX_MEMBER_BYTES:d} bytes'
            self.left_out.append(dict(volume=role, name=member.name[:200], reason=reason))
            return None
        return match.group(1)

    def spool(self, reader: TarReader, spool: IO[bytes]) -> tuple[int, str]:
        digest = hashlib.sha256()
        size = 0
        for piece in scrub_chunks(reader.data(), self.secret):
            spool.write(piece)
            digest.update(piece)
            size += len(piece)
        spool.seek(0)
        return size, digest.hexdigest()


def export_logs(
    client: Any, objects: BoxObjects, secret: str | None, path: str, check_mode: bool = False
) -> dict[str, Any]:
    """Write the bundle to path (never overwriting); the tx9_logs result."""
    path = os.path.abspath(os.path.expanduser(path))
    if os.path.lexists(path):
        raise dest_exists(path)
    refuse_non_directory(
        os.path.dirname(path), 'the export directory', 'export_path', 'Give export_path a path in a directory'
    )
    if check_mode:
        return dict(changed=True, export=dict(path=path, size=None, files=None, left_out=[]))
    bundle = LogBundle(client, objects, secret, os.path.dirname(path))
    publish_at(path, bundle.write)
    return dict(
        changed=True,
        export=dict(path=path, size=os.stat(path).st_size, files=len(bundle.files), left_out=bundle.left_out),
    )
