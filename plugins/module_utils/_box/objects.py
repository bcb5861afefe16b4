# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Docker objects of a box: what exists, what should exist, and how to get there.

Private to the col_agents.tx9 collection. A box named N is the network tx9-N,
the volumes tx9-N-agent-data (the box) and tx9-N-exec-data (scratch), and the
containers tx9-N-agent and tx9-N-executor. Nothing is reused, changed or
removed unless its labels prove it belongs to N.
"""

import hashlib
import json
import os
import socket
from urllib.parse import urlsplit

from ansible_collections.col_agents.tx9.plugins.module_utils._box import host_mounts
from ansible_collections.col_agents.tx9.plugins.module_utils._box.executor_config import (
    parse_publish,
    parse_web_base_url,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._box.limits import container_limits, update_live
from ansible_collections.col_agents.tx9.plugins.module_utils._docker import docker_error, is_not_found
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._names import (
    LABEL_BOX,
    LABEL_OWNER,
    LABEL_ROLE,
    LABEL_VERSION,
    ROLE_AGENT,
    ROLE_EXECUTOR,
    box_labels,
    object_names,
    owned_by,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._version import COLLECTION_VERSION

LABEL_CONFIG = 'tx9.config'
LABEL_WEB_BASE_URL = 'tx9.executor-web-base-url'
EXECUTOR_PORT = 4788
PORT_KEY = '%d/tcp' % EXECUTOR_PORT
SYSCTLS = {'net.ipv6.conf.all.disable_ipv6': '1'}
ROLES = (ROLE_AGENT, ROLE_EXECUTOR)
SECOND = 1000000000
# Docker health checks: Executor answers an authenticated MCP handshake through its front (the
# token read from its 0600 file, never from argv); the agent's `hb status` reports itself healthy.
HEALTH_TESTS = {
    ROLE_EXECUTOR: ['CMD', '/opt/tx9/bin/hb', 'executor-health'],
    ROLE_AGENT: ['CMD', '/opt/tx9/bin/hb', 'status', '--health'],
}
# The agent's token is delivered into the running container on rotation (the environment is
# only its first value), so the agent's config hash does not depend on it.
AGENT_TOKEN_PLACEHOLDER = 'delivered-at-run-time'


def healthcheck(role):
    return dict(test=HEALTH_TESTS[role], interval=10 * SECOND, timeout=9 * SECOND, retries=3, start_period=60 * SECOND)


def health_status(attrs):
    """Docker's health verdict for a container: healthy, unhealthy, starting, or None without a check."""
    return (((attrs or {}).get('State') or {}).get('Health') or {}).get('Status')


def _inspect(getter, ref):
    try:
        return getter(ref)
    except Exception as exc:
        if is_not_found(exc):
            return None
        raise docker_error(f'inspect {ref}', exc)


def container_name(attrs):
    """A container's name, from an inspect ('Name') or a listing entry ('Names'); its short ID only when Docker gives none."""
    names = [attrs.get('Name')] + list(attrs.get('Names') or [])
    for name in names:
        if name:
            return name.lstrip('/')
    return (attrs.get('Id') or '?')[:12]


def container_state(attrs):
    """'running', 'stopped', 'restarting' or 'dead' from an inspect result."""
    state = attrs['State']
    if state.get('Restarting'):
        return 'restarting'
    if state.get('Running'):
        return 'running'
    if state.get('Status') == 'dead':
        return 'dead'
    return 'stopped'


def derive_state(containers, network, volumes):
    """The box state from its objects: running, stopped, crashed or partial."""
    if any(c is None for c in containers.values()) or network is None or any(v is None for v in volumes.values()):
        return 'partial'
    states = set(container_state(c) for c in containers.values())
    if states == set(['running']):
        return 'running'
    if states == set(['stopped']):
        return 'stopped'
    return 'crashed'


def published_binding(attrs):
    """(host ip, host port) Docker published for 4788/tcp, or (None, None)."""
    ports = ((attrs or {}).get('NetworkSettings') or {}).get('Ports') or {}
    for binding in ports.get(PORT_KEY) or []:
        if binding.get('HostPort'):
            return binding.get('HostIp') or '0.0.0.0', binding['HostPort']
    return None, None


def configured_host_port(attrs):
    """The host port a container was created to publish 4788/tcp on ('' when dynamic)."""
    bindings = (((attrs or {}).get('HostConfig') or {}).get('PortBindings') or {}).get(PORT_KEY) or []
    return (bindings[0].get('HostPort') or '') if bindings else ''


def env_value(attrs, key):
    for item in ((attrs or {}).get('Config') or {}).get('Env') or []:
        name, _sep, value = item.partition('=')
        if name == key:
            return value
    return None


