#!/usr/bin/python
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


from __future__ import annotations

DOCUMENTATION = r"""
---
module: tx9_info
short_description: List the tx9 boxes on a host
version_added: 0.1.0
description:
  - Lists boxes from the Docker daemon's labels, so it works even when the state home was lost.
  - For each box, its state (C(running), C(stopped), C(crashed), or C(partial) when objects are
    missing), image and version, drift against the collection's version, dashboard URL, CPU and
    memory limits, volume usage against the advisory budgets, host mounts, its last backup, and when it
    was created; with O(usage=true), also the CPU and memory its running containers use.
  - Volume budgets are advisory; local Docker volumes are never quota-enforced.
author:
  - col_agents.tx9 contributors (@col-agents)
extends_documentation_fragment:
  - col_agents.tx9.connection
attributes:
  check_mode:
    support: full
    description: Reads only; with O(auth_url_file), predicts the file without writing it.
  diff_mode:
    support: none
    description: Reads only.
  idempotent:
    support: partial
    description: Reads only, except O(auth_url_file), which writes a new file once and then refuses
      to overwrite it.
  action:
    support: full
    description: Hides the whole result from Ansible's output when O(auth_url=true).
options:
  name:
    description:
      - Only this box.
    type: str
  auth_url:
    description:
      - Add RV(boxes[].auth_url), the dashboard URL carrying the box token as HTTP Basic credentials
        (user C(tx9)) and as C(?_token=...).
      - This is the only place tx9 ever returns the token. The result is then hidden from
        Ansible's output and logs, as with C(no_log); read it from the registered variable.
    type: bool
    default: false
  auth_url_file:
    description:
      - Write the authenticated dashboard URL of the box named by O(name) to this path, as a new
        file of mode C(0600), and leave it out of the result. An existing file is never
        overwritten (cause C(OUTPUT_EXISTS)). Reports C(changed=true) when the file is written (in
        check mode, when it would be).
      - Prefer this to O(auth_url=true) wherever the link must not pass through Ansible's
        variables. B(Warning:) a registered result of O(auth_url=true) holds the token, and
        C(ansible.builtin.debug) of it (or any task that prints it) shows the token in the output
        and the logs.
    type: path
  images:
    description:
      - Add RV(images), the images on this host with their IDs and tags (one more question to the
        engine), so a play can tell whether a host holds the image another one runs.
    type: bool
    default: false
  usage:
    description:
      - Add RV(boxes[].usage), the CPU and memory each running container of a box uses, from one
        C(docker stats) sample per container, as that command computes them.
      - A sample takes the daemon about a second (it reads the container's CPU time twice to measure
        a percentage); the containers are sampled at the same time, so this adds one or two seconds
        to the listing, however many boxes there are. Off by default for that reason;
        the C(col_agents.tx9.list) playbook turns it on.
    type: bool
    default: false
    version_added: 0.2.0
"""

EXAMPLES = r"""
- name: List every box on the host
  col_agents.tx9.tx9_info:
  register: tx9

- name: Show them
  ansible.builtin.debug:
    msg: "{{ item.name }}: {{ item.state }} {{ item.dashboard_url }}"
  loop: "{{ tx9.boxes }}"
  loop_control:
    label: "{{ item.name }}"

- name: The authenticated dashboard URL of one box (hidden from output)
  col_agents.tx9.tx9_info:
    name: dev
    auth_url: true
  register: dev_url

- name: The boxes, and the images this host holds
  col_agents.tx9.tx9_info:
    images: true
  register: tx9_here

- name: The boxes with the CPU and memory their running containers use
  col_agents.tx9.tx9_info:
    usage: true
  register: tx9_usage

- name: Save the authenticated dashboard URL to a private file, keeping it out of every output
  col_agents.tx9.tx9_info:
    name: dev
    auth_url_file: /root/dev-dashboard.url
"""

