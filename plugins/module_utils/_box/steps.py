# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The steps of a box's plan, and each in words for a run's actions.

Private to the col_agents.tx9 collection. reconcile.py and _ops/mount.py plan
in these steps and apply them; a step is (kind, its argument: a role, a
container's ID, or None).
"""

from __future__ import annotations

from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._box.objects import container_name
from ansible_collections.col_agents.tx9.plugins.module_utils._names import ROLE_AGENT, object_names

Step = tuple[str, 'str | None']


def network_confined(attrs: dict[str, Any]) -> bool:
    """Whether a box network is the internal one of a confined box."""
    return bool(attrs.get('Internal'))


def recreates_agent(plan: list[Step]) -> bool:
    """Whether a plan creates or recreates the agent container."""
    return ('create', ROLE_AGENT) in plan or ('recreate', ROLE_AGENT) in plan


# Steps that act on one of the box's containers, named by role in the plan.
CONTAINER_STEPS = ('create', 'recreate', 'start', 'stop')


def describe(step: Step, box: str, strays: list[dict[str, Any]] | tuple[()] = ()) -> str:
    """A plan step in words; a container is named by its name, never its ID (strays: their listing entries)."""
    kind, arg = step
    if kind in CONTAINER_STEPS:
        # create, recreate, start or stop the <role> container <its name>
        return f'{kind} the {arg} container {object_names(box)[str(arg)]}'
    if kind == 'remove_stray':
        stray = next((c for c in strays if c.get('Id') == arg), {'Id': arg})
        return f'remove a stray container {container_name(stray)}'
    return {
        'persist': 'save the desired state',
        'mint_token': 'mint a new token',
        'deliver_token': f'deliver the new token to the running {arg} and rewire its tools',
        'create_network': 'create the network',
        'replace_network': 'replace the network (every container comes back on the new one)',
        'create_egress_network': "create the egress proxy's outside network",
        'remove_egress': 'remove the egress proxy: the box is open again',
        'remove_egress_network': "remove the egress proxy's outside network",
        'create_volume': f'create the {arg} volume',
        'update_limits': f'update the {arg} limits live',
    }[kind]
