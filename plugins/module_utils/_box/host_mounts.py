# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host directories bind-mounted into a box's agent container: the rules.

Private to the col_agents.tx9 collection. A mount is host-local desired state
kept in the box's state file (TX9_AGENT_MOUNTS, a JSON array sorted by
target) and applied by recreating only the agent container. Targets lie below
/mnt, so a backup of /data never walks into external content. Sources are
checked on the host before any container is removed: they must be
directories, and with require_mountpoint a mount point, so an offline share's
empty underlying directory is never bound.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error

MOUNTS_KEY = 'TX9_AGENT_MOUNTS'
MOUNT_ROOT = '/mnt'
DATA_ROOT = '/data'
MOUNTINFO = '/proc/self/mountinfo'
# Characters a Docker bind (source:target:mode) or a state file line cannot carry.
UNSAFE = (('\x00', 'a NUL byte'), ('\n', 'a line break'), ('\r', 'a carriage return'), (':', 'a ":"'))
TARGET_FIX = 'Give a target below /mnt, such as /mnt/share.'
OCTAL = re.compile(r'\\([0-7]{3})')


class Mount(TypedDict):
    """One host directory bound into the agent: its record in the state file and in memory."""

    source: str
    target: str
    read_only: bool
    require_mountpoint: bool
    gid: int  # the source's group when it is not root, else 0


def _bad_target(target: object, why: str) -> Tx9Error:
    return Tx9Error(f'target={target!r} is not valid: {why}.', 'MOUNT_TARGET_INVALID', TARGET_FIX)


def _unsafe_character(path: str) -> str | None:
    for character, words in UNSAFE:
        if character in path:
            return words
    return None


def normalize_target(target: object) -> str:
    """The target as a clean absolute path strictly below /mnt, or MOUNT_TARGET_INVALID.

    Repeated slashes, '.' components and a trailing slash are normalised away;
    '..' is refused outright, wherever it stands.
    """
    if not isinstance(target, str) or not target.strip():
        raise _bad_target(target, 'it is empty')
    unsafe = _unsafe_character(target)
    if unsafe:
        raise _bad_target(target, f'it contains {unsafe}, which a bind mount cannot carry')
    if not target.startswith('/'):
        raise _bad_target(target, 'it is not an absolute path')
    parts = [part for part in target.split('/') if part not in ('', '.')]
    if '..' in parts:
        raise _bad_target(target, 'it contains "..", and a target must name its place directly')
    normal = '/' + '/'.join(parts)
    if normal == DATA_ROOT or normal.startswith(DATA_ROOT + '/'):
        raise _bad_target(
            target, 'it lies in /data, the box volume that backups copy whole, and external content must stay out of it'
        )
    if normal == MOUNT_ROOT:
        raise _bad_target(target, 'it is /mnt itself; a mount goes below /mnt')
    if not normal.startswith(MOUNT_ROOT + '/'):
        raise _bad_target(target, 'it is not below /mnt')
    return normal


def source_syntax(source: object) -> str:
    """source when it is an absolute path a bind mount can carry, else INVALID_ARGUMENT."""
    if not isinstance(source, str) or not source.strip():
        raise Tx9Error('source is empty.', 'INVALID_ARGUMENT', 'Give the host directory to mount, such as /srv/share.')
    unsafe = _unsafe_character(source)
    if unsafe:
        raise Tx9Error(
            f'source={source!r} is not valid: it contains {unsafe}, which a bind mount cannot carry.',
            'INVALID_ARGUMENT',
            'Give a host directory whose path has no such character.',
        )
    if not source.startswith('/'):
        raise Tx9Error(
            f'source={source!r} is not valid: it is not an absolute path.',
            'INVALID_ARGUMENT',
            'Give the absolute path of the host directory, such as /srv/share.',
        )
    return source


