#!/usr/bin/python
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


from __future__ import annotations

DOCUMENTATION = r"""
---
module: tx9_gateway
short_description: Enable, disable or report a tx9 box's Hermes gateway
version_added: 0.1.0
description:
  - The Hermes gateway connects the box's Hermes identity to its chat platforms. Only one gateway
    may ever run for one identity, so a new or imported box starts with it disabled, and enabling
    it needs O(confirm_single_writer=true).
  - Delegates to the box's own runtime (C(hb gateway-enable) and C(hb gateway-disable)), which keeps
    the choice on the box's volume, so it survives restarts, recreation and backups.
  - Takes the box lock; needs the agent container running. A quiesced box cannot have its gateway
    enabled until it resumes.
author:
  - col_agents.tx9 contributors (@col-agents)
extends_documentation_fragment:
  - col_agents.tx9.connection
attributes:
  check_mode:
    support: full
    description: Reports whether the gateway would be switched, and switches nothing.
  diff_mode:
    support: none
    description: RV(gateway) shows the state after the run.
  idempotent:
    support: full
    description: An enabled, running gateway is not enabled again; a disabled, stopped one is not disabled again.
options:
  name:
    description:
      - The box.
    type: str
    required: true
  state:
    description:
      - V(enabled) makes the gateway enabled and running; V(disabled) stops it and keeps it stopped.
      - Omitted, the module only reports the gateway's status.
    type: str
    choices: [enabled, disabled]
  confirm_single_writer:
    description:
      - Must be V(true) with O(state=enabled), confirming that no other box or machine runs a
        gateway for this Hermes identity; otherwise the module fails with C(CONFIRMATION_REQUIRED).
      - A copy a move left behind (marked superseded, see M(col_agents.tx9.tx9_box)) shares the box's
        Hermes identity; enabling its gateway fails with C(BOX_SUPERSEDED) all the same.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: The gateway's status
  col_agents.tx9.tx9_gateway:
    name: dev
  register: gateway

- name: Run the gateway here (the old machine's copy is gone)
  col_agents.tx9.tx9_gateway:
    name: dev
    state: enabled
    confirm_single_writer: true

- name: Stop the gateway and keep it stopped
  col_agents.tx9.tx9_gateway:
    name: dev
    state: disabled
"""

RETURN = r"""
gateway:
  description: The gateway after the run (in check mode, as it would be).
  returned: always
  type: dict
  contains:
    enabled:
      description: Whether the gateway is enabled (no C(gateway-disabled) marker).
      type: bool
      sample: true
    running:
      description: Whether its process runs (state C(running) or C(starting)).
      type: bool
      sample: true
    state:
      description: C(running), C(starting), C(restarting), C(gave-up), C(stopped) or C(disabled).
      type: str
      sample: running
    pid:
      description: The gateway process' PID in the agent container, or null.
      type: int
      sample: 812
    since:
      description: When the running gateway process started (UTC), or null.
      type: str
      sample: "2026-07-04T12:00:00.123Z"
    detail:
      description: The box runtime's words about the gateway.
      type: str
      sample: ""
    quiesced:
      description: Whether the box is quiesced (then nothing runs until it resumes).
      type: bool
      sample: false
"""

from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
from ansible_collections.col_agents.tx9.plugins.module_utils._module import docker_client, new_module, run
from ansible_collections.col_agents.tx9.plugins.module_utils._ops.gateway import GatewaySwitch


def switch(module: AnsibleModule) -> dict[str, Any]:
    client = docker_client(module)
    home = StateHome(module.params['state_home'])
    return GatewaySwitch(client, home, module.params, check_mode=module.check_mode).run()


def main() -> None:
    module = new_module(
        dict(
            name=dict(type='str', required=True),
            state=dict(type='str', choices=['enabled', 'disabled']),
            confirm_single_writer=dict(type='bool', default=False),
            state_home=dict(type='path'),
        ),
        supports_check_mode=True,
    )
    run(module, lambda: switch(module))


if __name__ == '__main__':
    main()