def outbound_ipv4():
    """The address this host uses to reach other hosts, or None."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(('192.0.2.1', 9))  # a documentation address: nothing is sent
        return probe.getsockname()[0]
    except OSError:
        return None
    finally:
        probe.close()


def url_host_for(address):
    """The host name a person uses to reach a port published on address."""
    if address and address not in ('0.0.0.0', '::'):
        return address
    return os.environ.get('TX9_URL_HOST') or outbound_ipv4() or '127.0.0.1'


def dashboard_host(executor_values):
    """The host name a person uses to reach the dashboard, without the token."""
    return url_host_for(parse_publish(executor_values.get('executor_publish'))[0])


def allowed_hosts(executor_values, url_host):
    """Host names Executor must accept in the Host header, beyond executor and localhost."""
    hosts = []
    if executor_values.get('executor_web_base_url'):
        hosts.append(parse_web_base_url(executor_values['executor_web_base_url'])[1])
    hosts.append(url_host)
    hosts.extend(executor_values.get('executor_allowed_hosts') or [])
    found = []
    for host in hosts:
        if host and host not in found and host not in ('executor', 'localhost', '127.0.0.1'):
            found.append(host)
    return found


def _config_hash(spec, token):
    """A digest of everything that needs a recreate to change; the token only as its own hash."""
    token_digest = hashlib.sha256(token.encode('utf-8')).hexdigest()
    canonical = json.dumps(spec, sort_keys=True).replace(token, 'sha256:' + token_digest)
    return hashlib.sha256(canonical.encode('utf-8')).hexdigest()


class BoxSpec:
    """What the containers of a box should look like."""

    def __init__(
        self, box, image_ref, image_id, image_version, token, executor_values, resources, mounts=(), create_from=None
    ):
        self.box = box
        self.names = object_names(box)
        self.image_ref = image_ref
        self.image_id = image_id
        self.version = image_version or COLLECTION_VERSION
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
        self.remembered_port = None

    def labels(self, role=None):
        return box_labels(self.box, role, self.version)

    def container(self, role):
        """The create settings of one container (limits apart), and its config hash."""
        names = self.names
        if role == ROLE_AGENT:
            environment = {
                'EXECUTOR_HOST': 'executor',
                'BOXD_EXECUTOR_TOKEN': self.token,
                'BOX_EXECUTOR_BRIDGE_PORT': str(EXECUTOR_PORT),
                'TX9_BOX_NAME': self.box,
                'TX9_IMAGE': self.image_ref,
            }
            spec = dict(
                name=names['agent'],
                entrypoint=None,
                environment=environment,
                volume=names['agent_volume'],
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
        else:
            environment = {
                'EXECUTOR_MCP_TOKEN': self.token,
                'TX9_BOX_NAME': self.box,
                'TX9_EXECUTOR_ALLOWED_HOSTS': ','.join(allowed_hosts(self.executor_values, self.url_host)),
            }
            if self.executor_values.get('executor_web_base_url'):
                environment['EXECUTOR_WEB_BASE_URL'] = self.executor_values['executor_web_base_url']
            address, asked_port = parse_publish(self.executor_values.get('executor_publish'))
            port = asked_port or self.remembered_port or ''
            spec = dict(
                name=names['executor'],
                entrypoint=['/opt/tx9/bin/tx9-executor-entrypoint'],
                environment=environment,
                volume=names['executor_volume'],
                alias='executor',
                ports=[address, port],
                dns=list(self.executor_values.get('executor_dns') or []),
            )
        spec.update(
            image_id=self.image_id,
            network=names['network'],
            sysctls=SYSCTLS,
            init=True,
            restart='unless-stopped',
            healthcheck=healthcheck(role),
        )
        hashed_token = self.token if role == ROLE_EXECUTOR else AGENT_TOKEN_PLACEHOLDER
        hashed = json.loads(json.dumps(spec).replace(self.token, hashed_token))
        if role == ROLE_EXECUTOR:
            # A remembered port is the box keeping what it got, not a change to recreate for.
            hashed['ports'] = [address, asked_port]
        return spec, _config_hash(hashed, hashed_token)

    def limits(self, role):
        return container_limits(self.resources, role)


class BoxObjects:
    """The Docker objects of one box as the daemon reports them."""

    def __init__(self, client, box):
        self.client = client
        self.box = box
        self.names = object_names(box)
        api = client.api
        self.network = _inspect(api.inspect_network, self.names['network'])
        self.volumes = dict(
            agent=_inspect(api.inspect_volume, self.names['agent_volume']),
            executor=_inspect(api.inspect_volume, self.names['executor_volume']),
        )
        self.containers = dict(
            agent=_inspect(api.inspect_container, self.names['agent']),
            executor=_inspect(api.inspect_container, self.names['executor']),
        )
        known = set(c['Id'] for c in self.containers.values() if c)
        self.strays = [
            c for c in api.containers(all=True, filters={'label': f'{LABEL_BOX}={box}'}) if c['Id'] not in known
        ]

    def exists(self):
        return bool(self.network or any(self.volumes.values()) or any(self.containers.values()) or self.strays)

    def state(self):
        if not self.exists():
            return 'absent'
        return derive_state(self.containers, self.network, self.volumes)

    def check_ownership(self):
        """Refuse with NAME_CONFLICT when any object named for the box lacks its labels."""
        named = [(self.names['network'], 'network', self.network)]
        named += [(self.names[f'{r}_volume'], 'volume', self.volumes[r]) for r in ROLES]
        named += [(self.names[r], 'container', self.containers[r]) for r in ROLES]
        for name, kind, attrs in named:
            if attrs is None:
                continue
            labels = attrs.get('Labels') if kind != 'container' else attrs['Config'].get('Labels')
            if not owned_by(labels, self.box):
                raise Tx9Error(
                    f'A {kind} named {name} exists but does not belong to box {self.box} (its labels lack {LABEL_OWNER}=1, {LABEL_BOX}={self.box}), '
                    'so tx9 will not use, change or remove it.',
                    'NAME_CONFLICT',
                    f'Choose another box name, or remove or rename the {kind} yourself (docker {kind} rm {name}) '
                    'if you are sure it is not needed.',
                )
        for stray in self.strays:
            if not owned_by(stray.get('Labels'), self.box):
                raise Tx9Error(
                    'Container {} carries the label {}={} but is not owned by tx9.'.format(
                        stray['Names'][0].lstrip('/'), LABEL_BOX, self.box
                    ),
                    'NAME_CONFLICT',
                    'Remove that container yourself if you are sure it is not needed.',
                )

    def token(self):
        """The token the running box carries, for recovery when the state home was lost.

        Executor's first: it is recreated with every new token, while the agent's environment
        keeps the value it was created with.
        """
        return env_value(self.containers['executor'], 'EXECUTOR_MCP_TOKEN') or env_value(
            self.containers['agent'], 'BOXD_EXECUTOR_TOKEN'
        )

    def live_resources(self):
        live = {}
        for role in ROLES:
            attrs = self.containers[role]
            if attrs:
                host = attrs['HostConfig']
                live[f'{role}_cpus'] = host.get('NanoCpus') or None
                live[f'{role}_memory'] = host.get('Memory') or None
        return live

    def summary(self):
        """The box as tx9 reports it (never the token)."""
        executor = self.containers['executor']
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
            containers=dict(
                (
                    role,
                    dict(
                        name=self.names[role],
                        id=(self.containers[role] or {}).get('Id'),
                        state=container_state(self.containers[role]) if self.containers[role] else 'missing',
                        health=health_status(self.containers[role]),
                        image_id=(self.containers[role] or {}).get('Image'),
                    ),
                )
                for role in ROLES
            ),
            published=dict(zip(('address', 'port'), published_binding(executor))),
        )


def dashboard_url(executor_values, url_host, executor_attrs):
    """http://host:port/ (or the public origin), without the token; None when unpublished."""
    if executor_values.get('executor_web_base_url'):
        return executor_values['executor_web_base_url'] + '/'
    address, port = published_binding(executor_attrs)
    if not port:
        return None
    host = url_host if address in ('0.0.0.0', '', '::') else address
    if ':' in host:
        host = f'[{host}]'
    return f'http://{host}:{port}/'


