#!/usr/bin/python
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


from __future__ import annotations

DOCUMENTATION = r"""
---
module: tx9_stage
short_description: Stage a moving tx9 box on its new host, apply its last changes, and make it the box
version_added: 0.1.0
description:
  - The new host's half of a pre-copied move (the C(precopy) strategy of the P(col_agents.tx9.tx9_migrate#role)
    role); M(col_agents.tx9.tx9_precopy) is the old host's.
  - O(base) validates a C(.tx9) archive as M(col_agents.tx9.tx9_import) does and restores it into a staged
    volume, C(tx9-<name>-staged), labelled C(tx9.stage=<name>); it is no box's object, so nothing lists,
    starts or backs it up. The staged tree's records are kept in the state home. The same base again is
    C(changed=false).
  - O(changes) checks a change set against the staged tree as one archive (the staged tree, what the change
    set no longer lists taken away, its members added) with every rule and cause of a whole archive, then
    applies it; only paths of the staged tree are ever removed. A change set whose base is not what the stage
    holds is refused with C(STAGE_STALE); one that fails while it is applied removes the stage.
  - O(state=promoted) makes the box of the stage, as M(col_agents.tx9.tx9_import) makes one of an archive
    (fresh token, quiesced, gateway disabled, the box options given, past the readiness gate); its agent volume
    is created and the staged tree moved into it by renames on this host, so no byte is copied whatever the
    box's size. O(state=absent) removes the stage.
author:
  - col_agents.tx9 contributors (@col-agents)
extends_documentation_fragment:
  - col_agents.tx9.connection
  - col_agents.tx9.passphrase
  - col_agents.tx9.box_options
  - col_agents.tx9.box_options.resources
  - col_agents.tx9.box_options.mapping
attributes:
  check_mode:
    support: full
    description: Validates what it is given (the change set against the staged tree); changes nothing.
  diff_mode:
    support: none
    description: RV(stage) says what the stage holds.
  idempotent:
    support: partial
    description: The same base, or the change set the stage already holds, is C(changed=false).
options:
  name:
    description: The box being moved here.
    type: str
    required: true
  state:
    description:
      - C(present) stages O(base) or applies O(changes); C(promoted) makes the box; C(absent) removes the stage.
    type: str
    choices: [present, promoted, absent]
    default: present
  base:
    description: The base C(.tx9) archive on the target host (O(state=present)).
    type: path
  changes:
    description: A change set on the target host (O(state=present)).
    type: path
  sha256:
    description: The SHA-256 the whole file given must have; checked before anything else (C(ARCHIVE_CORRUPT)).
    type: str
  password:
    description: The passphrase of an encrypted base or change set. When omitted, E(TX9_PASSWORD) on the target host.
    type: str
  replace_superseded:
    description: With O(state=promoted), replace a copy of the box here that a move left behind (marked superseded).
    type: bool
    default: false
  doctor:
    description:
      - With O(state=promoted), run the checks of M(col_agents.tx9.tx9_doctor) on the new box once it passed its
        readiness gate, in the same task; a failed check fails the task with C(UNHEALTHY) (the box stays, for the
        caller to remove or inspect).
    type: bool
    default: false
requirements:
  - python-gnupg 0.5.4 or newer and gpg 2.2.7 or newer on the target host, for an encrypted archive
seealso:
  - module: col_agents.tx9.tx9_precopy
  - module: col_agents.tx9.tx9_import
"""

EXAMPLES = r"""
- name: Stage the base the old host wrote
  col_agents.tx9.tx9_stage:
    name: dev
    base: /root/.tx9/migrate/dev/incoming/dev-20261204-101500.tx9
    sha256: "{{ base.sha256 }}"

- name: Apply the last changes
  col_agents.tx9.tx9_stage:
    name: dev
    changes: /root/.tx9/migrate/dev/incoming/dev-20261204-101620.tx9
    sha256: "{{ changes.sha256 }}"

- name: Make the box
  col_agents.tx9.tx9_stage:
    name: dev
    state: promoted
"""

RETURN = r"""
stage:
  description: The stage (its volume, base, head and step) after the task.
  returned: O(state=present) or O(state=absent)
  type: dict
  sample: {"name": "dev", "volume": "tx9-dev-staged", "staged": true, "step": "ready"}
box:
  description: The new box, as M(col_agents.tx9.tx9_box) returns it, plus C(quiesced) and C(gateway_disabled).
  returned: O(state=promoted)
  type: dict
  sample: {"name": "dev", "state": "running", "quiesced": true, "gateway_disabled": true}
doctor:
  description: With O(doctor), what M(col_agents.tx9.tx9_doctor) returns (C(ok), C(failed_checks), C(checks)).
  returned: O(state=promoted) and O(doctor)
  type: dict
  sample: {"ok": true, "failed_checks": [], "warned_checks": []}
removed:
  description: Paths of the staged tree the change set took away (the highest of each subtree).
  returned: O(changes)
  type: int
  sample: 3
"""

from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
from ansible_collections.col_agents.tx9.plugins.module_utils._box_option_spec import BOX_OPTIONS
from ansible_collections.col_agents.tx9.plugins.module_utils._box_options import (
    OPTIONS_ARG,
    given_options,
    with_box_options,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._docker import connection_from_params
from ansible_collections.col_agents.tx9.plugins.module_utils._module import (
    docker_client,
    new_module,
    run,
    secret_from_env,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._names import validate_box_name
from ansible_collections.col_agents.tx9.plugins.module_utils._ops.doctor import Doctor
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.stage import Stage


def stage_box(module: AnsibleModule) -> dict[str, Any]:
    params = dict(with_box_options(module.params, given_options()))
    password = secret_from_env(module, params.pop('password'), 'TX9_PASSWORD')
    box = validate_box_name(params['name'])
    stage = Stage(docker_client(module), StateHome(params['state_home']), box, params, password=password)
    if params['state'] == 'absent':
        return stage.remove(module.check_mode)
    if params['state'] == 'promoted':
        result = stage.promote(module.check_mode)
        if params['doctor'] and not module.check_mode:
            docker_host = connection_from_params(params)['docker_host']
            checked = Doctor(stage.client, stage.home, dict(name=box), docker_host, module.no_log_values.add).run()
            result['doctor'] = checked
            result.setdefault('warnings', []).extend(checked.pop('warnings', []))
        return result
    if params['base']:
        return stage.stage_base(params['sha256'], module.check_mode)
    return stage.apply_changes(params['sha256'], module.check_mode)


def main() -> None:
    spec = dict(
        name=dict(type='str', required=True),
        state=dict(type='str', default='present', choices=['present', 'promoted', 'absent']),
        base=dict(type='path'),
        changes=dict(type='path'),
        sha256=dict(type='str'),
        password=dict(type='str', no_log=True),
        replace_superseded=dict(type='bool', default=False),
        doctor=dict(type='bool', default=False),
        state_home=dict(type='path'),
    )
    spec.update(BOX_OPTIONS)
    spec.update(OPTIONS_ARG)
    module = new_module(
        spec,
        supports_check_mode=True,
        mutually_exclusive=[('base', 'changes')],
        required_if=[('state', 'present', ('base', 'changes'), True)],
    )
    run(module, lambda: stage_box(module))


if __name__ == '__main__':
    main()
