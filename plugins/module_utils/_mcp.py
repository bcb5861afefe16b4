# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The MCP initialize handshake against a box's Executor, from the host.

Private to the col_agents.tx9 collection.
"""


import json

import http.client as http_client

PROTOCOL_VERSION = '2025-03-26'
INITIALIZE = {
    'jsonrpc': '2.0', 'id': 1, 'method': 'initialize',
    'params': {'protocolVersion': PROTOCOL_VERSION, 'capabilities': {},
               'clientInfo': {'name': 'tx9-readiness', 'version': '1'}},
}


def parse_body(body):
    """The JSON-RPC message in a JSON or server-sent-events body, or None."""
    text = body.decode('utf-8', 'replace').strip()
    candidates = [text]
    candidates.extend(line[len('data:'):].strip() for line in text.splitlines() if line.startswith('data:'))
    for candidate in candidates:
        try:
            message = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(message, dict):
            return message
    return None


def check_initialize_response(status, session_id, body):
    """'' when the response is a good initialize answer, else what is wrong."""
    if status != 200:
        return 'initialize answered HTTP %d' % status
    if not session_id:
        return 'initialize answered without an Mcp-Session-Id header'
    message = parse_body(body)
    if message is None:
        return 'initialize answered a body that is not JSON-RPC'
    if message.get('error') is not None:
        return 'initialize answered an error: %s' % json.dumps(message['error'])[:200]
    server = (message.get('result') or {}).get('serverInfo') or {}
    if message.get('jsonrpc') != '2.0' or message.get('id') != 1 or not server.get('name'):
        return 'initialize answered an incomplete result'
    return ''


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
        problem = check_initialize_response(response.status, session_id, body)
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
