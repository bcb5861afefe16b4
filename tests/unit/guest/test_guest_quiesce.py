# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Durable quiesce: down, up, is-paused, --by and --if-by, and what a pass does while quiesced."""

import pytest

from tx9guest import quiesce, services


def test_down_quiesces_durably_by_user_by_default(live, run_hb):
    ctx = live()
    code, out, _err = run_hb(ctx, 'down')
    assert code == 0 and 'quiesced by user' in out
    with open(ctx.paths.quiesced) as f:
        assert f.read() == 'user\n'
    assert run_hb(ctx, 'is-paused')[:2] == (0, 'quiesced by user\n')


def test_is_paused_exits_1_when_the_box_is_not_quiesced(live, run_hb):
    assert run_hb(live(), 'is-paused')[:2] == (1, 'not quiesced\n')


def test_pause_and_resume_are_aliases_of_down_and_up(live, run_hb):
    ctx = live()
    assert run_hb(ctx, 'pause', '--by', 'ops')[0] == 0
    assert ctx.quiesced_by == 'ops'
    assert run_hb(ctx, 'resume')[0] == 0
    assert ctx.quiesced_by is None


def test_a_second_down_keeps_who_quiesced_first(live, run_hb):
    ctx = live()
    run_hb(ctx, 'down')
    code, out, _err = run_hb(ctx, 'down', '--by', 'backup')
    assert code == 0 and 'already quiesced by user' in out
    assert ctx.quiesced_by == 'user'


def test_up_if_by_only_resumes_when_that_party_quiesced_the_box(live, run_hb):
    ctx = live()
    run_hb(ctx, 'down')
    code, out, _err = run_hb(ctx, 'up', '--if-by', 'backup')
    assert code == 0 and 'nothing to do' in out and ctx.quiesced_by == 'user'
    run_hb(ctx, 'up')
    run_hb(ctx, 'down', '--by=backup')
    assert run_hb(ctx, 'up', '--if-by=backup')[0] == 0
    assert ctx.quiesced_by is None


def test_up_if_by_on_a_running_box_does_nothing_and_succeeds(live, run_hb):
    code, out, _err = run_hb(live(), 'up', '--if-by', 'backup')
    assert code == 0 and 'not quiesced' in out


@pytest.mark.parametrize('argv', [['down', '--by'], ['down', '--by', 'a b'], ['down', 'now'], ['up', '--if-by', '']])
def test_bad_quiesce_arguments_print_usage_and_exit_2(live, argv, run_hb):
    assert run_hb(live(), *argv)[0] == 2


def test_wiring_while_quiesced_starts_nothing(live, write_service, run_hb):
    ctx = live(WIRE_EXECUTOR_MCP='1')
    write_service(ctx, 'web', '#!/bin/sh\nexec sleep 300\n')
    quiesce.cmd_down(ctx, ['--by', 'import'])
    assert run_hb(ctx, 'wire-mcp')[0] == 0
    assert run_hb(ctx, 'wire-once')[1] == 'hb wire-once: wiring current\n'
    assert services.services_report(ctx)['services'][0]['state'] == 'stopped'
    assert ctx.quiesced_by == 'import'


def test_the_loop_wires_but_starts_nothing_while_quiesced(live, write_service):
    ctx = live(WIRE_EXECUTOR_MCP='1')
    write_service(ctx, 'web', '#!/bin/sh\nexec sleep 300\n')
    quiesce.cmd_down(ctx, ['--by', 'import'])
    changes, problems = quiesce.run_pass(ctx)
    assert problems == [] and changes == ['rewired executor MCP (was stale: marker, token, claude, codex, hermes)']
    assert services.services_report(ctx)['services'][0]['state'] == 'stopped'
