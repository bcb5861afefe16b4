#!/usr/bin/python
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


from __future__ import annotations

DOCUMENTATION = r"""
---
module: tx9_doctor
short_description: Check a tx9 box's health from the host and from inside the box
version_added: 0.1.0
description:
  - Runs every check and returns each as RV(checks) (C(name), C(ok), C(state), C(detail)), so a playbook can
    use the module as a health gate and assert on single checks.
  - The host checks, in order, are C(agent container) and C(executor container) (each exists, runs and
    carries the labels C(tx9=1), C(tx9.box), C(tx9.role) and C(tx9.version)); C(executor port) (the
    published port accepts a connection); C(mcp handshake) (with the box token, C(initialize)
    answers 200 with an C(Mcp-Session-Id) and a JSON-RPC 2.0 result holding C(protocolVersion),
    C(serverInfo.name) and C(capabilities), and C(notifications/initialized) answers 202);
    C(mcp without token) (an C(initialize) without the token answers 401); C(image version) (both
    containers carry the collection's version, or O(version)); C(agent volume) and C(executor volume) (the
    volume exists; its use against the advisory budget).
  - Budgets are advisory, never enforced, so a volume over its budget is not a failure. Its check passes with
    C(state=warn) (C(ok) stays true), is named in RV(warned_checks), and the task shows a warning saying
    how much is used and what to do; the module does not fail for it, whatever O(fail_on_error) says.
    A missing volume fails its check.
  - Box checks come from C(hb doctor --json) in the agent container, each named C(hb <check>)
    (C(hb executor), C(hb wiring), C(hb gateway), C(hb services), C(hb hermes state), ...); one
    failed C(hb doctor) check stands for them when the agent container is not running.
  - The host and the box judge Executor's MCP answers by the same rules.
  - Reads only; the token is never returned.
author:
  - col_agents.tx9 contributors (@col-agents)
extends_documentation_fragment:
  - col_agents.tx9.connection
  - col_agents.tx9.attributes.read_only
options:
  name:
    description:
      - The box. A box that does not exist fails with C(NO_BOX) whatever O(fail_on_error) says.
    type: str
    required: true
  fail_on_error:
    description:
      - Fail the task (cause C(UNHEALTHY)) when a check fails. The failed result still carries
        RV(checks), RV(failed_checks) and RV(ok).
      - V(false) only reports.
    type: bool
    default: true
  version:
    description:
      - The tx9 version both containers must carry for the C(image version) check.
      - Omitted, the collection's own version. The C(col_agents.tx9.tx9_upgrade) role names the
        previous version when it proves a box it rolled back to its previous image.
    type: str
    version_added: 0.2.0
"""

EXAMPLES = r"""
- name: Gate on the box's health
  col_agents.tx9.tx9_doctor:
    name: dev

- name: Report without failing, then act on one check
  col_agents.tx9.tx9_doctor:
    name: dev
    fail_on_error: false
  register: health

- name: Restart the box when Executor does not answer MCP
  col_agents.tx9.tx9_box:
    name: dev
    recreate: true
  when: "'mcp handshake' in health.failed_checks"
"""

RETURN = r"""
ok:
  description: Whether every check passed.
  returned: always
  type: bool
  sample: true
failed_checks:
  description: The names of the failed checks, in check order (not C(failed), which Ansible reserves).
  returned: always
  type: list
  elements: str
  sample: []
warned_checks:
  description:
    - The names of the checks that passed with a warning (C(state=warn)), in check order; each is also
      shown as a task warning. Today only a volume over its advisory budget warns.
  returned: always
  type: list
  elements: str
  sample: [agent volume]
  version_added: 0.2.0
checks:
  description: Every check, in a stable order.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The check's stable name.
      type: str
      sample: mcp handshake
    ok:
      description: Whether it passed (true for a check that warns).
      type: bool
      sample: true
    state:
      description:
        - V(pass), V(fail), or V(warn) for a check that passed with a warning (a volume over its advisory
          budget).
      type: str
      choices: [pass, fail, warn]
      sample: pass
      version_added: 0.2.0
    detail:
      description: What was found, and for a failure what to do.
      type: str
      sample: initialize and notifications/initialized accepted by executor 1.5.9
"""

from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
from ansible_collections.col_agents.tx9.plugins.module_utils._docker import connection_from_params
from ansible_collections.col_agents.tx9.plugins.module_utils._module import docker_client, new_module, run
from ansible_collections.col_agents.tx9.plugins.module_utils._ops.doctor import Doctor


def examine(module: AnsibleModule) -> dict[str, Any]:
    client = docker_client(module)
    home = StateHome(module.params['state_home'])
    return Doctor(
        client,
        home,
        module.params,
        docker_host=connection_from_params(module.params)['docker_host'],
        hide=module.no_log_values.add,
    ).run()


def main() -> None:
    module = new_module(
        dict(
            name=dict(type='str', required=True),
            fail_on_error=dict(type='bool', default=True),
            version=dict(type='str'),
            state_home=dict(type='path'),
        ),
        supports_check_mode=True,
    )
    run(module, lambda: examine(module))


if __name__ == '__main__':
    main()
