# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading an MCP initialize answer: JSON or server-sent-events bodies, and what is wrong."""


import json

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils import _mcp as mcp

GOOD = {
    'jsonrpc': '2.0', 'id': 1,
    'result': {'protocolVersion': mcp.PROTOCOL_VERSION, 'capabilities': {}, 'serverInfo': {'name': 'executor', 'version': '1'}},
}


def body(message):
    return json.dumps(message).encode('utf-8')


def sse(message):
    return ('event: message\r\nid: 7\r\ndata: %s\r\n\r\n' % json.dumps(message)).encode('utf-8')


def test_a_json_body_is_read_as_the_message():
    assert mcp.parse_body(body(GOOD)) == GOOD


def test_a_json_body_with_surrounding_white_space_is_read():
    assert mcp.parse_body(b'\n  ' + body(GOOD) + b'\n') == GOOD


def test_the_data_line_of_a_server_sent_events_body_is_read_as_the_message():
    assert mcp.parse_body(sse(GOOD)) == GOOD


def test_the_first_data_line_holding_a_json_object_wins():
    text = 'data: not json\ndata: [1, 2]\ndata: {"id": 1}\ndata: {"id": 2}\n'
    assert mcp.parse_body(text.encode('utf-8')) == {'id': 1}


@pytest.mark.parametrize('raw', [b'', b'not json', b'[1, 2]', b'"text"', b'null', b'event: message\n\n',
                                 b'\xff\xfe'])
def test_a_body_without_a_json_object_gives_none(raw):
    assert mcp.parse_body(raw) is None


def test_a_proper_initialize_answer_has_no_problem():
    assert mcp.check_initialize_response(200, 'session-1', body(GOOD)) == ''
    assert mcp.check_initialize_response(200, 'session-1', sse(GOOD)) == ''


@pytest.mark.parametrize('status', [401, 403, 404, 500])
def test_a_status_other_than_200_is_the_problem(status):
    assert mcp.check_initialize_response(status, 'session-1', body(GOOD)) == 'initialize answered HTTP %d' % status


@pytest.mark.parametrize('session_id', [None, ''])
def test_an_answer_without_a_session_header_is_a_problem(session_id):
    problem = mcp.check_initialize_response(200, session_id, body(GOOD))
    assert problem == 'initialize answered without an Mcp-Session-Id header'


def test_a_body_that_is_not_json_rpc_is_a_problem():
    problem = mcp.check_initialize_response(200, 'session-1', b'<html>Bad Gateway</html>')
    assert problem == 'initialize answered a body that is not JSON-RPC'


def test_an_error_member_is_reported_with_its_content():
    message = {'jsonrpc': '2.0', 'id': 1, 'error': {'code': -32600, 'message': 'Bad token'}}
    problem = mcp.check_initialize_response(200, 'session-1', body(message))
    assert problem.startswith('initialize answered an error: ')
    assert 'Bad token' in problem


def test_a_long_error_is_cut_to_two_hundred_characters():
    message = {'jsonrpc': '2.0', 'id': 1, 'error': {'code': -1, 'message': 'x' * 1000}}
    problem = mcp.check_initialize_response(200, 'session-1', body(message))
    assert len(problem) == len('initialize answered an error: ') + 200


@pytest.mark.parametrize('change', [
    {'jsonrpc': '1.0'},
    {'id': 2},
    {'result': None},
    {'result': {'protocolVersion': mcp.PROTOCOL_VERSION}},
    {'result': {'serverInfo': {'version': '1'}}},
    {'result': {'serverInfo': {'name': ''}}},
])
def test_an_incomplete_result_is_a_problem(change):
    message = dict(GOOD, **change)
    problem = mcp.check_initialize_response(200, 'session-1', body(message))
    assert problem == 'initialize answered an incomplete result'


def test_the_initialize_request_asks_for_the_supported_protocol_version():
    assert mcp.INITIALIZE['method'] == 'initialize'
    assert mcp.INITIALIZE['id'] == 1
    assert mcp.INITIALIZE['params']['protocolVersion'] == mcp.PROTOCOL_VERSION
