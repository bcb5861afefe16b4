# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Creating, starting, stopping and removing the Docker objects of a box.

Private to the col_agents.tx9 collection. BoxWriter makes what a BoxSpec
(objects.py) describes and remembers what it created, so a failed fresh create
is undone; remove_labelled clears whatever a box's labels prove is its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._box import confinement, egress
from ansible_collections.col_agents.tx9.plugins.module_utils._box.limits import update_live
from ansible_collections.col_agents.tx9.plugins.module_utils._box.objects import (
    EXECUTOR_PORT,
    LABEL_CONFIG,
    LABEL_EGRESS,
    LABEL_WEB_BASE_URL,
    PORT_KEY,
    SYSCTLS,
    BoxSpec,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._docker import ENGINE_ERRORS, docker_error, is_not_found
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._names import (
    LABEL_BOX,
    LABEL_OWNER,
    ROLE_EGRESS,
    ROLE_EXECUTOR,
)

# The proxy's container: the proxy user, no capabilities, nothing written but its scratch.
EGRESS_HOST_CONFIG: dict[str, Any] = dict(
    cap_drop=['ALL'],
    security_opt=['no-new-privileges'],
    read_only=True,
    # /data too: the image declares it a volume, which would otherwise be a writable anonymous volume, left
    # behind by every recreate.
    tmpfs={
        '/tmp': 'rw,nosuid,nodev,size=16m',
        '/run': 'rw,nosuid,nodev,size=1m',
        '/data': 'ro,nosuid,nodev,noexec,size=1m',
    },
)


class BoxWriter:
    """Creates, recreates, updates, starts, stops and removes a box's objects.

    A writer made without a spec (None) only stops and removes.
    """

    def __init__(self, client: Any, spec: BoxSpec | None) -> None:
        self.client = client
        self.spec = spec
        self.created: list[tuple[str, str]] = []

    @property
    def _wanted(self) -> BoxSpec:
        """The spec to create from."""
        if self.spec is None:
            raise ValueError('this BoxWriter was made without a BoxSpec: it only stops and removes')
        return self.spec

    def create_network(self, key: str = 'network') -> None:
        """The box network (internal, with no host address, on a confined box), or the proxy's outside one."""
        name = self._wanted.names[key]
        settings: dict[str, Any] = dict(driver='bridge', labels=self._wanted.labels(), enable_ipv6=False)
        if key == 'network' and self._wanted.confined:
            settings.update(internal=True, options=dict(confinement.NETWORK_OPTIONS))
        try:
            self.client.api.create_network(name, **settings)
        except ENGINE_ERRORS as exc:
            raise docker_error(f'create network {name}', exc)
        self.created.append(('network', name))

    def create_volume(self, role: str) -> None:
        name = self._wanted.names[f'{role}_volume']
        try:
            self.client.api.create_volume(name=name, driver='local', labels=self._wanted.labels(role))
        except ENGINE_ERRORS as exc:
            raise docker_error(f'create volume {name}', exc)
        self.created.append(('volume', name))

    def create_container(self, role: str) -> str:
        spec = self._wanted
        settings, config_hash = spec.container(role)
        api = self.client.api
        labels = self.labels(role, config_hash)
        host_config = self.host_config(role, settings)
        ports = [EXECUTOR_PORT] if settings['ports'] else None
        if role == ROLE_EGRESS:
            settings['environment']['TX9_EGRESS_SQUID_CONF'] = egress.squid_config(spec.egress, self.box_subnet())
        networking = api.create_networking_config(
            {settings['network']: api.create_endpoint_config(aliases=[settings['alias']])}
        )
        try:
            created = api.create_container(
                spec.create_from,
                name=settings['name'],
                labels=labels,
                environment=settings['environment'],
                entrypoint=settings['entrypoint'],
                user='proxy' if role == ROLE_EGRESS else None,
                working_dir='/tmp' if role == ROLE_EGRESS else None,
                ports=ports,
                healthcheck=settings['healthcheck'],
                host_config=api.create_host_config(**host_config),
                networking_config=networking,
            )
        except ENGINE_ERRORS as exc:
            raise docker_error(f'create container {settings["name"]}', exc)
        container_id: str = created['Id']
        self.created.append(('container', container_id))
        if role == ROLE_EGRESS:
            # Outside network first (its gateway is the proxy's way out), then the box network, as `egress`.
            try:
                api.connect_container_to_network(container_id, spec.names['network'], aliases=['egress'])
            except ENGINE_ERRORS as exc:
                raise docker_error(f'connect {settings["name"]} to {spec.names["network"]}', exc)
        return container_id

    def labels(self, role: str, config_hash: str) -> dict[str, str]:
        spec = self._wanted
        labels = spec.labels(role)
        labels[LABEL_CONFIG] = config_hash
        labels.update(spec.superseded_labels)
        if role == ROLE_EXECUTOR and spec.executor_values.get('executor_web_base_url'):
            labels[LABEL_WEB_BASE_URL] = spec.executor_values['executor_web_base_url']
        if spec.confined and role != ROLE_EGRESS:
            labels[LABEL_EGRESS] = egress.ALLOWLIST
        return labels

    def host_config(self, role: str, settings: dict[str, Any]) -> dict[str, Any]:
        """The create_host_config arguments of one container."""
        limits = self._wanted.limits(role)
        host_config: dict[str, Any] = dict(
            init=True,
            restart_policy={'Name': 'unless-stopped'},
            sysctls=SYSCTLS,
            nano_cpus=limits['NanoCpus'],
            mem_limit=limits['Memory'],
            memswap_limit=limits['MemorySwap'],
            network_mode=settings['network'],
        )
        if settings['ports']:
            host_config['port_bindings'] = {
                PORT_KEY: [{'HostIp': settings['ports'][0], 'HostPort': settings['ports'][1]}]
            }
        if role == ROLE_EGRESS:
            host_config.update(EGRESS_HOST_CONFIG)
        else:
            host_config['binds'] = [f'{settings["volume"]}:/data:rw'] + settings.get('mounts', [])
        for key in ('cap_drop', 'dns_opt', 'dns', 'group_add'):
            if settings.get(key):
                host_config[key] = settings[key]
        return host_config

    def box_subnet(self) -> str:
        """The box network's subnet, which the proxy serves and nothing else."""
        name = self._wanted.names['network']
        try:
            attrs = self.client.api.inspect_network(name)
        except ENGINE_ERRORS as exc:
            raise docker_error(f'inspect network {name}', exc)
        for config in ((attrs.get('IPAM') or {}).get('Config')) or []:
            if config.get('Subnet') and ':' not in config['Subnet']:
                return str(config['Subnet'])
        raise Tx9Error(
            f'The network {name} has no IPv4 subnet, so its egress proxy cannot tell the box from others.',
            'DOCKER_ERROR',
            "Remove the box network (the box is recreated with it) or check the engine's address pools.",
        )

    def remove_container(self, container_id: str) -> None:
        # Stop first: the agent's loop then stops services, the gateway and SQLite
        # writers cleanly, instead of all of them dying at once to SIGKILL.
        self.stop(container_id)
        try:
            self.client.api.remove_container(container_id, force=True, v=False)
        except ENGINE_ERRORS as exc:
            if not is_not_found(exc):
                raise docker_error(f'remove container {container_id}', exc)

    def update_limits(self, container_id: str, role: str) -> None:
        update_live(self.client, container_id, self._wanted.limits(role), self._wanted.names[role])

    def start(self, container_id: str) -> None:
        try:
            self.client.api.start(container_id)
        except ENGINE_ERRORS as exc:
            raise docker_error(f'start {container_id}', exc)

    def stop(self, container_id: str) -> None:
        try:
            self.client.api.stop(container_id, timeout=10)
        except ENGINE_ERRORS as exc:
            if not is_not_found(exc):
                raise docker_error(f'stop {container_id}', exc)

    def remove_network(self, name: str) -> None:
        try:
            self.client.api.remove_network(name)
        except ENGINE_ERRORS as exc:
            if not is_not_found(exc):
                raise docker_error(f'remove network {name}', exc)

    def remove_volume(self, name: str) -> None:
        try:
            self.client.api.remove_volume(name, force=True)
        except ENGINE_ERRORS as exc:
            if not is_not_found(exc):
                raise docker_error(f'remove volume {name}', exc)

    def remove(self, kind: str, ref: str) -> None:
        """Remove one object: kind is container, network or volume."""
        remover = dict(container=self.remove_container, network=self.remove_network, volume=self.remove_volume)[kind]
        remover(ref)

    def undo(self) -> None:
        """Remove what this writer created, newest first (a failed fresh create)."""
        for kind, ref in reversed(self.created):
            try:
                self.remove(kind, ref)
            except Tx9Error:
                pass
        self.created = []


def remove_labelled(client: Any, box: str) -> None:
    """Remove every object whose labels prove it belongs to box (undoing a failed import)."""
    api = client.api
    label = {'label': [f'{LABEL_OWNER}=1', f'{LABEL_BOX}={box}']}
    for container in api.containers(all=True, filters=label):
        _quietly(api.remove_container, container['Id'], force=True)
    for network in api.networks(filters=label):
        _quietly(api.remove_network, network['Id'])
    for volume in api.volumes(filters=label).get('Volumes') or []:
        _quietly(api.remove_volume, volume['Name'], force=True)


def _quietly(call: Callable[..., object], *args: Any, **kwargs: Any) -> None:
    try:
        call(*args, **kwargs)
    except ENGINE_ERRORS as exc:
        if not is_not_found(exc):
            raise docker_error(f'remove {args[0]}', exc)
