# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host and the box judge the same things by the same rules.

An MCP initialize reply and a box.env line are judged twice: by the host
(plugins/module_utils) before it calls a box ready, and by the guest runtime
(assets/guest/tx9guest) inside the box. Each case is fed to both and must get
the same verdict, which is also the one written here.
"""

import json
import os
import sys

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils import _mcp as host_mcp
from ansible_collections.col_agents.tx9.plugins.module_utils._image.context import parse_box_env as host_box_env

GUEST = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'assets', 'guest')
sys.path.insert(0, os.path.abspath(GUEST))
from tx9guest import mcp as guest_mcp  # noqa: E402  pylint: disable=wrong-import-position
from tx9guest.settings import parse_env_file as guest_box_env  # noqa: E402  pylint: disable=wrong-import-position

JSON = 'application/json'
EVENTS = 'text/event-stream'
INFO = {'name': 'executor', 'version': '1.5.9'}


def reply(version='2025-03-26', capabilities=True, info=None, **changes):
    result = {'protocolVersion': version, 'serverInfo': INFO if info is None else info}
    if capabilities:
        result['capabilities'] = {'tools': {}}
    message = {'jsonrpc': '2.0', 'id': 1, 'result': result}
    message.update(changes)
    return message


def events(*messages, split=False):
    """A text/event-stream body: one event per message, its JSON over several data lines when split."""
    out = []
    for message in messages:
        text = json.dumps(message, indent=1) if split else json.dumps(message)
        out.append('event: message\r\n' + ''.join('data: %s\r\n' % line for line in text.splitlines()) + '\r\n')
    return ''.join(out)


MCP_CASES = [
    ('json', JSON, json.dumps(reply()), True),
    ('newer-revision', JSON, json.dumps(reply('2025-06-18')), True),
    ('older-revision', JSON, json.dumps(reply('2024-11-05')), False),
    ('no-capabilities', JSON, json.dumps(reply(capabilities=False)), False),
    ('no-server-version', JSON, json.dumps(reply(info={'name': 'executor'})), False),
    ('empty-server-name', JSON, json.dumps(reply(info={'name': '', 'version': '1'})), False),
    ('error', JSON, json.dumps({'jsonrpc': '2.0', 'id': 1, 'error': {'code': -32600, 'message': 'no'}}), False),
    ('wrong-id', JSON, json.dumps(reply(id=2)), False),
    ('json-rpc-1', JSON, json.dumps(reply(jsonrpc='1.0')), False),
    ('not-json', JSON, '<html>Bad Gateway</html>', False),
    ('array', JSON, '[1, 2]', False),
    ('sse', EVENTS, events(reply()), True),
    ('sse-split-over-data-lines', EVENTS, events(reply(), split=True), True),
    ('sse-notification-first', EVENTS, events({'jsonrpc': '2.0', 'method': 'notifications/message'}, reply()), True),
    ('sse-no-data', EVENTS, 'event: message\n\n', False),
    ('sse-data-without-space', EVENTS, 'data:%s\n\n' % json.dumps(reply()), True),
    ('sse-in-a-json-reply', JSON, events(reply()), False),
]


@pytest.mark.parametrize('content_type, body, good', [case[1:] for case in MCP_CASES], ids=[case[0] for case in MCP_CASES])
def test_the_host_and_the_box_give_an_initialize_reply_the_same_verdict(content_type, body, good):
    host = host_mcp.parse_initialize_response(content_type, body.encode('utf-8'))
    guest = guest_mcp.parse_initialize_response(content_type, body)

    assert host == guest
    assert (host[1] is None) == good, host[1]


BOX_ENV_CASES = [
    ('plain', 'A=1\n', {'A': '1'}),
    ('double-quotes', 'A="x y"\n', {'A': 'x y'}),
    ('single-quotes', "A='x y'\n", {'A': 'x y'}),
    ('export', 'export B=1\n', {'B': '1'}),
    ('comment-and-blank', '# note\n\nC=3 # trailing\n', {'C': '3'}),
    ('equals-in-value', 'TOOL=1.2=3\n', {'TOOL': '1.2=3'}),
    ('empty-value', 'D=\n', {'D': ''}),
    ('bad-key', '1X=1\nA-B=2\nOK=3\n', {'OK': '3'}),
    ('no-equals', 'JUST_A_WORD\n', {}),
    ('unbalanced-quote', 'E="open\n', {'E': '"open'}),
    ('later-wins', 'F=1\nF=2\n', {'F': '2'}),
    ('spaces-around', '  G=7  \n', {'G': '7'}),
]


@pytest.mark.parametrize('text, expected', [case[1:] for case in BOX_ENV_CASES], ids=[case[0] for case in BOX_ENV_CASES])
def test_the_host_and_the_box_read_a_box_env_line_alike(text, expected):
    assert host_box_env(text) == guest_box_env(text) == expected


def test_the_protocol_revisions_are_the_same_on_both_sides():
    assert host_mcp.PROTOCOL_VERSIONS == guest_mcp.MCP_PROTOCOL_VERSIONS


@pytest.mark.parametrize('status', [202, 200, 204, 400, 401, 404, 500])
def test_the_host_and_the_box_give_the_initialized_notifications_answer_the_same_verdict(status):
    host = host_mcp.initialized_problem(status)
    guest = guest_mcp.initialized_problem(status)

    assert host == guest
    assert (host is None) == (status == 202), host