def normalize_source(source: object) -> str:
    """The source as an absolute host path with symlinks resolved, or INVALID_ARGUMENT."""
    resolved = os.path.realpath(source_syntax(source))
    if _unsafe_character(resolved):
        raise Tx9Error(
            f'source={source!r} is not valid: it resolves to {resolved!r}, which a bind mount cannot carry.',
            'INVALID_ARGUMENT',
            'Give a host directory whose path has no ":".',
        )
    return resolved


def new_mount(
    source: str, target: str, read_only: object = False, require_mountpoint: object = False, gid: int | None = 0
) -> Mount:
    """A mount record; gid is the source's group when it is not root (0)."""
    return Mount(
        source=source,
        target=target,
        read_only=bool(read_only),
        require_mountpoint=bool(require_mountpoint),
        gid=int(gid or 0),
    )


def view(mount: Mount) -> dict[str, Any]:
    """A mount as modules return it."""
    return dict(
        source=mount['source'],
        target=mount['target'],
        read_only=mount['read_only'],
        require_mountpoint=mount['require_mountpoint'],
    )


# ---- the state file ---------------------------------------------------------------------------


def from_state(persisted: Mapping[str, str], box: str = '?') -> list[Mount]:
    """The box's mounts from its state file, sorted by target."""
    text = persisted.get(MOUNTS_KEY) or ''
    if not text:
        return []
    try:
        records = json.loads(text)
        if not isinstance(records, list):
            raise ValueError('not a list')
        mounts = [
            new_mount(
                source_syntax(r['source']),
                normalize_target(r['target']),
                r.get('read_only'),
                r.get('require_mountpoint'),
                r.get('gid'),
            )
            for r in records
        ]
    except (ValueError, TypeError, KeyError, AttributeError, Tx9Error) as exc:
        raise Tx9Error(
            f'The state file of box {box} holds a mount list tx9 cannot read ({getattr(exc, "reason", None) or exc}).',
            'STATE_HOME',
            f'Correct or remove the {MOUNTS_KEY} line of the box state file, then add the mounts again '
            'with col_agents.tx9.tx9_mount.',
        )
    return sorted(mounts, key=lambda m: m['target'])


def to_state(mounts: Iterable[Mount]) -> dict[str, str]:
    """The state file entry for mounts; empty (so left out) when there are none."""
    records = []
    for mount in sorted(mounts, key=lambda m: m['target']):
        record: dict[str, Any] = dict(source=mount['source'], target=mount['target'])
        if mount['read_only']:
            record['read_only'] = True
        if mount['require_mountpoint']:
            record['require_mountpoint'] = True
        if mount['gid']:
            record['gid'] = mount['gid']
        records.append(record)
    return {MOUNTS_KEY: json.dumps(records, sort_keys=True, separators=(',', ':')) if records else ''}


# ---- changing the set -------------------------------------------------------------------------


def _inside(inner: str, outer: str) -> bool:
    return inner.startswith(outer + '/')


def with_mount(mounts: Iterable[Mount], mount: Mount) -> list[Mount]:
    """The set with mount added, or replacing the mount of the same source on its target.

    Another source on that target, or a target inside another mount (or holding
    one), is MOUNT_TARGET_TAKEN.
    """
    kept = []
    for other in mounts:
        if other['target'] == mount['target']:
            if other['source'] != mount['source']:
                raise Tx9Error(
                    f'target {mount["target"]} already holds {other["source"]}; one target takes one mount.',
                    'MOUNT_TARGET_TAKEN',
                    f'Choose another target below /mnt, or remove the mount at {mount["target"]} first '
                    '(state: absent).',
                )
            continue
        if _inside(mount['target'], other['target']) or _inside(other['target'], mount['target']):
            raise Tx9Error(
                f'target {mount["target"]} overlaps the mount of {other["source"]} at {other["target"]}; '
                'mounts cannot nest.',
                'MOUNT_TARGET_TAKEN',
                f'Choose a target beside {other["target"]}, not inside or above it.',
            )
        kept.append(other)
    return sorted(kept + [mount], key=lambda m: m['target'])


