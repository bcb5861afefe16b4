# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Custom services: the executables in services.d, each run and restarted under its own log capture."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from typing import TYPE_CHECKING, Any

from .cmdargs import expect_no_args, parse_flags
from .files import ensure_runtime, locked, remove
from .statefile import read_state
from .supervise import (
    STOP_GRACE,
    Policy,
    capture_alive,
    policy_fingerprint,
    spawn_capture,
    stop_capture,
    stop_captures,
)

if TYPE_CHECKING:
    from .context import Context

SERVICE_NAME_RE = re.compile(r'^[a-z0-9][a-z0-9_-]{0,62}$')
# Restart policy of custom services (box.env or environment may override):
# first delay, its cap, fast failures in a row before giving up, and how
# short a run must be to count as a fast failure.
SERVICE_POLICY: Policy = (
    ('TX9_SERVICE_RESTART_DELAY', 1.0),
    ('TX9_SERVICE_RESTART_MAX_DELAY', 60.0),
    ('TX9_SERVICE_GIVE_UP_AFTER', 5),
    ('TX9_SERVICE_FAST_SECONDS', 10.0),
)


class Service:
    """One valid definition in services.d."""

    def __init__(self, name: str, path: str, fingerprint: str) -> None:
        self.name = name
        self.path = path
        self.fingerprint = fingerprint

    @property
    def source(self) -> str:
        return f'service-{self.name}'


def file_fingerprint(path: str, info: os.stat_result) -> str:
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, 'rb') as f:
        for chunk in iter(lambda: f.read(1024 * 1024), b''):
            digest.update(chunk)
    return f'{info.st_dev}:{info.st_ino}:{info.st_size}:{stat.S_IMODE(info.st_mode):o}:{digest.hexdigest()}'


def ignore_reason(name: str, info: os.stat_result) -> str | None:
    """Why a services.d entry is not a service (None: it is one)."""
    if not SERVICE_NAME_RE.match(name):
        return "unsafe name (use lower-case letters, digits, '-' and '_', up to 63 characters)"
    if stat.S_ISLNK(info.st_mode):
        return 'symlink (put the file itself in services.d)'
    if not stat.S_ISREG(info.st_mode):
        return 'not a regular file'
    if not info.st_mode & 0o111:
        return 'not executable (chmod +x it)'
    return None


def scan_services(directory: str) -> tuple[list[Service], list[tuple[str, str]]]:
    """(services, ignored): the valid definitions and (name, reason) for the rest, by name."""
    services: list[Service] = []
    ignored: list[tuple[str, str]] = []
    try:
        top = os.lstat(directory)
    except FileNotFoundError:
        return services, ignored
    if not stat.S_ISDIR(top.st_mode):
        return services, [(os.path.basename(directory), 'services.d is not a directory (a symlink is not followed)')]
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        try:
            info = os.lstat(path)
            reason = ignore_reason(name, info)
            if reason is None:
                services.append(Service(name, path, file_fingerprint(path, info)))
                continue
        except OSError as e:
            reason = f'unreadable ({e.strerror or e})'
        ignored.append((name, reason))
    return services, ignored


def service_states(ctx: Context) -> dict[str, dict[str, Any]]:
    """State records of every service hb knows a runtime record for, by name."""
    states = {}
    directory = ctx.paths.services_runtime
    if os.path.isdir(directory):
        for entry in os.listdir(directory):
            if entry.endswith('.state') and SERVICE_NAME_RE.match(entry[:-6]):
                states[entry[:-6]] = read_state(os.path.join(directory, entry)) or {}
    return states


def stop_all_services(ctx: Context, why: str, grace: float = STOP_GRACE) -> list[str]:
    records = [(f'service {name}', ctx.paths.service_state(name)) for name in sorted(service_states(ctx))]
    stopped = stop_captures(records, why, grace)
    return [f'{label}: stopped ({why})' for label in stopped]


