#!/usr/bin/python
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


from __future__ import annotations

DOCUMENTATION = r"""
---
module: tx9_mount
short_description: Mount a host directory into a tx9 box's agent container
version_added: 0.1.0
description:
  - Makes one bind mount of a host directory into a box's agent container present or absent.
    To manage a box's whole mount set, loop over it; M(col_agents.tx9.tx9_info) lists each box's
    mounts.
  - Mounts are host-local desired state, kept in the box's state file and never in backups. A
    change is applied by recreating only the agent container, on the image it runs now, with its
    token, limits and running state (a stopped box stays stopped); the Executor container keeps
    its id, and the agent's files on C(/data) stay. Every later recreate (an upgrade, an image
    change) applies the mounts again.
  - The target lies strictly below C(/mnt), never in C(/data), so a backup of C(/data) never walks
    into external content. Anything else fails with cause C(MOUNT_TARGET_INVALID) before anything
    changes.
  - Every source is checked on the target host before the agent container is removed, here and on
    every later recreate; a source that is missing or not a directory fails with cause
    C(MOUNT_SOURCE_MISSING), and with O(require_mountpoint) a source that is not a mount point
    fails with cause C(MOUNT_NOT_MOUNTED). The box then keeps running as it was.
  - When the source directory's group is not root, that group id is added to the agent
    container's groups, so the C(agent) user reaches a directory shared through its group (for
    example mode C(2770)). The group is read when the mount is added; run the task again after
    changing the directory's group.
  - Sources are paths on the host that runs the module, which must be the Docker host.
author:
  - col_agents.tx9 contributors (@col-agents)
extends_documentation_fragment:
  - col_agents.tx9.connection
attributes:
  check_mode:
    support: full
    description: Checks the options and the sources and predicts the actions; changes nothing.
  diff_mode:
    support: full
    description: Shows the box's mount set before and after.
  idempotent:
    support: full
    description: A second identical run changes nothing.
options:
  name:
    description:
      - The box.
    type: str
    required: true
  source:
    description:
      - The host directory to mount, as an absolute path; symlinks are resolved.
      - Required with O(state=present). With O(state=absent) it may be left out; when given, it
        must be the source mounted at O(target).
    type: path
  target:
    description:
      - Where the directory appears in the agent container, strictly below C(/mnt), such as
        C(/mnt/share). Repeated slashes, C(.) and a trailing slash are normalised; C(..) is refused.
      - One mount per target; another source at a taken target, or a target inside another mount,
        fails with cause C(MOUNT_TARGET_TAKEN).
    type: str
    required: true
  read_only:
    description:
      - Mount the directory read-only; nobody in the box, not even root, can write to it.
    type: bool
    default: false
  require_mountpoint:
    description:
      - Require the source to be a mount point, now and before every later recreate, so an
        offline share's empty underlying directory is never bound in its place.
    type: bool
    default: false
  state:
    description:
      - V(present) makes the mount exist with these options; V(absent) removes the mount at
        O(target).
    type: str
    choices: [present, absent]
    default: present
  wait_timeout:
    description:
      - Seconds the readiness gate waits for a running box's recreated agent before failing with
        cause C(NOT_READY).
    type: int
    default: 180
"""

EXAMPLES = r"""
- name: Show the NAS photos to the agent of dev, read-only, only while the share is mounted
  col_agents.tx9.tx9_mount:
    name: dev
    source: /srv/nas/photos
    target: /mnt/photos
    read_only: true
    require_mountpoint: true

- name: A whole mount set, one task per mount
  col_agents.tx9.tx9_mount:
    name: dev
    source: "{{ item.source }}"
    target: "{{ item.target }}"
    read_only: "{{ item.read_only | default(false) }}"
  loop: "{{ dev_mounts }}"

- name: Remove the mount at /mnt/photos
  col_agents.tx9.tx9_mount:
    name: dev
    target: /mnt/photos
    state: absent
"""

RETURN = r"""
mount:
  description: The mount as asked for, normalised; null with O(state=absent).
  returned: always
  type: dict
  sample: {"source": "/srv/nas/photos", "target": "/mnt/photos", "read_only": true, "require_mountpoint": true}
mounts:
  description: The box's whole mount set after the run (in check mode, as it would be), sorted by
    target.
  returned: always
  type: list
  elements: dict
  sample: [{"source": "/srv/nas/photos", "target": "/mnt/photos", "read_only": true, "require_mountpoint": true}]
box:
  description: The box after the run (in check mode, as it is); the name, state and the C(agent)
    and C(executor) containers' names, ids and states.
  returned: always
  type: dict
  sample: {"name": "dev", "state": "running", "containers": {"agent": {"name": "tx9-dev-agent", "id": "8f3c"}}}
actions:
  description: What the run did (or would do in check mode), in order.
  returned: always
  type: list
  elements: str
  sample:
    - recreate the agent container tx9-dev-agent
    - start the agent container tx9-dev-agent
    - save the desired state
"""

from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
from ansible_collections.col_agents.tx9.plugins.module_utils._docker import connection_from_params
from ansible_collections.col_agents.tx9.plugins.module_utils._module import docker_client, new_module, run
from ansible_collections.col_agents.tx9.plugins.module_utils._ops.mount import MountRun


def change(module: AnsibleModule) -> dict[str, Any]:
    mount_run = MountRun(
        docker_client(module),
        StateHome(module.params['state_home']),
        module.params,
        check_mode=module.check_mode,
        docker_host=connection_from_params(module.params)['docker_host'],
    )
    result = mount_run.run()
    if not module._diff:
        result.pop('diff', None)
    return result


def main() -> None:
    module = new_module(
        dict(
            name=dict(type='str', required=True),
            source=dict(type='path'),
            target=dict(type='str', required=True),
            read_only=dict(type='bool', default=False),
            require_mountpoint=dict(type='bool', default=False),
            state=dict(type='str', choices=['present', 'absent'], default='present'),
            wait_timeout=dict(type='int', default=180),
            state_home=dict(type='path'),
        ),
        required_if=[('state', 'present', ['source'])],
        supports_check_mode=True,
    )
    run(module, lambda: change(module))


if __name__ == '__main__':
    main()
