# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""MCP: the names of Executor's entry in the clients' configs, and the handshake that proves Executor answers."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    from .context import Context

# The address socket.getaddrinfo gives for a TCP connection.
Address = tuple[str, int] | tuple[str, int, int, int] | tuple[int, bytes]

MCP_SERVER_NAME = 'executor'
TOKEN_ENV_NAME = 'EXECUTOR_MCP_TOKEN'
# The MCP protocol revisions Executor may answer with; the first is the one asked for.
# The host judges replies by the same rules (plugins/module_utils/_mcp.py); a test feeds both the same replies.
MCP_PROTOCOL_VERSIONS = ('2025-03-26', '2025-06-18')
MCP_PROTOCOL_VERSION = MCP_PROTOCOL_VERSIONS[0]
CONNECT_TIMEOUT = 2.0
HANDSHAKE_TIMEOUT = 5.0
INITIALIZE = {
    'jsonrpc': '2.0',
    'id': 1,
    'method': 'initialize',
    'params': {
        'protocolVersion': MCP_PROTOCOL_VERSION,
        'capabilities': {},
        'clientInfo': {'name': 'tx9-doctor', 'version': '1'},
    },
}
INITIALIZED = {'jsonrpc': '2.0', 'method': 'notifications/initialized'}


class Handshake(TypedDict):
    """What mcp_handshake found: a TCP answer, a good MCP handshake, and one line saying which step failed."""

    reachable: bool
    mcp_ok: bool
    detail: str


class ExecutorCheck(Handshake):
    """A handshake with the box's Executor, and the URL it was made to."""

    url: str


def header(headers: Mapping[Any, Any] | None, name: str) -> Any:
    """The value of header `name` in a mapping, whatever its case, or None."""
    for key, value in (headers or {}).items():
        if isinstance(key, str) and key.lower() == name.lower():
            return value
    return None


def sse_messages(text: str) -> list[Any]:
    """JSON values of a text/event-stream body: an event's data lines joined by newlines, as the standard says."""
    messages = []
    data: list[str] = []
    for line in text.replace('\r\n', '\n').split('\n') + ['']:
        if line.startswith('data:'):
            data.append(line[6:] if line[5:6] == ' ' else line[5:])
        elif not line and data:
            with contextlib.suppress(ValueError):
                messages.append(json.loads('\n'.join(data)))
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
    if result.get('protocolVersion') not in MCP_PROTOCOL_VERSIONS:
        return (
            f'the server speaks protocol {result.get("protocolVersion")!r}, '
            f'not one of {", ".join(MCP_PROTOCOL_VERSIONS)}'
        )
    info = result.get('serverInfo')
    if not isinstance(info, dict) or not isinstance(info.get('name'), str) or not info['name']:
        return 'the reply has no serverInfo.name'
    if not isinstance(info.get('version'), str):
        return 'the reply has no serverInfo.version'
    if not isinstance(result.get('capabilities'), dict):
        return 'the reply has no capabilities object'
    return None


def parse_initialize_response(content_type: str | None, body: str) -> tuple[dict[str, Any] | None, str | None]:
    """(server info, problem) from an initialize reply body (JSON or SSE)."""
    if 'text/event-stream' in (content_type or ''):
        candidates = sse_messages(body)
        if not candidates:
            return None, 'the event stream carried no JSON data'
    else:
        try:
            candidates = [json.loads(body)]
        except ValueError:
            return None, 'the reply body is not JSON'
    replies = [m for m in candidates if isinstance(m, dict) and m.get('id') == 1] or candidates[:1]
    problem = initialize_problem(replies[0])
    if problem:
        return None, problem
    return replies[0]['result']['serverInfo'], None


def initialized_problem(status: int) -> str | None:
    """Why the answer to notifications/initialized is not 202 Accepted (None: it is)."""
    if status != 202:
        return f'notifications/initialized answered HTTP {status}, not 202'
    return None


class Unreachable(Exception):
    """No TCP connection to Executor."""


def resolve(host: str, port: int, timeout: float) -> Address:
    """getaddrinfo with a deadline (the resolver itself has none)."""
    found: list[Address] = []
    errors: list[OSError] = []

    def run() -> None:
        try:
            found.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][4])
        except OSError as e:
            errors.append(e)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout)
    if found:
        return found[0]
    raise Unreachable(f'cannot resolve {host}: {errors[0] if errors else "lookup timed out"}')


