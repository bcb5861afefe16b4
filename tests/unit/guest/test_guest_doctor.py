# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""`hb status`: healthy only with a working Executor and current wiring, and who quiesced the box."""

import json

from tx9guest import doctor, quiesce, wiring


def test_status_is_healthy_only_with_a_working_executor_and_current_wiring(box, monkeypatch):
    ctx = box()
    up = {'url': ctx.url, 'reachable': True, 'mcp_ok': True, 'detail': 'ok'}
    monkeypatch.setattr(doctor, 'executor_check', lambda c: up)
    assert doctor.status_report(ctx)['healthy'] is False
    wiring.wire(ctx)
    report = doctor.status_report(ctx)
    assert report['healthy'] is True
    assert {'box', 'quiesced', 'gateway_disabled', 'executor', 'wiring', 'healthy'} <= set(report)
    assert report['quiesced_by'] is None
    monkeypatch.setattr(doctor, 'executor_check', lambda c: dict(up, mcp_ok=False))
    assert doctor.status_report(ctx)['healthy'] is False


def test_status_json_is_the_last_line_and_exits_zero_when_unhealthy(box, monkeypatch, capsys):
    ctx = box()
    down = {'url': ctx.url, 'reachable': False, 'mcp_ok': False, 'detail': 'cannot connect'}
    monkeypatch.setattr(doctor, 'executor_check', lambda c: down)
    assert doctor.cmd_status(ctx, ['--json']) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    report = json.loads(last)
    assert report['healthy'] is False
    assert report['wiring']['stale'] == ['marker', 'token', 'claude', 'codex', 'hermes']
    assert report['box'] == 'demo'


def test_status_reports_who_quiesced_the_box(live, monkeypatch):
    ctx = live()
    monkeypatch.setattr(doctor, 'executor_check', lambda c: {'url': c.url, 'reachable': False, 'mcp_ok': False, 'detail': 'x'})
    assert doctor.status_report(ctx)['quiesced_by'] is None
    quiesce.cmd_down(ctx, ['--by', 'backup'])
    report = doctor.status_report(ctx)
    assert report['quiesced'] is True and report['quiesced_by'] == 'backup'
    assert report['gateway'] == {'enabled': True, 'state': 'stopped', 'pid': None, 'since': None,
                                 'detail': 'quiesced by backup; starts again after `hb up`'}


def test_status_health_exits_one_unless_the_box_is_healthy(box, monkeypatch):
    ctx = box()
    up = {'url': ctx.url, 'reachable': True, 'mcp_ok': True, 'detail': 'ok'}
    monkeypatch.setattr(doctor, 'executor_check', lambda c: up)
    assert doctor.cmd_status(ctx, ['--health']) == 1
    wiring.wire(ctx)
    assert doctor.cmd_status(ctx, ['--health']) == 0
    monkeypatch.setattr(doctor, 'executor_check', lambda c: dict(up, mcp_ok=False))
    assert doctor.cmd_status(ctx, ['--health', '--json']) == 1


def test_executor_health_is_unhealthy_without_a_readable_token_file(box, capsys):
    from tx9guest import health
    assert health.cmd_executor_health(box(), []) == 1
    assert 'unhealthy: the token file cannot be read' in capsys.readouterr().out
