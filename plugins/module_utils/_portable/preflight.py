# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a host can receive a box, asked before the box's old host is touched.

Private to the col_agents.tx9 collection. Reads only. Each check is named:
`engine` (the Docker engine answers), `name` (no object and no state file
carries the box's name), `image` (the box image is present), `options` (the
box options are valid on this host: no more CPUs than it has), and `space`
(every filesystem the box's archive and its extracted payload land on has
room for all of what lands there together). The first failed check gives the
refusal its cause; the reason names every failed check and its numbers.

Whether the host reaches the box's old host (`peer`, a command run with
`true` appended) is reported beside the checks and never refuses: the caller
decides what an unreachable peer means (the migration then relays).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ansible_collections.col_agents.tx9.plugins.module_utils._box import executor_config, limits, superseded
from ansible_collections.col_agents.tx9.plugins.module_utils._box.objects import BoxObjects
from ansible_collections.col_agents.tx9.plugins.module_utils._docker import box_names_from_labels, find_image
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._names import validate_box_name
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.import_faults import free_volume_space
from ansible_collections.col_agents.tx9.plugins.module_utils._version import DEFAULT_IMAGE

if TYPE_CHECKING:
    from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome

# One named check: {name, ok, detail}.
Check = dict[str, Any]
# What lands on a filesystem: (what, path, bytes).
Need = tuple[str, str, int]

CAUSES = dict(
    engine='DOCKER_UNAVAILABLE', name='NAME_EXISTS', image='IMAGE_MISSING', options='INVALID_ARGUMENT', space='NO_SPACE'
)
FIXES = dict(
    engine='Start Docker on this host (the col_agents.tx9.tx9_host role does), then run again.',
    name='Remove or rename the box of that name on this host, or place the box on another host.',
    image='Build or load the image on this host first (playbooks/build-image.yml), then run again.',
    options="Set a value this host can give in the box's entry of its tx9_boxes, then run again.",
    space='Free space on this host (unused boxes, images, old archives) or choose a host with more room.',
)


def check(name: str, ok: object, detail: str) -> Check:
    """A check named name, passed when ok is true, with detail for a person."""
    return dict(name=name, ok=bool(ok), detail=detail)


def nearest_existing(path: str) -> str:
    """path, or its closest ancestor that exists (a directory the work will be created in)."""
    path = os.path.abspath(os.path.expanduser(path))
    while not os.path.exists(path):
        path = os.path.dirname(path)
    return path


def filesystem_of(path: str) -> tuple[int, int, str]:
    """(device id, bytes free to an unprivileged writer, the existing path measured)."""
    where = nearest_existing(path)
    stat = os.statvfs(where)
    return os.stat(where).st_dev, stat.f_bavail * stat.f_frsize, where


def space_check(needs: Sequence[Need], measure: Callable[[str], tuple[int, int, str]] = filesystem_of) -> Check:
    """needs: [(what, path, bytes)]. Needs landing on one filesystem are added up against its free bytes."""
    devices: dict[int, dict[str, Any]] = {}
    for what, path, size in needs:
        device, free, where = measure(path)
        entry = devices.setdefault(device, dict(free=free, where=[], needed=0, what=[]))
        entry['needed'] += int(size or 0)
        entry['where'].append(where)
        entry['what'].append(f'{what} ({int(size or 0)} bytes at {path})')
    problems: list[str] = []
    fine: list[str] = []
    for entry in devices.values():
        words = f'{" + ".join(entry["what"])}: {entry["needed"]} bytes needed, {int(entry["free"])} free'
        (problems if entry['needed'] > entry['free'] else fine).append(words)
    if problems:
        return check('space', False, 'not enough room: ' + '; '.join(problems))
    return check('space', True, '; '.join(fine) or 'nothing to store')


# How long the command that reaches the old host may take to run `true` there.
PEER_TIMEOUT = 60


