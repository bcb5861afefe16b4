# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A backup's payload: the tar of a box's /data, streamed into a new .tx9 archive and read back.

Private to the col_agents.tx9 collection. GNU tar reads /data either in a
hardened helper container that writes into a named pipe (an engine on this
host) or in the agent container through docker exec's stream (any other
engine). Its bytes go through the member validator into gzip (and gpg),
straight into the archive's payload, written in place in a private work
directory; the archive is read back once, from its first byte, and then
published under a free name. backup.py calls this with the box quiesced
and its lock held.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

from ansible_collections.col_agents.tx9.plugins.module_utils._archive.envelope import digest_plaintext
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.metadata import (
    MetadataFields,
    new_metadata,
    rfc3339,
    utc_now,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.validator import PayloadSummary, validate_stream
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.writing import (
    InPlaceArchive,
    publish,
    publish_sealed,
    staging_path,
    write_archive,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._docker import docker_error, is_engine_error
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._exec import STDERR, exec_frames
from ansible_collections.col_agents.tx9.plugins.module_utils._io import (
    BoundedReader,
    ChunkReader,
    Crc32,
    HashingWriter,
    TeeReader,
    copy_stream,
    gzip_writer,
    read_ahead,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._names import LABEL_ROLE, box_labels, object_names
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.pipes import (
    PIPE_PATH,
    NamedPipe,
    PipeNotOpened,
    container_alive,
    engine_on_this_host,
    pipe_mount,
)

if TYPE_CHECKING:
    import datetime

    from ansible_collections.col_agents.tx9.plugins.module_utils._archive.gpg import Gpg

WORKDIR_PREFIX = '.tx9-backup-'
# How long the tar of /data may stay silent, and its helper container take to exit.
PIPE_TIMEOUT = 1800

# (sha256 hex, size) of a run of bytes.
Digest = tuple[str, int]
# The CRC-32 checks (hex, size) of the gzip bytes and of the bytes stored, taken while they were written.
Checks = tuple[Digest, Digest]


def tar_command(excludes: Sequence[str], output: str = '-') -> list[str]:
    """The argv that writes /data as an uncompressed tar to output, stdout by default (never a shell string)."""
    # No --sparse: GNU sparse members are not among the member types a .tx9 may hold.
    # The GNU format carries long names, big files and any modification time (to the
    # second) without the extended header pax gives every member for its sub-second
    # times, which would double what the validator parses.
    argv = ['tar', '--create', f'--file={output}', '--directory=/data', '--numeric-owner', '--format=gnu']
    argv.extend(f'--exclude={pattern}' for pattern in excludes)
    argv.append('.')
    return argv


def check_tar_exit(code: int | None, stderr: bytes) -> None:
    """GNU tar exits 1 when a file changed while it was read; the box is quiesced, so that only
    concerns files nothing depends on. Anything else is a failure."""
    if code not in (0, 1):
        detail = stderr.decode('utf-8', 'replace').strip()[-400:]
        raise Tx9Error(
            f'Reading /data out of the box failed (tar exited {code}): {detail}',
            'DOCKER_ERROR',
            'Check the box with hb doctor and the disk space of the host, then run again.',
        )


class TarSource(Protocol):
    """Where the tar of /data comes from: its chunks, then check() for tar's exit, and close() always."""

    def chunks(self) -> Iterator[bytes]:
        """The tar stream, chunk by chunk."""

    def check(self) -> None:
        """Raise when tar did not exit 0."""

    def close(self) -> None:
        """Stop the source and free what it holds; safe to call twice."""


def tar_of_data(client: Any, box: str, agent: dict[str, Any], excludes: Sequence[str], workdir: str) -> TarSource:
    """The tar of the box's /data as byte chunks: through a named pipe from a helper container when
    the engine runs on this host, else the stdout of tar run in the agent container."""
    if engine_on_this_host(client):
        try:
            return PipedTar(client, box, agent['Image'], excludes, workdir)
        except PipeRefused:
            pass
    return TarStream(client, agent['Id'], tar_command(excludes))


class PipeRefused(Exception):
    """The engine would not bind the pipe into a helper container (it does not see this host's files),
    or the container could not open it (a security policy of the host)."""


class PipedTar:
    """tar of the box's volume, mounted read-only in a helper container, written into a named pipe.

    The helper runs the agent's own image with nothing but the volume and
    the pipe: no network, a read-only root, no new privileges, and no
    capability but DAC_READ_SEARCH (root reads every file of the volume).
    It carries the box's labels with the role backup and is removed by close().
    """

    def __init__(
        self,
        client: Any,
        box: str,
        image: str,
        excludes: Sequence[str],
        workdir: str,
        argv: list[str] | None = None,
        mounts: Sequence[dict[str, Any]] = (),
    ) -> None:
        """argv (tar writing to PIPE_PATH) replaces the tar of the whole /data; mounts are bound beside the pipe."""
        self.api = client.api
        self.helper: str | None = None
        try:
            self.pipe = NamedPipe(workdir)
        except OSError as exc:
            raise PipeRefused(str(exc)) from exc
        labels = box_labels(box)
        labels[LABEL_ROLE] = 'backup'
        remove_helpers(self.api, labels)
        host_config = self.api.create_host_config(
            binds={object_names(box)['agent_volume']: {'bind': '/data', 'mode': 'ro'}},
            mounts=[pipe_mount(self.pipe), *mounts],
            network_mode='none',
            read_only=True,
            security_opt=['no-new-privileges'],
            cap_drop=['ALL'],
            cap_add=['DAC_READ_SEARCH'],
        )
        try:
            self.helper = self.api.create_container(
                image,
                name=f'tx9-{box}-backup-{secrets.token_hex(4)}',
                labels=labels,
                user='root',
                entrypoint=argv or tar_command(excludes, PIPE_PATH),
                host_config=host_config,
            )['Id']
            self.api.start(self.helper)
            self.pipe.open_for_reading(container_alive(self.api, self.helper), PIPE_TIMEOUT)
        except Exception as exc:  # noqa: BLE001 -- the helper is removed whatever failed; see below
            self.close()
            # A refusal by the engine, a pipe the helper never opened, or one that stayed silent: read
            # through the exec stream instead. Anything else is a fault of this code and is raised.
            if not (isinstance(exc, (OSError, PipeNotOpened, Tx9Error)) or is_engine_error(exc)):
                raise
            raise PipeRefused(str(exc)) from exc

    def chunks(self) -> Iterator[bytes]:
        return self.pipe.chunks()

    def check(self) -> None:
        try:
            code = self.api.wait(self.helper, timeout=PIPE_TIMEOUT).get('StatusCode')
            stderr = self.api.logs(self.helper, stdout=False, stderr=True) if code not in (0, 1) else b''
        except Exception as exc:
            if not is_engine_error(exc):
                raise
            raise docker_error("read the exit status of the backup's tar", exc) from exc
        check_tar_exit(code, stderr)

    def close(self) -> None:
        if self.helper is not None:
            try:
                self.api.remove_container(self.helper, force=True)
            except Exception as exc:
                # Best effort: a helper left behind carries the box's labels and the next backup removes it.
                if not is_engine_error(exc):
                    raise
            self.helper = None
        self.pipe.close()


def remove_helpers(api: Any, labels: dict[str, str]) -> None:
    """Remove the helper containers with exactly these labels that a killed or lost run left (the box lock is held).

    Running ones too: a run that lost its engine before the helper opened the pipe leaves it blocked in
    that open for ever, and under the box lock no other run of the box has a helper.
    """
    selector = {'label': [f'{key}={value}' for key, value in sorted(labels.items())]}
    try:
        for container in api.containers(all=True, filters=selector):
            api.remove_container(container['Id'], force=True)
    except Exception as exc:
        if not is_engine_error(exc):
            raise
        raise docker_error('remove a backup helper a killed run left', exc) from exc


class TarStream:
    """The stdout of `tar` run as root in the agent container, as byte chunks."""

    def __init__(self, client: Any, container_id: str, argv: list[str]) -> None:
        self.client = client
        self.exec_id = client.api.exec_create(container_id, argv, user='root', stdout=True, stderr=True)['Id']
        self.stderr: list[bytes] = []

    def chunks(self) -> Iterator[bytes]:
        for stream, data in exec_frames(self.client.api, self.exec_id):
            if stream == STDERR:
                self.stderr.append(data)
            else:
                yield data

    def check(self) -> None:
        check_tar_exit(self.client.api.exec_inspect(self.exec_id).get('ExitCode'), b''.join(self.stderr))

    def close(self) -> None:
        pass


class ArchiveWriter:
    """Writes one archive of a box's /data into a directory: in place, read back, then published."""

    def __init__(
        self, client: Any, box: str, excludes: list[str], encrypt: bool, password: str | None, gpg: Gpg | None
    ) -> None:
        self.client = client
        self.box = box
        self.excludes = excludes
        self.encrypt = encrypt
        self.password = password
        self.gpg = gpg

    def write(self, agent: dict[str, Any], dest: str) -> dict[str, Any]:
        """Write the archive in place in a private work directory, read it back, then publish it."""
        workdir = tempfile.mkdtemp(prefix=f'{WORKDIR_PREFIX}{os.getpid()}-', dir=dest)
        try:
            moment = utc_now()
            # A staging name until it is published: a killed run leaves nothing named *.tx9.
            staged = staging_path(workdir, self.box, moment)
            with InPlaceArchive(staged, moment.timestamp()) as archive:
                summary, stored, checks = self.write_payload(agent, archive, workdir)
                metadata = self.metadata(agent['Config'].get('Image'), stored, moment)
                in_place = archive.seal(metadata)
                whole = self.read_back(staged, archive, checks)
                if in_place:
                    archive.sync()
            if in_place:
                path: str = publish_sealed(staged, dest, self.box, moment)
            else:
                path, whole = self.copy_into_new_archive(dest, workdir, staged, archive, metadata, moment)
            return dict(
                path=path,
                sha256=whole[0],
                size=whole[1],
                members=summary.members,
                encrypted=self.encrypt,
                image=metadata['image'],
                payload_sha256=stored[0],
            )
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def metadata(self, image: str, stored: Digest, moment: datetime.datetime) -> MetadataFields:
        """metadata.json of the archive whose stored payload has the digest stored."""
        return new_metadata(self.box, image, self.encrypt, stored[0], stored[1], created_at=rfc3339(moment))

    def tar_source(self, agent: dict[str, Any], workdir: str) -> TarSource:
        """Where the payload's tar comes from: all of /data but the exclusions."""
        return tar_of_data(self.client, self.box, agent, self.excludes, workdir)

    def copy_into_new_archive(
        self,
        dest: str,
        workdir: str,
        staged: str,
        archive: InPlaceArchive,
        metadata: MetadataFields,
        moment: datetime.datetime,
    ) -> tuple[str, Digest]:
        """(path, (sha256, size)) of a new archive holding the payload written at staged (which did not fit)."""
        digest: dict[str, Digest] = {}

        def write(handle: BinaryIO) -> None:
            hashing = HashingWriter(handle)
            with open(staged, 'rb') as source:
                source.seek(archive.payload_offset)
                write_archive(hashing, metadata, BoundedReader(source, archive.payload_size), mtime=moment.timestamp())
            digest['whole'] = (hashing.hexdigest(), hashing.size)

        path: str = publish(dest, self.box, write, moment=moment, staging_dir=workdir)
        return path, digest['whole']

    def write_payload(
        self, agent: dict[str, Any], target: InPlaceArchive, workdir: str
    ) -> tuple[PayloadSummary, Digest, Checks]:
        """Stream tar -> validator -> gzip (-> gpg) into target, the archive's payload.

        Returns the validator's summary, the (sha256, size) of the bytes
        stored, and the CRC-32 checks of the gzip bytes and of the bytes
        stored, taken while writing them, for the read-back.
        """
        stream = self.tar_source(agent, workdir)
        stored_check = HashingWriter(target, Crc32)
        stored = HashingWriter(stored_check)
        try:
            # The container's stream is read while the chunks before are checked and compressed.
            with contextlib.closing(read_ahead(stream.chunks())) as chunks:
                if self.gpg is not None:
                    with self.gpg.encrypting(stored.write, self.password) as encrypted:
                        plain = HashingWriter(encrypted, Crc32)
                        summary = self.compress(chunks, plain)
                else:
                    plain = stored_check
                    summary = self.compress(chunks, stored)
            target.flush()
            stream.check()
        finally:
            stream.close()
        checks = ((plain.hexdigest(), plain.size), (stored_check.hexdigest(), stored_check.size))
        return summary, (stored.hexdigest(), stored.size), checks

    def compress(self, chunks: Iterator[bytes], plain: HashingWriter) -> PayloadSummary:
        """Validate the tar in chunks member by member while gzipping the same bytes into plain."""
        try:
            with gzip_writer(plain) as gz:
                summary: PayloadSummary = validate_stream(TeeReader(ChunkReader(chunks), gz.write), compressed=False)
                return summary
        except Tx9Error as err:
            if err.cause != 'ARCHIVE_UNSAFE':
                raise
            # Said for the box being saved, not for an archive someone received.
            raise Tx9Error(
                f'The box holds something a .tx9 archive cannot carry, so nothing was saved: {err.reason}',
                'ARCHIVE_UNSAFE',
                'Remove or replace that entry in the box (an absolute symlink can become a '
                'relative one), or leave it out with exclude (a pattern relative to /data, such as ./home/agent/x).',
            ) from err

    def read_back(self, staged: str, archive: InPlaceArchive, checks: Checks) -> Digest:
        """Read the written archive back once, from its first byte; (sha256, size) of the whole file.

        What was written before the payload must read back as written, the
        stored payload as the bytes stored, and it must decrypt to the
        bytes compressed (each compared by its CRC-32 and size: a check of
        what the disk gives back; the SHA-256 returned is of the bytes read).
        """
        plain, stored = checks
        whole = HashingWriter(None)
        stored_again = HashingWriter(None, Crc32)
        with open(staged, 'rb') as handle:
            prefix = handle.read(archive.payload_offset)
            whole.write(prefix)
            payload = TeeReader(BoundedReader(handle, archive.payload_size), whole.write, staged)
            if self.gpg is not None:
                plain_again: Digest = digest_plaintext(
                    TeeReader(payload, stored_again.write, staged), True, self.password, self.gpg, Crc32
                )
            else:
                # Not encrypted: the bytes stored are the bytes compressed, checked once.
                copy_stream(payload, stored_again.write)
                plain_again = (stored_again.hexdigest(), stored_again.size)
            copy_stream(handle, whole.write)
        if (
            plain_again != plain
            or (stored_again.hexdigest(), stored_again.size) != stored
            or (archive.prefix is not None and prefix != archive.prefix)
        ):
            raise Tx9Error(
                'The stored archive does not read back to the bytes that were written.',
                'ARCHIVE_CORRUPT',
                'Check the disk of the destination, then back up again.',
            )
        return whole.hexdigest(), whole.size
