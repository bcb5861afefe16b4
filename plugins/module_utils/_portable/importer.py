# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Importing a .tx9 archive as a new box.

Private to the col_agents.tx9 collection. Everything is validated (container,
metadata, checksum, decryption, every payload member) before any Docker
object is created; then the agent volume is filled through a throwaway
container (staged, then promoted), and the box is created with a fresh
token. A failure at any step removes everything the import created.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from ansible_collections.col_agents.tx9.plugins.module_utils._archive.envelope import (
    Archive,
    CanonicalStream,
    read_archive,
    validate_payload,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.metadata import SHA256_HEX
from ansible_collections.col_agents.tx9.plugins.module_utils._box import superseded
from ansible_collections.col_agents.tx9.plugins.module_utils._box.objects import BoxObjects
from ansible_collections.col_agents.tx9.plugins.module_utils._box.reconcile import Reconciler, require_image
from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
from ansible_collections.col_agents.tx9.plugins.module_utils._box.writer import remove_labelled
from ansible_collections.col_agents.tx9.plugins.module_utils._docker import (
    ENGINE_ERRORS,
    AttachedStdin,
    connection_from_params,
    docker_error,
    is_engine_error,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._io import read_ahead
from ansible_collections.col_agents.tx9.plugins.module_utils._lock import box_lock
from ansible_collections.col_agents.tx9.plugins.module_utils._names import (
    LABEL_ROLE,
    ROLE_AGENT,
    box_labels,
    object_names,
    validate_box_name,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.import_beside import (
    remove_import_stage,
    remove_restore_containers,
    restore_beside,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.import_faults import (
    discard_through_engine_loss,
    free_volume_space,
    no_space,
    says_full,
    volume_full,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.import_marker import ImportMarker
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.pipes import (
    PIPE_PATH,
    NamedPipe,
    PipeNotOpened,
    container_alive,
    engine_on_this_host,
    pipe_mount,
    remove_stale_pipes,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._version import DEFAULT_IMAGE

if TYPE_CHECKING:
    from ansible_collections.col_agents.tx9.plugins.module_utils._archive.gpg import Gpg

STAGE = '/data/.tx9-restore-stage'
RESTORE_TIMEOUT = 1800
# The image's agent account (assets/provision/provision.sh): every restored member is its.
AGENT_UID = AGENT_GID = 1001
# What hb restore-promote needs as root: chown the tree, and move and remove what the agent owns.
RESTORE_CAPABILITIES = ['CHOWN', 'DAC_OVERRIDE', 'FOWNER']
ACTIONS = ['validate the archive', 'create the agent volume', 'restore /data']
# GNU tar's reading of our canonical stream: owners and permission bits as written (no umask;
# the writer keeps only permission bits and the agent's ids), nothing beyond them. From a named
# pipe a read may return part of a record, so tar rereads until a record is whole (as for stdin).
TAR_EXTRACT = (
    'tar --extract --file=- --read-full-records --directory="$1" --numeric-owner --same-owner --same-permissions '
    '--no-xattrs --no-acls --no-selinux'
)
# The restore container's entrypoint, from its read-only root: $1 is STAGE, $2 the stream's end mark,
# $3 where the stream comes from (- for its standard input, or the pipe bound into it, which becomes
# its standard input before anything is made: a pipe it cannot open ends the script first).
# A stream cut short (our process killed at a member boundary) has no end mark: nothing is promoted.
RESTORE_SCRIPT = (
    'set -eu\n'
    '[ "$3" = - ] || exec <"$3"\n'
    'mkdir -m 0700 -- "$1"\n' + TAR_EXTRACT + '\n'
    '[ -f "$1/$2" ] || { echo "the restore stream ended before its end mark; nothing was promoted" >&2; exit 3; }\n'
    'rm -f -- "$1/$2"\n'
    'exec /opt/tx9/bin/hb restore-promote "$1"\n'
)


def archive_gpg(archive: Archive, password: str | None, gpg_factory: Callable[[], Gpg] | None = None) -> Gpg | None:
    """The gpg that decrypts archive (None when it is not encrypted); PASSWORD_REQUIRED without a passphrase."""
    if not archive.encrypted:
        return None
    if not password:
        raise Tx9Error(
            f'{archive.path} is encrypted and no passphrase was given.',
            'PASSWORD_REQUIRED',
            "Set password (or TX9_PASSWORD on the target host) to the backup's passphrase.",
        )
    from ansible_collections.col_agents.tx9.plugins.module_utils._archive.gpg import Gpg
    from ansible_collections.col_agents.tx9.plugins.module_utils._archive.gpgsupport import check_passphrase

    check_passphrase(password)
    return (gpg_factory or Gpg)()


def verify_archive(
    path: str, password: str | None = None, gpg_factory: Callable[[], Gpg] | None = None
) -> dict[str, Any]:
    """Read the archive at path as an import does, creating nothing: container, metadata, checksum,
    decryption and every payload member. Returns what was proved; raises what an import would."""
    archive = read_archive(path)
    summary = validate_payload(archive, password, archive_gpg(archive, password, gpg_factory))
    return dict(
        path=path,
        box=archive.metadata.box,
        created_at=archive.metadata.created_at,
        payload_sha256=archive.payload_sha256,
        members=summary.members,
    )


def expected_sha256(value: str | None) -> str | None:
    """The archive_sha256 option, checked: None, or 64 hex digits in lower case."""
    if value is None:
        return None
    digest = value.strip().lower()
    if not SHA256_HEX.match(digest):
        raise Tx9Error(
            f'archive_sha256={value!r} is not a SHA-256: 64 hex digits.',
            'INVALID_ARGUMENT',
            'Give the SHA-256 of the whole .tx9 file (tx9_backup returns it as sha256), or leave it out.',
        )
    return digest


class RestoreStream(Protocol):
    """What a restore container reads (CanonicalStream, or a change set's ChangeStream): chunks, then check()."""

    error: Exception | None

    def __iter__(self) -> Iterator[bytes]:
        """The stream's chunks."""

    def check(self) -> object:
        """Raise what went wrong while the stream was read."""


class Import:
    """One import of one archive as one new box."""

    def __init__(
        self,
        client: Any,
        home: StateHome,
        path: str,
        params: dict[str, Any],
        password: str | None = None,
        gpg_factory: Callable[[], Gpg] | None = None,
    ) -> None:
        self.client = client
        self.home = home
        self.path = path
        self.params = params
        self.password = password
        self.gpg_factory = gpg_factory
        # The bytes the payload takes once extracted, when validated (what a volume that fills was short of).
        self.needed: int | None = None
        # The volume the payload is extracted into instead of the agent volume (an import stage), and
        # whether the superseded copy this import replaces is still as it was.
        self.staging: str | None = None
        self.kept_copy = False

    def gpg(self, archive: Archive) -> Gpg | None:
        return archive_gpg(archive, self.password, self.gpg_factory)

    def run(self, check_mode: bool = False) -> dict[str, Any]:
        archive = read_archive(self.path, expected_sha256(self.params.get('archive_sha256')))
        box = validate_box_name(self.params.get('name') or archive.metadata.box)
        gpg = self.gpg(archive)
        params = dict(self.params, name=box, state='present', recreate=False)
        # The gate probes Executor where the engine is: docker_host, else DOCKER_HOST, as the client connects.
        docker_host = connection_from_params(self.params)['docker_host']
        reconciler = Reconciler(self.client, self.home, params, check_mode=check_mode, docker_host=docker_host)
        reconciler.validate()
        marker = ImportMarker(self.home, box)
        # A refused or failed import leaves no lock file of a box that does not exist; check mode creates nothing.
        with box_lock(self.client, self.home, box, discard_after=check_mode):
            unfinished = marker.exists()
            replacing = None if unfinished else self.refuse_taken(box)
            image_ref = params.get('image') or DEFAULT_IMAGE
            require_image(self.client, image_ref)
            free, where = free_volume_space(self.client)
            summary = validate_payload(archive, self.password, gpg, max_disk=free, on_disk_exceeded=no_space(where))
            self.needed = summary.disk
            actions = ([f'remove what an unfinished import of {box} left'] if unfinished else []) + ACTIONS
            if replacing:
                actions.insert(1, f'remove the copy of {box} here, {superseded.describe(replacing)}')
            info = dict(archive=archive.as_dict(), members=summary.members, special_modes_dropped=summary.special_modes)
            if check_mode:
                return dict(
                    changed=True,
                    box=dict(name=box, state='running', quiesced=True, gateway_disabled=True),
                    actions=actions + ['create the box with a fresh token'],
                    **info,
                )
            # A superseded copy is replaced once the payload is whole beside it, where the engine's volumes are here.
            self.kept_copy = bool(replacing) and where is not None and engine_on_this_host(self.client)
            if unfinished or (replacing and not self.kept_copy):
                # Only now, the whole archive validated: what an unfinished import left, or the superseded copy.
                self.discard(box)
            result = self.create(box, image_ref, archive, gpg, reconciler, marker)
        result['actions'] = actions + result['actions']
        result['box'].update(quiesced=True, gateway_disabled=True)
        result.update(changed=True, **info)
        result.pop('diff', None)
        return result

    def create(
        self,
        box: str,
        image_ref: str,
        archive: Archive,
        gpg: Gpg | None,
        reconciler: Reconciler,
        marker: ImportMarker,
    ) -> dict[str, Any]:
        """The box from the archive; whatever fails, what this import made is removed."""
        marker.write(archive)
        try:
            if self.kept_copy:
                restore_beside(self, box, image_ref, archive, gpg)
            else:
                self.create_volume(box)
                self.restore(box, image_ref, archive, gpg)
            result = reconciler.run_locked()
        except BaseException:
            # An engine that died meanwhile is waited for: what was made is removed once it answers again.
            discard_through_engine_loss(self.client, lambda: self.undo(box))
            marker.remove()
            raise
        marker.remove()
        return result

    def discard(self, box: str) -> None:
        """Remove every object labelled for box, its import stage and its state file: what this import (or a killed
        one) made."""
        self.discard_copy(box)
        remove_import_stage(self.client, box)

    def discard_copy(self, box: str) -> None:
        """Remove every object labelled for box and its state file."""
        remove_labelled(self.client, box)
        self.home.delete_box(box)

    def undo(self, box: str) -> None:
        """Remove what this failed import made: its stage and restore container only, while the copy it replaces
        is still as it was."""
        if not self.kept_copy:
            return self.discard(box)
        remove_restore_containers(self.client, box)
        remove_import_stage(self.client, box)

    def refuse_taken(self, box: str) -> superseded.Mark | None:
        """NAME_EXISTS when box exists here, unless it is a superseded copy replace_superseded replaces (its mark)."""
        objects = BoxObjects(self.client, box)
        persisted = self.home.read_box(box)
        if not (objects.exists() or persisted):
            return None
        mark = superseded.read(persisted, objects.containers)
        if mark and self.params.get('replace_superseded'):
            objects.check_ownership()
            return mark
        left_behind = f' It is a copy a move left behind, {superseded.describe(mark)}.' if mark else ''
        raise Tx9Error(
            f'A box named {box} already exists on this host; import never replaces a box.{left_behind}',
            'NAME_EXISTS',
            f'Import under another name (name=...), or delete {box} first'
            + (' (or set replace_superseded: true to replace that copy).' if mark else '.'),
        )

    def create_volume(self, box: str) -> None:
        name = object_names(box)['agent_volume']
        try:
            self.client.api.create_volume(name=name, driver='local', labels=box_labels(box, ROLE_AGENT))
        except ENGINE_ERRORS as exc:
            raise docker_error(f'create volume {name}', exc)

    def restore(self, box: str, image_ref: str, archive: Archive, gpg: Gpg | None) -> None:
        """Extract the canonical payload into a staging directory in the volume, then promote it.

        Both happen in a throwaway container. The stream goes through a named
        pipe bound into the container when the engine runs on this host and
        the container can open it, else through its standard input.
        """
        pipe = self.pipe()
        if pipe is not None:
            try:
                with pipe:
                    return self.restore_through(box, image_ref, archive, gpg, pipe)
            except PipeNotOpened:
                pass
        return self.restore_through(box, image_ref, archive, gpg, None)

    def pipe(self) -> NamedPipe | None:
        """A named pipe for the restore stream beside the import's marker, or None when the engine cannot bind one.

        The pipes of killed imports (their process is gone) are removed first.
        """
        if not engine_on_this_host(self.client):
            return None
        parent = os.path.join(self.home.path, 'imports')
        remove_stale_pipes(parent)
        try:
            return NamedPipe(parent)
        except OSError:
            return None

    def restore_through(
        self, box: str, image_ref: str, archive: Archive, gpg: Gpg | None, pipe: NamedPipe | None
    ) -> None:
        """One restore container, fed through pipe (None: its standard input); removed whatever happens.

        PipeNotOpened when the engine refuses to bind the pipe or the container cannot open it
        (it then ends before it makes anything).
        """
        api = self.client.api
        end_mark = f'.tx9-stream-end-{secrets.token_hex(16)}'
        try:
            helper = create_restore_container(
                api, box, image_ref, end_mark, pipe, volume=self.volume(box), script=self.script
            )
        except Tx9Error as err:
            if pipe is not None:
                raise PipeNotOpened(err.reason)
            raise
        try:
            try:
                stream = self.stream_into(helper, archive, gpg, end_mark, pipe)
            except Tx9Error as err:
                # The engine fills the new volume with the image's /data as the container starts: that may fill it.
                if err.cause == 'DOCKER_ERROR' and says_full(err.reason):
                    raise volume_full(api, box, self.volume(box), self.needed, err.reason) from err
                raise
            try:
                code = api.wait(helper, timeout=RESTORE_TIMEOUT).get('StatusCode')
                logs = '' if code == 0 else api.logs(helper).decode('utf-8', 'replace').strip()[-600:]
            except ENGINE_ERRORS as exc:
                raise docker_error('wait for the restore container', exc) from exc
            if code != 0 and says_full(logs):
                raise volume_full(api, box, self.volume(box), self.needed, logs)
            if code != 0:
                raise Tx9Error(
                    f'Restoring /data of {box} failed (exit {code}): {logs}',
                    'DOCKER_ERROR',
                    'Nothing was kept; read the message, then import again.',
                )
            stream.check()
        finally:
            try:
                api.remove_container(helper, force=True)
            except ENGINE_ERRORS:
                pass  # best effort: the helper is labelled for the box, so a failed import's discard removes it

    # The restore container's script (None: RESTORE_SCRIPT, extract into STAGE, then promote it).
    script: str | None = None

    def volume(self, box: str) -> str:
        """The volume the restore container writes: the import stage, else the box's agent volume."""
        return self.staging or object_names(box)['agent_volume']

    def canonical(self, archive: Archive, gpg: Gpg | None, end_mark: str) -> RestoreStream:
        """What the restore container reads: the payload rewritten canonically, then the end mark."""
        return CanonicalStream(archive, self.password, gpg, AGENT_UID, AGENT_GID, end_mark=end_mark)

    def stream_into(
        self, helper: str, archive: Archive, gpg: Gpg | None, end_mark: str, pipe: NamedPipe | None = None
    ) -> RestoreStream:
        """Start the restore container and write the canonical stream to its input; the stream.

        Our own refusal while streaming stops the container before its input
        is closed, and a stream that ends early has no end mark: either way
        nothing is promoted. When the container stops reading (tar failed),
        it is left to exit: its status and output say why.
        """
        api = self.client.api
        try:
            stdin: NamedPipe | AttachedStdin = pipe if pipe is not None else AttachedStdin(api, helper, RESTORE_TIMEOUT)
        except ENGINE_ERRORS as exc:
            raise docker_error('attach to the restore container', exc)
        try:
            api.start(helper)
        except ENGINE_ERRORS as exc:
            stdin.close()
            raise docker_error('start the restore container', exc)
        if pipe is not None:
            pipe.open_for_writing(container_alive(api, helper), RESTORE_TIMEOUT)
        stream = self.canonical(archive, gpg, end_mark)
        # The next chunks are made (decrypted, decompressed, checked, rewritten) while Docker takes these.
        chunks = read_ahead(iter(stream))
        try:
            for chunk in chunks:
                stdin.write(chunk)
            stdin.close_write()
        except Exception as exc:
            if stream.error is not None:
                # Our own refusal (whatever its type): the container stops before its input ends.
                stop_quietly(api, helper)
                raise stream.error
            if not isinstance(exc, (Tx9Error, *ENGINE_ERRORS)):
                raise  # not the engine's nor ours: as it is
            if is_engine_error(exc) or not isinstance(exc, OSError):
                stop_quietly(api, helper)
                raise docker_error('stream the payload into the restore container', exc)
            # The container stopped reading (tar failed): its status and output say why.
        finally:
            close_quietly(chunks)
            stdin.close()
        return stream


def create_restore_container(
    api: Any,
    box: str,
    image_ref: str,
    end_mark: str,
    pipe: NamedPipe | None = None,
    volume: str | None = None,
    script: str | None = None,
) -> str:
    """The restore container of box, created (not started) on its agent volume; its id.

    Its input is pipe, bound into it, or without one its standard input.

    The container is a second wall: read-only root filesystem (nothing but
    the volume can be written), no network, no new privileges, and only
    the capabilities the promote step needs. Its entrypoint is fixed:
    GNU tar reads our canonical stream on its standard input, then
    hb restore-promote runs, only when the stream's end mark arrived.
    """
    labels = box_labels(box)
    labels[LABEL_ROLE] = 'restore'
    host_config = api.create_host_config(
        binds={volume or object_names(box)['agent_volume']: {'bind': '/data', 'mode': 'rw'}},
        network_mode='none',
        security_opt=['no-new-privileges'],
        read_only=True,
        cap_drop=['ALL'],
        cap_add=RESTORE_CAPABILITIES,
        tmpfs={'/tmp': 'size=16m,mode=1777'},
        mounts=[pipe_mount(pipe)] if pipe is not None else None,
    )
    try:
        container_id: str = api.create_container(
            image_ref,
            name=f'tx9-{box}-restore',
            labels=labels,
            user='root',
            entrypoint=restore_entrypoint(end_mark, PIPE_PATH if pipe is not None else '-', script),
            stdin_open=pipe is None,
            host_config=host_config,
        )['Id']
    except ENGINE_ERRORS as exc:
        raise docker_error(f'create the restore container of {box}', exc)
    return container_id


def restore_entrypoint(end_mark: str, source: str = '-', script: str | None = None) -> list[str]:
    """sh -c script (RESTORE_SCRIPT) with the staging directory, the stream's end mark and its source as arguments."""
    return ['/bin/sh', '-c', script or RESTORE_SCRIPT, 'tx9-restore', STAGE, end_mark, source]


def stop_quietly(api: Any, container: str) -> None:
    """Kill container, already failing: an engine error here would hide the error that made us stop it."""
    try:
        api.kill(container)
    except ENGINE_ERRORS:
        pass


def close_quietly(generator: Iterator[bytes]) -> None:
    try:
        close = getattr(generator, 'close', None)
        if close is not None:
            close()
    except Exception:  # noqa: BLE001 -- closing stops the payload's reading early; what that stirs up matters no more
        pass
