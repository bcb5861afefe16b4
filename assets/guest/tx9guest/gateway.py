# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Hermes gateway: one copy at most, run only while enabled and not quiesced."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shlex
import time
from typing import TYPE_CHECKING, Any

from .cmdargs import expect_no_args
from .errors import HbError
from .files import LOCK_WAIT, ensure_runtime, locked, remove, touch
from .pids import proc_cmdline, proc_stat
from .settings import flag
from .statefile import read_state
from .supervise import Policy, capture_alive, policy_fingerprint, spawn_capture, stop_capture
from .tools import find_tool

if TYPE_CHECKING:
    from .context import Context

CONFIRM_PHRASE = 'I_CONFIRM_NO_OTHER_GATEWAY_USES_THIS_IDENTITY'
DEFAULT_GATEWAY_ARGS = ('gateway', 'run', '--replace', '--external-supervisor')
GATEWAY_POLICY: Policy = (
    ('TX9_GATEWAY_RESTART_DELAY', 2.0),
    ('TX9_GATEWAY_RESTART_MAX_DELAY', 60.0),
    ('TX9_GATEWAY_GIVE_UP_AFTER', 5),
    ('TX9_GATEWAY_FAST_SECONDS', 10.0),
)
GATEWAY_SETTLE = 3.0
GATEWAY_PROCESS_RE = re.compile(r'(^|/)hermes(\s+\S+)*\s+gateway\s+run(\s|$)')


def gateway_argv(ctx: Context) -> list[str] | None:
    """The gateway's argv: TX9_GATEWAY_ARGV (a JSON list) or Hermes' own."""
    raw = (ctx.settings.get('TX9_GATEWAY_ARGV') or '').strip()
    if raw:
        try:
            argv = json.loads(raw)
        except ValueError:
            argv = None
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) and a for a in argv):
            raise HbError(
                'TX9_GATEWAY_ARGV is not a JSON list of non-empty strings; '
                "fix it in the agent container's environment, or unset it to run Hermes' gateway"
            )
        return argv
    hermes = find_tool('hermes')
    if not flag(ctx.settings, 'INSTALL_HERMES') or hermes is None:
        return None
    return [hermes] + list(DEFAULT_GATEWAY_ARGS)


def stray_gateways(state: dict[str, Any] | None) -> list[int]:
    """PIDs of Hermes gateway processes that hb does not supervise."""
    ours: set[int] = set()
    if capture_alive(state):
        ours.add(state['pid'])
    parents: dict[int, int] = {}
    candidates = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        info = proc_stat(entry)
        if info is None or info[0] in ('Z', 'X'):
            continue
        parents[int(entry)] = info[1]
        argv = proc_cmdline(entry)
        if argv and GATEWAY_PROCESS_RE.search(' '.join(argv)) and not any('tx9-logs' in a for a in argv):
            candidates.append(int(entry))
    strays = []
    for pid in candidates:
        seen: set[int] = set()
        current: int | None = pid
        while current and current not in seen and current not in ours:
            seen.add(current)
            current = parents.get(current)
        if current not in ours:
            strays.append(pid)
    return strays


def gateway_view(ctx: Context) -> tuple[str, Any, str]:
    """(state word, pid, detail) of the gateway."""
    state = read_state(ctx.paths.gateway_state)
    if capture_alive(state):
        word = state.get('state') or 'starting'
        if word == 'restarting':
            return 'restarting', None, f'restart {state.get("restarts")} at {state.get("next_start_at")}'
        return word, state.get('child_pid'), state.get('detail') or ''
    if not ctx.gateway_enabled:
        return 'disabled', None, 'intentionally disabled; enable with `hb gateway-enable --confirm-single-writer ...`'
    if ctx.quiesced:
        return 'stopped', None, f'quiesced by {ctx.quiesced_by}; starts again after `hb up`'
    if state and state.get('state') == 'gave-up':
        return (
            'gave-up',
            None,
            (state.get('detail') or 'gave up') + '; read `hb logs hermes`, then `hb gateway-enable ...`',
        )
    return 'stopped', None, 'enabled but not running; the next pass starts it'


def gateway_since(ctx: Context) -> Any:
    """When the running gateway process started (UTC text), or None when none runs."""
    state = read_state(ctx.paths.gateway_state)
    if not capture_alive(state) or state.get('state') not in ('running', 'starting'):
        return None
    return state.get('child_started_at')