def reconcile_services(ctx: Context, retry: bool = False) -> list[str]:
    """Bring the running services in line with services.d; returns what changed.

    Runs under the services lock, and rechecks the quiesce marker inside it,
    so a `hb down` racing with a pass never sees a service start after it.
    """
    ensure_runtime(ctx.paths)
    with locked(ctx.paths.services_lock, 'service reconcile', wait=30.0):
        if ctx.quiesced:
            return stop_all_services(ctx, f'quiesced by {ctx.quiesced_by}')
        services, _ignored = scan_services(ctx.paths.services_dir)
        wanted = {service.name: service for service in services}
        states = service_states(ctx)
        changes = []
        for name in sorted(set(states) - set(wanted)):
            if stop_capture(ctx.paths.service_state(name), f'service {name}', 'definition removed'):
                changes.append(f'service {name}: stopped (its definition is gone)')
            remove(ctx.paths.service_state(name))
        policy = policy_fingerprint(ctx, SERVICE_POLICY)
        for name, service in wanted.items():
            fingerprint = f'{service.fingerprint}|{policy}'
            state = states.get(name)
            path = ctx.paths.service_state(name)
            # A capture that gave up may still be exiting: it counts as given up, not as running.
            if capture_alive(state) and state.get('state') != 'gave-up':
                if state.get('fingerprint') == fingerprint:
                    continue
                stop_capture(path, f'service {name}', 'definition changed')
                why = 'restarted (its definition changed)'
            elif state and state.get('state') in ('gave-up',) and state.get('fingerprint') == fingerprint and not retry:
                continue
            elif state:
                why = 'started again' if state.get('state') in ('gave-up',) else 'restarted (it had stopped)'
                stop_capture(path, f'service {name}', 'stale')  # ends an orphaned child, forgets the record
            else:
                why = 'started'
            pid = spawn_capture(ctx, service.source, path, [service.path], fingerprint, SERVICE_POLICY)
            changes.append(f'service {name}: {why} (pid {pid})')
        return changes


def describe_service(
    state: dict[str, Any] | None, quiesced: bool, current_fingerprint: str | None = None
) -> tuple[str, Any, str]:
    """(state word, pid, detail) of one service for `hb services`."""
    alive = capture_alive(state)
    if not state or (not alive and state.get('state') not in ('gave-up',)):
        if quiesced:
            return 'stopped', None, 'quiesced; starts again after `hb up`'
        if state:
            return 'stale', None, 'it stopped unexpectedly; the next pass restarts it (or run `hb services-reload`)'
        return 'not started', None, 'starts on the next pass (within 20 s), or run `hb services-reload`'
    word = state.get('state') or 'starting'
    pid = state.get('child_pid') if alive else None
    if word == 'gave-up':
        return 'gave-up', None, (state.get('detail') or 'gave up') + '; fix it, then run `hb services-reload`'
    if alive and current_fingerprint and state.get('fingerprint') != current_fingerprint:
        return 'reload pending', pid, 'its definition changed; the next pass restarts it (or run `hb services-reload`)'
    if word == 'restarting':
        return (
            'restarting',
            None,
            (f'restart {state.get("restarts")} at {state.get("next_start_at")}, {state.get("detail") or ""}').rstrip(
                ', '
            ),
        )
    return word, pid, state.get('detail') or ''


def services_report(ctx: Context) -> dict[str, Any]:
    services, ignored = scan_services(ctx.paths.services_dir)
    states = service_states(ctx)
    quiesced = ctx.quiesced
    policy = policy_fingerprint(ctx, SERVICE_POLICY)
    entries = []
    for service in services:
        state = states.get(service.name)
        word, pid, detail = describe_service(state, quiesced, f'{service.fingerprint}|{policy}')
        entries.append(
            {
                'name': service.name,
                'path': service.path,
                'state': word,
                'pid': pid,
                'restarts': (state or {}).get('restarts', 0),
                'last_exit': (state or {}).get('last_exit'),
                'log': f'{service.source}.jsonl',
                'detail': detail,
            }
        )
    return {
        'dir': ctx.paths.services_dir,
        'quiesced': quiesced,
        'services': entries,
        'ignored': [{'name': n, 'reason': r} for n, r in ignored],
    }


def cmd_services(ctx: Context, args: list[str]) -> int:
    as_json = parse_flags('services', args, {'--json'})['--json']
    report = services_report(ctx)
    if as_json:
        print(json.dumps(report))
        return 0
    print(f'services in {report["dir"]}' + (' (box quiesced: none run until `hb up`)' if report['quiesced'] else ''))
    if not report['services']:
        print('  none defined')
    for entry in report['services']:
        pid = f' pid {entry["pid"]}' if entry['pid'] else ''
        detail = f' - {entry["detail"]}' if entry['detail'] else ''
        print(f'  {entry["name"]}: {entry["state"]}{pid}{detail}')
    for entry in report['ignored']:
        print(f'  ignored {entry["name"]}: {entry["reason"]}')
    return 0


def cmd_services_reload(ctx: Context, args: list[str]) -> int:
    expect_no_args('services-reload', args)
    changes = reconcile_services(ctx, retry=True)
    for line in changes:
        print(f'hb services-reload: {line}')
    if ctx.quiesced:
        print(
            f'hb services-reload: the box is quiesced by {ctx.quiesced_by}, so no service runs; run `hb up` to resume'
        )
    elif not changes:
        print('hb services-reload: every service is already as defined')
    return 0
