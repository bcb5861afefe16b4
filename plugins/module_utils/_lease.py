# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lease of a box: one playbook run (a move, an upgrade) holds a box at a time, whichever controller runs it.

Private to the col_agents.tx9 collection. The per-box lock (_lock.py) lasts one
module call; a lease lasts a whole run of a role, across its tasks. It is a file,
<state home>/leases/<box>.json, on the host the box runs on, holding its holder:
{run, controller, pid, purpose, since, until}. A run is one ansible-playbook
process (its controller, pid and the pid's start time). The file is created
whole and exclusively (a link of a written file, which fails when the lease
exists); every read-decide-write is done under a flock of the leases directory,
so two runs never both take it. It is taken over only when it expired, or when
the caller names the run holding it as gone (the controller found its process
dead). A lease file that is not one tx9 wrote (over READ_LIMIT, not JSON, no
run or until) is never taken over: which run holds the box cannot be told, so
it fails with STATE_HOME naming the file.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import time
from collections.abc import Iterator, Mapping
from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._io import ensure_dir
from ansible_collections.col_agents.tx9.plugins.module_utils._names import names_in, validate_box_name

# A lease not released (its run killed on another controller) is taken over after this many seconds.
DEFAULT_SECONDS = 6 * 3600

TAKE, KEEP, BUSY = 'take', 'keep', 'busy'

# A lease or a move's journal is a few hundred bytes of JSON: a larger file is not one tx9 wrote, and is not read.
READ_LIMIT = 64 * 1024


def decide(current: Mapping[str, Any] | None, run: str, now: float, takeover: str = '') -> str:
    """TAKE a free, expired or named-gone lease; KEEP one run already holds; BUSY otherwise."""
    if current is None:
        return TAKE
    if current.get('run') == run:
        return KEEP
    if takeover and current.get('run') == takeover:
        return TAKE
    try:
        until = float(current.get('until') or 0)
    except (TypeError, ValueError):
        until = 0.0
    return TAKE if until <= now else BUSY


def iso(seconds: float) -> str:
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(seconds))


def busy(box: str, current: Mapping[str, Any], path: str) -> Tx9Error:
    """BOX_BUSY naming the run that holds the lease, since when, and what to do."""
    until = float(current.get('until') or 0)
    return Tx9Error(
        f'Box {box} is held by another run since {current.get("since") or "?"}: {current.get("purpose") or "?"}, '
        f'by ansible-playbook pid {current.get("pid") or "?"} on controller {current.get("controller") or "?"}. '
        'Nothing was changed.',
        'BOX_BUSY',
        f'Wait for that run to finish, then run this again (a move it finished is then seen as done). If that run is '
        f'gone (its controller lost), remove {path} on this host and run again; the lease expires at {iso(until)}.',
        details=dict(holder=dict(current)),
    )


def unusable(path: str, what: str, why: str, fix: str) -> Tx9Error:
    """STATE_HOME: the file at path (a lease or a journal, what) cannot be used, why; fix says what to do."""
    return Tx9Error(f'The {what} {path} {why}.', 'STATE_HOME', fix, details=dict(path=path, limit=READ_LIMIT))