def reconcile_gateway(ctx: Context, retry: bool = False, wait: float = LOCK_WAIT) -> list[str]:
    """Start or stop the gateway to match the markers; returns what changed.

    Both markers are read inside the gateway lock, which every start and stop
    takes, so a `down` or `gateway-disable` is never undone by a pass that was
    already running.
    """
    ensure_runtime(ctx.paths)
    with locked(ctx.paths.gateway_lock, 'gateway start or stop', wait=wait):
        state = read_state(ctx.paths.gateway_state) or {}
        alive = capture_alive(state)
        argv = gateway_argv(ctx) if ctx.gateway_enabled else None
        if ctx.quiesced or not ctx.gateway_enabled or argv is None:
            if not alive:
                return []
            why = (
                f'quiesced by {ctx.quiesced_by}'
                if ctx.quiesced
                else 'disabled'
                if not ctx.gateway_enabled
                else 'Hermes is not installed'
            )
            stop_capture(ctx.paths.gateway_state, 'the gateway', why)
            return [f'gateway: stopped ({why})']
        fingerprint = hashlib.sha256(json.dumps([argv, policy_fingerprint(ctx, GATEWAY_POLICY)]).encode()).hexdigest()
        if alive and state.get('fingerprint') == fingerprint:
            return []
        if alive:
            stop_capture(ctx.paths.gateway_state, 'the gateway', 'its command changed')
        elif state and state.get('state') == 'gave-up' and state.get('fingerprint') == fingerprint and not retry:
            return []
        strays = stray_gateways(None)
        if strays:
            raise HbError(
                f"another Hermes gateway runs outside hb's control (pid {', '.join(map(str, strays))}), "
                'and two gateways must never share one identity; stop it, then run `hb up`'
            )
        pid = spawn_capture(ctx, 'hermes', ctx.paths.gateway_state, argv, fingerprint, GATEWAY_POLICY)
        return [f'gateway: started (pid {pid})']


def parse_confirmation(args: list[str]) -> None:
    if not args:
        raise HbError(
            f'enabling the gateway needs --confirm-single-writer {CONFIRM_PHRASE}; run it that way '
            'only when no other box or machine runs a gateway for this Hermes identity'
        )
    if len(args) == 1 and args[0].startswith('--confirm-single-writer='):
        phrase = args[0].split('=', 1)[1]
    elif len(args) == 2 and args[0] == '--confirm-single-writer':
        phrase = args[1]
    else:
        raise HbError(
            f'gateway-enable takes exactly --confirm-single-writer {CONFIRM_PHRASE}, '
            f'not {" ".join(shlex.quote(a) for a in args)}'
        )
    if phrase != CONFIRM_PHRASE:
        raise HbError(
            f'the confirmation phrase is wrong; type it exactly: '
            f'hb gateway-enable --confirm-single-writer {CONFIRM_PHRASE}'
        )


def cmd_gateway_enable(ctx: Context, args: list[str]) -> int:
    parse_confirmation(args)
    if ctx.quiesced:
        raise HbError(
            f'the box is quiesced (by {ctx.quiesced_by}), and nothing runs until it resumes; '
            'run `hb up`, then enable the gateway'
        )
    if gateway_argv(ctx) is None:
        raise HbError(
            'Hermes is not installed in this box image (INSTALL_HERMES is not 1), so there is no '
            'gateway to enable; rebuild the image with Hermes'
        )
    ensure_runtime(ctx.paths)
    try:
        with locked(ctx.paths.gateway_lock, 'gateway start or stop', wait=LOCK_WAIT):
            remove(ctx.paths.gateway_disabled)
            touch(ctx.paths.gateway_policy)
    except HbError:
        raise HbError(
            'the gateway is busy (another start or stop holds its lock); '
            'nothing was changed, run the command again in a moment'
        ) from None
    try:
        reconcile_gateway(ctx, retry=True)
        deadline = time.monotonic() + GATEWAY_SETTLE
        while time.monotonic() < deadline:
            state = read_state(ctx.paths.gateway_state)
            if not capture_alive(state) or (state or {}).get('state') in ('restarting', 'gave-up'):
                last = (state or {}).get('last_exit')
                raise HbError(
                    f'the gateway exited at once (exit status {last}); read `hb logs hermes`, fix the '
                    'cause, then enable it again'
                )
            time.sleep(0.2)
    except HbError:
        touch(ctx.paths.gateway_disabled)
        with contextlib.suppress(HbError):
            reconcile_gateway(ctx, wait=30.0)
        raise
    word, pid, _detail = gateway_view(ctx)
    print(f'hb gateway-enable: the gateway is enabled and {word}' + (f' (pid {pid})' if pid else ''))
    return 0


def cmd_gateway_disable(ctx: Context, args: list[str]) -> int:
    expect_no_args('gateway-disable', args)
    touch(ctx.paths.gateway_disabled)
    if not os.path.lexists(ctx.paths.gateway_disabled):
        raise HbError(f'could not write {ctx.paths.gateway_disabled}; check the data volume, then run it again')
    changes = reconcile_gateway(ctx, wait=30.0)
    print('hb gateway-disable: the gateway is disabled' + (' and stopped' if changes else ' (it was not running)'))
    return 0
