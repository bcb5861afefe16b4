#!/usr/bin/python
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


from __future__ import annotations

DOCUMENTATION = r"""
---
module: tx9_lease
short_description: Hold a tx9 box for one playbook run, so that a second run of any controller is refused
version_added: 0.2.0
description:
  - A lease lasts a whole playbook run, across its tasks (the per-box lock of the other modules lasts one
    call). The P(col_agents.tx9.tx9_migrate#role) role holds the box on its old host for the whole move, and
    P(col_agents.tx9.tx9_upgrade#role) holds each box it upgrades; another run, from this controller or another,
    is refused with C(BOX_BUSY), naming the controller, the C(ansible-playbook) pid holding it and since when.
  - The lease is the file C(leases/<name>.json) in the state home of the target host, created whole and
    exclusively. A run is one C(ansible-playbook) process; the module's action finds it on the controller.
    The same run holding the lease again renews it.
  - A lease is taken over when it expired (O(seconds) after it was last taken), or when its run was on this
    controller and its process is gone (a killed run's rerun goes on).
  - A lease file that cannot be read as a lease (not a JSON object with its C(run) and C(until), or larger than
    the 64 KiB read limit) is never taken over, expired or not, since which run holds the box cannot be told.
    Holding or releasing the lease then fails with C(STATE_HOME) naming the file, which is left as it is; once
    no run holds the box (no move or upgrade of it running, from any controller), remove the file and run again.
  - O(state=released) removes the lease this run holds; another run's lease stays.
author:
  - col_agents.tx9 contributors (@col-agents)
extends_documentation_fragment:
  - col_agents.tx9.connection
attributes:
  check_mode:
    support: none
    description: A lease is taken or released whatever the mode, as the run it guards changes the box.
  diff_mode:
    support: none
    description: RV(lease) is the lease held.
  idempotent:
    support: full
    description: Holding the lease this run holds renews it; releasing a lease it does not hold changes nothing.
options:
  name:
    description: The box.
    type: str
    required: true
  state:
    description: C(held) takes (or renews) the lease, C(released) removes it.
    type: str
    choices: [held, released]
    default: held
  purpose:
    description: What the run does to the box, in the words another run's refusal shows.
    type: str
    default: a tx9 run
  seconds:
    description: How long the lease lasts unless taken again or released; an expired lease is taken over.
    type: int
    default: 21600
  expect:
    description:
      - With O(state=held), what the play read on this host when it planned; the lease taken, anything
        different is refused with C(BOX_BUSY) (and the lease released), since another run changed the box.
      - C(journal), the path of the move's journal; C(step) and C(dest), the journal's step and new host the
        play read (empty when it read no journal). Without a journal, the box must exist here and carry no
        superseded mark.
      - A journal that cannot be read, or is larger than the 64 KiB read limit, fails with C(STATE_HOME) naming
        it, and the lease is released.
    type: dict
  holder:
    description: The run holding the lease (C(run), C(controller), C(pid)); set by the module's action.
    type: dict
  takeover:
    description: The run of a lease the action found gone on this controller; set by the module's action.
    type: str
    default: ''
"""

EXAMPLES = r"""
- name: Hold the box for this run
  col_agents.tx9.tx9_lease:
    name: dev
    purpose: upgrade on host1

- name: Release it
  col_agents.tx9.tx9_lease:
    name: dev
    state: released
"""

RETURN = r"""
lease:
  description:
    - The lease held (C(run), C(controller), C(pid), C(purpose), C(since), C(until) in seconds since the epoch).
  returned: when held
  type: dict
holder:
  description: The lease of the run that holds the box, on C(BOX_BUSY).
  returned: when refused
  type: dict
taken_over:
  description: The lease of a run gone on this controller, which this run took over.
  returned: when a lease was taken over
  type: dict
"""

from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.col_agents.tx9.plugins.module_utils._box import superseded
from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
from ansible_collections.col_agents.tx9.plugins.module_utils._lease import (
    TAKE,
    Leases,
    changed_since,
    read_journal,
    stale,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._module import docker_client, new_module, run
from ansible_collections.col_agents.tx9.plugins.module_utils._names import LABEL_BOX


def box_here(module: AnsibleModule, home: StateHome, box: str) -> tuple[bool, str]:
    """(whether the box exists here, its superseded mark described or '')."""
    containers = docker_client(module).api.containers(all=True, filters={'label': f'{LABEL_BOX}={box}'})
    persisted = home.read_box(box)
    labelled = {str(c.get('Id')): {'Config': {'Labels': c.get('Labels') or {}}} for c in containers}
    mark = superseded.read(persisted, labelled)
    return bool(containers or persisted), superseded.describe(mark) if mark else ''


def lease(module: AnsibleModule) -> dict[str, Any]:
    params = module.params
    box, home = params['name'], StateHome(params['state_home'])
    leases = Leases(home.path)
    holder = dict(params['holder'] or {})
    if not holder.get('run'):
        module.fail_json(msg='holder.run is missing: call tx9_lease through its action (as a task).')
    if params['state'] == 'released':
        return dict(changed=leases.release(box, str(holder['run'])))
    holder['purpose'] = params['purpose']
    verdict, held = leases.hold(box, holder, params['seconds'], params['takeover'])
    expect = params['expect']
    if expect is not None:
        # A plan another run outdated, or a journal or engine that cannot be read, leaves no lease behind.
        try:
            present, moved = box_here(module, home, box) if not expect.get('step') else (True, '')
            what = changed_since(expect, read_journal(str(expect.get('journal') or '')), present, moved)
            if what:
                raise stale(box, what)
        except BaseException:
            leases.release(box, str(holder['run']))
            raise
    return dict(changed=verdict == TAKE, lease=held)


def main() -> None:
    module = new_module(
        dict(
            name=dict(type='str', required=True),
            state=dict(type='str', choices=['held', 'released'], default='held'),
            purpose=dict(type='str', default='a tx9 run'),
            seconds=dict(type='int', default=21600),
            expect=dict(type='dict'),
            holder=dict(type='dict'),
            takeover=dict(type='str', default=''),
            state_home=dict(type='path'),
        ),
        supports_check_mode=False,
    )
    run(module, lambda: lease(module))


if __name__ == '__main__':
    main()
