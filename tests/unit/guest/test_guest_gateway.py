# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The single-writer Hermes gateway: the confirmation, enable and disable, and gateways outside hb."""

import json
import os
import re
import sys

import pytest

from ansible_collections.col_agents.tx9.tests.processes import alive
from guest_helpers import exit_messages, wait_for
from tx9guest import boxinit, gateway, quiesce

PHRASE = 'I_CONFIRM_NO_OTHER_GATEWAY_USES_THIS_IDENTITY'


def gateway_pid(ctx):
    return gateway.gateway_view(ctx)[1]


def enable(run_hb, ctx):
    return run_hb(ctx, 'gateway-enable', '--confirm-single-writer', PHRASE)


@pytest.mark.parametrize('argv', [
    [],
    ['--confirm-single-writer'],
    ['--confirm-single-writer', 'yes'],
    ['--confirm-single-writer', PHRASE.lower()],
    ['--confirm-single-writer=I_CONFIRM'],
    ['--confirm-single-writer', PHRASE, '--force'],
    [PHRASE],
])
def test_gateway_enable_without_the_exact_phrase_is_refused(live, capsys, argv, run_hb):
    ctx = live()
    boxinit.cmd_init(ctx, [])
    capsys.readouterr()
    code, _out, err = run_hb(ctx, 'gateway-enable', *argv)
    assert code == 1 and err.startswith('hb gateway-enable: ') and PHRASE in err
    assert os.path.exists(ctx.paths.gateway_disabled)
    assert gateway_pid(ctx) is None


def test_gateway_enable_is_refused_while_quiesced(live, run_hb):
    ctx = live()
    boxinit.cmd_init(ctx, [])
    quiesce.cmd_down(ctx, [])
    code, _out, err = enable(run_hb, ctx)
    assert code == 1 and 'quiesced' in err and '`hb up`' in err
    assert os.path.exists(ctx.paths.gateway_disabled)


def test_gateway_enable_with_the_phrase_runs_the_gateway_and_disable_stops_it(live, run_hb):
    ctx = live()
    boxinit.cmd_init(ctx, [])
    code, out, err = enable(run_hb, ctx)
    assert code == 0, err
    assert 'enabled and running' in out and not os.path.exists(ctx.paths.gateway_disabled)
    pid = gateway_pid(ctx)
    with open('/proc/%d/cmdline' % pid, 'rb') as f:
        assert b'tx9-test-gateway' in f.read()
    assert gateway.reconcile_gateway(ctx) == [], 'a running gateway is left alone'
    assert run_hb(ctx, 'gateway-disable')[0] == 0
    assert os.path.exists(ctx.paths.gateway_disabled) and not alive(pid)
    assert gateway.reconcile_gateway(ctx) == []


def test_down_stops_the_gateway_and_up_starts_it_again(live, run_hb):
    ctx = live()
    boxinit.cmd_init(ctx, [])
    enable(run_hb, ctx)
    pid = gateway_pid(ctx)
    quiesce.cmd_down(ctx, [])
    assert not alive(pid)
    # TERM ended it: hb down did not wait out the stop grace for a KILL.
    assert re.search(r' exited with signal 15 ', exit_messages(os.path.join(ctx.paths.logs, 'hermes.jsonl'))[-1])
    assert quiesce.run_pass(ctx)[0] == [] and gateway_pid(ctx) is None
    quiesce.cmd_up(ctx, [])
    assert wait_for(lambda: gateway_pid(ctx))
    assert ctx.gateway_enabled, 'quiesce and the gateway switch are independent'


def test_a_gateway_that_exits_at_once_is_reported_and_the_disabled_marker_re_armed(live, run_hb):
    ctx = live(TX9_GATEWAY_ARGV=json.dumps([sys.executable, '-c', 'import sys; sys.exit(4)']))
    boxinit.cmd_init(ctx, [])
    code, _out, err = enable(run_hb, ctx)
    assert code == 1 and 'exited at once' in err and 'hb logs hermes' in err
    assert os.path.exists(ctx.paths.gateway_disabled)


def test_a_malformed_gateway_argv_is_refused_with_a_sentence(live, run_hb):
    ctx = live(TX9_GATEWAY_ARGV='hermes gateway run')
    boxinit.cmd_init(ctx, [])
    code, _out, err = enable(run_hb, ctx)
    assert code == 1 and 'TX9_GATEWAY_ARGV is not a JSON list' in err


def test_the_gateway_is_refused_when_another_hermes_gateway_already_runs(live, monkeypatch, run_hb):
    ctx = live()
    boxinit.cmd_init(ctx, [])
    monkeypatch.setattr(gateway, 'stray_gateways', lambda state: [4242])
    code, _out, err = enable(run_hb, ctx)
    assert code == 1 and '4242' in err and 'two gateways' in err
    assert os.path.exists(ctx.paths.gateway_disabled)


def test_hermes_gateway_processes_are_recognised_by_their_command_line():
    pattern = gateway.GATEWAY_PROCESS_RE
    assert pattern.search('/opt/tx9/hermes/bin/python3 /opt/tx9/bin/hermes gateway run --replace')
    assert pattern.search('hermes --profile x gateway run')
    assert not pattern.search('hermes gateway status')
    assert not pattern.search('vim notes-about-hermes-gateway-run.txt')
