# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Backing up a box's /data volume into a .tx9 archive.

Private to the col_agents.tx9 collection. Under the box lock: disable the
gateway when asked, quiesce, checkpoint, write the manifest, stream a tar of /data out of the agent
container through the member validator into gzip (and gpg), read the stored
payload back, then publish without ever overwriting, and resume. Memory stays
bounded: nothing holds the archive, every stage streams.
"""

import contextlib
import os
import secrets
import shutil
import tempfile
import time

from ansible_collections.col_agents.tx9.plugins.module_utils._archive.envelope import digest_plaintext
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.metadata import new_metadata, rfc3339, utc_now
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.validator import validate_stream
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.writing import (
    InPlaceArchive,
    publish,
    publish_sealed,
    staging_path,
    write_archive,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._box.backup_record import record_backup
from ansible_collections.col_agents.tx9.plugins.module_utils._box.drill_record import read_drill
from ansible_collections.col_agents.tx9.plugins.module_utils._box.guest import last_json_line, run_hb
from ansible_collections.col_agents.tx9.plugins.module_utils._box.objects import BoxObjects, container_state
from ansible_collections.col_agents.tx9.plugins.module_utils._box.reconcile import BACKUP_QUIESCE
from ansible_collections.col_agents.tx9.plugins.module_utils._docker import docker_error
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._io import (
    BoundedReader,
    ChunkReader,
    HashingWriter,
    TeeReader,
    copy_stream,
    gzip_writer,
    read_ahead,
    refuse_non_directory,
    remove_left_by_dead_processes,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._lock import box_lock
from ansible_collections.col_agents.tx9.plugins.module_utils._names import (
    LABEL_ROLE,
    ROLE_AGENT,
    box_labels,
    object_names,
    validate_box_name,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._ops.gateway import disable as disable_gateway
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.importer import verify_archive
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.pipes import (
    PIPE_PATH,
    NamedPipe,
    container_alive,
    engine_on_this_host,
    pipe_mount,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.retention import list_archives, remove_expired

# Left out of every backup: caches, dependency trees, tool scratch, Hermes' PID
# and lock files and SQLite sidecars, and the quiesce marker (a restore re-arms
# its own).
DEFAULT_EXCLUDES = (
    './home/agent/.config/hermes-box/quiesced',
    './home/agent/.config/hermes-box/gateway.pid',
    './home/agent/.config/hermes-box/gateway.lock',
    './home/agent/.codex/tmp',
    './home/agent/.hermes/tmp',
    # The tools' self-update launchers: absolute links into their own install trees.
    './home/agent/.local/bin/claude',
    './home/agent/.local/bin/codex',
    './.tx9-restore-stage',
    '*/node_modules',
    '*/.venv',
    '*/venv',
    '*/__pycache__',
    '*/.cache',
    '*.pyc',
    '*.pyo',
    # Hermes' SQLite sidecars only: the checkpoint folds them into the databases.
    # Other programs' databases keep theirs, so nothing they committed is lost.
    './home/agent/.hermes/*.db-wal',
    './home/agent/.hermes/*.db-shm',
    './home/agent/.hermes/*.db-journal',
    './home/agent/.hermes/gateway.pid',
    './home/agent/.hermes/cron.pid',
    './home/agent/.hermes/gateway.lock',
    './home/agent/.hermes/processes.json',
)
WORKDIR_PREFIX = '.tx9-backup-'
# How long the tar of /data may stay silent, and its helper container take to exit.
PIPE_TIMEOUT = 1800
QUIESCED_BY = BACKUP_QUIESCE


def tar_command(excludes, output='-'):
    """The argv that writes /data as an uncompressed tar to output, stdout by default (never a shell string)."""
    # No --sparse: GNU sparse members are not among the member types a .tx9 may hold.
    # The GNU format carries long names, big files and any modification time (to the
    # second) without the extended header pax gives every member for its sub-second
    # times, which would double what the validator parses.
    argv = ['tar', '--create', f'--file={output}', '--directory=/data', '--numeric-owner', '--format=gnu']
    argv.extend(f'--exclude={pattern}' for pattern in excludes)
    argv.append('.')
    return argv


def prepare_dest(dest):
    """The destination directory, created (0700) when missing; refuses one that is not writable."""
    dest = os.path.abspath(os.path.expanduser(dest))
    refuse_non_directory(dest, 'the backup destination', 'dest')
    try:
        if not os.path.isdir(dest):
            os.makedirs(dest, 0o700)
    except OSError as exc:
        raise Tx9Error(
            f'The backup destination {dest} cannot be created: {exc.strerror}.',
            'ARCHIVE_WRITE_FAILED',
            'Choose a writable dest, or create it first.',
        )
    if not os.access(dest, os.W_OK | os.X_OK):
        raise Tx9Error(
            f'The backup destination {dest} is not writable.',
            'ARCHIVE_WRITE_FAILED',
            'Choose a writable dest, or fix its permissions.',
        )
    return dest


def check_dest(dest):
    """Refuse, without creating anything, a destination a real run could not write."""
    path = refuse_non_directory(os.path.abspath(os.path.expanduser(dest)), 'the backup destination', 'dest')
    if not os.access(path, os.W_OK | os.X_OK):
        raise Tx9Error(
            f'The backup destination {dest} cannot be written ({path} is not a writable directory).',
            'ARCHIVE_WRITE_FAILED',
            f'Choose a writable dest, or fix the permissions of {path}.',
        )


def remove_stale_workdirs(dest):
    """Remove work directories of backups that were killed (their process is gone)."""
    remove_left_by_dead_processes(dest, WORKDIR_PREFIX)


def quiesce_state(client, agent_id):
    """(quiesced, quiesced_by) as the agent reports them."""
    code, _output = run_hb(client, agent_id, ['is-paused'])
    if code != 0:
        return False, None
    code, output = run_hb(client, agent_id, ['status', '--json'])
    status = last_json_line(output) or {}
    return True, status.get('quiesced_by')


def hb_or_fail(client, agent_id, args, what):
    code, output = run_hb(client, agent_id, args)
    if code != 0:
        raise Tx9Error(
            '%s failed in the box (hb %s exited %d): %s' % (what, ' '.join(args), code, output.strip()[-400:]),
            'GUEST_FAILED',
            'Run hb doctor inside the box, fix what it names, then back up again.',
        )
    return output


def check_tar_exit(code, stderr):
    """GNU tar exits 1 when a file changed while it was read; the box is quiesced, so that only
    concerns files nothing depends on. Anything else is a failure."""
    if code not in (0, 1):
        detail = stderr.decode('utf-8', 'replace').strip()[-400:]
        raise Tx9Error(
            f'Reading /data out of the box failed (tar exited {code}): {detail}',
            'DOCKER_ERROR',
            'Check the box with hb doctor and the disk space of the host, then run again.',
        )


def tar_of_data(client, box, agent, excludes, workdir):
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

    def __init__(self, client, box, image, excludes, workdir):
        self.api = client.api
        self.helper = None
        try:
            self.pipe = NamedPipe(workdir)
        except OSError as exc:
            raise PipeRefused(str(exc))
        labels = box_labels(box)
        labels[LABEL_ROLE] = 'backup'
        remove_helpers(self.api, labels)
        host_config = self.api.create_host_config(
            binds={object_names(box)['agent_volume']: {'bind': '/data', 'mode': 'ro'}},
            mounts=[pipe_mount(self.pipe)],
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
                entrypoint=tar_command(excludes, PIPE_PATH),
                host_config=host_config,
            )['Id']
            self.api.start(self.helper)
            self.pipe.open_for_reading(container_alive(self.api, self.helper), PIPE_TIMEOUT)
        except Exception as exc:
            self.close()
            raise PipeRefused(str(exc))

    def chunks(self):
        return self.pipe.chunks()

    def check(self):
        try:
            code = self.api.wait(self.helper, timeout=PIPE_TIMEOUT).get('StatusCode')
            stderr = self.api.logs(self.helper, stdout=False, stderr=True) if code not in (0, 1) else b''
        except Exception as exc:
            raise docker_error("read the exit status of the backup's tar", exc)
        check_tar_exit(code, stderr)

    def close(self):
        if self.helper is not None:
            try:
                self.api.remove_container(self.helper, force=True)
            except Exception:
                pass
            self.helper = None
        self.pipe.close()


def remove_helpers(api, labels):
    """Remove the helper containers with exactly these labels that a killed backup left (the box lock is held)."""
    selector = {'label': ['{}={}'.format(*item) for item in sorted(labels.items())], 'status': 'exited'}
    try:
        for container in api.containers(all=True, filters=selector):
            api.remove_container(container['Id'], force=True)
    except Exception as exc:
        raise docker_error('remove a backup helper a killed run left', exc)


class TarStream:
    """The stdout of `tar` run as root in the agent container, as byte chunks."""

    def __init__(self, client, container_id, argv):
        self.client = client
        self.exec_id = client.api.exec_create(container_id, argv, user='root', stdout=True, stderr=True)['Id']
        self.stderr = []

    def chunks(self):
        for stdout, stderr in self.client.api.exec_start(self.exec_id, stream=True, demux=True):
            if stderr:
                self.stderr.append(stderr)
            if stdout:
                yield stdout

    def check(self):
        check_tar_exit(self.client.api.exec_inspect(self.exec_id).get('ExitCode'), b''.join(self.stderr))

    def close(self):
        pass


class Backup:
    """One backup of one box."""

    def __init__(
        self,
        client,
        home,
        box,
        dest,
        password=None,
        encrypt=True,
        exclude=None,
        leave_quiesced=False,
        gpg_factory=None,
        verify=False,
        keep_last=None,
        disable_gateway=False,
    ):
        self.client = client
        self.home = home
        self.box = validate_box_name(box)
        self.dest = dest
        self.password = password
        self.encrypt = encrypt
        self.excludes = list(DEFAULT_EXCLUDES) + list(exclude or [])
        self.leave_quiesced = leave_quiesced
        self.disable_gateway = disable_gateway
        self.gpg_factory = gpg_factory
        # Retention removes archives only once the new one is proved, so it implies verify.
        self.keep_last = keep_last
        self.verify = bool(verify or keep_last)

    def check_inputs(self):
        if self.keep_last is not None and self.keep_last < 1:
            raise Tx9Error(
                f'keep_last={self.keep_last!r} is not valid: at least the new archive is kept.',
                'INVALID_ARGUMENT',
                'Give keep_last of 1 or more, or leave it out to keep every archive.',
            )
        if self.encrypt and not self.password:
            raise Tx9Error(
                'An encrypted backup needs a passphrase and none was given.',
                'PASSWORD_REQUIRED',
                'Set password (or TX9_PASSWORD on the target host), or set encrypt=false.',
            )
        if self.encrypt:
            from ansible_collections.col_agents.tx9.plugins.module_utils._archive.gpg import Gpg
            from ansible_collections.col_agents.tx9.plugins.module_utils._archive.gpgsupport import check_passphrase

            check_passphrase(self.password)
            return (self.gpg_factory or Gpg)()
        return None

    def agent(self):
        objects = BoxObjects(self.client, self.box)
        objects.check_ownership()
        agent = objects.containers[ROLE_AGENT]
        if not objects.exists():
            raise Tx9Error(
                f'There is no box named {self.box} on this host.',
                'NO_BOX',
                'Check the name with col_agents.tx9.tx9_info.',
            )
        if agent is None or container_state(agent) != 'running':
            raise Tx9Error(
                f'The agent container of box {self.box} is not running, so its data cannot be read consistently.',
                'NOT_RUNNING',
                f'Start it with col_agents.tx9.tx9_box name={self.box} state=present.',
            )
        return agent

    def plan(self):
        """What a check-mode run reports: validated inputs and the box, nothing written."""
        self.check_inputs()
        check_dest(self.dest)
        dest = os.path.abspath(os.path.expanduser(self.dest))
        with box_lock(self.client, self.home, self.box):
            agent = self.agent()
            gateway = (
                disable_gateway(self.client, self.box, agent['Id'], check_mode=True)[1]
                if self.disable_gateway
                else None
            )
        result = dict(
            changed=True,
            box=self.box,
            path=None,
            encrypted=self.encrypt,
            verified=False,
            image=agent['Config'].get('Image'),
            dest=dest,
            last_drill=read_drill(self.home, self.box),
        )
        if gateway is not None:
            result['gateway'] = gateway
        if self.keep_last:
            # The new archive will be one of the keep_last.
            result['removed'] = [
                os.path.join(dest, name) for name in list_archives(dest, self.box)[self.keep_last - 1 :]
            ]
        return result

    def run(self):
        started = time.time()
        gpg = self.check_inputs()
        dest = prepare_dest(self.dest)
        with box_lock(self.client, self.home, self.box):
            result = self.snapshot(dest, gpg)
            result['verified'] = False
            if self.verify:
                self.prove(result['path'], gpg)
                result['verified'] = True
            if self.keep_last:
                result['removed'], result['kept'] = remove_expired(dest, self.box, self.keep_last, result['path'])
            warnings = result.get('warnings', []) + self.record(result)
            if warnings:
                result['warnings'] = warnings
        result.update(duration=round(time.time() - started, 3), last_drill=read_drill(self.home, self.box))
        return result

    def retain(self, check_mode=False):
        """Retention alone: prove the box's newest archive in dest readable, then keep the keep_last newest.

        Nothing is written. The newest archive is read as an import reads it
        (verify_archive); when it does not pass, nothing is removed, itself
        included, and the task fails with the import's cause.
        """
        if not self.keep_last:
            raise Tx9Error(
                'retain_only needs keep_last: it applies retention and writes no archive.',
                'INVALID_ARGUMENT',
                'Give keep_last (1 or more) with retain_only.',
            )
        self.check_inputs()
        check_dest(self.dest)
        dest = os.path.abspath(os.path.expanduser(self.dest))
        with box_lock(self.client, self.home, self.box):
            names = list_archives(dest, self.box)
            if not names:
                raise Tx9Error(
                    f'There is no archive of box {self.box} in {dest} to keep.',
                    'NO_ARCHIVE',
                    'Back the box up first (col_agents.tx9.tx9_backup without retain_only).',
                )
            newest = os.path.join(dest, names[0])
            result = dict(
                box=self.box, dest=dest, path=newest, verified=False, last_drill=read_drill(self.home, self.box)
            )
            if check_mode:
                result['removed'] = [os.path.join(dest, name) for name in names[self.keep_last :]]
                result.update(
                    changed=bool(result['removed']), kept=[os.path.join(dest, name) for name in names[: self.keep_last]]
                )
                return result
            try:
                verify_archive(newest, self.password, gpg_factory=self.gpg_factory)
            except Tx9Error as err:
                raise Tx9Error(
                    f'The newest archive of box {self.box}, {newest}, did not read back as an import reads it, so no '
                    f'archive was removed: {err.reason}',
                    err.cause,
                    f'Keep {newest} for inspection; back the box up again, and retention goes on once a newer '
                    'archive reads back.',
                )
            result['removed'], result['kept'] = remove_expired(dest, self.box, self.keep_last, newest)
            result.update(verified=True, changed=bool(result['removed']))
        return result

    def snapshot(self, dest, gpg):
        """Quiesce, checkpoint, archive and resume, for a caller holding the box lock."""
        agent = self.agent()
        agent_id = agent['Id']
        remove_stale_workdirs(dest)
        # Stopped first and kept disabled, so that no gateway of this identity runs here after the backup.
        gateway = disable_gateway(self.client, self.box, agent_id)[1] if self.disable_gateway else None
        quiesced, quiesced_by = quiesce_state(self.client, agent_id)
        # A quiesce left by an interrupted backup is ours to lift; a person's own is not.
        resume = not quiesced or quiesced_by == QUIESCED_BY
        warnings = []
        try:
            if not quiesced:
                hb_or_fail(self.client, agent_id, ['down', '--by', QUIESCED_BY], 'Quiescing')
            hb_or_fail(self.client, agent_id, ['verify-state', '--checkpoint'], 'Checkpointing the state')
            hb_or_fail(self.client, agent_id, ['write-manifest'], 'Writing the manifest')
            result = self.archive(agent, dest, gpg)
        finally:
            if resume and not self.leave_quiesced:
                code, output = run_hb(self.client, agent_id, ['up', '--if-by', QUIESCED_BY])
                if code != 0:
                    warnings.append(
                        f'The box stayed quiesced (hb up failed: {output.strip()[-200:]}); run hb up inside it.'
                    )
        result.update(changed=True, box=self.box, quiesced=bool(self.leave_quiesced or (quiesced and not resume)))
        if gateway is not None:
            result['gateway'] = gateway
        if warnings:
            result['warnings'] = warnings
        return result

    def prove(self, path, gpg):
        """Read the new archive as an import would; one that does not pass is removed, and so is no older one."""
        try:
            verify_archive(path, self.password, gpg_factory=(lambda: gpg) if gpg is not None else None)
        except Tx9Error as err:
            try:
                os.unlink(path)
            except OSError:
                pass
            raise Tx9Error(
                f'The new archive {path} did not read back as an import reads it, so it was removed and the '
                f'older archives were kept: {err.reason}',
                err.cause,
                'Check the disk of the destination, then back up again.',
            )

    def record(self, result):
        """Record the published archive as the box's last backup; the archive stands even when this fails."""
        try:
            # read_back proved the stored payload decrypts to the bytes written: the archive is verified.
            record_backup(self.home, self.box, result['path'], result['sha256'], verified=True)
        except (Tx9Error, OSError) as exc:
            return [
                'The backup {} was written, but recording it as the last backup of box {} failed ({}); '
                'tx9_info will not report it.'.format(result['path'], self.box, getattr(exc, 'reason', exc))
            ]
        return []

    def archive(self, agent, dest, gpg):
        """Write the archive in place in a private work directory, read it back, then publish it."""
        workdir = tempfile.mkdtemp(prefix='%s%d-' % (WORKDIR_PREFIX, os.getpid()), dir=dest)
        try:
            moment = utc_now()
            # A staging name until it is published: a killed run leaves nothing named *.tx9.
            staged = staging_path(workdir, self.box, moment)
            with InPlaceArchive(staged, moment.timestamp()) as archive:
                summary, plain, stored = self.write_payload(agent, archive, gpg, workdir)
                metadata = new_metadata(
                    self.box,
                    agent['Config'].get('Image'),
                    self.encrypt,
                    stored[0],
                    stored[1],
                    created_at=rfc3339(moment),
                )
                in_place = archive.seal(metadata)
                whole = self.read_back(staged, archive, gpg, plain, stored)
                if in_place:
                    archive.sync()
            if in_place:
                path = publish_sealed(staged, dest, self.box, moment)
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

    def copy_into_new_archive(self, dest, workdir, staged, archive, metadata, moment):
        """(path, (sha256, size)) of a new archive holding the payload written at staged (which did not fit in place)."""
        digest = {}

        def write(handle):
            hashing = HashingWriter(handle)
            with open(staged, 'rb') as source:
                source.seek(archive.payload_offset)
                write_archive(hashing, metadata, BoundedReader(source, archive.payload_size), mtime=moment.timestamp())
            digest['whole'] = (hashing.hexdigest(), hashing.size)

        path = publish(dest, self.box, write, moment=moment, staging_dir=workdir)
        return path, digest['whole']

    def write_payload(self, agent, target, gpg, workdir):
        """Stream tar -> validator -> gzip (-> gpg) into target, the archive's payload.

        Returns the validator's summary, the (sha256, size) of the gzip bytes
        and those of the bytes stored (the same unless encrypted), taken
        while writing them.
        """
        stream = tar_of_data(self.client, self.box, agent, self.excludes, workdir)
        stored = HashingWriter(target)
        try:
            # The container's stream is read while the chunks before are checked and compressed.
            with contextlib.closing(read_ahead(stream.chunks())) as chunks:
                if gpg is not None:
                    with gpg.encrypting(stored.write, self.password) as encrypted:
                        plain = HashingWriter(encrypted)
                        summary = self.compress(chunks, plain)
                else:
                    plain = stored
                    summary = self.compress(chunks, plain)
            target.flush()
            stream.check()
        finally:
            stream.close()
        return summary, (plain.hexdigest(), plain.size), (stored.hexdigest(), stored.size)

    @staticmethod
    def compress(chunks, plain):
        try:
            with gzip_writer(plain) as gz:
                return validate_stream(TeeReader(ChunkReader(chunks), gz.write), compressed=False)
        except Tx9Error as err:
            if err.cause != 'ARCHIVE_UNSAFE':
                raise
            # Said for the box being saved, not for an archive someone received.
            raise Tx9Error(
                f'The box holds something a .tx9 archive cannot carry, so nothing was saved: {err.reason}',
                'ARCHIVE_UNSAFE',
                'Remove or replace that entry in the box (an absolute symlink can become a '
                'relative one), or leave it out with exclude (a pattern relative to /data, such as ./home/agent/x).',
            )

    def read_back(self, staged, archive, gpg, plain, stored):
        """Read the written archive back once, from its first byte; (sha256, size) of the whole file.

        What was written before the payload must read back as written, the
        stored payload as the bytes stored, and it must decrypt to the
        bytes compressed.
        """
        whole = HashingWriter(None)
        stored_again = HashingWriter(None)
        with open(staged, 'rb') as handle:
            prefix = handle.read(archive.payload_offset)
            whole.write(prefix)
            payload = TeeReader(BoundedReader(handle, archive.payload_size), whole.write, staged)
            if gpg is not None:
                plain_again = digest_plaintext(TeeReader(payload, stored_again.write, staged), True, self.password, gpg)
            else:
                # Not encrypted: the bytes stored are the bytes compressed, hashed once.
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
