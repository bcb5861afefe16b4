# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A private "outside" for egress tests: web and DNS servers on a Docker network.

Two containers from the box image, labelled tx9.test=egress-outside: a web
server (HTTP on 80, HTTPS on 443 with a certificate from a throwaway CA made
inside the container) and a DNS server (UDP and TCP on 53). The DNS server
answers allowed.test, blocked.test, other.test and every name below them with
the web server's address on the first network; any other name gets NXDOMAIN.
Both servers log to stdout, read back through the container logs: every query
name (queries()) and every HTTP request (requests()). The scripts go into the
containers with put_archive, so no bind mount is needed.
"""

import io
import secrets
import tarfile
import time

import docker
from docker.models.containers import Container

LABELS = {'tx9.test': 'egress-outside'}
SCRIPTS = '/tmp/outside'
READY_TIMEOUT = 30.0

WEB = r'''
import http.server, re, socket, ssl, subprocess, sys, threading
HERE, ZONES, CHUNK, LIMIT = '/tmp/outside', ('allowed.test', 'blocked.test', 'other.test'), 1 << 20, 1 << 30
ZERO, LOCK = memoryview(bytes(CHUNK)), threading.Lock()

def make_certs(ip):
    san = ','.join(f'DNS:{z},DNS:*.{z}' for z in ZONES) + f',IP:{ip}'
    with open(f'{HERE}/ext.cnf', 'w') as ext:
        ext.write(f'subjectAltName={san}\nbasicConstraints=critical,CA:FALSE\n'
                  'keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n'
                  'subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n')
    ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
    for args in (['req', '-x509', *ec, '-days', '30', '-keyout', 'ca.key', '-out', 'ca.pem',
                  '-subj', '/CN=tx9 test outside CA', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'],
                 ['req', '-new', *ec, '-keyout', 'key.pem', '-out', 'req.csr', '-subj', '/CN=allowed.test'],
                 ['x509', '-req', '-in', 'req.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial',
                  '-days', '30', '-extfile', 'ext.cnf', '-out', 'cert.pem']):
        subprocess.run(['openssl', *args], cwd=HERE, check=True, stdout=subprocess.DEVNULL)

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version, timeout = 'HTTP/1.1', 60
    def log_message(self, *args):
        pass
    def parse_request(self):
        ok = super().parse_request()
        if ok:
            host = ''.join((self.headers.get('Host') or '-').split())
            with LOCK:
                sys.stdout.write(f'REQUEST {self.command} {self.path} {host}\n')
                sys.stdout.flush()
        return ok
    def do_GET(self):
        path = self.path.split('?', 1)[0]
        size = re.fullmatch(r'/bytes/([0-9]{1,10})', path)
        if path == '/ok':
            body = f'hello from outside {self.headers.get("Host", "")} {path}'.encode()
            self.head(200, len(body), 'text/plain')
            self.wfile.write(b'' if self.command == 'HEAD' else body)
        elif size and int(size.group(1)) <= LIMIT:
            left = int(size.group(1))
            self.head(200, left, 'application/octet-stream')
            while left and self.command != 'HEAD':
                self.wfile.write(ZERO[:min(left, CHUNK)])
                left -= min(left, CHUNK)
        else:
            self.head(404, 10, 'text/plain')
            self.wfile.write(b'' if self.command == 'HEAD' else b'not found\n')
    do_HEAD = do_GET
    def head(self, code, length, kind):
        self.send_response(code)
        self.send_header('Content-Type', kind)
        self.send_header('Content-Length', str(length))
        self.end_headers()

class Server(http.server.ThreadingHTTPServer):
    daemon_threads, context = True, None
    def finish_request(self, request, client_address):
        if self.context is None:
            return super().finish_request(request, client_address)
        request.settimeout(30)
        try:
            tls = self.context.wrap_socket(request, server_side=True)
        except OSError:
            return
        try:
            super().finish_request(tls, client_address)
        finally:
            self.shutdown_request(tls)
    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)

ip = socket.gethostbyname(socket.gethostname())
make_certs(ip)
plain, secure = Server(('0.0.0.0', 80), Handler), Server(('0.0.0.0', 443), Handler)
secure.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
secure.context.load_cert_chain(f'{HERE}/cert.pem', f'{HERE}/key.pem')
threading.Thread(target=plain.serve_forever, daemon=True).start()
print(f'READY web {ip}', flush=True)
secure.serve_forever()
'''

DNS = r'''
import socket, socketserver, struct, sys, threading
ZONES, TYPES = ('allowed.test', 'blocked.test', 'other.test'), {1: 'A', 5: 'CNAME', 15: 'MX', 16: 'TXT', 28: 'AAAA'}
ADDRESS, LOCK = socket.inet_aton(sys.argv[1]), threading.Lock()

def question(msg):
    """(name, qtype, qclass, end) of the first question, or None when it is malformed."""
    if len(msg) < 12 or struct.unpack('!H', msg[4:6])[0] < 1:
        return None
    labels, pos = [], 12
    while pos < len(msg) and msg[pos]:
        size = msg[pos]
        if size > 63 or pos + 1 + size > len(msg) or pos + size > 12 + 254:
            return None
        labels.append(msg[pos + 1:pos + 1 + size])
        pos += 1 + size
    if pos + 5 > len(msg):
        return None
    qtype, qclass = struct.unpack('!HH', msg[pos + 1:pos + 5])
    text = '.'.join(''.join(chr(b).lower() if 0x21 <= b < 0x7f and b not in b'.\\' else f'\\{b:03d}'
                            for b in label) for label in labels)
    return text or '.', qtype, qclass, pos + 5

def answer(msg):
    if len(msg) < 12 or msg[2] & 0x80:
        return None
    flags = 0x80 | 0x04 | (msg[2] & 0x79)
    parsed = question(msg) if msg[2] & 0x78 == 0 else None
    if parsed is None:
        return msg[:2] + bytes([flags, 1 if msg[2] & 0x78 == 0 else 4]) + bytes(8)
    name, qtype, qclass, end = parsed
    with LOCK:
        sys.stdout.write(f'QUERY {name} {TYPES.get(qtype, qtype)}\n')
        sys.stdout.flush()
    served = any(name == zone or name.endswith('.' + zone) for zone in ZONES)
    records = b''
    if served and qtype in (1, 255) and qclass == 1:
        records = struct.pack('!HHHIH', 0xC00C, 1, 1, 5, 4) + ADDRESS
    header = struct.pack('!BBHHHH', flags, 0 if served else 3, 1, 1 if records else 0, 0, 0)
    return msg[:2] + header + msg[12:end] + records

class Udp(socketserver.BaseRequestHandler):
    def handle(self):
        data, sock = self.request
        reply = answer(data)
        if reply:
            sock.sendto(reply, self.client_address)

class Tcp(socketserver.StreamRequestHandler):
    timeout = 30
    def handle(self):
        try:
            while (head := self.rfile.read(2)) and len(head) == 2:
                reply = answer(self.rfile.read(struct.unpack('!H', head)[0]))
                if not reply:
                    return
                self.wfile.write(struct.pack('!H', len(reply)) + reply)
        except OSError:
            return

for kind, handler in ((socketserver.ThreadingUDPServer, Udp), (socketserver.ThreadingTCPServer, Tcp)):
    kind.allow_reuse_address, kind.daemon_threads = True, True
    threading.Thread(target=kind(('0.0.0.0', 53), handler).serve_forever, daemon=True).start()
print(f'READY dns {sys.argv[1]}', flush=True)
threading.Event().wait()
'''

PROBE = r'''
import socket, struct, sys
errors = []
for port in (80, 443):
    try:
        socket.create_connection(('127.0.0.1', port), 1).close()
    except OSError as error:
        errors.append(f'web: port {port}: {error}')
try:
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.settimeout(1)
    udp.sendto(struct.pack('!6H', 0x7478, 0, 0, 0, 0, 0), (sys.argv[1], 53))
    if udp.recv(512)[:2] != b'tx':
        errors.append('dns: udp: unexpected reply')
    socket.create_connection((sys.argv[1], 53), 1).close()
except OSError as error:
    errors.append(f'dns: {error}')
print('\n'.join(errors))
sys.exit(1 if errors else 0)
'''


def scripts_tar() -> bytes:
    """A tar of the directory outside/ holding the three scripts."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode='w') as tar:
        for name, text in (('web.py', WEB), ('dns.py', DNS), ('probe.py', PROBE)):
            data = text.encode()
            info = tarfile.TarInfo(f'outside/{name}')
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


