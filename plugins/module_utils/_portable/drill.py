# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A restore drill (tx9_drill): a box's newest backup imported into a throwaway box, checked, removed.

Private to the col_agents.tx9 collection. The archive goes through the
import itself (_portable/importer.py: every check, a fresh token, the
readiness gate), as a box named <box>-drill whose dashboard is published on
the host's loopback only; tx9_doctor's checks run on it; then it is removed,
volumes and state file included. The source box is never touched. The
outcome is saved by _box/drill_record.py. A drill killed midway leaves a marker
naming its throwaway box, which the next drill of that box removes once the
box's agent volume proves it was made after the marker.
"""

from __future__ import annotations

import datetime
import os
import re
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ansible_collections.col_agents.tx9.plugins.module_utils._archive.metadata import rfc3339, utc_now
from ansible_collections.col_agents.tx9.plugins.module_utils._box.drill_record import (
    RUNNING_SUFFIX,
    read_drill,
    remove_drill,
    write_drill,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._box.objects import BoxObjects
from ansible_collections.col_agents.tx9.plugins.module_utils._box.writer import remove_labelled
from ansible_collections.col_agents.tx9.plugins.module_utils._docker import is_engine_error
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._lock import box_lock
from ansible_collections.col_agents.tx9.plugins.module_utils._names import NAME_PATTERN, object_names, validate_box_name
from ansible_collections.col_agents.tx9.plugins.module_utils._ops.doctor import Doctor
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.importer import Import
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.retention import list_archives

if TYPE_CHECKING:
    from ansible_collections.col_agents.tx9.plugins.module_utils._archive.gpg import Gpg
    from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome

THROWAWAY_SUFFIX = '-drill'
LOOPBACK = '127.0.0.1'
LOCAL_ENGINE = ('unix://', 'npipe://')
# Docker's volume CreatedAt is to the second; a marker's time is not.
CLOCK_SLACK = 2
CREATED_AT = re.compile(r'^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.\d+)?(Z|[+-]\d\d:\d\d)')


def throwaway_name(box: str) -> str:
    """The drill's box name: <box>-drill, the box name cut so that the whole stays a valid name."""
    validate_box_name(box)
    return validate_box_name(box[: 63 - len(THROWAWAY_SUFFIX)] + THROWAWAY_SUFFIX)


def free_loopback_port() -> int:
    """A TCP port nothing listens on at 127.0.0.1 now, for the throwaway box's dashboard."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        probe.bind((LOOPBACK, 0))
        port: int = probe.getsockname()[1]
        return port
    finally:
        probe.close()


def created_at(value: str | None) -> float | None:
    """Seconds since the epoch of Docker's CreatedAt (RFC 3339), or None when it cannot be read."""
    match = CREATED_AT.match(value or '')
    if match is None:
        return None
    zone = '+00:00' if match.group(2) == 'Z' else match.group(2)
    return datetime.datetime.fromisoformat(match.group(1) + zone).timestamp()


def made_since(client: Any, box: str, moment: object) -> bool:
    """Whether box's agent volume was created at or after moment (the proof a killed drill made it)."""
    try:
        volume = client.api.inspect_volume(object_names(box)['agent_volume'])
    except Exception as exc:
        if not is_engine_error(exc):
            raise
        return False
    made = created_at(volume.get('CreatedAt'))
    return made is not None and isinstance(moment, (int, float)) and made >= moment - CLOCK_SLACK


def process_alive(pid: object) -> bool:
    """Whether pid names a live process other than this one."""
    return isinstance(pid, int) and pid > 0 and pid != os.getpid() and os.path.exists(f'/proc/{pid:d}')


