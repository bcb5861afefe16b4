# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Docker objects of a box: what exists (BoxObjects), what should exist (BoxSpec), and where they answer.

Private to the col_agents.tx9 collection. A box named N is the network tx9-N,
the volumes tx9-N-agent-data (the box) and tx9-N-exec-data (scratch), and the
containers tx9-N-agent and tx9-N-executor. A box with an egress allowlist has
tx9-N internal (no route out, no address of the host on it), and adds the
network tx9-N-out and the container tx9-N-egress, its proxy, the one way out
and the one that publishes the dashboard. Nothing is reused, changed or
removed unless its labels prove it belongs to N. writer.py creates and removes
them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeAlias
from urllib.parse import urlsplit

from ansible_collections.col_agents.tx9.plugins.module_utils._box import confinement, egress, host_mounts
from ansible_collections.col_agents.tx9.plugins.module_utils._box.executor_config import (
    allowed_hosts,
    dashboard_host,
    parse_publish,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._box.host_mounts import Mount
from ansible_collections.col_agents.tx9.plugins.module_utils._box.limits import container_limits
from ansible_collections.col_agents.tx9.plugins.module_utils._docker import ENGINE_ERRORS, docker_error, is_not_found
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._names import (
    LABEL_BOX,
    LABEL_OWNER,
    LABEL_ROLE,
    LABEL_VERSION,
    ROLE_AGENT,
    ROLE_EGRESS,
    ROLE_EXECUTOR,
    box_labels,
    object_names,
    owned_by,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._version import COLLECTION_VERSION

LABEL_CONFIG = 'tx9.config'
LABEL_WEB_BASE_URL = 'tx9.executor-web-base-url'
# On a confined box's agent and Executor: the box has an egress container to go with them.
LABEL_EGRESS = 'tx9.egress'
EXECUTOR_PORT = 4788
PORT_KEY = f'{EXECUTOR_PORT}/tcp'
SYSCTLS = {'net.ipv6.conf.all.disable_ipv6': '1'}
ROLES = (ROLE_AGENT, ROLE_EXECUTOR)
SECOND = 1000000000
# Docker health checks: Executor answers an authenticated MCP handshake through its front (the
# token read from its 0600 file, never from argv); the agent's `hb status` reports itself healthy.
HEALTH_TESTS = {
    ROLE_EXECUTOR: ['CMD', '/opt/tx9/bin/hb', 'executor-health'],
    ROLE_AGENT: ['CMD', '/opt/tx9/bin/hb', 'status', '--health'],
    ROLE_EGRESS: [
        'CMD',
        'python3',
        '-c',
        # The proxy and the dashboard's relay both accept connections.
        'import socket\n'
        f'for port in ({egress.PROXY_PORT}, {EXECUTOR_PORT}):\n'
        '    socket.create_connection(("127.0.0.1", port), 3).close()',
    ],
}
# The agent's token is delivered into the running container on rotation (the environment is
# only its first value), so the agent's config hash does not depend on it.
AGENT_TOKEN_PLACEHOLDER = 'delivered-at-run-time'
# What Docker's inspect or listing says of one object (the SDK gives plain JSON).
Attrs: TypeAlias = dict[str, Any]


def healthcheck(role: str) -> dict[str, Any]:
    return dict(test=HEALTH_TESTS[role], interval=10 * SECOND, timeout=9 * SECOND, retries=3, start_period=60 * SECOND)


def health_status(attrs: Attrs | None) -> str | None:
    """Docker's health verdict for a container: healthy, unhealthy, starting, or None without a check."""
    return (((attrs or {}).get('State') or {}).get('Health') or {}).get('Status')


def _inspect(getter: Callable[[str], Attrs], ref: str) -> Attrs | None:
    try:
        return getter(ref)
    except ENGINE_ERRORS as exc:
        if is_not_found(exc):
            return None
        raise docker_error(f'inspect {ref}', exc)


def _listed(box: str, kind: str, lister: Callable[..., Any], **query: Any) -> list[Attrs]:
    """The entries of one listing of kind; DOCKER_ERROR (or DOCKER_UNAVAILABLE) when the engine does not answer."""
    try:
        listing = lister(**query)
    except ENGINE_ERRORS as exc:
        raise docker_error(f'list the {kind} of box {box}', exc)
    # The volume listing holds its entries under 'Volumes' (null when there are none).
    return list((listing.get('Volumes') or []) if isinstance(listing, dict) else listing)


def _by_name(box: str, kind: str, lister: Callable[..., Any], names: list[str], **query: Any) -> dict[str, Attrs]:
    """The objects of kind given these names, whoever owns them, by name: one listing.

    Docker matches a name filter within names, so only an exact name ('Name', or one of a container's
    'Names') counts.
    """
    found: dict[str, Attrs] = {}
    for attrs in _listed(box, kind, lister, filters={'name': names}, **query):
        for name in [attrs.get('Name')] + list(attrs.get('Names') or []):
            if name and name.lstrip('/') in names:
                found.setdefault(name.lstrip('/'), attrs)
    return found


def container_name(attrs: Attrs) -> str:
    """A container's name, from an inspect ('Name') or a listing entry ('Names').

    Its short ID only when Docker gives none.
    """
    names: list[str | None] = [attrs.get('Name')] + list(attrs.get('Names') or [])
    for name in names:
        if name:
            return name.lstrip('/')
    ident: str = attrs.get('Id') or '?'
    return ident[:12]


def role_of(attrs: Attrs) -> str | None:
    """The role a box's container carries in its labels (agent, executor, egress)."""
    return ((attrs.get('Config') or {}).get('Labels') or {}).get(LABEL_ROLE)


def container_state(attrs: Attrs) -> str:
    """'running', 'stopped', 'restarting' or 'dead' from an inspect result."""
    state = attrs['State']
    if state.get('Restarting'):
        return 'restarting'
    if state.get('Running'):
        return 'running'
    if state.get('Status') == 'dead':
        return 'dead'
    return 'stopped'


def derive_state(
    containers: Mapping[str, Attrs | None], network: Attrs | None, volumes: Mapping[str, Attrs | None]
) -> str:
    """The box state from its objects: running, stopped, crashed or partial."""
    if any(c is None for c in containers.values()) or network is None or any(v is None for v in volumes.values()):
        return 'partial'
    states = {container_state(c) for c in containers.values() if c is not None}
    if states == {'running'}:
        return 'running'
    if states == {'stopped'}:
        return 'stopped'
    return 'crashed'


def published_binding(attrs: Attrs | None) -> tuple[str | None, str | None]:
    """(host ip, host port) Docker published for 4788/tcp, or (None, None)."""
    ports = ((attrs or {}).get('NetworkSettings') or {}).get('Ports') or {}
    for binding in ports.get(PORT_KEY) or []:
        if binding.get('HostPort'):
            return binding.get('HostIp') or '0.0.0.0', binding['HostPort']
    return None, None


def configured_host_port(attrs: Attrs | None) -> str:
    """The host port a container was created to publish 4788/tcp on ('' when dynamic)."""
    bindings = (((attrs or {}).get('HostConfig') or {}).get('PortBindings') or {}).get(PORT_KEY) or []
    return (bindings[0].get('HostPort') or '') if bindings else ''


def env_value(attrs: Attrs | None, key: str) -> str | None:
    env: list[str] = ((attrs or {}).get('Config') or {}).get('Env') or []
    for item in env:
        name, _sep, value = item.partition('=')
        if name == key:
            return value
    return None


def _config_hash(spec: Mapping[str, Any], token: str) -> str:
    """A digest of everything that needs a recreate to change; the token only as its own hash."""
    token_digest = hashlib.sha256(token.encode('utf-8')).hexdigest()
    canonical = json.dumps(spec, sort_keys=True).replace(token, 'sha256:' + token_digest)
    return hashlib.sha256(canonical.encode('utf-8')).hexdigest()


class BoxSpec:
    """What the containers of a box should look like."""

    def __init__(
        self,
        box: str,
        image_ref: str,
        image_id: str,
        image_version: str | None,
        token: str,
        executor_values: Mapping[str, Any],
        resources: Mapping[str, int],
        mounts: Iterable[Mount] = (),
        create_from: str | None = None,
        superseded_labels: Mapping[str, str] | None = None,
        egress_policy: egress.Policy = egress.OPEN,
    ) -> None:
        self.box = box
        self.names: dict[str, str] = object_names(box)
        self.image_ref = image_ref
        self.image_id = image_id
        self.version: str = image_version or COLLECTION_VERSION
        self.token = token
        self.executor_values = executor_values
        self.resources = resources
        self.mounts = list(mounts)
        # What containers are created from: the image reference, or the image id when the
        # reference has moved on and a container must stay on the image it runs.
        self.create_from = create_from or image_ref
        self.url_host = dashboard_host(executor_values)
        # The host port the dashboard got first, asked for again on every create and start
        # unless executor_publish names a port (see Reconciler.remember_port).
        self.remembered_port: str | None = None
        # A copy a move left behind carries its mark on both containers (superseded.py).
        self.superseded_labels = dict(superseded_labels or {})
        self.egress = egress_policy
        self.confined = egress_policy.mode == egress.ALLOWLIST

    @property
    def roles(self) -> tuple[str, ...]:
        """The box's containers, in start order."""
        return (ROLE_EGRESS, ROLE_EXECUTOR, ROLE_AGENT) if self.confined else (ROLE_EXECUTOR, ROLE_AGENT)

    @property
    def publisher(self) -> str:
        """The role whose container publishes the dashboard: the egress proxy on a confined box."""
        return ROLE_EGRESS if self.confined else ROLE_EXECUTOR

    def labels(self, role: str | None = None) -> dict[str, str]:
        return box_labels(self.box, role, self.version)

    def container(self, role: str) -> tuple[dict[str, Any], str]:
        """The create settings of one container (limits apart), and its config hash."""
        if role == ROLE_EGRESS:
            spec = confinement.egress_settings(self.box, self.egress, self.executor_values, self.remembered_port)
        else:
            spec = self._agent_settings() if role == ROLE_AGENT else self._executor_settings()
            if self.confined:
                confinement.confine(spec, role)
        spec.setdefault('network', self.names['network'])
        spec.update(
            image_id=self.image_id,
            sysctls=SYSCTLS,
            init=True,
            restart='unless-stopped',
            healthcheck=healthcheck(role),
        )
        if self.superseded_labels:
            # Only a marked copy has this key, so an unmarked box keeps its config hash.
            spec['superseded'] = self.superseded_labels
        hashed_token = self.token if role == ROLE_EXECUTOR else AGENT_TOKEN_PLACEHOLDER
        hashed = json.loads(json.dumps(spec).replace(self.token, hashed_token))
        if role == self.publisher:
            # A remembered port is the box keeping what it got, not a change to recreate for:
            # the hash holds the port asked for.
            hashed['ports'] = list(parse_publish(self.executor_values.get('executor_publish')))
        return spec, _config_hash(hashed, hashed_token)

    def _agent_settings(self) -> dict[str, Any]:
        environment = {
            'EXECUTOR_HOST': 'executor',
            'BOXD_EXECUTOR_TOKEN': self.token,
            'BOX_EXECUTOR_BRIDGE_PORT': str(EXECUTOR_PORT),
            'TX9_BOX_NAME': self.box,
            'TX9_IMAGE': self.image_ref,
        }
        spec: dict[str, Any] = dict(
            name=self.names['agent'],
            entrypoint=None,
            environment=environment,
            volume=self.names['agent_volume'],
            alias='agent',
            ports=None,
            dns=[],
        )
        if self.mounts:
            # Only a box with mounts has these keys, so a box without keeps its config hash.
            spec['mounts'] = host_mounts.docker_binds(self.mounts)
            spec['group_add'] = [str(gid) for gid in host_mounts.group_ids(self.mounts)]
            # group_add reaches docker exec sessions as agent; TX9_AGENT_MOUNT_GIDS carries
            # the same list into the container for its entrypoint.
            if spec['group_add']:
                environment['TX9_AGENT_MOUNT_GIDS'] = ','.join(spec['group_add'])
        return spec

    def _executor_settings(self) -> dict[str, Any]:
        environment = {
            'EXECUTOR_MCP_TOKEN': self.token,
            'TX9_BOX_NAME': self.box,
            'TX9_EXECUTOR_ALLOWED_HOSTS': ','.join(allowed_hosts(self.executor_values, self.url_host)),
        }
        if self.executor_values.get('executor_web_base_url'):
            environment['EXECUTOR_WEB_BASE_URL'] = self.executor_values['executor_web_base_url']
        address, asked_port = parse_publish(self.executor_values.get('executor_publish'))
        return dict(
            name=self.names['executor'],
            entrypoint=['/opt/tx9/bin/tx9-executor-entrypoint'],
            environment=environment,
            volume=self.names['executor_volume'],
            alias='executor',
            ports=[address, asked_port or self.remembered_port or ''],
            dns=list(self.executor_values.get('executor_dns') or []),
        )

    def limits(self, role: str) -> dict[str, int]:
        if role == ROLE_EGRESS:
            return dict(confinement.EGRESS_LIMITS)
        return container_limits(self.resources, role)


class BoxObjects:
    """The Docker objects of one box as the daemon reports them."""

    def __init__(self, client: Any, box: str) -> None:
        self.client = client
        self.box = box
        self.names: dict[str, str] = object_names(box)
        api = client.api
        names = self.names
        # One listing per kind finds the objects given the box's names, whoever owns them; only the
        # containers are inspected, for what a listing leaves out (limits, environment, health).
        networks = _by_name(box, 'networks', api.networks, [names['network'], names['egress_network']])
        self.network = networks.get(names['network'])
        self.egress_network = networks.get(names['egress_network'])
        volumes = _by_name(box, 'volumes', api.volumes, [names[f'{role}_volume'] for role in ROLES])
        self.volumes = {role: volumes.get(names[f'{role}_volume']) for role in ROLES}
        listed = _by_name(box, 'containers', api.containers, [names[r] for r in (*ROLES, ROLE_EGRESS)], all=True)

        def inspect(role: str) -> Attrs | None:
            return _inspect(api.inspect_container, names[role]) if names[role] in listed else None

        self.containers = {role: inspect(role) for role in ROLES}
        # A confined box's proxy (None on an open box).
        self.egress = inspect(ROLE_EGRESS)
        known = {c['Id'] for c in (*self.containers.values(), self.egress) if c}
        labelled = _listed(box, 'containers', api.containers, all=True, filters={'label': f'{LABEL_BOX}={box}'})
        self.strays: list[Attrs] = [c for c in labelled if c['Id'] not in known]

    def container(self, role: str) -> Attrs:
        """The inspect of the box's container of role, which the caller knows exists (else NO_BOX)."""
        attrs = self.containers[role]
        if attrs is None:
            raise Tx9Error(
                f'Box {self.box} has no {role} container.',
                'NO_BOX',
                f'Repair the box with col_agents.tx9.tx9_box name={self.box}, then run this again.',
            )
        return attrs

    @property
    def confined(self) -> bool:
        """Whether the box has (or its containers say it should have) an egress proxy."""
        labelled = any(
            ((c or {}).get('Config') or {}).get('Labels', {}).get(LABEL_EGRESS) for c in self.containers.values()
        )
        return bool(labelled or self.egress or self.egress_network)

    def all_containers(self) -> dict[str, Attrs | None]:
        """The box's containers by role, its proxy among them when it is confined."""
        found = dict(self.containers)
        if self.confined:
            found[ROLE_EGRESS] = self.egress
        return found

    def publisher(self) -> Attrs | None:
        """The container that publishes the dashboard: the proxy on a confined box, else Executor."""
        return self.egress if self.confined else self.containers[ROLE_EXECUTOR]

    def exists(self) -> bool:
        return bool(
            self.network
            or any(self.volumes.values())
            or any(self.containers.values())
            or self.strays
            or self.egress
            or self.egress_network
        )

    def state(self) -> str:
        if not self.exists():
            return 'absent'
        if self.confined and self.egress_network is None:
            return 'partial'
        return derive_state(self.all_containers(), self.network, self.volumes)

    def check_ownership(self) -> None:
        """Refuse with NAME_CONFLICT when any object named for the box lacks its labels."""
        named = [(self.names['network'], 'network', self.network)]
        named += [(self.names[f'{r}_volume'], 'volume', self.volumes[r]) for r in ROLES]
        named += [(self.names[r], 'container', self.containers[r]) for r in ROLES]
        named += [(self.names['egress_network'], 'network', self.egress_network)]
        named += [(self.names[ROLE_EGRESS], 'container', self.egress)]
        for name, kind, attrs in named:
            if attrs is None:
                continue
            labels = attrs.get('Labels') if kind != 'container' else attrs['Config'].get('Labels')
            if not owned_by(labels, self.box):
                raise Tx9Error(
                    f'A {kind} named {name} exists but does not belong to box {self.box} '
                    f'(its labels lack {LABEL_OWNER}=1, {LABEL_BOX}={self.box}), '
                    'so tx9 will not use, change or remove it.',
                    'NAME_CONFLICT',
                    f'Choose another box name, or remove or rename the {kind} yourself (docker {kind} rm {name}) '
                    'if you are sure it is not needed.',
                )
        for stray in self.strays:
            if not owned_by(stray.get('Labels'), self.box):
                raise Tx9Error(
                    f'Container {stray["Names"][0].lstrip("/")} carries the label {LABEL_BOX}={self.box} '
                    'but is not owned by tx9.',
                    'NAME_CONFLICT',
                    'Remove that container yourself if you are sure it is not needed.',
                )

    def token(self) -> str | None:
        """The token the running box carries, for recovery when the state home was lost.

        Executor's first: it is recreated with every new token, while the agent's environment
        keeps the value it was created with.
        """
        return env_value(self.containers['executor'], 'EXECUTOR_MCP_TOKEN') or env_value(
            self.containers['agent'], 'BOXD_EXECUTOR_TOKEN'
        )

    def live_resources(self) -> dict[str, int | None]:
        live: dict[str, int | None] = {}
        for role in ROLES:
            attrs = self.containers[role]
            if attrs:
                host = attrs['HostConfig']
                live[f'{role}_cpus'] = host.get('NanoCpus') or None
                live[f'{role}_memory'] = host.get('Memory') or None
        return live

    def summary(self) -> dict[str, Any]:
        """The box as tx9 reports it (never the token)."""
        version = None
        image = None
        for role in ROLES:
            attrs = self.containers[role]
            if attrs:
                version = version or attrs['Config'].get('Labels', {}).get(LABEL_VERSION)
                image = image or attrs['Config'].get('Image')
        return dict(
            name=self.box,
            state=self.state(),
            image=image,
            version=version,
            network=self.names['network'],
            volumes=dict(agent=self.names['agent_volume'], executor=self.names['executor_volume']),
            containers={role: self._container_summary(role, attrs) for role, attrs in self.all_containers().items()},
            published=dict(zip(('address', 'port'), published_binding(self.publisher()))),
        )

    def _container_summary(self, role: str, attrs: Attrs | None) -> dict[str, Any]:
        return dict(
            name=self.names[role],
            id=(attrs or {}).get('Id'),
            state=container_state(attrs) if attrs else 'missing',
            health=health_status(attrs),
            image_id=(attrs or {}).get('Image'),
        )


def dashboard_url(executor_values: Mapping[str, Any], url_host: str, executor_attrs: Attrs | None) -> str | None:
    """http://host:port/ (or the public origin), without the token; None when unpublished."""
    if executor_values.get('executor_web_base_url'):
        return f'{executor_values["executor_web_base_url"]}/'
    address, port = published_binding(executor_attrs)
    if not port:
        return None
    host = address if address and address not in ('0.0.0.0', '::') else url_host
    if ':' in host:
        host = f'[{host}]'
    return f'http://{host}:{port}/'


def probe_address(executor_attrs: Attrs | None, docker_host: str | None) -> tuple[str, str | None]:
    """Where the host reaches Executor's published port: (address, port)."""
    address, port = published_binding(executor_attrs)
    if not address or address in ('0.0.0.0', '::'):
        address = '127.0.0.1'
        if docker_host and docker_host.startswith(('tcp://', 'ssh://', 'http://', 'https://')):
            address = urlsplit(docker_host).hostname or address
    return address, port