def without_mount(mounts: Iterable[Mount], target: str, source: str | None = None) -> list[Mount]:
    """The set without the mount at target; a source given must be the one mounted there."""
    for mount in mounts:
        if mount['target'] == target and source is not None and mount['source'] != source:
            raise Tx9Error(
                f'target {target} holds {mount["source"]}, not {source}, so nothing is removed.',
                'MOUNT_TARGET_TAKEN',
                f'Leave source out to remove whatever is mounted at {target}, or give {mount["source"]}.',
            )
    return [m for m in mounts if m['target'] != target]


# ---- the host side ----------------------------------------------------------------------------


def mount_points(text: str) -> set[str]:
    """Mount point paths from /proc/self/mountinfo text (octal escapes decoded)."""
    points = set()
    for line in text.splitlines():
        fields = line.split(' ')
        if len(fields) > 4:
            points.add(OCTAL.sub(lambda m: chr(int(m.group(1), 8)), fields[4]))
    return points


def is_mount_point(path: str, mountinfo: str = MOUNTINFO) -> bool:
    """Whether path itself is where a filesystem is mounted."""
    try:
        with open(mountinfo, 'rb') as handle:
            text = handle.read().decode('utf-8', 'surrogateescape')
    except OSError:
        return os.path.ismount(path)
    return path in mount_points(text)


def check_source(mount: Mount, mountinfo: str = MOUNTINFO) -> os.stat_result:
    """The source's stat result once it is a directory (and a mount point when required)."""
    source = mount['source']
    try:
        info = os.stat(source)
    except OSError as exc:
        missing = 'does not exist' if exc.errno in (errno.ENOENT, errno.ENOTDIR) else f'cannot be read ({exc.strerror})'
        raise Tx9Error(
            f'The mount source {source} {missing}.',
            'MOUNT_SOURCE_MISSING',
            'Create the directory or bring its share online, or correct source.',
        )
    if not stat.S_ISDIR(info.st_mode):
        raise Tx9Error(
            f'The mount source {source} is not a directory.',
            'MOUNT_SOURCE_MISSING',
            'Give a directory as source; tx9 mounts directories only.',
        )
    if mount['require_mountpoint'] and not is_mount_point(source, mountinfo):
        raise Tx9Error(
            f'The mount source {source} is not a mount point, and require_mountpoint is set: the share meant to be '
            'there is not mounted, and its empty directory is not bound in its place.',
            'MOUNT_NOT_MOUNTED',
            f'Mount the share at {source} and run again, or set require_mountpoint: false.',
        )
    return info


def preflight(mounts: Iterable[Mount], box: str, mountinfo: str = MOUNTINFO) -> None:
    """Check every mount source before a container is removed; refusals say nothing changed."""
    for mount in mounts:
        try:
            check_source(mount, mountinfo)
        except Tx9Error as err:
            raise Tx9Error(f'{err.reason} Box {box} was not changed.', err.cause, err.fix)


def group_ids(mounts: Iterable[Mount]) -> list[int]:
    """The sorted, distinct non-root groups of the mount sources."""
    return sorted(set(m['gid'] for m in mounts if m['gid']))


def docker_binds(mounts: Iterable[Mount]) -> list[str]:
    """Docker bind strings (source:target:mode), sorted by target."""
    return [
        f'{m["source"]}:{m["target"]}:{"ro" if m["read_only"] else "rw"}'
        for m in sorted(mounts, key=lambda m: m['target'])
    ]


def live_mounts(agent_attrs: Mapping[str, Any] | None) -> list[tuple[str | None, str, bool]]:
    """The bind mounts below /mnt an agent container actually has, as (source, target, read_only)."""
    found = []
    for entry in (agent_attrs or {}).get('Mounts') or []:
        target = entry.get('Destination') or ''
        if entry.get('Type') == 'bind' and target.startswith(MOUNT_ROOT + '/'):
            found.append((entry.get('Source'), target, not entry.get('RW', True)))
    return sorted(found, key=lambda m: m[1])
