# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A box as the daemon shows it, without a daemon: for the reconciler's and the readiness gate's tests."""

from __future__ import annotations

from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._box import egress
from ansible_collections.col_agents.tx9.plugins.module_utils._box import limits as resources
from ansible_collections.col_agents.tx9.plugins.module_utils._box.objects import LABEL_CONFIG, BoxObjects, BoxSpec
from ansible_collections.col_agents.tx9.plugins.module_utils._names import object_names

EXECUTOR_VALUES = dict(
    executor_web_base_url=None, executor_publish='127.0.0.1:4788', executor_dns=[], executor_allowed_hosts=[]
)


class FakeObjects(BoxObjects):
    """What BoxObjects reads from the daemon, as plain inspect-shaped dicts (box dev)."""

    def __init__(  # pylint: disable=super-init-not-called
        self,
        network: Any = None,
        volumes: Any = None,
        containers: Any = None,
        strays: Any = None,
        egress: Any = None,
        egress_network: Any = None,
    ) -> None:
        self.client = None
        self.box = 'dev'
        self.names = object_names('dev')
        self.egress = egress
        self.egress_network = egress_network
        self.network = network
        self.volumes = volumes or dict(agent=None, executor=None)
        self.containers = containers or dict(agent=None, executor=None)
        self.strays = strays or []


def make_spec(policy: Any = None, **resource_changes: Any) -> BoxSpec:
    return BoxSpec(
        'dev',
        'tx9-box:0.1.0',
        'sha256:image',
        '0.1.0',
        'f' * 64,
        EXECUTOR_VALUES,
        dict(resources.defaults(8), **resource_changes),
        egress_policy=egress.parse(policy),
    )


def port_bindings(ports: list[str] | None) -> dict[str, Any] | None:
    return {'4788/tcp': [{'HostIp': ports[0], 'HostPort': ports[1]}]} if ports else None


def inspected(spec: BoxSpec, role: str, running: bool = True, **changes: Any) -> dict[str, Any]:
    limits = spec.limits(role)
    attrs = {
        'Id': f'{role}-id-0123456789',
        'Image': spec.image_id,
        'Config': {'Labels': {LABEL_CONFIG: spec.container(role)[1]}},
        'HostConfig': {
            'NanoCpus': limits['NanoCpus'],
            'Memory': limits['Memory'],
            'PortBindings': port_bindings(spec.container(role)[0]['ports']),
        },
        'State': {'Running': running, 'Restarting': False, 'Status': 'running' if running else 'exited'},
    }
    attrs.update(changes)
    return attrs


def existing(spec: BoxSpec, running: bool = True, **containers: Any) -> FakeObjects:
    found = {role: inspected(spec, role, running) for role in ('agent', 'executor')}
    found.update(containers)
    return FakeObjects(network={'Name': 'tx9-dev'}, volumes=dict(agent={}, executor={}), containers=found)