def probe_address(executor_attrs, docker_host):
    """Where the host reaches Executor's published port: (address, port)."""
    address, port = published_binding(executor_attrs)
    if address in (None, '0.0.0.0', '', '::'):
        address = '127.0.0.1'
        if docker_host and docker_host.startswith(('tcp://', 'ssh://', 'http://', 'https://')):
            address = urlsplit(docker_host).hostname or address
    return address, port


class BoxWriter:
    """Creates, recreates, updates, starts, stops and removes a box's objects."""

    def __init__(self, client, spec):
        self.client = client
        self.spec = spec
        self.created = []

    def create_network(self):
        try:
            self.client.api.create_network(
                self.spec.names['network'], driver='bridge', labels=self.spec.labels(), enable_ipv6=False
            )
        except Exception as exc:
            raise docker_error('create network {}'.format(self.spec.names['network']), exc)
        self.created.append(('network', self.spec.names['network']))

    def create_volume(self, role):
        name = self.spec.names[f'{role}_volume']
        try:
            self.client.api.create_volume(name=name, driver='local', labels=self.spec.labels(role))
        except Exception as exc:
            raise docker_error(f'create volume {name}', exc)
        self.created.append(('volume', name))

    def create_container(self, role):
        settings, config_hash = self.spec.container(role)
        api = self.client.api
        labels = self.spec.labels(role)
        labels[LABEL_CONFIG] = config_hash
        if role == ROLE_EXECUTOR and self.spec.executor_values.get('executor_web_base_url'):
            labels[LABEL_WEB_BASE_URL] = self.spec.executor_values['executor_web_base_url']
        limits = self.spec.limits(role)
        host_config = dict(
            binds=['{}:/data:rw'.format(settings['volume'])] + settings.get('mounts', []),
            init=True,
            restart_policy={'Name': 'unless-stopped'},
            sysctls=SYSCTLS,
            nano_cpus=limits['NanoCpus'],
            mem_limit=limits['Memory'],
            memswap_limit=limits['MemorySwap'],
            network_mode=settings['network'],
        )
        ports = None
        if settings['ports']:
            host_config['port_bindings'] = {
                PORT_KEY: [{'HostIp': settings['ports'][0], 'HostPort': settings['ports'][1]}]
            }
            ports = [EXECUTOR_PORT]
        if settings['dns']:
            host_config['dns'] = settings['dns']
        if settings.get('group_add'):
            host_config['group_add'] = settings['group_add']
        networking = api.create_networking_config(
            {settings['network']: api.create_endpoint_config(aliases=[settings['alias']])}
        )
        try:
            created = api.create_container(
                self.spec.create_from,
                name=settings['name'],
                labels=labels,
                environment=settings['environment'],
                entrypoint=settings['entrypoint'],
                ports=ports,
                healthcheck=settings['healthcheck'],
                host_config=api.create_host_config(**host_config),
                networking_config=networking,
            )
        except Exception as exc:
            raise docker_error('create container {}'.format(settings['name']), exc)
        self.created.append(('container', created['Id']))
        return created['Id']

    def remove_container(self, container_id):
        # Stop first: the agent's loop then stops services, the gateway and SQLite
        # writers cleanly, instead of all of them dying at once to SIGKILL.
        self.stop(container_id)
        try:
            self.client.api.remove_container(container_id, force=True, v=False)
        except Exception as exc:
            if not is_not_found(exc):
                raise docker_error(f'remove container {container_id}', exc)

    def update_limits(self, container_id, role):
        update_live(self.client, container_id, self.spec.limits(role), self.spec.names[role])

    def start(self, container_id):
        try:
            self.client.api.start(container_id)
        except Exception as exc:
            raise docker_error(f'start {container_id}', exc)

    def stop(self, container_id):
        try:
            self.client.api.stop(container_id, timeout=10)
        except Exception as exc:
            if not is_not_found(exc):
                raise docker_error(f'stop {container_id}', exc)

    def remove_network(self, name):
        try:
            self.client.api.remove_network(name)
        except Exception as exc:
            if not is_not_found(exc):
                raise docker_error(f'remove network {name}', exc)

    def remove_volume(self, name):
        try:
            self.client.api.remove_volume(name, force=True)
        except Exception as exc:
            if not is_not_found(exc):
                raise docker_error(f'remove volume {name}', exc)

    def remove(self, kind, ref):
        """Remove one object: kind is container, network or volume."""
        remover = dict(container=self.remove_container, network=self.remove_network, volume=self.remove_volume)[kind]
        remover(ref)

    def undo(self):
        """Remove what this writer created, newest first (a failed fresh create)."""
        for kind, ref in reversed(self.created):
            try:
                self.remove(kind, ref)
            except Tx9Error:
                pass
        self.created = []


def role_of(attrs):
    return ((attrs or {}).get('Config') or {}).get('Labels', {}).get(LABEL_ROLE)


def remove_labelled(client, box):
    """Remove every object whose labels prove it belongs to box (undoing a failed import)."""
    api = client.api
    label = {'label': [f'{LABEL_OWNER}=1', f'{LABEL_BOX}={box}']}
    for container in api.containers(all=True, filters=label):
        _quietly(api.remove_container, container['Id'], force=True)
    for network in api.networks(filters=label):
        _quietly(api.remove_network, network['Id'])
    for volume in api.volumes(filters=label).get('Volumes') or []:
        _quietly(api.remove_volume, volume['Name'], force=True)


def _quietly(call, *args, **kwargs):
    try:
        call(*args, **kwargs)
    except Exception as exc:
        if not is_not_found(exc):
            raise docker_error(f'remove {args[0]}', exc)