class Drill:
    """One restore drill of one box's backup."""

    def __init__(
        self,
        client: Any,
        home: StateHome,
        box: str,
        path: str | None = None,
        dest: str | None = None,
        password: str | None = None,
        docker_host: str | None = None,
        wait_timeout: int = 300,
        hide: Callable[[str], None] | None = None,
        gpg_factory: Callable[[], Gpg] | None = None,
    ) -> None:
        self.client = client
        self.home = home
        self.box = validate_box_name(box)
        self.path = path
        self.dest = dest
        self.password = password
        self.docker_host = docker_host
        self.wait_timeout = wait_timeout
        self.hide = hide
        self.gpg_factory = gpg_factory
        self.throwaway = throwaway_name(self.box)

    def archive(self) -> str:
        """The archive to drill: path, else the newest archive of the box in dest."""
        if self.docker_host and not self.docker_host.startswith(LOCAL_ENGINE):
            raise Tx9Error(
                'A drill publishes its throwaway box on the loopback of the Docker host, which this host '
                f'cannot reach through docker_host={self.docker_host}.',
                'INVALID_ARGUMENT',
                'Run the drill on the Docker host itself (leave docker_host out there).',
            )
        if self.path:
            return os.path.abspath(os.path.expanduser(self.path))
        dest = os.path.abspath(os.path.expanduser(self.dest or '~/Downloads'))
        names = list_archives(dest, self.box)
        if not names:
            raise Tx9Error(
                f'There is no archive of box {self.box} in {dest} to drill.',
                'NO_ARCHIVE',
                f'Back the box up first (col_agents.tx9.tx9_backup with dest={dest}), or give path.',
            )
        return os.path.join(dest, names[0])

    def plan(self) -> dict[str, Any]:
        """Check mode: which archive would be drilled as which box; nothing is imported."""
        return dict(
            changed=True,
            box=self.box,
            archive=self.archive(),
            throwaway=self.throwaway,
            last_drill=read_drill(self.home, self.box),
        )

    def run(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Drill, save the record (passed or not), and return it."""
        path = self.archive()
        self.clear_killed()
        started = time.time()
        record: dict[str, Any] = dict(
            box=self.box,
            time=rfc3339(utc_now()),
            archive=path,
            throwaway=self.throwaway,
            ok=False,
            failed_checks=[],
            payload_sha256=None,
        )
        write_drill(
            self.home, self.box, dict(throwaway=self.throwaway, pid=os.getpid(), started=started), RUNNING_SUFFIX
        )
        created = [False]
        checks: list[dict[str, Any]] = []
        try:
            record.update(self.exercise(path, created, checks))
        except Tx9Error as err:
            record.update(cause=err.cause, msg=err.reason)
        record['duration'] = round(time.time() - started, 3)
        write_drill(self.home, self.box, record)
        # A throwaway box that could not be removed stays named by the marker, for the next drill to remove.
        if not created[0] or not BoxObjects(self.client, self.throwaway).exists():
            remove_drill(self.home, self.box, RUNNING_SUFFIX)
        return record, checks

    def exercise(self, path: str, created: list[bool], checks: list[dict[str, Any]]) -> dict[str, Any]:
        """Import path as the throwaway box, run the doctor's checks on it, remove it; the outcome."""
        imported = Import(
            self.client, self.home, path, self.import_params(), password=self.password, gpg_factory=self.gpg_factory
        ).run()
        created[0] = True
        try:
            health: dict[str, Any] = Doctor(
                self.client,
                self.home,
                dict(name=self.throwaway, fail_on_error=False),
                docker_host=self.docker_host,
                hide=self.hide,
            ).run()
        finally:
            self.remove(self.throwaway)
        checks.extend(health['checks'])
        return dict(
            ok=health['ok'], failed_checks=health['failed_checks'], payload_sha256=imported['archive']['payload_sha256']
        )

    def import_params(self) -> dict[str, Any]:
        """The throwaway box's import options: its dashboard on a free loopback port only."""
        return dict(
            name=self.throwaway,
            executor_publish=f'{LOOPBACK}:{free_loopback_port()}',
            wait_timeout=self.wait_timeout,
            docker_host=self.docker_host,
            clear_executor_config=False,
        )

    def remove(self, box: str) -> None:
        """Remove every object labelled for box, then its state file (its token goes last), then its lock file."""
        with box_lock(self.client, self.home, box, discard_after=True):
            remove_labelled(self.client, box)
            self.home.delete_box(box)

    def clear_killed(self) -> None:
        """Remove the throwaway box a killed drill of this box left; refuse while another drill runs."""
        running: dict[str, Any] | None = read_drill(self.home, self.box, RUNNING_SUFFIX)
        if running is None:
            return
        if process_alive(running.get('pid')):
            raise Tx9Error(
                f'A drill of box {self.box} is already running (process {running.get("pid")}).',
                'BOX_BUSY',
                'Wait for it to finish, then drill again.',
            )
        left = running.get('throwaway')
        if (
            isinstance(left, str)
            and NAME_PATTERN.match(left)
            and BoxObjects(self.client, left).exists()
            and made_since(self.client, left, running.get('started'))
        ):
            self.remove(left)
        remove_drill(self.home, self.box, RUNNING_SUFFIX)


def outcome(record: dict[str, Any], checks: list[dict[str, Any]], fail_on_error: bool = True) -> dict[str, Any]:
    """The module's result: the record and the checks; a failed drill fails unless fail_on_error is false."""
    result = dict(changed=True, box=record['box'], drill=record, checks=checks)
    if record['ok'] or not fail_on_error:
        return result
    if record.get('cause'):
        reason = f'The restore drill of box {record["box"]} failed: {record.get("msg")}'
        fix = 'Read msg and cause; fix what they name, or drill another archive (path=...).'
    else:
        reason = (
            f'The restore drill of box {record["box"]} imported {record["archive"]}, but the throwaway box failed '
            f'{", ".join(record["failed_checks"])}.'
        )
        fix = 'Read the detail of each check in checks; set fail_on_error: false to only record the result.'
    raise Tx9Error(
        reason, record.get('cause') or 'UNHEALTHY', fix, details=dict(drill=record, checks=checks, changed=True)
    )
