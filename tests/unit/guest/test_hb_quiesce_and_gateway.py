# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Markers: durable quiesce (down/up/is-paused, --by and --if-by), and the single-writer gateway."""


import json
import os
import sys
import time

import pytest

PHRASE = 'I_CONFIRM_NO_OTHER_GATEWAY_USES_THIS_IDENTITY'


def run(hb, monkeypatch, capsys, ctx, *argv):
    """(exit code, stdout, stderr) of `hb ARGV` against ctx."""
    monkeypatch.setattr(hb, 'Context', lambda: ctx)
    code = hb.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def wait_for(check, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


def gateway_pid(hb, ctx):
    return hb.gateway_view(ctx)[1]


def alive(pid):
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False


def enable(hb, monkeypatch, capsys, ctx):
    return run(hb, monkeypatch, capsys, ctx, 'gateway-enable', '--confirm-single-writer', PHRASE)


def test_down_quiesces_durably_by_user_by_default(live, hb, monkeypatch, capsys):
    ctx = live()
    code, out, _err = run(hb, monkeypatch, capsys, ctx, 'down')
    assert code == 0 and 'quiesced by user' in out
    with open(ctx.paths.quiesced) as f:
        assert f.read() == 'user\n'
    assert run(hb, monkeypatch, capsys, ctx, 'is-paused')[:2] == (0, 'quiesced by user\n')


def test_is_paused_exits_1_when_the_box_is_not_quiesced(live, hb, monkeypatch, capsys):
    assert run(hb, monkeypatch, capsys, live(), 'is-paused')[:2] == (1, 'not quiesced\n')


def test_pause_and_resume_are_aliases_of_down_and_up(live, hb, monkeypatch, capsys):
    ctx = live()
    assert run(hb, monkeypatch, capsys, ctx, 'pause', '--by', 'ops')[0] == 0
    assert ctx.quiesced_by == 'ops'
    assert run(hb, monkeypatch, capsys, ctx, 'resume')[0] == 0
    assert ctx.quiesced_by is None


def test_a_second_down_keeps_who_quiesced_first(live, hb, monkeypatch, capsys):
    ctx = live()
    run(hb, monkeypatch, capsys, ctx, 'down')
    code, out, _err = run(hb, monkeypatch, capsys, ctx, 'down', '--by', 'backup')
    assert code == 0 and 'already quiesced by user' in out
    assert ctx.quiesced_by == 'user'


def test_up_if_by_only_resumes_when_that_party_quiesced_the_box(live, hb, monkeypatch, capsys):
    ctx = live()
    run(hb, monkeypatch, capsys, ctx, 'down')
    code, out, _err = run(hb, monkeypatch, capsys, ctx, 'up', '--if-by', 'backup')
    assert code == 0 and 'nothing to do' in out and ctx.quiesced_by == 'user'
    run(hb, monkeypatch, capsys, ctx, 'up')
    run(hb, monkeypatch, capsys, ctx, 'down', '--by=backup')
    assert run(hb, monkeypatch, capsys, ctx, 'up', '--if-by=backup')[0] == 0
    assert ctx.quiesced_by is None


def test_up_if_by_on_a_running_box_does_nothing_and_succeeds(live, hb, monkeypatch, capsys):
    code, out, _err = run(hb, monkeypatch, capsys, live(), 'up', '--if-by', 'backup')
    assert code == 0 and 'not quiesced' in out


def test_status_reports_who_quiesced_the_box(live, hb, monkeypatch):
    ctx = live()
    monkeypatch.setattr(hb, 'executor_check', lambda c: {'url': c.url, 'reachable': False, 'mcp_ok': False, 'detail': 'x'})
    assert hb.status_report(ctx)['quiesced_by'] is None
    hb.cmd_down(ctx, ['--by', 'backup'])
    report = hb.status_report(ctx)
    assert report['quiesced'] is True and report['quiesced_by'] == 'backup'
    assert report['gateway'] == {'enabled': True, 'state': 'stopped', 'pid': None,
                                 'detail': 'quiesced by backup; starts again after `hb up`'}


def test_a_marker_with_unexpected_content_reads_as_quiesced_by_unknown(box, hb):
    ctx = box()
    os.makedirs(ctx.paths.state)
    with open(ctx.paths.quiesced, 'w') as f:
        f.write('not a word!\n')
    assert ctx.quiesced_by == 'unknown'


@pytest.mark.parametrize('argv', [['down', '--by'], ['down', '--by', 'a b'], ['down', 'now'], ['up', '--if-by', '']])
def test_bad_quiesce_arguments_print_usage_and_exit_2(live, hb, monkeypatch, capsys, argv):
    assert run(hb, monkeypatch, capsys, live(), *argv)[0] == 2


def test_init_at_boot_keeps_the_quiesce_marker_and_forgets_runtime_state(live, hb, monkeypatch, tmp_path):
    ctx = live()
    monkeypatch.setattr(hb, 'DATA_DIR', str(tmp_path))
    hb.cmd_down(ctx, ['--by', 'backup'])
    with open(os.path.join(ctx.paths.runtime, 'leftover.state'), 'w') as f:
        f.write('{}')
    assert hb.cmd_init(ctx, ['--boot']) == 0
    assert ctx.quiesced_by == 'backup', 'a quiesce survives container restarts'
    assert not os.path.exists(os.path.join(ctx.paths.runtime, 'leftover.state'))
    assert os.path.isdir(ctx.paths.services_dir)


def test_a_new_box_starts_with_the_gateway_disabled(live, hb, monkeypatch, tmp_path):
    ctx = live()
    monkeypatch.setattr(hb, 'DATA_DIR', str(tmp_path))
    hb.cmd_init(ctx, [])
    assert not ctx.gateway_enabled
    assert hb.reconcile_gateway(ctx) == []


@pytest.mark.parametrize('argv', [
    [],
    ['--confirm-single-writer'],
    ['--confirm-single-writer', 'yes'],
    ['--confirm-single-writer', PHRASE.lower()],
    ['--confirm-single-writer=I_CONFIRM'],
    ['--confirm-single-writer', PHRASE, '--force'],
    [PHRASE],
])
def test_gateway_enable_without_the_exact_phrase_is_refused(live, hb, monkeypatch, capsys, tmp_path, argv):
    ctx = live()
    monkeypatch.setattr(hb, 'DATA_DIR', str(tmp_path))
    hb.cmd_init(ctx, [])
    capsys.readouterr()
    code, _out, err = run(hb, monkeypatch, capsys, ctx, 'gateway-enable', *argv)
    assert code == 1 and err.startswith('hb gateway-enable: ') and PHRASE in err
    assert os.path.exists(ctx.paths.gateway_disabled)
    assert gateway_pid(hb, ctx) is None


def test_gateway_enable_is_refused_while_quiesced(live, hb, monkeypatch, capsys, tmp_path):
    ctx = live()
    monkeypatch.setattr(hb, 'DATA_DIR', str(tmp_path))
    hb.cmd_init(ctx, [])
    hb.cmd_down(ctx, [])
    code, _out, err = enable(hb, monkeypatch, capsys, ctx)
    assert code == 1 and 'quiesced' in err and '`hb up`' in err
    assert os.path.exists(ctx.paths.gateway_disabled)


def test_gateway_enable_with_the_phrase_runs_the_gateway_and_disable_stops_it(live, hb, monkeypatch, capsys, tmp_path):
    ctx = live()
    monkeypatch.setattr(hb, 'DATA_DIR', str(tmp_path))
    hb.cmd_init(ctx, [])
    code, out, err = enable(hb, monkeypatch, capsys, ctx)
    assert code == 0, err
    assert 'enabled and running' in out and not os.path.exists(ctx.paths.gateway_disabled)
    pid = gateway_pid(hb, ctx)
    with open('/proc/%d/cmdline' % pid, 'rb') as f:
        assert b'tx9-test-gateway' in f.read()
    assert hb.reconcile_gateway(ctx) == [], 'a running gateway is left alone'
    assert run(hb, monkeypatch, capsys, ctx, 'gateway-disable')[0] == 0
    assert os.path.exists(ctx.paths.gateway_disabled) and not alive(pid)
    assert hb.reconcile_gateway(ctx) == []


def test_down_stops_the_gateway_and_up_starts_it_again(live, hb, monkeypatch, capsys, tmp_path):
    ctx = live()
    monkeypatch.setattr(hb, 'DATA_DIR', str(tmp_path))
    hb.cmd_init(ctx, [])
    enable(hb, monkeypatch, capsys, ctx)
    pid = gateway_pid(hb, ctx)
    started = time.monotonic()
    hb.cmd_down(ctx, [])
    assert time.monotonic() - started < 5 and not alive(pid)
    assert hb.run_pass(ctx)[0] == [] and gateway_pid(hb, ctx) is None
    hb.cmd_up(ctx, [])
    assert wait_for(lambda: gateway_pid(hb, ctx))
    assert ctx.gateway_enabled, 'quiesce and the gateway switch are independent'


def test_a_gateway_that_exits_at_once_is_reported_and_the_disabled_marker_re_armed(live, hb, monkeypatch, capsys, tmp_path):
    ctx = live(TX9_GATEWAY_ARGV=json.dumps([sys.executable, '-c', 'import sys; sys.exit(4)']))
    monkeypatch.setattr(hb, 'DATA_DIR', str(tmp_path))
    hb.cmd_init(ctx, [])
    code, _out, err = enable(hb, monkeypatch, capsys, ctx)
    assert code == 1 and 'exited at once' in err and 'hb logs hermes' in err
    assert os.path.exists(ctx.paths.gateway_disabled)


def test_a_malformed_gateway_argv_is_refused_with_a_sentence(live, hb, monkeypatch, capsys, tmp_path):
    ctx = live(TX9_GATEWAY_ARGV='hermes gateway run')
    monkeypatch.setattr(hb, 'DATA_DIR', str(tmp_path))
    hb.cmd_init(ctx, [])
    code, _out, err = enable(hb, monkeypatch, capsys, ctx)
    assert code == 1 and 'TX9_GATEWAY_ARGV is not a JSON list' in err


def test_the_gateway_is_refused_when_another_hermes_gateway_already_runs(live, hb, monkeypatch, capsys, tmp_path):
    ctx = live()
    monkeypatch.setattr(hb, 'DATA_DIR', str(tmp_path))
    hb.cmd_init(ctx, [])
    monkeypatch.setattr(hb, 'stray_gateways', lambda state: [4242])
    code, _out, err = enable(hb, monkeypatch, capsys, ctx)
    assert code == 1 and '4242' in err and 'two gateways' in err
    assert os.path.exists(ctx.paths.gateway_disabled)


def test_hermes_gateway_processes_are_recognised_by_their_command_line(hb):
    pattern = hb.GATEWAY_PROCESS_RE
    assert pattern.search('/opt/tx9/hermes/bin/python3 /opt/tx9/bin/hermes gateway run --replace')
    assert pattern.search('hermes --profile x gateway run')
    assert not pattern.search('hermes gateway status')
    assert not pattern.search('vim notes-about-hermes-gateway-run.txt')


def test_wiring_while_quiesced_starts_nothing(live, hb, monkeypatch, capsys, tmp_path, write_service):
    ctx = live(WIRE_EXECUTOR_MCP='1')
    monkeypatch.setattr(hb, 'DATA_DIR', str(tmp_path))
    write_service(ctx, 'web', '#!/bin/sh\nexec sleep 300\n')
    hb.cmd_down(ctx, ['--by', 'import'])
    assert run(hb, monkeypatch, capsys, ctx, 'wire-mcp')[0] == 0
    assert run(hb, monkeypatch, capsys, ctx, 'wire-once')[1] == 'hb wire-once: wiring current\n'
    assert hb.services_report(ctx)['services'][0]['state'] == 'stopped'
    assert ctx.quiesced_by == 'import'


def test_the_loop_wires_but_starts_nothing_while_quiesced(live, hb, monkeypatch, tmp_path, write_service):
    ctx = live(WIRE_EXECUTOR_MCP='1')
    write_service(ctx, 'web', '#!/bin/sh\nexec sleep 300\n')
    hb.cmd_down(ctx, ['--by', 'import'])
    changes, problems = hb.run_pass(ctx)
    assert problems == [] and changes == ['rewired executor MCP (was stale: marker, token, claude, codex, hermes)']
    assert hb.services_report(ctx)['services'][0]['state'] == 'stopped'


def test_a_marker_that_is_a_symlink_or_a_fifo_reads_as_unknown_without_blocking(box, hb, tmp_path):
    ctx = box()
    os.makedirs(ctx.paths.state)
    target = tmp_path / 'elsewhere'
    target.write_text('backup\n')
    os.symlink(str(target), ctx.paths.quiesced)
    assert ctx.quiesced and ctx.quiesced_by == 'unknown'
    os.unlink(ctx.paths.quiesced)
    os.mkfifo(ctx.paths.quiesced)
    started = time.monotonic()
    assert ctx.quiesced_by == 'unknown' and time.monotonic() - started < 1
