#!/usr/bin/python
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


from __future__ import annotations

DOCUMENTATION = r"""
---
module: tx9_box
short_description: Create, start, stop, upgrade and remove tx9 agent boxes
version_added: 0.1.0
description:
  - A box is an agent container (Claude Code, Codex, Hermes) and an Executor container (an MCP
    tool gateway with a dashboard) on a private network C(tx9-<name>), with the durable state on
    the volume C(tx9-<name>-agent-data) and Executor's scratch on C(tx9-<name>-exec-data).
  - Every object carries the labels C(tx9=1), C(tx9.box), C(tx9.version) and (containers)
    C(tx9.role). An object with a box's name but without its labels is never reused, changed or
    removed; the module fails with cause C(NAME_CONFLICT).
  - The box token (256 random bits) is minted at creation, kept in the state home with mode
    C(0600), reused on every recreate, and never returned.
  - Desired state (image, executor options, limits, budgets) persists per box, so omitted options
    keep the box's current values. A changed image recreates both containers; changed executor
    options recreate only Executor; changed limits are applied live.
  - Host mounts added with M(col_agents.tx9.tx9_mount) are applied again whenever the agent
    container is created or recreated. Their sources are checked first; a missing source fails
    with cause C(MOUNT_SOURCE_MISSING), and a share that is not mounted (with
    C(require_mountpoint)) with cause C(MOUNT_NOT_MOUNTED), before any container is touched.
  - After a create, start or recreate, a readiness gate waits until Executor answers an
    authenticated MCP C(initialize) on its published port and the agent reports Claude Code, Codex
    and Hermes wired to it with the current token. Every present run probes readiness.
  - The dashboard keeps the host port the box first got. Unless O(executor_publish) names a port,
    that port is saved with the box's desired state and asked for again whenever Executor is
    created or started; when something else holds it, Executor is published on a new port, saved
    in turn, and RV(actions) says so.
  - Both containers carry a Docker health check (Executor, an authenticated MCP handshake through its
    published port's front, C(hb executor-health); the agent, C(hb status --health)), so C(docker ps) shows them
    C(healthy) or C(unhealthy); RV(box.containers) reports it.
  - A copy a move left behind (P(col_agents.tx9.tx9_migrate#role) role) is marked superseded, in its state
    file and on both containers' labels (C(tx9.superseded-by), C(tx9.superseded-at),
    C(tx9.superseded-move)). Such a copy is never started by O(state=present) without O(force); the run
    fails with cause C(BOX_SUPERSEDED), naming the host the current copy runs on. O(state=stopped) and
    O(state=absent) act on it as on any box.
  - One operation per box at a time; a second fails fast with cause C(BOX_BUSY).
author:
  - col_agents.tx9 contributors (@col-agents)
extends_documentation_fragment:
  - col_agents.tx9.connection
  - col_agents.tx9.box_options
  - col_agents.tx9.box_options.resources
  - col_agents.tx9.box_options.mapping
attributes:
  check_mode:
    support: full
    description: Predicts the actions a real run would take and changes nothing.
  diff_mode:
    support: full
    description: Shows the box's desired state before and after, memory and budgets in binary units
      (C(3 GiB)) rather than bytes; never the token.
  idempotent:
    support: partial
    description: A second identical run changes nothing, except that omitting O(name) with
      O(state=present) creates a new box with a generated name each time.
options:
  name:
    description:
      - The box name, 1 to 63 characters of C(a-z), C(0-9), C(_) and C(-), starting with a letter
        or digit.
      - Omitted with O(state=present), a friendly C(adjective-animal) name is generated and
        returned in RV(box.name).
    type: str
  state:
    description:
      - V(present) makes the box exist and run (a stopped box is started).
      - V(stopped) makes it exist with both containers stopped.
      - V(absent) removes both containers, the network, both volumes and the state file.
    type: str
    choices: [present, stopped, absent]
    default: present
  recreate:
    description:
      - Recreate both containers even when nothing changed. Volumes and the token stay.
    type: bool
    default: false
  keep_data:
    description:
      - With O(state=absent), keep the agent data volume (the box's files).
    type: bool
    default: false
  rotate_token:
    description:
      - Mint a new box token and put it in force. The state file is rewritten, only the Executor
        container is recreated with the new token, and the running agent gets it (in its own
        container layer, read before the environment it was created with) and rewires Claude Code,
        Codex and Hermes. The agent container is not recreated.
      - The run then proves the rotation on the published port (the old token answered 401, the new
        one 200) and fails with cause C(TOKEN_ROTATION_FAILED) otherwise.
      - Always reports C(changed=true). Needs O(state=present); a box that does not exist yet is
        simply created with a fresh token.
      - Processes that copied the old token into their own environment (a Hermes gateway or a custom
        service started before the rotation, a shell opened before it) keep the old one until they
        restart.
    type: bool
    default: false
  quiesced:
    description:
      - V(true) quiesces the running box (C(hb down) inside it; its services and Hermes gateway stop
        and stay stopped across restarts), V(false) resumes it (C(hb up)), for example an imported
        box, which arrives quiesced. Omitted, the box is left as it is.
      - Idempotent; check mode predicts it. Needs O(state=present).
    type: bool
  superseded:
    description:
      - Mark this copy of the box as superseded by its copy on another host (what a move does to the
        copy it leaves behind). Both containers are recreated with the mark (not started when
        O(state=stopped)); the time of marking is kept while O(superseded) stays the same.
      - Not with O(state=absent) nor O(force).
    type: dict
    suboptions:
      by:
        description: The host the current copy of the box runs on (one printable line, at most 255 characters).
        type: str
        required: true
      move:
        description: Which move left this copy behind, for example C(h1 -> h2).
        type: str
  force:
    description:
      - Start a copy marked superseded all the same, and make it the box again (the mark goes; its data
        is what it was when it was left behind). Without a mark it changes nothing.
      - Needs O(state=present). Then two unmarked copies may exist on two hosts; the migration plan
        refuses to choose between them until one is removed or marked.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: A box that reaches only the package registries and one API
  col_agents.tx9.tx9_box:
    name: dev
    egress:
      mode: allowlist
      allow: ['preset:tools', 'api.example.com']

- name: A box with its limits and budget given as one mapping (the create_box playbook does this)
  col_agents.tx9.tx9_box:
    name: dev
    options:
      agent_memory: 3g
      agent_cpus: 2
      agent_volume_budget: 50g

- name: A box called dev, running (a fast no-op when it already is)
  col_agents.tx9.tx9_box:
    name: dev
  register: dev_box

- name: Show the dashboard URL (add the token with col_agents.tx9.tx9_info auth_url=true)
  ansible.builtin.debug:
    msg: "{{ dev_box.box.dashboard_url }}"

- name: Give the agent 4 GiB of memory, live
  col_agents.tx9.tx9_box:
    name: dev
    agent_memory: 4g

- name: Publish the dashboard on loopback only, behind an HTTPS proxy
  col_agents.tx9.tx9_box:
    name: dev
    executor_publish: 127.0.0.1:4788
    executor_web_base_url: https://dev.example.ts.net

- name: Put a new token in force (Executor recreated, the agent rewired in place)
  col_agents.tx9.tx9_box:
    name: dev
    rotate_token: true

- name: Resume an imported box (it arrives quiesced)
  col_agents.tx9.tx9_box:
    name: dev2
    quiesced: false

- name: Stop the box
  col_agents.tx9.tx9_box:
    name: dev
    state: stopped

- name: Make the copy a move left behind on this host the box again (it was superseded)
  col_agents.tx9.tx9_box:
    name: dev
    force: true

- name: Remove the box but keep its files
  col_agents.tx9.tx9_box:
    name: dev
    state: absent
    keep_data: true
"""