RETURN = r"""
images:
  description: The images on this host, sorted by ID.
  returned: when O(images=true)
  type: list
  elements: dict
  contains:
    id:
      description: The image ID.
      type: str
      sample: sha256:3f1c0e0d4a8b9c2e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e
    tags:
      description: Its repository tags, sorted (empty for an untagged image).
      type: list
      elements: str
      sample: [tx9-box:0.1.0]
boxes:
  description: The boxes, sorted by name.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The box name.
      type: str
      sample: dev
    state:
      description: C(running), C(stopped), C(crashed) or C(partial).
      type: str
      sample: running
    image:
      description: The image the containers run.
      type: str
      sample: tx9-box:0.1.0
    version:
      description: The tx9 version the box was created or upgraded with.
      type: str
      sample: 0.1.0
    drift:
      description: Whether RV(boxes[].version) differs from the collection's version.
      type: bool
      sample: false
    dashboard_url:
      description: The dashboard URL without the token.
      type: str
      sample: http://192.0.2.10:32768/
    auth_url:
      description: The dashboard URL with the token; only with O(auth_url=true).
      type: str
      returned: when O(auth_url=true)
      sample: http://tx9:...@192.0.2.10:32768/?_token=...
    containers:
      description: Name, ID, state, Docker health (C(healthy), C(unhealthy), C(starting), or null
        without a health check) and C(image_id), the ID of the image it runs, of the C(agent) and
        C(executor) containers.
      type: dict
      sample: {"executor": {"name": "tx9-dev-executor", "id": "8f3c", "state": "running", "health": "healthy"}}
    limits:
      description: CPU and memory limits of the containers.
      type: dict
      sample: {"agent_cpus": 2.0, "agent_memory": 8589934592}
    volumes:
      description: For C(agent) and C(executor), the volume, bytes used, the advisory budget, its
        status (C(ok), C(over), C(unlimited) or C(unknown)) and C(over_budget); C(budget_enforced)
        is always false.
      type: dict
      sample: {"agent": {"name": "tx9-dev-agent-data", "used_bytes": 1048576, "budget_status": "unlimited"}}
    quiesced:
      description: Whether the box is quiesced, as its running agent reports it; null when it does not run.
      type: bool
      sample: true
    quiesced_by:
      description: Who quiesced the box (C(user), C(backup), C(import), ...), or null.
      type: str
      sample: import
    gateway:
      description: The Hermes gateway (C(enabled), C(state)) as the running agent reports it, or null.
      type: dict
      sample: {"enabled": false, "state": "disabled"}
    egress:
      description: The box's egress policy, its C(mode) (C(open) or C(allowlist)) and how many C(rules) it
        has (null when the box has no state file on this host). A confined box's policy is also among C(desired).
      type: dict
      sample: {"mode": "allowlist", "rules": 3}
    superseded:
      description: For a copy a move left behind, its mark (C(by) the host the current copy runs on,
        C(at), C(move)), from the state file or else the containers' labels; null for the box itself.
        M(col_agents.tx9.tx9_box) does not start such a copy without O(col_agents.tx9.tx9_box#module:force).
      type: dict
      sample: {"by": "h2", "at": "2026-12-03T15:00:00Z", "move": "h1 -> h2"}
    tools:
      description:
        - For a running box, each agent CLI (V(claude), V(codex)) as the agent's PATH finds it, read from the
          box's files (no tool is run); null when the box is not running or cannot say.
        - C(installed) is the version that answers, C(source) V(box) for a pin M(col_agents.tx9.tx9_tools)
          installed or V(image) for the image's copy, C(pinned) the version the box's pin asked for (null
          without a pin), C(package) the npm package.
        - A pin whose files are gone (backups leave out C(node_modules)) shows C(pinned) with C(source=image), and
          the next M(col_agents.tx9.tx9_tools) run, or the C(tx9_upgrade) role, installs it again.
      type: dict
      sample: {"codex": {"installed": "0.169.0", "source": "box", "pinned": "0.169.0", "package": "@openai/codex"},
               "claude": {"installed": "2.1.332", "source": "image", "pinned": null,
                          "package": "@anthropic-ai/claude-code"}}
    mounts:
      description: The host directories bind-mounted below C(/mnt) in the agent container, as the
        daemon reports them, sorted by target; C(require_mountpoint) comes from the state home
        (false without it). See M(col_agents.tx9.tx9_mount).
      type: list
      elements: dict
      sample: [{"source": "/srv/nas/photos", "target": "/mnt/photos", "read_only": true, "require_mountpoint": true}]
    last_backup:
      description:
        - The last archive M(col_agents.tx9.tx9_backup) wrote of this box on this host, as recorded in the
          state home; null when there is none (or the state home was lost).
        - C(time) (RFC 3339, UTC), C(path), C(sha256) of the archive, and C(verified), true when the stored
          payload read back to the bytes that were written.
        - C(drill), the box's last restore drill record (M(col_agents.tx9.tx9_drill)), of whichever
          archive, or null; C(drilled), true only when that drill restored this very archive and
          passed. A backup no drill has proved shows as C(drilled=false).
      type: dict
      sample: {"time": "2026-11-30T03:22:38Z", "path": "/root/Downloads/dev-20261130-032238.tx9",
               "sha256": "9b0f4c2e", "verified": true, "drilled": true,
               "drill": {"archive": "/root/Downloads/dev-20261130-032238.tx9", "ok": true,
                         "time": "2026-11-30T03:25:02Z", "failed_checks": []}}
    desired:
      description:
        - The box's desired state in the form of the options M(col_agents.tx9.tx9_box) and
          M(col_agents.tx9.tx9_import) take, from the state home (a limit missing there from the
          live containers), that is C(image), the C(executor_*) options, C(agent_cpus), C(agent_memory),
          C(executor_cpus), C(executor_memory) and the two volume budgets (C(unlimited) or bytes).
        - CPUs are numbers of CPUs; memory and budgets are integers of bytes, as in RV(boxes[].limits).
        - Host mounts are not part of it; they name this host's directories. The migration role
          carries this to the box's new host.
      type: dict
      sample:
        {"image": "tx9-box:0.1.0", "agent_cpus": 2.0, "agent_memory": 8589934592,
         "agent_volume_budget": "unlimited", "executor_volume_budget": 53687091200}
    usage:
      description:
        - For each container of the box (C(agent), C(executor), and C(egress) on a confined box), one
          C(docker stats) sample of a running one, null for one that is not running or did not answer
          within 20 seconds.
        - C(cpu_percent), its CPU use over about a second, where 100 is one whole CPU (so up to 100
          times the host's CPUs); C(memory_bytes), the memory it uses without the inactive page cache;
          C(memory_limit_bytes), its memory limit, the host's memory when it has none.
      returned: when O(usage=true)
      type: dict
      sample:
        {"agent": {"cpu_percent": 3.52, "memory_bytes": 123731968, "memory_limit_bytes": 8589934592},
         "executor": {"cpu_percent": 0.41, "memory_bytes": 50331648, "memory_limit_bytes": 2147483648}}
    created:
      description: When the box's first container was created.
      type: str
      sample: "2026-11-30T03:22:38.123456789Z"
auth_url_file:
  description: The file written with O(auth_url_file).
  returned: when O(auth_url_file) is given
  type: str
  sample: /root/dev-dashboard.url
"""

