# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Backing up a box's /data volume into a .tx9 archive.

Private to the col_agents.tx9 collection. Under the box lock: disable the
gateway when asked, quiesce, checkpoint, write the manifest, write the archive
(backup_payload.py: a tar of /data streamed through the member validator into
gzip and gpg, read back, published without ever overwriting), and resume;
then, when asked, prove the archive as an import reads it and apply
retention, and record it as the box's last backup.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ansible_collections.col_agents.tx9.plugins.module_utils._box.backup_record import record_backup
from ansible_collections.col_agents.tx9.plugins.module_utils._box.drill_record import read_drill
from ansible_collections.col_agents.tx9.plugins.module_utils._box.engine_loss import through_engine_loss
from ansible_collections.col_agents.tx9.plugins.module_utils._box.guest import last_json_line, run_hb
from ansible_collections.col_agents.tx9.plugins.module_utils._box.objects import BoxObjects, container_state
from ansible_collections.col_agents.tx9.plugins.module_utils._box.readiness import QUIESCED_BY_BACKUP
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._io import (
    refuse_non_directory,
    remove_left_by_dead_processes,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._lock import box_lock
from ansible_collections.col_agents.tx9.plugins.module_utils._names import ROLE_AGENT, validate_box_name
from ansible_collections.col_agents.tx9.plugins.module_utils._ops.gateway import disable as disable_gateway
from ansible_collections.col_agents.tx9.plugins.module_utils._ops.info import volume_usage
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.backup_payload import (
    WORKDIR_PREFIX,
    ArchiveWriter,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.importer import verify_archive
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.retention import list_archives, remove_expired

if TYPE_CHECKING:
    from ansible_collections.col_agents.tx9.plugins.module_utils._archive.gpg import Gpg
    from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome

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
QUIESCED_BY = QUIESCED_BY_BACKUP


def prepare_dest(dest: str) -> str:
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
        ) from exc
    if not os.access(dest, os.W_OK | os.X_OK):
        raise Tx9Error(
            f'The backup destination {dest} is not writable.',
            'ARCHIVE_WRITE_FAILED',
            'Choose a writable dest, or fix its permissions.',
        )
    return dest


def check_dest(dest: str) -> None:
    """Refuse, without creating anything, a destination a real run could not write."""
    path = refuse_non_directory(os.path.abspath(os.path.expanduser(dest)), 'the backup destination', 'dest')
    if not os.access(path, os.W_OK | os.X_OK):
        raise Tx9Error(
            f'The backup destination {dest} cannot be written ({path} is not a writable directory).',
            'ARCHIVE_WRITE_FAILED',
            f'Choose a writable dest, or fix the permissions of {path}.',
        )


def remove_stale_workdirs(dest: str) -> None:
    """Remove work directories of backups that were killed (their process is gone)."""
    remove_left_by_dead_processes(dest, WORKDIR_PREFIX)


def quiesce_state(client: Any, agent_id: str) -> tuple[bool, str | None]:
    """(quiesced, quiesced_by) as the agent reports them."""
    code, _output = run_hb(client, agent_id, ['is-paused'])
    if code != 0:
        return False, None
    code, output = run_hb(client, agent_id, ['status', '--json'])
    status: dict[str, Any] = last_json_line(output) or {}
    return True, status.get('quiesced_by')


def hb_or_fail(client: Any, agent_id: str, args: list[str], what: str) -> str:
    """hb's output of args run in the agent container; GUEST_FAILED, naming what, when it fails."""
    code, output = run_hb(client, agent_id, args)
    if code != 0:
        raise Tx9Error(
            f'{what} failed in the box (hb {" ".join(args)} exited {code}): {output.strip()[-400:]}',
            'GUEST_FAILED',
            'Run hb doctor inside the box, fix what it names, then back up again.',
        )
    return output


class Backup:
    """One backup of one box."""

    def __init__(
        self,
        client: Any,
        home: StateHome,
        box: str,
        dest: str,
        password: str | None = None,
        encrypt: bool = True,
        exclude: list[str] | None = None,
        leave_quiesced: bool = False,
        gpg_factory: Callable[[], Gpg] | None = None,
        verify: bool = False,
        keep_last: int | None = None,
        disable_gateway: bool = False,
    ) -> None:
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

    def check_inputs(self) -> Gpg | None:
        """Refuse options that cannot work before anything runs; the gpg to encrypt with, if any."""
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

    def agent(self) -> dict[str, Any]:
        """The box's running agent container, as Docker describes it; NO_BOX or NOT_RUNNING otherwise."""
        objects = BoxObjects(self.client, self.box)
        objects.check_ownership()
        agent: dict[str, Any] | None = objects.containers[ROLE_AGENT]
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

    def plan(self) -> dict[str, Any]:
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
        result: dict[str, Any] = dict(
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

    def run(self) -> dict[str, Any]:
        """Back the box up under its lock, prove and retain when asked, and record it as the last backup."""
        started = time.time()
        gpg = self.check_inputs()
        dest = prepare_dest(self.dest)
        with box_lock(self.client, self.home, self.box):
            # An engine that dies mid-backup and comes back: the backup starts again (lifting its own
            # quiesce the lost run could not), and no archive of the lost run is published.
            result = through_engine_loss(self.client, lambda: self.snapshot(dest, gpg))
            result['verified'] = False
            if self.verify:
                self.prove(result['path'], gpg)
                result['verified'] = True
            if self.keep_last:
                result['removed'], result['kept'] = remove_expired(dest, self.box, self.keep_last, result['path'])
            warnings: list[str] = result.get('warnings', []) + self.record(result)
            if warnings:
                result['warnings'] = warnings
        result.update(duration=round(time.time() - started, 3), last_drill=read_drill(self.home, self.box))
        return result

    def retain(self, check_mode: bool = False) -> dict[str, Any]:
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
            result: dict[str, Any] = dict(
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
                ) from err
            result['removed'], result['kept'] = remove_expired(dest, self.box, self.keep_last, newest)
            result.update(verified=True, changed=bool(result['removed']))
        return result

    def snapshot(self, dest: str, gpg: Gpg | None) -> dict[str, Any]:
        """Quiesce, checkpoint, archive and resume, for a caller holding the box lock."""
        agent = self.agent()
        agent_id = agent['Id']
        remove_stale_workdirs(dest)
        # Stopped first and kept disabled, so that no gateway of this identity runs here after the backup.
        gateway = disable_gateway(self.client, self.box, agent_id)[1] if self.disable_gateway else None
        quiesced, quiesced_by = quiesce_state(self.client, agent_id)
        # A quiesce left by an interrupted backup is ours to lift; a person's own is not.
        resume = not quiesced or quiesced_by == QUIESCED_BY
        warnings: list[str] = []
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

    def prove(self, path: str, gpg: Gpg | None) -> None:
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
            ) from err

    def record(self, result: dict[str, Any]) -> list[str]:
        """Record the published archive as the box's last backup; the archive stands even when this fails."""
        try:
            # read_back proved the stored payload decrypts to the bytes written: the archive is verified.
            record_backup(self.home, self.box, result['path'], result['sha256'], verified=True)
        except (Tx9Error, OSError) as exc:
            why = exc.reason if isinstance(exc, Tx9Error) else exc
            return [
                f'The backup {result["path"]} was written, but recording it as the last backup of box {self.box} '
                f'failed ({why}); tx9_info will not report it.'
            ]
        return []

    def archive(self, agent: dict[str, Any], dest: str, gpg: Gpg | None) -> dict[str, Any]:
        """Write the archive of the box's /data in dest, read it back and publish it (backup_payload.py)."""
        try:
            return ArchiveWriter(self.client, self.box, self.excludes, self.encrypt, self.password, gpg).write(
                agent, dest
            )
        except Tx9Error as err:
            if err.cause != 'NO_SPACE':
                raise
            raise self.no_room(err) from err

    def no_room(self, err: Tx9Error) -> Tx9Error:
        """NO_SPACE with what the archive needs: about the bytes the box's data takes (less once compressed)."""
        volume = BoxObjects(self.client, self.box).names['agent_volume']
        data = volume_usage(self.client).get(volume)
        need = f' The archive needs up to about {data} bytes there (the box data, before compression).' if data else ''
        return Tx9Error(
            f'{err.reason}{need}',
            err.cause,
            err.fix,
            details=dict(err.details, needed=data),
        )
