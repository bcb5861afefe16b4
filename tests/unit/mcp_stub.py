# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A local HTTP server that answers MCP as Executor does, with knobs to answer wrongly."""


import contextlib
import http.server
import json
import threading

INFO = {'name': 'executor', 'version': '1.5.9'}


class Behaviour:
    """How the stub answers: the token it wants (None: any or none), the status of each step, what initialize returns."""

    def __init__(self, token, **changes):
        self.token = token
        self.unauthenticated_status = 401
        self.ack_status = 202
        self.session = 'session-1'
        self.result = {'protocolVersion': '2025-03-26', 'capabilities': {'tools': {}}, 'serverInfo': INFO}
        self.__dict__.update(changes)
        self.seen = []


def handler_for(behaviour):
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def answer(self, status, body=b'', headers=None):
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            message = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
            authorized = behaviour.token is None or self.headers.get('Authorization') == 'Bearer %s' % behaviour.token
            behaviour.seen.append((message.get('method'), authorized, self.headers.get('Mcp-Session-Id')))
            if not authorized:
                return self.answer(behaviour.unauthenticated_status)
            if message.get('method') == 'initialize':
                body = json.dumps({'jsonrpc': '2.0', 'id': message['id'], 'result': behaviour.result}).encode()
                headers = {'Content-Type': 'application/json'}
                if behaviour.session:
                    headers['Mcp-Session-Id'] = behaviour.session
                return self.answer(200, body, headers)
            return self.answer(behaviour.ack_status)

        def do_DELETE(self):
            behaviour.seen.append(('DELETE', None, self.headers.get('Mcp-Session-Id')))
            self.answer(200)

    return Handler


@contextlib.contextmanager
def mcp_server(behaviour):
    """('127.0.0.1', port) of a running stub until the block ends."""
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), handler_for(behaviour))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address
    finally:
        server.shutdown()
        server.server_close()