RETURN = r"""
box:
  description: The box after the run (in check mode, as it would be).
  returned: always
  type: dict
  contains:
    name:
      description: The box name (generated when none was given).
      type: str
      sample: swift-otter
    state:
      description: C(running), C(stopped), C(crashed), C(partial) or C(absent).
      type: str
      sample: running
    image:
      description: The image reference the containers run.
      type: str
      sample: tx9-box:0.1.0
    version:
      description: The tx9 version the box's objects are labelled with.
      type: str
      sample: 0.1.0
    containers:
      description: Name, ID, state, Docker health (C(healthy), C(unhealthy), C(starting), or null
        without a health check) and C(image_id), the ID of the image it runs, of the C(agent) and
        C(executor) containers.
      type: dict
      sample: {"agent": {"name": "tx9-dev-agent", "id": "8f3c", "state": "running", "health": "healthy"}}
    network:
      description: The box's private network.
      type: str
      sample: tx9-dev
    volumes:
      description: The C(agent) data volume and the C(executor) scratch volume.
      type: dict
      sample: {"agent": "tx9-dev-agent-data", "executor": "tx9-dev-exec-data"}
    dashboard_url:
      description: The Executor dashboard URL without the token.
      type: str
      sample: http://192.0.2.10:32768/
    resources:
      description: CPU and memory limits and the advisory volume budgets.
      type: dict
      sample: {"agent_cpus": 2.0, "agent_memory": 8589934592, "agent_volume_budget": "unlimited"}
    executor:
      description: The executor options in effect.
      type: dict
      sample: {"executor_publish": null, "executor_dns": [], "executor_allowed_hosts": []}
    quiesced:
      description: Whether the box is quiesced, as its agent reports it; null when the agent does not run.
      type: bool
      sample: false
    quiesced_by:
      description: Who quiesced the box (C(user), C(backup), C(import), ...), or null.
      type: str
      sample: import
    gateway:
      description: The Hermes gateway as the agent reports it, C(enabled) and C(state); null when the
        agent does not run.
      type: dict
      sample: {"enabled": false, "state": "disabled"}
    egress:
      description: The box's egress policy, its C(mode) and how many C(rules) it has.
      type: dict
      sample: {"mode": "allowlist", "rules": 3}
    superseded:
      description: The mark of a copy a move left behind (C(by), C(at), C(move)), or null.
      type: dict
      sample: {"by": "h2", "at": "2026-12-03T15:00:00Z", "move": "h1 -> h2"}
actions:
  description: What the run did (or would do in check mode), in order. Containers are named by their
    names (C(tx9-<box>-agent)), never by ID.
  returned: always
  type: list
  elements: str
  sample: ["create the network", "create the agent container tx9-dev-agent", "start the agent container tx9-dev-agent"]
"""

