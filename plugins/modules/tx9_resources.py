#!/usr/bin/python
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


from __future__ import annotations

DOCUMENTATION = r"""
---
module: tx9_resources
short_description: Change a tx9 box's CPU and memory limits live and report its volume usage
version_added: 0.1.0
description:
  - Sets the CPU and memory limits of a box's agent and Executor containers in place
    (C(docker update)), so both containers keep their ids, and keeps them in the box's state
    file, so upgrades, image changes and mount changes apply them again. The limits options of
    M(col_agents.tx9.tx9_box) are the same values, parsed, saved and applied the same way.
  - Records advisory size budgets for the agent data volume and the Executor scratch volume.
    Budgets are reported against the measured usage and never enforced; local Docker volumes
    have no quota.
  - With no limit or budget given (and O(reset=false)), it only reports.
  - Returns the limits read back from the Docker daemon and the usage of both volumes against
    their budgets.
  - When an update or saving the state file fails, the containers already updated get their
    previous limits back.
  - Invalid values fail with cause C(INVALID_RESOURCES) before anything changes, naming the option
    and the value.
author:
  - col_agents.tx9 contributors (@col-agents)
extends_documentation_fragment:
  - col_agents.tx9.connection
  - col_agents.tx9.box_options.resources
attributes:
  check_mode:
    support: full
    description: Validates the values and predicts the actions; changes nothing. RV(limits) are
      then the daemon's current ones.
  diff_mode:
    support: full
    description: Shows the box's resources before and after, memory and budgets in binary units
      (C(3 GiB)) rather than bytes.
  idempotent:
    support: full
    description: A second identical run changes nothing.
options:
  name:
    description:
      - The box.
    type: str
    required: true
  reset:
    description:
      - Return to the defaults, 4 CPUs and 8 GiB for the agent and 2 CPUs and 2 GiB for Executor
        (CPUs clamped to what the host has), with no budgets. Cannot be combined with values.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Give the agent of dev 1 GiB and one CPU, live
  col_agents.tx9.tx9_resources:
    name: dev
    agent_memory: 1g
    agent_cpus: 1

- name: Warn about a data volume over 50 GiB (never enforced)
  col_agents.tx9.tx9_resources:
    name: dev
    agent_volume_budget: 50g

- name: Report limits and volume usage
  col_agents.tx9.tx9_resources:
    name: dev
  register: dev_resources

- name: Say when the data volume is over its budget
  ansible.builtin.debug:
    msg: "dev uses {{ dev_resources.volumes.agent.used_bytes }} bytes, over its budget"
  when: dev_resources.volumes.agent.over_budget

- name: Back to the defaults
  col_agents.tx9.tx9_resources:
    name: dev
    reset: true
"""

RETURN = r"""
limits:
  description: The CPU and memory limits the Docker daemon reports for the containers after the
    run; memory in bytes.
  returned: always
  type: dict
  sample: {"agent_cpus": 2.0, "agent_memory": 1073741824, "executor_cpus": 2.0, "executor_memory": 2147483648}
resources:
  description: The box's resources as saved (in check mode, as they would be); budgets of
    C(unlimited) are not set.
  returned: always
  type: dict
  sample: {"agent_cpus": 2.0, "agent_memory": 1073741824, "agent_volume_budget": "unlimited"}
volumes:
  description:
    - For C(agent) and C(executor), the volume C(name), the bytes it uses (C(used_bytes), null when
      the daemon does not say), the advisory C(budget_bytes) (null when unlimited), C(budget_status)
      (C(ok), C(over), C(unlimited) or C(unknown)) and C(over_budget).
    - C(budget_enforced) is always false.
  returned: always
  type: dict
  sample: {"agent": {"name": "tx9-dev-agent-data", "used_bytes": 31457280, "budget_bytes": 10485760,
           "budget_status": "over", "over_budget": true, "budget_enforced": false}}
actions:
  description: What the run did (or would do in check mode), in order.
  returned: always
  type: list
  elements: str
  sample: ["update the agent limits live", "save the desired state"]
"""

from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
from ansible_collections.col_agents.tx9.plugins.module_utils._box_option_spec import BOX_OPTIONS
from ansible_collections.col_agents.tx9.plugins.module_utils._module import docker_client, new_module, run
from ansible_collections.col_agents.tx9.plugins.module_utils._ops.resources import OPTIONS, ResourcesRun


def change(module: AnsibleModule) -> dict[str, Any]:
    resources_run = ResourcesRun(
        docker_client(module), StateHome(module.params['state_home']), module.params, check_mode=module.check_mode
    )
    result = resources_run.run()
    if not module._diff:
        result.pop('diff', None)
    return result


def main() -> None:
    spec = dict(
        name=dict(type='str', required=True),
        reset=dict(type='bool', default=False),
        state_home=dict(type='path'),
    )
    # The limit options are tx9_box's, with the same types.
    spec.update((option, BOX_OPTIONS[option]) for option in OPTIONS)
    module = new_module(spec, supports_check_mode=True)
    run(module, lambda: change(module))


if __name__ == '__main__':
    main()