def http_call(
    addr: Address,
    host: str,
    port: int,
    method: str,
    path: str,
    headers: dict[str, str],
    body: str | None,
    deadline: float,
) -> http.client.HTTPResponse:
    """One request on a fresh connection, within the deadline; returns the response."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError('the handshake ran out of time')
    try:
        # An IPv6 address from getaddrinfo has four fields (flow info, scope); a connection takes host and port.
        sock = socket.create_connection((str(addr[0]), int(addr[1])), timeout=min(CONNECT_TIMEOUT, remaining))
    except OSError as e:
        raise Unreachable(f'cannot connect to {host}:{port} ({e})') from None
    sock.settimeout(max(0.1, deadline - time.monotonic()))
    conn = http.client.HTTPConnection(host, port)
    conn.sock = sock
    try:
        conn.request(method, path, body=body, headers=headers)
        return conn.getresponse()
    except BaseException:
        conn.close()
        raise


def _read_reply(response: http.client.HTTPResponse, deadline: float) -> str:
    """The body, stopping at the first SSE event that answers id 1."""
    if 'text/event-stream' not in (response.getheader('Content-Type') or ''):
        return response.read().decode('utf-8', 'replace')
    text = ''
    while time.monotonic() < deadline:
        line = response.readline()
        if not line:
            break
        text += line.decode('utf-8', 'replace')
        if line.strip() == b'' and any(m.get('id') == 1 for m in sse_messages(text) if isinstance(m, dict)):
            break
    return text


def mcp_handshake(host: str, port: int, token: str | None, path: str = '/mcp') -> Handshake:
    """initialize + notifications/initialized + DELETE, as MCP clients do.

    Returns a dict: reachable, mcp_ok, detail.
    """
    result: Handshake = {'reachable': False, 'mcp_ok': False, 'detail': ''}
    deadline = time.monotonic() + HANDSHAKE_TIMEOUT
    session = None
    try:
        addr = resolve(host, port, CONNECT_TIMEOUT)
        headers = {
            'Authorization': f'Bearer {token or ""}',
            'Accept': 'application/json, text/event-stream',
            'Content-Type': 'application/json',
        }
        reply = http_call(addr, host, port, 'POST', path, headers, json.dumps(INITIALIZE), deadline)
        result['reachable'] = True
        text = _read_reply(reply, deadline)
        if not token:
            result['detail'] = 'no Executor token to authenticate with (BOXD_EXECUTOR_TOKEN is not set)'
            return result
        if reply.status != 200:
            result['detail'] = f'initialize answered HTTP {reply.status}' + (
                ' (the token was refused)' if reply.status == 401 else ''
            )
            return result
        session = reply.getheader('Mcp-Session-Id')
        if not session:
            result['detail'] = 'initialize answered without an Mcp-Session-Id header'
            return result
        info, problem = parse_initialize_response(reply.getheader('Content-Type'), text)
        if problem or info is None:
            result['detail'] = f'initialize reply is not valid MCP: {problem}'
            return result
        ack_headers = dict(headers, **{'Mcp-Session-Id': session})
        ack = http_call(addr, host, port, 'POST', path, ack_headers, json.dumps(INITIALIZED), deadline)
        ack.read()
        problem = initialized_problem(ack.status)
        if problem:
            result['detail'] = problem
            return result
        result['mcp_ok'] = True
        result['detail'] = f'MCP handshake ok ({info["name"]} {info.get("version", "")})'.strip()
    except Unreachable as e:
        result['detail'] = str(e)
    except (OSError, http.client.HTTPException) as e:
        result['detail'] = f'MCP handshake failed: {e or type(e).__name__}'
    finally:
        if session:
            _close_session(addr, host, port, path, token, session)
    return result


def _close_session(addr: Address, host: str, port: int, path: str, token: str | None, session: str) -> None:
    # Always end the session, so checks do not pile sessions up in Executor.
    with contextlib.suppress(OSError, ValueError, http.client.HTTPException, Unreachable):
        headers = {'Authorization': f'Bearer {token}', 'Mcp-Session-Id': session}
        reply = http_call(addr, host, port, 'DELETE', path, headers, None, time.monotonic() + CONNECT_TIMEOUT)
        reply.read()


def executor_check(ctx: Context) -> ExecutorCheck:
    check = mcp_handshake(ctx.host, ctx.port, ctx.token)
    return {'url': ctx.url, **check}


def executor_advice(check: ExecutorCheck) -> str:
    if 'no Executor token' in check['detail']:
        return "recreate the agent container with tx9 so it carries the box's token"
    if not check['reachable']:
        return "start the box's executor container and check its logs"
    if '401' in check['detail']:
        return "the executor holds another token; recreate the box's containers with tx9"
    return "check the executor container's logs"