class Outside:
    """The web and DNS server containers of one test's outside; a context manager that closes itself."""

    def __init__(self, client: docker.DockerClient, image: str = 'tx9-box:0.1.0', prefix: str | None = None) -> None:
        self.client = client
        self.image = image
        self.prefix = prefix or f'tx9test-out-{secrets.token_hex(4)}'
        self.network: str | None = None
        self.web: Container | None = None
        self.dns: Container | None = None
        self.ca_pem: bytes = b''

    def __enter__(self) -> 'Outside':
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def start(self, network: str) -> None:
        """Start both servers on this existing network and wait (at most 30 s) until they answer."""
        self.network = network
        try:
            self.web = self._run('web', ['-u', f'{SCRIPTS}/web.py'])
            self.dns = self._run('dns', ['-u', f'{SCRIPTS}/dns.py', self.server_ip])
            self._wait()
            result = self.web.exec_run(['cat', f'{SCRIPTS}/ca.pem'])
            assert result.exit_code == 0, f'outside: no CA in the web server: {result.output!r}'
            self.ca_pem = result.output
        except BaseException:
            self.close()
            raise

    def attach(self, network: str) -> None:
        """Connect both servers to one more existing network; DNS answers keep the first network's address."""
        target = self.client.networks.get(network)
        for container in (self.web, self.dns):
            assert container is not None, 'outside: not started'
            target.connect(container)
            container.reload()

    def ips_on(self, network: str) -> tuple[str, str]:
        """The (web server, DNS server) addresses on a network the servers are on."""
        return self._ip(self.web, network), self._ip(self.dns, network)

    @property
    def server_ip(self) -> str:
        """The web server's address on the first network."""
        return self._ip(self.web, self.network)

    @property
    def dns_ip(self) -> str:
        """The DNS server's address on the first network."""
        return self._ip(self.dns, self.network)

    def queries(self) -> list[str]:
        """Every query name the DNS server received so far, lower-case, no trailing dot, in order."""
        return [line[6:].rsplit(' ', 1)[0] for line in self._lines(self.dns) if line.startswith('QUERY ')]

    def requests(self) -> list[str]:
        """Every request the web server received so far, as 'METHOD target host', in order."""
        return [line[8:] for line in self._lines(self.web) if line.startswith('REQUEST ')]

    def close(self) -> None:
        """Remove both containers (and only them); safe to call again."""
        for role in ('web', 'dns'):
            container, name = getattr(self, role), f'{self.prefix}-{role}'
            setattr(self, role, None)
            try:
                container = container or self.client.containers.get(name)
                if container.labels.get('tx9.test') == LABELS['tx9.test']:
                    container.remove(force=True, v=True)
            except docker.errors.NotFound:
                pass

    def _run(self, role: str, command: list[str]) -> Container:
        """Create, fill and start one server container on the first network."""
        container = self.client.containers.create(
            self.image, command, entrypoint='python3', name=f'{self.prefix}-{role}', user='root',
            labels=dict(LABELS), network=self.network, working_dir='/tmp', tmpfs={'/data': ''},
            environment={'PYTHONDONTWRITEBYTECODE': '1'}, init=True, detach=True)
        setattr(self, role, container)
        container.put_archive('/tmp', scripts_tar())
        container.start()
        container.reload()
        return container

    def _wait(self) -> None:
        """Poll the probe inside the web server container until both servers answer."""
        deadline, problem, web = time.monotonic() + READY_TIMEOUT, '', self.web
        assert web is not None, 'outside: not started'
        while time.monotonic() < deadline:
            try:
                result = web.exec_run(['python3', f'{SCRIPTS}/probe.py', self.dns_ip])
            except docker.errors.APIError as error:
                problem = f'web: cannot run the probe: {error}'
            else:
                if result.exit_code == 0:
                    return
                problem = result.output.decode(errors='replace').strip()
            time.sleep(0.25)
        failed = [role for role in ('web', 'dns') if f'{role}:' in problem] or ['web', 'dns']
        logs = '\n'.join(f'--- {role} logs ---\n{self._logs(getattr(self, role))}' for role in failed)
        raise AssertionError(f'outside: {" and ".join(failed)} server not answering after '
                             f'{READY_TIMEOUT:.0f} s: {problem}\n{logs}')

    @staticmethod
    def _ip(container: Container | None, network: str | None) -> str:
        assert container is not None and network, 'outside: not started'
        return str(container.attrs['NetworkSettings']['Networks'][network]['IPAddress'])

    @staticmethod
    def _logs(container: Container | None) -> str:
        if container is None:
            return '(no container)'
        try:
            container.reload()
            return f'(status {container.status})\n{container.logs().decode(errors="replace")}'
        except docker.errors.APIError as error:
            return f'(no logs: {error})'

    @staticmethod
    def _lines(container: Container | None) -> list[str]:
        assert container is not None, 'outside: not started'
        text: str = container.logs(stdout=True, stderr=False).decode(errors='replace')
        return text.splitlines()
