# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Executor container's authenticating front, on real sockets in front of a real HTTP server."""

import base64
import http.client
import http.server
import json
import socket
import threading

import pytest

from tx9guest import authfront

TOKEN = 'f' * 64


class Upstream(http.server.BaseHTTPRequestHandler):
    """Stands in for Executor on loopback: echoes what it was sent."""
    protocol_version = 'HTTP/1.1'
    seen = []

    def do_POST(self):
        length = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(length) if length else b''
        if self.headers.get('Transfer-Encoding') == 'chunked':
            body = b''
            while True:
                size = int(self.rfile.readline().strip(), 16)
                if not size:
                    self.rfile.readline()
                    break
                body += self.rfile.read(size)
                self.rfile.readline()
        self.reply(body)

    def do_GET(self):
        self.reply(b'')

    def reply(self, body):
        Upstream.seen.append(dict(self.headers))
        out = json.dumps({'path': self.path, 'body': body.decode(), 'auth': self.headers.get('Authorization')})
        data = out.encode()
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def front(tmp_path):
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Upstream)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    token_file = tmp_path / 'auth.json'
    token_file.write_text(json.dumps({'token': TOKEN}))
    proxy = authfront.Front(('127.0.0.1', 0), server.server_address, str(token_file)).start()
    yield proxy.server.getsockname()[1]
    proxy.close()
    server.shutdown()


def call(port, method='POST', path='/mcp', body=b'{}', headers=None):
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=10)
    conn.request(method, path, body=body if method == 'POST' else None, headers=headers or {})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response, data


def basic(user, password):
    return 'Basic ' + base64.b64encode(('%s:%s' % (user, password)).encode()).decode()


def test_a_request_without_the_token_gets_401_with_a_basic_challenge(front):
    response, _data = call(front)
    assert response.status == 401
    assert response.getheader('WWW-Authenticate').startswith('Basic realm="tx9"')


def test_a_wrong_bearer_token_gets_401(front):
    assert call(front, headers={'Authorization': 'Bearer ' + 'e' * 64})[0].status == 401


def test_the_bearer_token_passes_and_executor_never_sees_the_credentials(front):
    response, data = call(front, body=b'{"jsonrpc":"2.0"}', headers={'Authorization': 'Bearer ' + TOKEN})
    assert response.status == 200
    assert json.loads(data) == {'path': '/mcp', 'body': '{"jsonrpc":"2.0"}', 'auth': None}
    assert response.getheader('Connection') == 'close'


def test_a_browser_passes_with_the_token_as_basic_password_for_any_user(front):
    assert call(front, 'GET', '/', headers={'Authorization': basic('tx9', TOKEN)})[0].status == 200
    assert call(front, 'GET', '/', headers={'Authorization': basic('anyone', TOKEN)})[0].status == 200
    assert call(front, 'GET', '/', headers={'Authorization': basic('tx9', 'nope')})[0].status == 401


def test_the_token_query_parameter_of_the_auth_link_passes(front):
    assert call(front, 'GET', '/?_token=' + TOKEN)[0].status == 200
    assert call(front, 'GET', '/?_token=wrong')[0].status == 401


def test_a_chunked_body_reaches_executor_whole(front):
    conn = http.client.HTTPConnection('127.0.0.1', front, timeout=10)
    conn.request('POST', '/mcp', body=iter([b'hello ', b'world']), encode_chunked=True,
                 headers={'Authorization': 'Bearer ' + TOKEN, 'Transfer-Encoding': 'chunked'})
    response = conn.getresponse()
    assert response.status == 200
    assert json.loads(response.read())['body'] == 'hello world'


def test_a_second_request_on_the_same_connection_never_reaches_executor(front):
    Upstream.seen = []
    sock = socket.create_connection(('127.0.0.1', front), timeout=10)
    first = 'GET /a HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n' % TOKEN
    sock.sendall((first + 'GET /b HTTP/1.1\r\nHost: x\r\n\r\n').encode())
    received = b''
    while True:
        data = sock.recv(65536)
        if not data:
            break
        received += data
    sock.close()
    assert received.count(b'HTTP/1.') == 1 and b'"/a"' in received
    assert len(Upstream.seen) == 1


def test_executor_down_answers_502_to_an_authorized_request(tmp_path):
    token_file = tmp_path / 'auth.json'
    token_file.write_text(json.dumps({'token': TOKEN}))
    unused = socket.socket()
    unused.bind(('127.0.0.1', 0))
    port = unused.getsockname()[1]
    unused.close()
    proxy = authfront.Front(('127.0.0.1', 0), ('127.0.0.1', port), str(token_file)).start()
    try:
        response, _data = call(proxy.server.getsockname()[1], headers={'Authorization': 'Bearer ' + TOKEN})
        assert response.status == 502
    finally:
        proxy.close()


def test_without_a_readable_token_file_nothing_passes(tmp_path, front):
    proxy = authfront.Front(('127.0.0.1', 0), ('127.0.0.1', 9), str(tmp_path / 'missing')).start()
    try:
        assert call(proxy.server.getsockname()[1], headers={'Authorization': 'Bearer '})[0].status == 401
    finally:
        proxy.close()