def reach_peer(argv: Sequence[str], timeout: float = PEER_TIMEOUT) -> dict[str, Any]:
    """{reached, detail}: whether argv + ['true'] (no shell) succeeds; detail says why not (its last error line)."""
    try:
        done = subprocess.run(
            list(argv) + ['true'],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return dict(reached=False, detail=f'no answer within {timeout:g} s')
    except OSError as exc:
        return dict(reached=False, detail=f'it cannot run: {exc.strerror or exc}')
    if done.returncode == 0:
        return dict(reached=True, detail='reached')
    lines = done.stderr.decode('utf-8', 'replace').strip().splitlines()
    return dict(reached=False, detail=lines[-1][:300] if lines else f'exit code {done.returncode}')


def options_check(params: dict[str, Any], host_cpus: int) -> Check:
    """Whether the box options are valid on a host with host_cpus CPUs (0 when it does not say)."""
    try:
        executor_config.resolve(params, {})
        limits.validate(params, lambda: host_cpus)
    except Tx9Error as err:
        return check('options', False, err.reason)
    return check(
        'options',
        True,
        f'the box options are valid here ({host_cpus} CPUs)' if host_cpus else 'the box options are valid here',
    )


class Preflight:
    """One tx9_preflight run. connect() returns a Docker client or raises DOCKER_UNAVAILABLE."""

    def __init__(self, connect: Callable[[], Any], home: StateHome, params: dict[str, Any]) -> None:
        self.connect = connect
        self.home = home
        self.params = params

    def run(self) -> dict[str, Any]:
        """The checks and their outcome; a failed check refuses (its cause) unless fail_on_error is false."""
        params = self.params
        name = validate_box_name(params['name']) if params.get('name') else None
        needs = [
            (item.get('what') or 'files', item['path'], item.get('bytes') or 0) for item in params.get('space') or []
        ]
        checks: list[Check] = []
        if name or params.get('volume_bytes'):
            checks += self.engine_checks(name, needs)
        checks.append(space_check(needs))
        failed = [c for c in checks if not c['ok']]
        result = dict(changed=False, ok=not failed, failed_checks=[c['name'] for c in failed], checks=checks)
        if params.get('peer'):
            result['peer'] = reach_peer(params['peer'])
        if failed and params.get('fail_on_error', True):
            raise Tx9Error(
                'This host cannot receive {}: {}.'.format(
                    f'box {name}' if name else 'the files',
                    '; '.join('{}: {}'.format(c['name'], c['detail']) for c in failed),
                ),
                CAUSES[failed[0]['name']],
                FIXES[failed[0]['name']],
                details=result,
            )
        return result

    def name_check(self, client: Any, name: str) -> Check:
        """name is free here, or held by a superseded copy that replace_superseded lets the import replace."""
        taken = name in box_names_from_labels(client)
        persisted = self.home.read_box(name)
        if not (taken or persisted):
            return check('name', True, 'free')
        mark = superseded.read(persisted, BoxObjects(client, name).containers if taken else {})
        if mark and self.params.get('replace_superseded'):
            return check('name', True, f'box {name} here is a copy {superseded.describe(mark)}; the import replaces it')
        where = 'Docker objects labelled for it' if taken else 'its state file'
        left_behind = f', a copy {superseded.describe(mark)}' if mark else ''
        return check('name', False, f'box {name} already exists here ({where}{left_behind})')

    def engine_checks(self, name: str | None, needs: list[Need]) -> list[Check]:
        """engine, name, image and options; adds where the engine keeps volumes to needs."""
        try:
            client = self.connect()
        except Tx9Error as err:
            return [check('engine', False, err.reason)]
        checks = [check('engine', True, 'the Docker engine answers')]
        if name:
            checks.append(self.name_check(client, name))
            image = self.params.get('image') or DEFAULT_IMAGE
            present = find_image(client, image) is not None
            checks.append(
                check('image', present, '{} is {}'.format(image, 'present' if present else 'not on this host'))
            )
            checks.append(options_check(self.params, limits.host_cpu_count(client)))
        if self.params.get('volume_bytes'):
            _free, where = free_volume_space(client)
            if where:
                needs.append(('the extracted payload', where, self.params['volume_bytes']))
        return checks
