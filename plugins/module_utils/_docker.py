# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Docker connection: options, client, and turning SDK errors into Tx9Error.

Private to the col_agents.tx9 collection. This is the one seam between tx9
and a Docker daemon, local or remote (DOCKER_HOST, ssh://, tcp:// with TLS).
"""

from __future__ import annotations

import os
import socket
import traceback
from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._names import LABEL_BOX, NAME_PATTERN

try:
    import docker
    from docker import errors as docker_errors

    HAS_DOCKER = True
    DOCKER_IMPORT_ERROR: str | None = None
except ImportError:
    docker = None
    docker_errors = None
    HAS_DOCKER = False
    DOCKER_IMPORT_ERROR = traceback.format_exc()

# What a Docker SDK call raises when the engine refuses or does not answer, for an `except` clause
# around such a call: the SDK's own DockerException (APIError, NotFound, ...) and OSError, which
# holds requests' RequestException (an IOError), socket timeouts and a dropped connection. A
# programming error (TypeError, KeyError, ...) is none of them. Without the SDK no client exists.
ENGINE_ERRORS: tuple[type[Exception], ...] = (docker_errors.DockerException, OSError) if HAS_DOCKER else (OSError,)

DEFAULT_DOCKER_HOST = 'unix:///var/run/docker.sock'

CONNECTION_ARGS = dict(
    docker_host=dict(type='str', aliases=['docker_url']),
    tls=dict(type='bool', default=False),
    validate_certs=dict(type='bool', default=False, aliases=['tls_verify']),
    ca_path=dict(type='path', aliases=['ca_cert', 'tls_ca_cert', 'cacert_path']),
    client_cert=dict(type='path', aliases=['tls_client_cert', 'cert_path']),
    client_key=dict(type='path', aliases=['tls_client_key', 'key_path']),
    api_version=dict(type='str', default='auto', aliases=['docker_api_version']),
    timeout=dict(type='int', default=60),
)


def connection_from_params(params: dict[str, Any]) -> dict[str, Any]:
    """The connection settings from module parameters, DOCKER_HOST as fallback."""
    return dict(
        docker_host=params.get('docker_host') or os.environ.get('DOCKER_HOST') or DEFAULT_DOCKER_HOST,
        tls=params.get('tls', False),
        validate_certs=params.get('validate_certs', False),
        ca_path=params.get('ca_path'),
        client_cert=params.get('client_cert'),
        client_key=params.get('client_key'),
        api_version=params.get('api_version') or 'auto',
        timeout=params.get('timeout') or 60,
    )


def connect(settings: dict[str, Any]) -> Any:
    """A docker.DockerClient that has answered a ping, or DOCKER_UNAVAILABLE."""
    tls_config = None
    if settings['tls'] or settings['validate_certs']:
        client_cert = None
        if settings['client_cert'] and settings['client_key']:
            client_cert = (settings['client_cert'], settings['client_key'])
        tls_config = docker.tls.TLSConfig(
            client_cert=client_cert, ca_cert=settings['ca_path'], verify=settings['validate_certs']
        )
    try:
        client = docker.DockerClient(
            base_url=settings['docker_host'],
            version=settings['api_version'],
            timeout=settings['timeout'],
            tls=tls_config,
        )
        if str(settings['api_version'] or 'auto').lower() != 'auto':
            # With api_version auto the client has already asked the engine its version.
            client.ping()
    except Exception as exc:  # noqa: BLE001  # the SDK raises many types while connecting, each a refusal
        raise Tx9Error(
            f'The Docker engine at {settings["docker_host"]} does not answer: {exc}',
            'DOCKER_UNAVAILABLE',
            'Start Docker on the target host (the col_agents.tx9.tx9_host role installs and starts '
            'one), or set docker_host / DOCKER_HOST to an engine that runs.',
        ) from exc
    return client


def is_engine_error(exc: BaseException) -> bool:
    """True for the errors the SDK raises when the engine refuses or does not answer.

    Narrower than ENGINE_ERRORS: it judges an exception nobody anticipated, which may come from
    anywhere, so an OSError of a file counts only when requests raised it for the engine.
    """
    if not HAS_DOCKER:
        return False
    import requests

    return isinstance(exc, docker_errors.DockerException | requests.exceptions.RequestException)


def is_not_found(exc: BaseException) -> bool:
    return HAS_DOCKER and isinstance(exc, docker_errors.NotFound)


# What the engine says when its containerd went away under it (the daemon answers, its runtime does not).
RUNTIME_GONE = ('containerd', 'transport is closing', 'error while dialing', 'connection refused')


def engine_unreachable(exc: BaseException) -> bool:
    """Whether exc says the engine (or its containerd) stopped answering, rather than refused a request.

    A connection refused, reset or broken mid-reply, or a server error naming
    containerd's connection: the engine died or is starting again.
    """
    if isinstance(exc, ConnectionRefusedError | ConnectionResetError):
        return True
    if not HAS_DOCKER:
        return False
    import requests

    if isinstance(exc, requests.exceptions.ConnectionError | requests.exceptions.ChunkedEncodingError):
        return True
    if isinstance(exc, docker_errors.APIError) and (exc.status_code or 0) >= 500:
        words = str(getattr(exc, 'explanation', None) or exc).lower()
        return 'containerd' in words and any(sign in words for sign in RUNTIME_GONE[1:])
    return False


def docker_error(action: str, exc: BaseException) -> Tx9Error:
    """A Tx9Error for an SDK failure while doing action: DOCKER_UNAVAILABLE when the engine stopped answering."""
    explanation = getattr(exc, 'explanation', None) or str(exc)
    if engine_unreachable(exc):
        return Tx9Error(
            f'The Docker engine stopped answering while trying to {action}: {explanation}',
            'DOCKER_UNAVAILABLE',
            'Check that Docker runs on the target host (start it again if it died), then run the same task '
            'again: it carries on from what the engine has.',
        )
    return Tx9Error(
        f'Docker refused to {action}: {explanation}',
        'DOCKER_ERROR',
        'Read the Docker message above; fix its cause on the host and run again.',
    )


class AttachedStdin:
    """A created container's standard input, attached before it starts: write bytes, then close_write().

    The container must be created with stdin_open=True (the SDK then sets
    StdinOnce): when close_write() ends our side, Docker closes the
    process's standard input, which reads its end. close() drops the
    connection; without close_write() first the process never sees a clean
    end of input. Works on the SDK's unix, TCP, TLS and ssh transports.
    """

    def __init__(self, api: Any, container: str, timeout: float | None) -> None:
        self.response_socket = api.attach_socket(container, params={'stdin': 1, 'stream': 1})
        # The SocketIO of unix and TCP connections wraps the socket; TLS and ssh give it directly.
        self.sock = getattr(self.response_socket, '_sock', self.response_socket)
        if hasattr(self.sock, 'settimeout'):
            self.sock.settimeout(timeout)

    def write(self, data: bytes) -> None:
        self.sock.sendall(data)

    def close_write(self) -> None:
        if hasattr(self.sock, 'shutdown_write'):
            # A paramiko channel (ssh://).
            self.sock.shutdown_write()
        else:
            self.sock.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        for each in (self.sock,) if self.sock is self.response_socket else (self.sock, self.response_socket):
            try:
                each.close()
            except OSError:
                pass


def box_names_from_labels(client: Any) -> list[str]:
    """Every box name any tx9-labelled container, volume or network carries, sorted."""
    label = {'label': LABEL_BOX}
    names: set[str | None] = set()
    for container in client.api.containers(all=True, filters=label):
        names.add((container.get('Labels') or {}).get(LABEL_BOX))
    for volume in client.api.volumes(filters=label).get('Volumes') or []:
        names.add((volume.get('Labels') or {}).get(LABEL_BOX))
    for network in client.api.networks(filters=label):
        names.add((network.get('Labels') or {}).get(LABEL_BOX))
    return sorted(n for n in names if n and NAME_PATTERN.match(n))


def box_has_objects(client: Any, box: str) -> bool:
    """Whether any container, volume or network carries the label of box."""
    label = {'label': f'{LABEL_BOX}={box}'}
    return bool(
        client.api.containers(all=True, filters=label)
        or client.api.volumes(filters=label).get('Volumes')
        or client.api.networks(filters=label)
    )


def find_image(client: Any, ref: str) -> Any:
    """The image ref names on client's engine, or None when it has none."""
    try:
        return client.images.get(ref)
    except Exception as exc:
        if is_not_found(exc):
            return None
        if is_engine_error(exc):
            raise docker_error(f'inspect image {ref}', exc) from exc
        raise
