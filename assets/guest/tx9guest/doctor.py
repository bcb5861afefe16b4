# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The box at a glance (`hb status`) and every check with its advice (`hb doctor`)."""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any

from .cmdargs import parse_flags
from .files import probe_writable
from .gateway import gateway_since, gateway_view
from .mcp import executor_advice, executor_check
from .services import services_report
from .settings import Paths, agent_ids, flag
from .state import check_database, find_databases
from .supervise import run_as_agent
from .tools import TOOLS, all_versions
from .wiring import wiring_stale, wiring_state
from .workload import workload_running

if TYPE_CHECKING:
    from .context import Context

# One line of `hb doctor`: the check's name, whether it passed, and what it found or what to do.
Check = tuple[str, bool, str]


def status_report(ctx: Context) -> dict[str, Any]:
    """The box at a glance. Fast: reads files and asks Executor, never runs a CLI."""
    executor = executor_check(ctx)
    wiring = wiring_state(ctx)
    gateway_state, gateway_pid, gateway_detail = gateway_view(ctx)
    services = services_report(ctx)
    return {
        'box': ctx.box,
        'quiesced': ctx.quiesced,
        'quiesced_by': ctx.quiesced_by,
        'gateway_disabled': not ctx.gateway_enabled,
        'gateway': {
            'enabled': ctx.gateway_enabled,
            'state': gateway_state,
            'pid': gateway_pid,
            'since': gateway_since(ctx),
            'detail': gateway_detail,
        },
        'services': {
            'defined': len(services['services']),
            'running': sum(1 for s in services['services'] if s['state'] == 'running'),
            'gave_up': [s['name'] for s in services['services'] if s['state'] == 'gave-up'],
            'ignored': len(services['ignored']),
        },
        'workload': workload_running(ctx),
        'executor': executor,
        'wiring': wiring,
        'healthy': bool(executor['mcp_ok'] and wiring['current']),
    }


def format_status(report: dict[str, Any]) -> str:
    ex = report['executor']
    wiring = report['wiring']
    if not wiring['enabled']:
        wiring_line = 'disabled (WIRE_EXECUTOR_MCP is not 1)'
    elif wiring['current']:
        wiring_line = 'current'
    else:
        wiring_line = 'stale: ' + ', '.join(wiring['stale']) + ' (run `hb wire-mcp`)'
    yes = {True: 'yes', False: 'no'}
    gateway = report['gateway']
    services = report['services']
    service_line = f'{services["running"]} running of {services["defined"]}'
    if services['gave_up']:
        service_line += f'; gave up: {", ".join(services["gave_up"])} (see `hb services`)'
    rows = [
        ('box', report['box']),
        ('executor', f'{ex["url"]}  {"ok" if ex["mcp_ok"] else "FAIL"}: {ex["detail"]}'),
        ('wiring', wiring_line),
        ('quiesced', f'yes, by {report["quiesced_by"]}' if report['quiesced'] else 'no'),
        ('gateway', gateway['state'] + (f' (pid {gateway["pid"]})' if gateway['pid'] else '')),
        ('services', service_line),
        ('loop', 'running' if report['workload'] else 'not running'),
        ('healthy', yes[report['healthy']]),
    ]
    return '\n'.join(f'{name:<10}{value}' for name, value in rows)


def cmd_status(ctx: Context, args: list[str]) -> int:
    flags = parse_flags('status', args, {'--json', '--health'})
    report = status_report(ctx)
    if flags['--json']:
        print(json.dumps(report, sort_keys=False))
    else:
        print(format_status(report))
    # --health is the container's health check: unhealthy unless Executor answers and the wiring is current.
    return 1 if flags['--health'] and not report.get('healthy') else 0


