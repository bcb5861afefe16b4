# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the host reads from the box: `hb doctor --json` and when the running gateway started."""

import json

from tx9guest import boxinit, doctor

PHRASE = 'I_CONFIRM_NO_OTHER_GATEWAY_USES_THIS_IDENTITY'


def unreachable(ctx):
    return {'url': ctx.url, 'reachable': False, 'mcp_ok': False, 'detail': 'cannot connect to executor:4788'}


def test_doctor_json_prints_every_check_as_data_on_its_last_line(box, monkeypatch, run_hb):
    ctx = box()
    monkeypatch.setattr(doctor, 'executor_check', unreachable)
    code, out, _err = run_hb(ctx, 'doctor', '--json')
    report = json.loads(out.strip().splitlines()[-1])
    assert code == 1 and report['ok'] is False
    names = [c['name'] for c in report['checks']]
    assert names == [name for name, _ok, _detail in doctor.doctor_checks(ctx)]
    executor = [c for c in report['checks'] if c['name'] == 'executor'][0]
    assert executor['ok'] is False and 'cannot connect' in executor['detail']
    assert out.startswith('ok  ') or out.startswith('FAIL'), 'the lines for a person come first'


def test_doctor_runs_its_checks_in_a_stable_order_each_with_its_advice(box, monkeypatch):
    ctx = box()
    monkeypatch.setattr(doctor, 'executor_check', unreachable)
    monkeypatch.setattr(doctor, 'all_versions', lambda names: {name: (None, 'not installed') for name in names})
    monkeypatch.setattr(doctor, 'workload_running', lambda ctx: False)

    checks = doctor.doctor_checks(ctx)

    names = [name for name, _ok, _detail in checks]
    tools = [name for name in names if name.startswith('tool ')]
    assert names == tools + ['home writable', 'logs writable', 'profile', 'workload loop', 'executor', 'wiring',
                             'gateway', 'services', 'hermes state']
    found = {name: (ok, detail) for name, ok, detail in checks}
    assert found['tool node'] == (False, 'not installed')
    assert found['home writable'] == (True, ctx.paths.home)
    assert found['logs writable'] == (False, f'{ctx.paths.logs}: missing; run `hb init` as root')
    assert found['workload loop'][0] is False and 'restart the agent container' in found['workload loop'][1]
    assert found['executor'] == (False, f'{ctx.url}: cannot connect to executor:4788; '
                                        "start the box's executor container and check its logs")
    assert found['wiring'][0] is False and found['wiring'][1].endswith('; run `hb wire-mcp`')
    assert found['services'] == (True, '0 running of 0')
    assert found['hermes state'] == (True, '0 database(s) intact')


def test_doctor_takes_no_other_argument(box, run_hb):
    code, _out, err = run_hb(box(), 'doctor', '--yaml')
    assert code == 2 and "unexpected argument '--yaml'" in err


def test_status_says_since_when_the_gateway_runs_and_null_when_it_does_not(live, monkeypatch, run_hb):
    ctx = live()
    monkeypatch.setattr(doctor, 'executor_check', unreachable)
    boxinit.cmd_init(ctx, [])
    assert doctor.status_report(ctx)['gateway']['since'] is None
    code, _out, err = run_hb(ctx, 'gateway-enable', '--confirm-single-writer', PHRASE)
    assert code == 0, err
    gateway = doctor.status_report(ctx)['gateway']
    assert gateway['state'] == 'running' and gateway['since'].endswith('Z') and gateway['pid']
    assert run_hb(ctx, 'gateway-disable')[0] == 0
    assert doctor.status_report(ctx)['gateway']['since'] is None
