# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The authenticating front of the Executor container.

Executor listens on loopback inside its container with its own auth off, so
the token never has to be handed to it on a command line. This front owns the
published port: it reads the token from a 0600 file, lets a request through
only when it carries the token (`Authorization: Bearer TOKEN`, HTTP Basic with
the token as password and any user, which is how a browser opens the
dashboard, or `?_token=TOKEN`), and answers 401 with a Basic challenge
otherwise.

One request per client connection: the request head is rewritten to
`Connection: close` (its Authorization header dropped), its body forwarded
exactly, and the reply streamed back unchanged but for the same header, so
server-sent events flow as they come and a second request on the connection
can never reach Executor unchecked. A protocol upgrade (101) is piped both
ways once the request passed the check.
"""

from __future__ import annotations

import base64
import hmac
import json
import socket
import threading
import urllib.parse
from typing import Self

# A host and port to listen on or connect to.
Address = tuple[str, int]
# The header lines of an HTTP/1 head, in order: (name, value).
Headers = list[tuple[str, str]]

HEAD_LIMIT = 65536
CLIENT_TIMEOUT = 60.0
CHUNK = 65536
HOP_HEADERS = ('connection', 'keep-alive', 'proxy-connection', 'authorization')


class BadRequest(Exception):
    """The client sent something that is not an HTTP/1 request head."""


def read_token_file(path: str) -> str:
    with open(path, encoding='utf-8') as handle:
        text = handle.read().strip()
    if text.startswith('{'):
        text = str(json.loads(text).get('token') or '')
    return text


def read_head(sock: socket.socket, buffer: bytes = b'') -> tuple[bytes, bytes]:
    """(head bytes without the blank line, bytes read past it)."""
    while b'\r\n\r\n' not in buffer:
        if len(buffer) > HEAD_LIMIT:
            raise BadRequest('the request head is too large')
        data = sock.recv(CHUNK)
        if not data:
            raise BadRequest('the connection closed before the head ended')
        buffer += data
    head, _sep, rest = buffer.partition(b'\r\n\r\n')
    return head, rest


def parse_head(head: bytes) -> tuple[str, Headers]:
    """(start line, [(name, value)]) of an HTTP/1 head."""
    lines = head.decode('latin-1').split('\r\n')
    headers: Headers = []
    for line in lines[1:]:
        name, sep, value = line.partition(':')
        if not sep or not name.strip() or name != name.strip():
            raise BadRequest('a header line is malformed')
        headers.append((name, value.strip()))
    return lines[0], headers


def header(headers: Headers, name: str) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return value
    return None


def presented_secrets(target: str, headers: Headers) -> list[str]:
    """Every token the request presents: Bearer, Basic password, ?_token."""
    found = []
    auth = header(headers, 'authorization') or ''
    scheme, _sep, value = auth.partition(' ')
    if scheme.lower() == 'bearer':
        found.append(value.strip())
    elif scheme.lower() == 'basic':
        try:
            decoded = base64.b64decode(value.strip(), validate=True).decode('utf-8')
        except ValueError:
            decoded = ''
        found.append(decoded.partition(':')[2])
    query = urllib.parse.urlsplit(target).query
    found.extend(urllib.parse.parse_qs(query).get('_token', []))
    return found


def authorized(target: str, headers: Headers, token: str | None) -> bool:
    """Whether the request carries the token (compared in constant time)."""
    if not token:
        return False
    wanted = token.encode('utf-8')
    return any(hmac.compare_digest(s.encode('utf-8'), wanted) for s in presented_secrets(target, headers) if s)


def upgrading(headers: Headers) -> bool:
    return 'upgrade' in (header(headers, 'connection') or '').lower() and header(headers, 'upgrade') is not None


def rewrite_head(start: str, headers: Headers, keep_upgrade: bool = False) -> bytes:
    """The head to send on: hop-by-hop headers and credentials dropped, Connection: close added."""
    kept = [(k, v) for k, v in headers if k.lower() not in HOP_HEADERS]
    if keep_upgrade:
        kept.append(('Connection', 'Upgrade'))
    else:
        kept.append(('Connection', 'close'))
    lines = [start] + [f'{k}: {v}' for k, v in kept]
    return ('\r\n'.join(lines) + '\r\n\r\n').encode('latin-1')


def refusal(status: int, reason: str, challenge: bool = False) -> bytes:
    body = f'{status:d} {reason}\n'.encode()
    lines = [
        f'HTTP/1.1 {status:d} {reason}',
        'Content-Type: text/plain; charset=utf-8',
        f'Content-Length: {len(body):d}',
        'Connection: close',
    ]
    if challenge:
        lines.append('WWW-Authenticate: Basic realm="tx9", charset="UTF-8"')
    return ('\r\n'.join(lines) + '\r\n\r\n').encode() + body


def forward_body(client: socket.socket, upstream: socket.socket, headers: Headers, rest: bytes) -> None:
    """Send the request body on: Content-Length bytes, or chunks to the last one."""
    encoding = (header(headers, 'transfer-encoding') or '').lower()
    if 'chunked' in encoding:
        forward_chunked(client, upstream, rest)
        return
    length = int(header(headers, 'content-length') or 0)
    if length < 0:
        raise BadRequest('a negative Content-Length')
    sent = rest[:length]
    upstream.sendall(sent)
    remaining = length - len(sent)
    while remaining > 0:
        data = client.recv(min(CHUNK, remaining))
        if not data:
            raise BadRequest('the body ended early')
        upstream.sendall(data)
        remaining -= len(data)


def forward_chunked(client: socket.socket, upstream: socket.socket, buffer: bytes) -> None:
    """Forward a chunked body verbatim up to and including its last chunk and trailers."""
    while True:
        while b'\r\n' not in buffer:
            buffer += _recv(client)
        size_line, _sep, buffer = buffer.partition(b'\r\n')
        upstream.sendall(size_line + b'\r\n')
        try:
            size = int(size_line.split(b';')[0].strip(), 16)
        except ValueError:
            raise BadRequest('a malformed chunk size')
        if size == 0:
            while not (buffer.startswith(b'\r\n') or b'\r\n\r\n' in buffer):
                buffer += _recv(client)
            end = 2 if buffer.startswith(b'\r\n') else buffer.index(b'\r\n\r\n') + 4
            upstream.sendall(buffer[:end])
            return
        while len(buffer) < size + 2:
            buffer += _recv(client)
        upstream.sendall(buffer[: size + 2])
        buffer = buffer[size + 2 :]


def _recv(sock: socket.socket) -> bytes:
    data = sock.recv(CHUNK)
    if not data:
        raise BadRequest('the body ended early')
    return data


def pipe(source: socket.socket, sink: socket.socket) -> None:
    """Copy bytes until source closes; then half-close sink."""
    try:
        while True:
            data = source.recv(CHUNK)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    try:
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def relay_reply(client: socket.socket, upstream: socket.socket, upgrade: bool) -> None:
    """Stream the reply back with Connection: close (or, after a 101, pipe both ways)."""
    head, rest = read_head(upstream)
    start, headers = parse_head(head)
    switching = upgrade and start.split(' ')[1:2] == ['101']
    client.sendall(rewrite_head(start, headers, keep_upgrade=switching) + rest)
    if switching:
        other = threading.Thread(target=pipe, args=(client, upstream), daemon=True)
        other.start()
    pipe(upstream, client)


class Front:
    """The front: listen on the published port, check each request, pass it to Executor."""

    def __init__(self, listen: Address, upstream: Address, token_file: str) -> None:
        self.listen = listen
        self.upstream = upstream
        self.token_file = token_file
        self.server: socket.socket | None = None

    def token(self) -> str | None:
        try:
            return read_token_file(self.token_file)
        except (OSError, ValueError):
            return None

    def start(self) -> Self:
        self.server = socket.create_server(self.listen, reuse_port=False, backlog=128)
        threading.Thread(target=self.serve, args=(self.server,), daemon=True).start()
        return self

    def serve(self, server: socket.socket) -> None:
        while True:
            try:
                client, _addr = server.accept()
            except OSError:
                return
            threading.Thread(target=self.handle, args=(client,), daemon=True).start()

    def handle(self, client: socket.socket) -> None:
        client.settimeout(CLIENT_TIMEOUT)
        try:
            self.exchange(client)
        except (BadRequest, ValueError):
            _send_quietly(client, refusal(400, 'Bad Request'))
        except OSError:
            pass
        finally:
            client.close()

    def exchange(self, client: socket.socket) -> None:
        head, rest = read_head(client)
        start, headers = parse_head(head)
        parts = start.split(' ')
        if len(parts) != 3 or not parts[2].startswith('HTTP/1.'):
            raise BadRequest('not an HTTP/1 request line')
        if not authorized(parts[1], headers, self.token()):
            client.sendall(refusal(401, 'Unauthorized', challenge=True))
            return
        try:
            upstream = socket.create_connection(self.upstream, timeout=5)
        except OSError:
            client.sendall(refusal(502, 'Bad Gateway'))
            return
        with upstream:
            upstream.settimeout(None)
            upgrade = upgrading(headers)
            upstream.sendall(rewrite_head(start, headers, keep_upgrade=upgrade))
            forward_body(client, upstream, headers, rest)
            client.settimeout(None)
            relay_reply(client, upstream, upgrade)

    def close(self) -> None:
        if self.server is not None:
            self.server.close()


def _send_quietly(sock: socket.socket, data: bytes) -> None:
    try:
        sock.sendall(data)
    except OSError:
        pass
