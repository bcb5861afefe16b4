#!/usr/bin/python
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


from __future__ import annotations

DOCUMENTATION = r"""
---
module: tx9_precopy
short_description: Copy a tx9 box's data while it runs, then only what changed (the old host's half of a move)
version_added: 0.1.0
description:
  - The old host's half of a pre-copied move (the C(precopy) strategy of the P(col_agents.tx9.tx9_migrate#role)
    role); M(col_agents.tx9.tx9_stage) is the new host's.
  - O(which=base) records what identifies every path of the box's volume now (inode, change time, mode and
    size, read from this host through directory descriptors that never follow a link), then writes a C(.tx9)
    archive of the running box into O(dest), not quiesced, its gateway as it was.
  - O(which=changes) walks the volume again and writes a change set (docs/archive-format.md) into O(dest),
    the list of every path C(/data) holds, then each path that changed or is new since the last pass. With
    O(final=true) the box is quiesced first, as M(col_agents.tx9.tx9_backup) quiesces it, and O(disable_gateway)
    and O(leave_quiesced) work as there.
  - The volume must be readable on this host (the engine runs here); otherwise the task fails with
    C(PRECOPY_UNAVAILABLE) and the move takes the C(full) strategy.
author:
  - col_agents.tx9 contributors (@col-agents)
extends_documentation_fragment:
  - col_agents.tx9.connection
  - col_agents.tx9.passphrase
attributes:
  check_mode:
    support: none
    description: A pass writes its archive; there is nothing to predict.
  diff_mode:
    support: none
    description: The result names the archive written.
  idempotent:
    support: none
    description: Every pass writes a new archive of what the box holds then.
options:
  name:
    description: The box.
    type: str
    required: true
  dest:
    description: The move's directory on this host; the record and the manifest of the passes are kept there too.
    type: path
    required: true
  which:
    description: The base archive, or the change set since the last pass.
    type: str
    choices: [base, changes]
    required: true
  final:
    description: The last pass (O(which=changes) only), the box quiesced first.
    type: bool
    default: false
  password:
    description: The passphrase to encrypt with, when O(encrypt). When omitted, E(TX9_PASSWORD) on the target host.
    type: str
  encrypt:
    description: Encrypt the payload (OpenPGP, AES-256).
    type: bool
    default: false
  disable_gateway:
    description: With O(final), stop the box's Hermes gateway first and keep it disabled.
    type: bool
    default: false
  leave_quiesced:
    description: With O(final), leave the box quiesced after the pass.
    type: bool
    default: false
requirements:
  - python-gnupg 0.5.4 or newer and gpg 2.2.7 or newer on the target host, when O(encrypt)
seealso:
  - module: col_agents.tx9.tx9_stage
  - module: col_agents.tx9.tx9_backup
"""

EXAMPLES = r"""
- name: Copy the box while it runs
  col_agents.tx9.tx9_precopy:
    name: dev
    dest: /root/.tx9/migrate/dev
    which: base
  register: base

- name: Quiesce it and write what changed since
  col_agents.tx9.tx9_precopy:
    name: dev
    dest: /root/.tx9/migrate/dev
    which: changes
    final: true
    disable_gateway: true
    leave_quiesced: true
  register: changes
"""

RETURN = r"""
path:
  description: The archive (base) or change set written.
  returned: success
  type: str
  sample: /root/.tx9/migrate/dev/dev-20261204-101500.tx9
sha256:
  description: SHA-256 of the whole file written; a change set names the one before it as its base.
  returned: success
  type: str
  sample: 9f2c0d6b0d1f0e8c4a1f6f9e5a1c2b3d4e5f60718293a4b5c6d7e8f901234567
size:
  description: Bytes of the file written.
  returned: success
  type: int
  sample: 104857600
paths:
  description: Paths the volume held at this pass.
  returned: success
  type: int
  sample: 20412
members:
  description: Members of the payload (for a change set, the changed ones).
  returned: success
  type: int
  sample: 12
"""

from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.col_agents.tx9.plugins.module_utils._archive.gpg import GNUPG_IMPORT_ERROR, HAS_GNUPG
from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
from ansible_collections.col_agents.tx9.plugins.module_utils._module import (
    docker_client,
    missing_library,
    new_module,
    run,
    secret_from_env,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.precopy import Precopy


def copy_pass(module: AnsibleModule) -> dict[str, Any]:
    params = module.params
    if params['encrypt'] and not HAS_GNUPG:
        missing_library(module, 'python-gnupg', GNUPG_IMPORT_ERROR)
    job = Precopy(
        docker_client(module),
        StateHome(params['state_home']),
        params['name'],
        params['dest'],
        params['which'],
        params['final'],
        password=secret_from_env(module, params['password'], 'TX9_PASSWORD'),
        encrypt=params['encrypt'],
        leave_quiesced=params['leave_quiesced'],
        disable_gateway=params['disable_gateway'],
    )
    return job.run()


def main() -> None:
    module = new_module(
        dict(
            name=dict(type='str', required=True),
            dest=dict(type='path', required=True),
            which=dict(type='str', required=True, choices=['base', 'changes']),
            final=dict(type='bool', default=False),
            password=dict(type='str', no_log=True),
            encrypt=dict(type='bool', default=False),
            disable_gateway=dict(type='bool', default=False),
            leave_quiesced=dict(type='bool', default=False),
            state_home=dict(type='path'),
        ),
        supports_check_mode=False,
    )
    run(module, lambda: copy_pass(module))


if __name__ == '__main__':
    main()
