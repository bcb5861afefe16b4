# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""MCP initialize replies: what counts as a good answer from Executor."""

import json

from tx9guest import mcp

GOOD = {'jsonrpc': '2.0', 'id': 1, 'result': {
    'protocolVersion': '2025-03-26', 'capabilities': {'tools': {}},
    'serverInfo': {'name': 'executor', 'version': '1.0.0'}}}


def with_result(**changes):
    reply = json.loads(json.dumps(GOOD))
    reply['result'].update(changes)
    return reply


def test_initialize_reply_as_json_is_accepted():
    info, problem = mcp.parse_initialize_response('application/json', json.dumps(GOOD))
    assert problem is None
    assert info == {'name': 'executor', 'version': '1.0.0'}


def test_initialize_reply_as_server_sent_events_is_accepted():
    body = 'event: message\nid: 7\ndata: %s\n\n' % json.dumps(GOOD)
    info, problem = mcp.parse_initialize_response('text/event-stream; charset=utf-8', body)
    assert problem is None and info['name'] == 'executor'


def test_initialize_reply_split_over_several_data_lines_is_joined():
    text = json.dumps(GOOD, indent=1)
    body = ''.join('data: %s\r\n' % line for line in text.splitlines()) + '\r\n'
    assert mcp.parse_initialize_response('text/event-stream', body)[1] is None


def test_the_event_answering_request_one_is_picked_among_others():
    ping = {'jsonrpc': '2.0', 'method': 'notifications/message', 'params': {}}
    body = 'data: %s\n\ndata: %s\n\n' % (json.dumps(ping), json.dumps(GOOD))
    assert mcp.parse_initialize_response('text/event-stream', body)[1] is None


def test_initialize_reply_with_an_error_is_rejected():
    reply = {'jsonrpc': '2.0', 'id': 1, 'error': {'code': -32600, 'message': 'bad'}}
    info, problem = mcp.parse_initialize_response('application/json', json.dumps(reply))
    assert info is None and 'error' in problem


def test_initialize_reply_for_another_protocol_version_is_rejected():
    problem = mcp.initialize_problem(with_result(protocolVersion='2024-11-05'))
    assert '2024-11-05' in problem


def test_initialize_reply_without_a_server_name_is_rejected():
    assert 'serverInfo.name' in mcp.initialize_problem(with_result(serverInfo={'name': '', 'version': '1'}))


def test_initialize_reply_without_capabilities_is_rejected():
    assert 'capabilities' in mcp.initialize_problem(with_result(capabilities=None))


def test_initialize_reply_that_is_not_json_is_rejected():
    assert mcp.parse_initialize_response('application/json', '<html>')[1] == 'the reply body is not JSON'
    assert mcp.parse_initialize_response('text/event-stream', ': keepalive\n\n')[1] is not None
