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


JSON = 'application/json'
EVENTS = 'text/event-stream'


def body(message):
    return json.dumps(message).encode('utf-8')


def sse(message):
    return ('event: message\r\nid: 7\r\ndata: %s\r\n\r\n' % json.dumps(message)).encode('utf-8')


def test_a_json_body_is_read_as_the_message():
    assert mcp.parse_initialize_response(JSON, body(GOOD)) == (GOOD['result']['serverInfo'], None)


def test_the_data_line_of_a_server_sent_events_body_is_read_as_the_message():
    assert mcp.parse_initialize_response(EVENTS, sse(GOOD)) == (GOOD['result']['serverInfo'], None)


def test_an_event_split_over_several_data_lines_is_joined_before_it_is_read():
    text = json.dumps(GOOD, indent=1)
    events = ''.join('data: %s\n' % line for line in text.splitlines()) + '\n'
    assert mcp.sse_messages(events) == [GOOD]


def test_the_event_answering_request_1_wins_over_others():
    text = 'data: {"jsonrpc": "2.0", "method": "note"}\n\ndata: %s\n\n' % json.dumps(GOOD)
    assert mcp.parse_initialize_response(EVENTS, text.encode('utf-8'))[1] is None


@pytest.mark.parametrize('content_type, raw, problem', [
    (JSON, b'', 'the reply body is not JSON'),
    (JSON, b'<html>Bad Gateway</html>', 'the reply body is not JSON'),
    (EVENTS, b'event: message\n\n', 'the event stream carried no JSON data'),
    (JSON, b'[1, 2]', 'the reply is not a JSON object'),
])
def test_a_body_without_a_json_object_is_a_problem(content_type, raw, problem):
    assert mcp.parse_initialize_response(content_type, raw) == (None, problem)


def test_a_proper_initialize_answer_has_no_problem():
    assert mcp.check_initialize_response(200, 'session-1', JSON, body(GOOD)) == ''
    assert mcp.check_initialize_response(200, 'session-1', EVENTS, sse(GOOD)) == ''


@pytest.mark.parametrize('status', [401, 403, 404, 500])
def test_a_status_other_than_200_is_the_problem(status):
    assert mcp.check_initialize_response(status, 'session-1', JSON, body(GOOD)) == 'initialize answered HTTP %d' % status


@pytest.mark.parametrize('session_id', [None, ''])
def test_an_answer_without_a_session_header_is_a_problem(session_id):
    problem = mcp.check_initialize_response(200, session_id, JSON, body(GOOD))
    assert problem == 'initialize answered without an Mcp-Session-Id header'


def test_an_error_member_is_reported_with_its_content_cut_to_two_hundred_characters():
    message = {'jsonrpc': '2.0', 'id': 1, 'error': {'code': -32600, 'message': 'Bad token ' + 'x' * 1000}}
    problem = mcp.check_initialize_response(200, 'session-1', JSON, body(message))
    assert problem.startswith('initialize: the server answered with an error: ') and 'Bad token' in problem
    assert len(problem) == len('initialize: the server answered with an error: ') + 200


@pytest.mark.parametrize('change, problem', [
    ({'jsonrpc': '1.0'}, 'the reply is not JSON-RPC 2.0'),
    ({'id': 2}, 'the reply does not answer request id 1'),
    ({'result': None}, 'the reply has no result'),
    ({'result': {'protocolVersion': '2024-11-05', 'capabilities': {}, 'serverInfo': {'name': 'e', 'version': '1'}}},
     "the server speaks protocol '2024-11-05', not one of 2025-03-26, 2025-06-18"),
    ({'result': {'protocolVersion': mcp.PROTOCOL_VERSION, 'capabilities': {}, 'serverInfo': {'name': ''}}},
     'the reply has no serverInfo.name'),
    ({'result': {'protocolVersion': mcp.PROTOCOL_VERSION, 'capabilities': {}, 'serverInfo': {'name': 'e'}}},
     'the reply has no serverInfo.version'),
    ({'result': {'protocolVersion': mcp.PROTOCOL_VERSION, 'serverInfo': {'name': 'e', 'version': '1'}}},
     'the reply has no capabilities object'),
])
def test_an_incomplete_result_names_what_is_missing(change, problem):
    message = dict(GOOD, **change)
    assert mcp.check_initialize_response(200, 'session-1', JSON, body(message)) == 'initialize: ' + problem


def test_the_initialize_request_asks_for_the_first_supported_protocol_version():
    assert mcp.INITIALIZE['method'] == 'initialize'
    assert mcp.INITIALIZE['id'] == 1
    assert mcp.INITIALIZE['params']['protocolVersion'] == mcp.PROTOCOL_VERSIONS[0]