from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.col_agents.tx9.plugins.module_utils._box.reconcile import Reconciler
from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
from ansible_collections.col_agents.tx9.plugins.module_utils._box_option_spec import BOX_OPTIONS
from ansible_collections.col_agents.tx9.plugins.module_utils._box_options import (
    OPTIONS_ARG,
    given_options,
    with_box_options,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._docker import connection_from_params
from ansible_collections.col_agents.tx9.plugins.module_utils._module import docker_client, new_module, run


def reconcile(module: AnsibleModule) -> dict[str, Any]:
    params = with_box_options(module.params, given_options())
    client = docker_client(module)
    home = StateHome(module.params['state_home'])
    reconciler = Reconciler(
        client,
        home,
        params,
        check_mode=module.check_mode,
        docker_host=connection_from_params(module.params)['docker_host'],
    )
    result = reconciler.run()
    if not module._diff:
        result.pop('diff', None)
    return result


def main() -> None:
    spec = dict(
        name=dict(type='str'),
        state=dict(type='str', choices=['present', 'stopped', 'absent'], default='present'),
        recreate=dict(type='bool', default=False),
        keep_data=dict(type='bool', default=False),
        rotate_token=dict(type='bool', default=False),
        quiesced=dict(type='bool'),
        superseded=dict(type='dict', options=dict(by=dict(type='str', required=True), move=dict(type='str'))),
        force=dict(type='bool', default=False),
        state_home=dict(type='path'),
    )
    spec.update(BOX_OPTIONS)
    spec.update(OPTIONS_ARG)
    module = new_module(spec, supports_check_mode=True, mutually_exclusive=[('superseded', 'force')])
    run(module, lambda: reconcile(module))


if __name__ == '__main__':
    main()
