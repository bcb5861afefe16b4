# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""MCP initialize replies, tool versions, status, init and the command line of hb."""


import json
import os

import pytest

GOOD = {'jsonrpc': '2.0', 'id': 1, 'result': {
    'protocolVersion': '2025-03-26', 'capabilities': {'tools': {}},
    'serverInfo': {'name': 'executor', 'version': '1.0.0'}}}


def with_result(**changes):
    reply = json.loads(json.dumps(GOOD))
    reply['result'].update(changes)
    return reply


def test_initialize_reply_as_json_is_accepted(hb):
    info, problem = hb.parse_initialize_response('application/json', json.dumps(GOOD))
    assert problem is None
    assert info == {'name': 'executor', 'version': '1.0.0'}


def test_initialize_reply_as_server_sent_events_is_accepted(hb):
    body = 'event: message\nid: 7\ndata: %s\n\n' % json.dumps(GOOD)
    info, problem = hb.parse_initialize_response('text/event-stream; charset=utf-8', body)
    assert problem is None and info['name'] == 'executor'


def test_initialize_reply_split_over_several_data_lines_is_joined(hb):
    text = json.dumps(GOOD, indent=1)
    body = ''.join('data: %s\r\n' % line for line in text.splitlines()) + '\r\n'
    assert hb.parse_initialize_response('text/event-stream', body)[1] is None


def test_the_event_answering_request_one_is_picked_among_others(hb):
    ping = {'jsonrpc': '2.0', 'method': 'notifications/message', 'params': {}}
    body = 'data: %s\n\ndata: %s\n\n' % (json.dumps(ping), json.dumps(GOOD))
    assert hb.parse_initialize_response('text/event-stream', body)[1] is None


def test_initialize_reply_with_an_error_is_rejected(hb):
    reply = {'jsonrpc': '2.0', 'id': 1, 'error': {'code': -32600, 'message': 'bad'}}
    info, problem = hb.parse_initialize_response('application/json', json.dumps(reply))
    assert info is None and 'error' in problem


def test_initialize_reply_for_another_protocol_version_is_rejected(hb):
    problem = hb.initialize_problem(with_result(protocolVersion='2024-11-05'))
    assert '2024-11-05' in problem


def test_initialize_reply_without_a_server_name_is_rejected(hb):
    assert 'serverInfo.name' in hb.initialize_problem(with_result(serverInfo={'name': '', 'version': '1'}))


def test_initialize_reply_without_capabilities_is_rejected(hb):
    assert 'capabilities' in hb.initialize_problem(with_result(capabilities=None))


def test_initialize_reply_that_is_not_json_is_rejected(hb):
    assert hb.parse_initialize_response('application/json', '<html>')[1] == 'the reply body is not JSON'
    assert hb.parse_initialize_response('text/event-stream', ': keepalive\n\n')[1] is not None


@pytest.mark.parametrize('banner, version', [
    ('2.1.332 (Claude Code)', '2.1.332'),
    ('codex-cli 0.171.0', '0.171.0'),
    ('Hermes Agent v0.19.0 (2026.7.20)\nInstall directory: /opt', '0.19.0'),
    ('executor v1.5.9', '1.5.9'),
    ('v18.20.4', '18.20.4'),
    ('no version here', None),
])
def test_versions_are_read_from_each_tools_banner(hb, banner, version):
    assert hb.parse_version(banner) == version


def test_status_is_healthy_only_with_a_working_executor_and_current_wiring(box, hb, monkeypatch):
    ctx = box()
    up = {'url': ctx.url, 'reachable': True, 'mcp_ok': True, 'detail': 'ok'}
    monkeypatch.setattr(hb, 'executor_check', lambda c: up)
    assert hb.status_report(ctx)['healthy'] is False
    hb.wire(ctx)
    report = hb.status_report(ctx)
    assert report['healthy'] is True
    assert {'box', 'quiesced', 'gateway_disabled', 'executor', 'wiring', 'healthy'} <= set(report)
    assert report['quiesced_by'] is None
    monkeypatch.setattr(hb, 'executor_check', lambda c: dict(up, mcp_ok=False))
    assert hb.status_report(ctx)['healthy'] is False


def test_status_json_is_the_last_line_and_exits_zero_when_unhealthy(box, hb, monkeypatch, capsys):
    ctx = box()
    down = {'url': ctx.url, 'reachable': False, 'mcp_ok': False, 'detail': 'cannot connect'}
    monkeypatch.setattr(hb, 'executor_check', lambda c: down)
    assert hb.cmd_status(ctx, ['--json']) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    report = json.loads(last)
    assert report['healthy'] is False
    assert report['wiring']['stale'] == ['marker', 'token', 'claude', 'codex', 'hermes']
    assert report['box'] == 'demo'


def test_init_disables_the_gateway_of_a_new_box_only_once(box, hb, monkeypatch, tmp_path):
    ctx = box()
    monkeypatch.setattr(hb, 'DATA_DIR', str(tmp_path))
    monkeypatch.setattr(hb, 'LOG_DIR', str(tmp_path / 'logs'))
    monkeypatch.setattr(hb, 'agent_account', lambda: None)
    assert hb.cmd_init(ctx, []) == 0
    assert os.path.exists(ctx.paths.gateway_disabled)
    for rel in ('.claude', '.codex', '.hermes', 'workspace', '.local/share', '.local/state'):
        assert os.path.isdir(os.path.join(ctx.paths.home, rel))
    assert oct(os.stat(ctx.paths.state).st_mode & 0o777) == '0o700'
    os.unlink(ctx.paths.gateway_disabled)  # the user enabled the gateway
    hb.cmd_init(ctx, [])
    assert not os.path.exists(ctx.paths.gateway_disabled)


def test_unknown_command_prints_usage_on_stderr_and_exits_2(hb, capsys):
    assert hb.main(['frobnicate']) == 2
    err = capsys.readouterr().err
    assert "unknown command 'frobnicate'" in err and 'usage: hb' in err


def test_unexpected_arguments_print_usage_and_exit_2(hb, capsys):
    assert hb.main(['status', '--yaml']) == 2
    assert 'usage: hb' in capsys.readouterr().err


def test_failures_exit_1_with_a_sentence_naming_the_command(hb, monkeypatch, capsys):
    def boom(ctx, args):
        raise hb.HbError('the thing is broken; run `hb fix`')
    monkeypatch.setitem(hb.COMMANDS, 'doctor', boom)
    assert hb.main(['doctor']) == 1
    assert capsys.readouterr().err.strip() == 'hb doctor: the thing is broken; run `hb fix`'


def test_log_names_cannot_leave_the_log_directory(hb, capsys):
    assert hb.main(['logs', '../etc/passwd']) == 2
