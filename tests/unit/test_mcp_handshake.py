# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host's MCP opening over HTTP: initialize, notifications/initialized, the session deleted, and the 401 probe."""


import socket

from ansible_collections.col_agents.tx9.plugins.module_utils import _mcp as mcp
from ansible_collections.col_agents.tx9.tests.unit.mcp_stub import INFO, Behaviour, mcp_server

TOKEN = 'e' * 64


def test_a_good_executor_passes_every_step_and_the_session_is_deleted():
    behaviour = Behaviour(TOKEN)
    with mcp_server(behaviour) as (host, port):
        result = mcp.handshake(host, port, TOKEN)
    assert result == dict(status=200, problem='', server=INFO)
    assert behaviour.seen == [('initialize', True, None), ('notifications/initialized', True, 'session-1'),
                              ('DELETE', None, 'session-1')]


def test_an_initialized_notification_not_answered_202_is_the_problem():
    with mcp_server(Behaviour(TOKEN, ack_status=200)) as (host, port):
        result = mcp.handshake(host, port, TOKEN)
    assert result['problem'] == 'notifications/initialized answered HTTP 200, not 202'


def test_the_readiness_probe_stops_after_initialize():
    behaviour = Behaviour(TOKEN, ack_status=500)
    with mcp_server(behaviour) as (host, port):
        assert mcp.initialize(host, port, TOKEN) == (200, '')
    assert [step[0] for step in behaviour.seen] == ['initialize', 'DELETE']


def test_a_result_without_capabilities_fails_before_the_notification_is_sent():
    behaviour = Behaviour(TOKEN, result={'protocolVersion': '2025-03-26', 'serverInfo': INFO})
    with mcp_server(behaviour) as (host, port):
        result = mcp.handshake(host, port, TOKEN)
    assert result['problem'] == 'initialize: the reply has no capabilities object'
    assert 'notifications/initialized' not in [step[0] for step in behaviour.seen]


def test_a_wrong_token_is_an_http_401_problem():
    with mcp_server(Behaviour(TOKEN)) as (host, port):
        assert mcp.handshake(host, port, 'wrong')['problem'] == 'initialize answered HTTP 401'


def test_an_executor_refusing_a_missing_token_passes_the_probe():
    behaviour = Behaviour(TOKEN)
    with mcp_server(behaviour) as (host, port):
        assert mcp.refusal_problem(host, port) == ''
    assert behaviour.seen == [('initialize', False, None)]


def test_an_executor_accepting_a_missing_token_fails_the_probe():
    with mcp_server(Behaviour(None)) as (host, port):
        assert mcp.refusal_problem(host, port) == 'Executor accepted an initialize without the token'


def test_another_refusal_than_401_fails_the_probe():
    with mcp_server(Behaviour(TOKEN, unauthenticated_status=403)) as (host, port):
        assert mcp.refusal_problem(host, port) == 'an initialize without the token answered HTTP 403, not 401'


def test_nothing_listening_is_a_problem_not_an_exception():
    probe = socket.socket()
    probe.bind(('127.0.0.1', 0))
    port = probe.getsockname()[1]
    probe.close()
    result = mcp.handshake('127.0.0.1', port, TOKEN, timeout=1)
    assert result['status'] == 0 and 'did not answer' in result['problem']
    assert 'did not answer' in mcp.refusal_problem('127.0.0.1', port, timeout=1)
