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

from ansible_collections.col_agents.tx9.plugins.module_utils._box.limits import update_live
from ansible_collections.col_agents.tx9.plugins.module_utils._box.objects import (
    EXECUTOR_PORT,
    LABEL_CONFIG,
    LABEL_WEB_BASE_URL,
    PORT_KEY,
    SYSCTLS,
    BoxSpec,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._docker import ENGINE_ERRORS, docker_error, is_not_found
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._names import LABEL_BOX, LABEL_OWNER, ROLE_EXECUTOR


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

    def create_network(self) -> None:
        name = self._wanted.names['network']
        try:
            self.client.api.create_network(name, driver='bridge', labels=self._wanted.labels(), enable_ipv6=False)
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
        labels = spec.labels(role)
        labels[LABEL_CONFIG] = config_hash
        labels.update(spec.superseded_labels)
        if role == ROLE_EXECUTOR and spec.executor_values.get('executor_web_base_url'):
            labels[LABEL_WEB_BASE_URL] = spec.executor_values['executor_web_base_url']
        limits = spec.limits(role)
        host_config: dict[str, Any] = dict(
            binds=[f'{settings["volume"]}:/data:rw'] + settings.get('mounts', []),
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
                spec.create_from,
                name=settings['name'],
                labels=labels,
                environment=settings['environment'],
                entrypoint=settings['entrypoint'],
                ports=ports,
                healthcheck=settings['healthcheck'],
                host_config=api.create_host_config(**host_config),
                networking_config=networking,
            )
        except ENGINE_ERRORS as exc:
            raise docker_error(f'create container {settings["name"]}', exc)
        container_id: str = created['Id']
        self.created.append(('container', container_id))
        return container_id

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
