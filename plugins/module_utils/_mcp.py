# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The MCP initialize handshake against a box's Executor, from the host.

Private to the col_agents.tx9 collection.
"""


import json

import http.client as http_client

# The MCP protocol revisions a box's Executor may answer with; the first is the one asked for.
PROTOCOL_VERSIONS = ('2025-03-26', '2025-06-18')
PROTOCOL_VERSION = PROTOCOL_VERSIONS[0]
INITIALIZE = {
    'jsonrpc': '2.0', 'id': 1, 'method': 'initialize',
    'params': {'protocolVersion': PROTOCOL_VERSION, 'capabilities': {},
               'clientInfo': {'name': 'tx9-readiness', 'version': '1'}},
}

# The rules below are the box's too (the guest runtime's MCP module): a test feeds both the same replies.


def sse_messages(text):
    """JSON values of a text/event-stream body: an event's data lines joined by newlines, as the standard says."""
    messages = []
    data = []
    for line in text.replace('\r\n', '\n').split('\n') + ['']:
        if line.startswith('data:'):
            data.append(line[6:] if line[5:6] == ' ' else line[5:])
        elif not line and data:
            try:
                messages.append(json.loads('\n'.join(data)))
            except ValueError:
                pass
            data = []
    return messages


def initialize_problem(message):
    """Why an initialize reply is not a good MCP answer (None: it is good)."""
    if not isinstance(message, dict):
        return 'the reply is not a JSON object'
    if message.get('jsonrpc') != '2.0':
        return 'the reply is not JSON-RPC 2.0'
    if message.get('id') != 1:
        return 'the reply does not answer request id 1'
    if 'error' in message:
        return 'the server answered with an error: %s' % json.dumps(message['error'])[:200]
    result = message.get('result')
    if not isinstance(result, dict):
        return 'the reply has no result'
    if result.get('protocolVersion') not in PROTOCOL_VERSIONS:
        return 'the server speaks protocol %r, not one of %s' % (result.get('protocolVersion'), ', '.join(PROTOCOL_VERSIONS))
    info = result.get('serverInfo')
    if not isinstance(info, dict) or not isinstance(info.get('name'), str) or not info['name']:
        return 'the reply has no serverInfo.name'
    if not isinstance(info.get('version'), str):
        return 'the reply has no serverInfo.version'
    if not isinstance(result.get('capabilities'), dict):
        return 'the reply has no capabilities object'
    return None


def parse_initialize_response(content_type, body):
    """(server info, problem) from an initialize reply body (JSON or server-sent events)."""
    text = body.decode('utf-8', 'replace') if isinstance(body, bytes) else body
    if 'text/event-stream' in (content_type or ''):
        candidates = sse_messages(text)
        if not candidates:
            return None, 'the event stream carried no JSON data'
    else:
        try:
            candidates = [json.loads(text)]
        except ValueError:
            return None, 'the reply body is not JSON'
    replies = [m for m in candidates if isinstance(m, dict) and m.get('id') == 1] or candidates[:1]
    problem = initialize_problem(replies[0])
    if problem:
        return None, problem
    return replies[0]['result']['serverInfo'], None


def check_initialize_response(status, session_id, content_type, body):
    """'' when the response is a good initialize answer, else what is wrong."""
    if status != 200:
        return 'initialize answered HTTP %d' % status
    if not session_id:
        return 'initialize answered without an Mcp-Session-Id header'
    _info, problem = parse_initialize_response(content_type, body)
    return 'initialize: %s' % problem if problem else ''


def initialize(host, port, token, timeout=5.0, host_header=None):
    """POST an MCP initialize to http://host:port/mcp; return (status, problem).

    problem is '' when Executor answered a proper initialize result. The session
    is deleted again so probes leave nothing behind.
    """
    headers = {'Content-Type': 'application/json', 'Accept': 'application/json, text/event-stream'}
    if token:
        headers['Authorization'] = 'Bearer %s' % token
    if host_header:
        headers['Host'] = host_header
    conn = http_client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        conn.request('POST', '/mcp', body=json.dumps(INITIALIZE), headers=headers)
        response = conn.getresponse()
        body = response.read()
        session_id = response.getheader('Mcp-Session-Id')
        problem = check_initialize_response(response.status, session_id, response.getheader('Content-Type'), body)
        if session_id:
            delete_headers = dict(headers, **{'Mcp-Session-Id': session_id})
            delete_headers.pop('Content-Type', None)
            try:
                conn.request('DELETE', '/mcp', headers=delete_headers)
                conn.getresponse().read()
            except (OSError, http_client.HTTPException):
                pass
        return response.status, problem
    except (OSError, http_client.HTTPException) as exc:
        return 0, 'Executor at %s:%s did not answer: %s' % (host, port, exc)
    finally:
        conn.close()
