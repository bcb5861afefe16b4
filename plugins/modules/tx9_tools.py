#!/usr/bin/python
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


from __future__ import annotations

DOCUMENTATION = r"""
---
module: tx9_tools
short_description: Pin an agent CLI (Claude Code, Codex) of a running tx9 box without a rebuild
version_added: 0.1.0
description:
  - Installs the named version of each tool from npm onto the box's agent volume, in
    C(/data/home/agent/.local/share/tx9/tools/<tool>), with a link in
    C(/data/home/agent/.local/share/tx9/tools/bin). That directory comes before the image's copy on the
    agent's PATH (login shells, tmux, C(hb), the services and C(docker exec)), so the pin wins; without
    a box install the image's version answers.
  - The install runs in the agent container as C(agent). npm installs into a staging directory on the
    same volume; the staged command must report the requested version; then the old marker is removed,
    the live tree replaced and checked again, and a marker naming the package and version is written
    last. An install that fails or is stopped at any point leaves the previous one working.
  - A marker whose command is missing or does not answer counts as not installed. Backups leave out
    C(node_modules) by default, so after an import the box install counts as missing and the image's
    version answers until the next run of this module (or of the C(tx9_upgrade) role) installs the pin again.
  - A failed install fails with C(TOOL_INSTALL_FAILED) and says why, in npm's own words or
    C(the install took too long and was stopped).
  - Takes the box lock; needs the agent container running, and the box must reach the npm registry for an install.
author:
  - col_agents.tx9 contributors (@col-agents)
extends_documentation_fragment:
  - col_agents.tx9.connection
attributes:
  check_mode:
    support: full
    description: Reads the box's markers and reports what would be installed or removed; changes nothing.
  diff_mode:
    support: none
    description: RV(tools) shows each tool after the run.
  idempotent:
    support: full
    description: A tool whose marker names the requested version, and whose command reports it, is not installed
      again, and npm is not called.
options:
  name:
    description:
      - The box.
    type: str
    required: true
  tools:
    description:
      - A mapping of tool to version. The tools are V(claude) (npm package C(@anthropic-ai/claude-code)) and
        V(codex) (npm package C(@openai/codex)).
      - A version is exact, such as C(0.169.0), or V(latest), which npm resolves when it installs; the
        version it resolved to is returned. A box install made for V(latest) stays until another version is
        named; name the version to move on.
      - With O(state=absent) the versions are ignored.
    type: dict
    required: true
  state:
    description:
      - V(present) installs each tool at its version unless the box already has it.
      - V(absent) removes the box install of each tool, so the image's version is used again.
    type: str
    choices: [present, absent]
    default: present
  timeout:
    description:
      - Seconds npm may run for one tool's install; then the install is stopped and fails.
      - The module itself waits a little longer (a backstop), then stops whatever is left of the install in
        the box and makes sure it is gone before it reports.
      - Replaces the connection option of this name for this module; its Docker API calls may wait as long.
    type: int
    default: 540
"""

EXAMPLES = r"""
- name: Pin Codex and Claude Code in box dev
  col_agents.tx9.tx9_tools:
    name: dev
    tools:
      codex: 0.169.0
      claude: 2.1.328

- name: The newest Codex, whatever version that is today
  col_agents.tx9.tx9_tools:
    name: dev
    tools:
      codex: latest
  register: pinned

- name: Show the version npm resolved
  ansible.builtin.debug:
    msg: "codex {{ pinned.tools.codex.installed }}"

- name: Back to the image's Codex
  col_agents.tx9.tx9_tools:
    name: dev
    tools:
      codex:
    state: absent
"""

RETURN = r"""
tools:
  description:
    - Each tool named in O(tools), after the run (in check mode, as it is now, with the action a run would take).
  returned: always
  type: dict
  sample:
    codex:
      requested: 0.169.0
      installed: 0.169.0
      source: box
      package: "@openai/codex"
      action: install
  contains:
    requested:
      description: The version asked for (V(latest) as given), or null with O(state=absent).
      type: str
      sample: 0.169.0
    installed:
      description:
        - The version the agent's command reports now, from the box install or else the image.
        - Null when neither has it.
      type: str
      sample: 0.169.0
    source:
      description: V(box) when the box install answers, V(image) when the image's copy does.
      type: str
      sample: box
    package:
      description: The npm package of the tool.
      type: str
      sample: "@openai/codex"
    action:
      description: V(install), V(remove) or V(none), what this run did (in check mode, would do).
      type: str
      sample: none
"""

from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
from ansible_collections.col_agents.tx9.plugins.module_utils._box.tools import DEFAULT_TIMEOUT, ToolsRun
from ansible_collections.col_agents.tx9.plugins.module_utils._module import docker_client, new_module, run


def pin(module: AnsibleModule) -> dict[str, Any]:
    client = docker_client(module)
    home = StateHome(module.params['state_home'])
    return ToolsRun(client, home, module.params, check_mode=module.check_mode).run()


def main() -> None:
    module = new_module(
        dict(
            name=dict(type='str', required=True),
            tools=dict(type='dict', required=True),
            state=dict(type='str', choices=['present', 'absent'], default='present'),
            timeout=dict(type='int', default=DEFAULT_TIMEOUT),
            state_home=dict(type='path'),
        ),
        supports_check_mode=True,
    )
    run(module, lambda: pin(module))


if __name__ == '__main__':
    main()