def read_bounded(path: str, what: str, fix: str) -> bytes | None:
    """The bytes of path, None when it is missing; STATE_HOME when it cannot be read or is over READ_LIMIT."""
    try:
        with open(path, 'rb') as handle:
            data = handle.read(READ_LIMIT + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise unusable(path, what, f'cannot be read: {exc.strerror}', f'Check the permissions of {path}.') from exc
    if len(data) > READ_LIMIT:
        raise unusable(path, what, f'is larger than {READ_LIMIT // 1024} KiB, more than any {what} tx9 writes', fix)
    return data


def remove_lease_fix(path: str) -> str:
    return (
        f'Nothing was changed. Once no run holds the box (no move or upgrade of it is running, from any '
        f'controller), remove {path} on this host and run again.'
    )


def parse_lease(data: bytes, path: str) -> dict[str, Any]:
    """The holder in a lease file's bytes; STATE_HOME when they are not JSON with a run and an until."""
    try:
        value = json.loads(data.decode('utf-8'))
    except ValueError:
        value = None
    if isinstance(value, dict) and value.get('run') and isinstance(value.get('run'), str):
        until = value.get('until')
        if isinstance(until, int | float) and not isinstance(until, bool):
            return value
    raise unusable(
        path,
        'lease file',
        'is not a lease tx9 wrote (a JSON object with its run and until), so which run holds the box is unknown',
        remove_lease_fix(path),
    )


class Leases:
    """The leases directory of a state home."""

    def __init__(self, home: str) -> None:
        self.dir = os.path.join(home, 'leases')

    def path(self, box: str) -> str:
        return os.path.join(self.dir, f'{validate_box_name(box)}.json')

    @contextlib.contextmanager
    def guard(self) -> Iterator[None]:
        """The leases directory flocked (briefly: one read-decide-write)."""
        ensure_dir(self.dir)
        fd = os.open(self.dir, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def read(self, box: str) -> dict[str, Any] | None:
        """The lease's holder; None when there is none; STATE_HOME when the file is not a lease (parse_lease)."""
        path = self.path(box)
        data = read_bounded(path, 'lease file', remove_lease_fix(path))
        return None if data is None else parse_lease(data, path)

    def _write(self, box: str, holder: Mapping[str, Any], exclusive: bool) -> None:
        fd, tmp = tempfile.mkstemp(prefix='.lease.', dir=self.dir)
        try:
            with os.fdopen(fd, 'w', encoding='utf-8') as handle:
                json.dump(dict(holder), handle, sort_keys=True)
                handle.flush()
                os.fsync(handle.fileno())
            if exclusive:
                os.link(tmp, self.path(box))  # EEXIST: someone holds it
            else:
                os.replace(tmp, self.path(box))
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

    def hold(
        self, box: str, holder: Mapping[str, Any], seconds: float, takeover: str = ''
    ) -> tuple[str, dict[str, Any]]:
        """(TAKE or KEEP, the lease now held) or BOX_BUSY; a kept lease is renewed."""
        with self.guard():
            current = self.read(box)
            now = time.time()
            verdict = decide(current, str(holder['run']), now, takeover)
            if verdict == BUSY:
                raise busy(box, current or {}, self.path(box))
            since = str(current.get('since')) if verdict == KEEP and current else iso(now)
            lease = dict(holder, since=since, until=now + seconds)
            try:
                self._write(box, lease, exclusive=current is None)
            except FileExistsError as exc:
                raise busy(box, self.read(box) or {}, self.path(box)) from exc
            return verdict, lease

    def prune_expired(self, check_mode: bool) -> list[str]:
        """Boxes whose lease expired, removed unless check_mode; a lease file that is not one tx9 wrote stays
        (taking it needs a person, as its STATE_HOME refusal says)."""
        if not os.path.isdir(self.dir):
            return []
        expired = []
        with self.guard():
            now = time.time()
            for box in names_in(self.dir, '.json'):
                try:
                    current = self.read(box)
                except Tx9Error:
                    continue
                if current is not None and float(current['until']) <= now:
                    if not check_mode:
                        os.unlink(self.path(box))
                    expired.append(box)
        return expired

    def release(self, box: str, run: str) -> bool:
        """Remove the lease when run holds it; True when removed (another run's lease stays)."""
        with self.guard():
            current = self.read(box)
            if current is None or current.get('run') != run:
                return False
            os.unlink(self.path(box))
            return True


def read_journal(path: str) -> dict[str, Any] | None:
    """The move's journal at path (~ is this host's user's home); None when there is none, {} when it is not
    JSON; STATE_HOME when it cannot be read or is over READ_LIMIT."""
    path = os.path.expanduser(path)
    fix = (
        f'Look at {path}: a move journal is a few hundred bytes of JSON. Once no run holds the box (no move or '
        'upgrade of it is running, from any controller), move the file away and run again.'
    )
    data = read_bounded(path, 'move journal', fix)
    if data is None:
        return None
    try:
        value = json.loads(data.decode('utf-8'))
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def changed_since(seen: Mapping[str, Any], journal: Mapping[str, Any] | None, present: bool, moved: str) -> str:
    """What changed since the play read the old host ('' when nothing did).

    seen: the journal step and dest the play read ('' when it read none); journal: the one there now;
    present: whether the box exists here; moved: its superseded mark described ('' when it has none).
    """
    step, dest = str(seen.get('step') or ''), str(seen.get('dest') or '')
    now = (str((journal or {}).get('step') or ''), str((journal or {}).get('dest') or ''))
    if now != (step, dest):
        was = f'a move to {dest} at step {step}' if step else 'no move'
        found = f'a move to {now[1]} at step {now[0]}' if now[0] else 'no move'
        return f'its journal here said {was} when this play read it, and says {found} now'
    if step:
        return ''
    if moved:
        return f'it was moved meanwhile: the copy here is {moved}'
    if not present:
        return 'it is no longer on this host'
    return ''


def stale(box: str, what: str) -> Tx9Error:
    return Tx9Error(
        f'Box {box} changed since this play read its host: {what}; another run moved it or is moving it. '
        'Nothing was changed.',
        'BOX_BUSY',
        'Run this again: its plan then starts from where the box is now.',
    )
