# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The MCP handshake against a box's Executor, from the host: initialize, initialized, and the refusal without a token.

Private to the col_agents.tx9 collection.
"""

from __future__ import annotations

import http.client as http_client
import json
from typing import Any

# The MCP protocol revisions a box's Executor may answer with; the first is the one asked for.
PROTOCOL_VERSIONS = ('2025-03-26', '2025-06-18')
PROTOCOL_VERSION = PROTOCOL_VERSIONS[0]
INITIALIZE = {
    'jsonrpc': '2.0',
    'id': 1,
    'method': 'initialize',
    'params': {
        'protocolVersion': PROTOCOL_VERSION,
        'capabilities': {},
        'clientInfo': {'name': 'tx9-readiness', 'version': '1'},
    },
}
INITIALIZED = {'jsonrpc': '2.0', 'method': 'notifications/initialized'}
# An initialize answer is a few hundred bytes; nothing more is read of any reply.
MAX_REPLY_BYTES = 1024 * 1024

# The rules below are the box's too (the guest runtime's MCP module): a test feeds both the same replies.


def sse_messages(text: str) -> list[Any]:
    """JSON values of a text/event-stream body: an event's data lines joined by newlines, as the standard says."""
    messages: list[Any] = []
    data: list[str] = []
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


def initialize_problem(message: Any) -> str | None:
    """Why an initialize reply is not a good MCP answer (None: it is good)."""
    if not isinstance(message, dict):
        return 'the reply is not a JSON object'
    if message.get('jsonrpc') != '2.0':
        return 'the reply is not JSON-RPC 2.0'
    if message.get('id') != 1:
        return 'the reply does not answer request id 1'
    if 'error' in message:
        return f'the server answered with an error: {json.dumps(message["error"])[:200]}'
    result = message.get('result')
    if not isinstance(result, dict):
        return 'the reply has no result'
    if result.get('protocolVersion') not in PROTOCOL_VERSIONS:
        known = ', '.join(PROTOCOL_VERSIONS)
        return f'the server speaks protocol {result.get("protocolVersion")!r}, not one of {known}'
    info = result.get('serverInfo')
    if not isinstance(info, dict) or not isinstance(info.get('name'), str) or not info['name']:
        return 'the reply has no serverInfo.name'
    if not isinstance(info.get('version'), str):
        return 'the reply has no serverInfo.version'
    if not isinstance(result.get('capabilities'), dict):
        return 'the reply has no capabilities object'
    return None


def parse_initialize_response(content_type: str | None, body: bytes | str) -> tuple[dict[str, Any] | None, str | None]:
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
    info: dict[str, Any] = replies[0]['result']['serverInfo']
    return info, None


def check_initialize_response(status: int, session_id: str | None, content_type: str | None, body: bytes | str) -> str:
    """'' when the response is a good initialize answer, else what is wrong."""
    if status != 200:
        return f'initialize answered HTTP {status}'
    if not session_id:
        return 'initialize answered without an Mcp-Session-Id header'
    _info, problem = parse_initialize_response(content_type, body)
    return f'initialize: {problem}' if problem else ''


def initialized_problem(status: int) -> str | None:
    """Why the answer to notifications/initialized is not 202 Accepted (None: it is)."""
    if status != 202:
        return f'notifications/initialized answered HTTP {status}, not 202'
    return None


def unauthenticated_problem(status: int) -> str | None:
    """Why an initialize without the token was not refused with 401 (None: it was)."""
    if status == 401:
        return None
    if status == 200:
        return 'Executor accepted an initialize without the token'
    return f'an initialize without the token answered HTTP {status}, not 401'


def _post(
    conn: http_client.HTTPConnection, headers: dict[str, str], message: dict[str, Any]
) -> tuple[http_client.HTTPResponse, bytes]:
    """POST one JSON-RPC message to /mcp; (response, its body up to MAX_REPLY_BYTES)."""
    conn.request('POST', '/mcp', body=json.dumps(message), headers=headers)
    response = conn.getresponse()
    return response, response.read(MAX_REPLY_BYTES)


def _delete_session(conn: http_client.HTTPConnection, headers: dict[str, str], session_id: str) -> None:
    """End the session, so probes leave nothing behind in Executor."""
    delete_headers = dict(headers, **{'Mcp-Session-Id': session_id})
    delete_headers.pop('Content-Type', None)
    try:
        conn.request('DELETE', '/mcp', headers=delete_headers)
        conn.getresponse().read(MAX_REPLY_BYTES)
    except (OSError, http_client.HTTPException):
        pass


def handshake(
    host: str,
    port: int | str,
    token: str | None,
    timeout: float = 5.0,
    host_header: str | None = None,
    notify: bool = True,
) -> dict[str, Any]:
    """An MCP client's opening against http://host:port/mcp, judged by the rules above.

    initialize (200, an Mcp-Session-Id, a proper result), then with notify
    notifications/initialized (202). Returns a dict: status (of initialize; 0
    when nothing answered), problem ('' when every step was good) and server
    (serverInfo). The session is deleted again.
    """
    headers = {'Content-Type': 'application/json', 'Accept': 'application/json, text/event-stream'}
    if token:
        headers['Authorization'] = f'Bearer {token}'
    if host_header:
        headers['Host'] = host_header
    conn = http_client.HTTPConnection(host, int(port), timeout=timeout)
    session_id = None
    try:
        response, body = _post(conn, headers, INITIALIZE)
        session_id = response.getheader('Mcp-Session-Id')
        content_type = response.getheader('Content-Type')
        result: dict[str, Any] = dict(
            status=response.status,
            server=None,
            problem=check_initialize_response(response.status, session_id, content_type, body),
        )
        if not result['problem']:
            result['server'] = parse_initialize_response(content_type, body)[0]
            if notify:
                ack, _body = _post(conn, dict(headers, **{'Mcp-Session-Id': session_id}), INITIALIZED)
                result['problem'] = initialized_problem(ack.status) or ''
        return result
    except (OSError, http_client.HTTPException) as exc:
        return dict(status=0, server=None, problem=f'Executor at {host}:{port} did not answer: {exc}')
    finally:
        if session_id:
            _delete_session(conn, headers, session_id)
        conn.close()


def initialize(
    host: str, port: int | str, token: str | None, timeout: float = 5.0, host_header: str | None = None
) -> tuple[int, str]:
    """POST an MCP initialize to http://host:port/mcp; return (status, problem).

    problem is '' when Executor answered a proper initialize result. The session
    is deleted again so probes leave nothing behind.
    """
    result = handshake(host, port, token, timeout=timeout, host_header=host_header, notify=False)
    return result['status'], result['problem']


def refusal_problem(host: str, port: int | str, timeout: float = 5.0) -> str:
    """'' when Executor refuses an initialize without the token with 401, else what is wrong."""
    result = handshake(host, port, None, timeout=timeout, notify=False)
    if not result['status']:
        problem: str = result['problem']
        return problem
    return unauthenticated_problem(result['status']) or ''