def doctor_checks(ctx: Context) -> list[Check]:
    """(name, ok, detail) for every check, in a stable order."""
    checks = tool_checks(ctx)
    checks.append(writable_check('home writable', ctx.paths.home))
    checks.append(writable_check('logs writable', ctx.paths.logs))
    profile = Paths.profile
    checks.append(
        (
            'profile',
            os.path.isfile(profile),
            profile if os.path.isfile(profile) else f'{profile} is missing; rebuild the box image',
        )
    )
    loop = workload_running(ctx)
    checks.append(
        (
            'workload loop',
            loop,
            'running' if loop else 'not running; restart the agent container (its main process is the loop)',
        )
    )
    ex = executor_check(ctx)
    checks.append(
        (
            'executor',
            ex['mcp_ok'],
            ex['detail'] if ex['mcp_ok'] else f'{ex["url"]}: {ex["detail"]}; {executor_advice(ex)}',
        )
    )
    if ctx.wiring_enabled:
        stale = wiring_stale(ctx)
        checks.append(
            ('wiring', not stale, 'current' if not stale else 'stale: ' + ', '.join(stale) + '; run `hb wire-mcp`')
        )
    checks.append(gateway_check(ctx))
    checks.append(services_check(ctx))
    checks.append(hermes_state_check(ctx))
    return checks


def tool_checks(ctx: Context) -> list[Check]:
    """One check per tool the image installs: its version, or why it has none."""
    wanted = [name for name, flag_name in TOOLS if flag_name is None or flag(ctx.settings, flag_name)]
    return [
        (f'tool {name}', version is not None, version or problem or '')
        for name, (version, problem) in all_versions(wanted).items()
    ]


def writable_check(name: str, directory: str) -> Check:
    problem = probe_writable(directory) if os.path.isdir(directory) else 'missing'
    return (
        name,
        problem is None,
        directory if problem is None else f'{directory}: {problem}; run `hb init` as root',
    )


def gateway_check(ctx: Context) -> Check:
    word, pid, detail = gateway_view(ctx)
    if word == 'disabled' or ctx.quiesced:
        return ('gateway', True, detail)
    return ('gateway', word == 'running', f'running (pid {pid})' if word == 'running' else f'{word}: {detail}')


def services_check(ctx: Context) -> Check:
    report = services_report(ctx)
    bad = [s for s in report['services'] if s['state'] in ('gave-up', 'stale')]
    summary = f'{sum(1 for s in report["services"] if s["state"] == "running")} running of {len(report["services"])}'
    if report['ignored']:
        summary += f', {len(report["ignored"])} ignored entr{"y" if len(report["ignored"]) == 1 else "ies"}'
    return (
        'services',
        not bad,
        summary if not bad else '; '.join(f'{s["name"]} {s["state"]}' for s in bad) + '; see `hb services`',
    )


def hermes_state_check(ctx: Context) -> Check:
    databases = [check_database(path, False, pragma='quick_check') for path in find_databases(ctx.paths.hermes_home)]
    broken = [d for d in databases if not d['ok']]
    return (
        'hermes state',
        not broken,
        f'{len(databases)} database(s) intact'
        if not broken
        else f'{broken[0]["path"]}: {broken[0]["problem"]}; run `hb verify-state`',
    )


def cmd_doctor(ctx: Context, args: list[str]) -> int:
    as_json = parse_flags('doctor', args, {'--json'})['--json']
    if os.geteuid() == 0 and agent_ids():
        # The checks are the agent's view; and SQLite must not leave root-owned sidecars.
        return run_as_agent(ctx, 'doctor', args)
    checks = doctor_checks(ctx)
    for name, ok, detail in checks:
        print(f'{"ok  " if ok else "FAIL"} {name}: {detail}')
    failed = [name for name, ok, _detail in checks if not ok]
    if as_json:
        print(
            json.dumps(
                {
                    'ok': not failed,
                    'checks': [{'name': name, 'ok': ok, 'detail': detail} for name, ok, detail in checks],
                }
            )
        )
    if failed:
        print(f'hb doctor: {len(failed)} check(s) failed: {", ".join(failed)}', file=sys.stderr)
        return 1
    print(f'hb doctor: all {len(checks)} checks passed')
    return 0
