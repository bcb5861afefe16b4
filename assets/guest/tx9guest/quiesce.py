# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Quiesce and resume (`hb down`, `hb up`, `hb is-paused`), and the reconcile pass both build on."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from .cmdargs import expect_no_args, parse_option
from .errors import HbError
from .files import ensure_runtime, locked, remove, write_atomic
from .gateway import reconcile_gateway
from .mcp import executor_advice, executor_check
from .services import reconcile_services, stop_all_services
from .supervise import STOP_GRACE, stop_capture
from .wiring import wire_once

if TYPE_CHECKING:
    from .context import Context


def stop_everything(ctx: Context, why: str, grace: float = STOP_GRACE, wait: float = 30.0) -> list[str]:
    """Stop every service and the gateway; returns what was stopped."""
    ensure_runtime(ctx.paths)
    stopped = []
    with locked(ctx.paths.services_lock, 'service reconcile', wait=wait):
        stopped += stop_all_services(ctx, why, grace)
    with locked(ctx.paths.gateway_lock, 'gateway start or stop', wait=wait):
        if stop_capture(ctx.paths.gateway_state, 'the gateway', why, grace):
            stopped.append(f'gateway: stopped ({why})')
    return stopped


def run_pass(ctx: Context, retry: bool = False) -> tuple[list[str], list[str]]:
    """One reconcile pass: wiring, services, gateway. Returns (changes, problems).

    Wiring only rewrites config files, so it also runs while quiesced (an
    imported box arrives quiesced and must be wired to its new token).
    """
    changes: list[str] = []
    problems: list[str] = []
    if ctx.wiring_enabled:
        try:
            summary = wire_once(ctx)
            if summary.startswith('rewired'):
                changes.append(summary)
        except HbError as e:
            problems.append(f'wiring failed: {e}')
    for what, step in (('services', reconcile_services), ('gateway', reconcile_gateway)):
        try:
            changes += step(ctx, retry=retry)
        except HbError as e:
            problems.append(f'{what}: {e}')
    return changes, problems


def cmd_down(ctx: Context, args: list[str]) -> int:
    who = parse_option('down', args, '--by') or 'user'
    already = ctx.quiesced_by
    if already is None:
        write_atomic(ctx.paths.quiesced, who + '\n', 0o644)
    if not os.path.lexists(ctx.paths.quiesced):
        raise HbError(f'could not write {ctx.paths.quiesced}; check the data volume, then run `hb down` again')
    by = ctx.quiesced_by
    for line in stop_everything(ctx, f'quiesced by {by}'):
        print(f'hb down: {line}')
    if already is not None and already != who:
        print(f'hb down: the box was already quiesced by {already}; that stays (it resumes with `hb up`)')
    print(f'hb down: quiesced by {by}; services and the gateway stay stopped until `hb up`')
    return 0


def cmd_up(ctx: Context, args: list[str]) -> int:
    only_if = parse_option('up', args, '--if-by')
    by = ctx.quiesced_by
    if only_if is not None and by != only_if:
        state = f'quiesced by {by}' if by else 'not quiesced'
        print(f'hb up: nothing to do: the box is {state}, not by {only_if}')
        return 0
    remove(ctx.paths.quiesced)
    if os.path.lexists(ctx.paths.quiesced):
        raise HbError(f'could not remove {ctx.paths.quiesced}; check the data volume, then run `hb up` again')
    changes, problems = run_pass(ctx, retry=True)
    for line in changes:
        print(f'hb up: {line}')
    if problems:
        raise HbError('resumed, but ' + '; '.join(problems))
    check = executor_check(ctx)
    if not check['mcp_ok']:
        print(
            f'hb up: warning: Executor at {check["url"]} does not answer ({check["detail"]}); {executor_advice(check)}',
            file=sys.stderr,
        )
    print('hb up: resumed' + (f' (was quiesced by {by})' if by else ' (was not quiesced)'))
    return 0


def cmd_is_paused(ctx: Context, args: list[str]) -> int:
    expect_no_args('is-paused', args)
    by = ctx.quiesced_by
    print(f'quiesced by {by}' if by else 'not quiesced')
    return 0 if by else 1