from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.col_agents.tx9.plugins.module_utils._box.authlink import save_auth_link
from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._module import docker_client, new_module, run
from ansible_collections.col_agents.tx9.plugins.module_utils._names import validate_box_name
from ansible_collections.col_agents.tx9.plugins.module_utils._ops.info import image_list, list_boxes


def gather(module: AnsibleModule) -> dict[str, Any]:
    name = module.params['name']
    if name is not None:
        validate_box_name(name)
    link_file = module.params['auth_url_file']
    if link_file and name is None:
        raise Tx9Error('auth_url_file needs the name of one box.', 'INVALID_ARGUMENT', 'Set name with auth_url_file.')
    client = docker_client(module)
    home = StateHome(module.params['state_home'])
    boxes = list_boxes(client, home, name, module.params['auth_url'] or bool(link_file), module.params['usage'])
    result = dict(changed=False, boxes=boxes)
    if module.params['images']:
        result['images'] = image_list(client)
    if link_file:
        result.update(
            changed=True,
            auth_url_file=save_auth_link(boxes, name, link_file, module.params['auth_url'], module.check_mode),
        )
    return result


def main() -> None:
    module = new_module(
        dict(
            name=dict(type='str'),
            auth_url=dict(type='bool', default=False),
            auth_url_file=dict(type='path'),
            state_home=dict(type='path'),
            images=dict(type='bool', default=False),
            usage=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    run(module, lambda: gather(module))


if __name__ == '__main__':
    main()
