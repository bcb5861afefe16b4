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
  - O(state=promoted) with O(changes) applies them first, then makes the box, in one task.
  - O(state=promoted) makes the box of the stage, as M(col_agents.tx9.tx9_import) makes one of an archive
    (fresh token, quiesced, gateway disabled, the box options given, past the readiness gate); its agent volume
    is created and the staged tree moved into it by renames on this host, so no byte is copied whatever the
    box's size. A promotion that fails moves the tree back into the stage before it removes what it made, so the
    stage stays whole for the next one (one killed midway is finished the same way by the next promotion).
  - A promotion that replaces a superseded copy (O(replace_superseded)) first moves that copy's data, by
    renames, into a volume of its own, C(tx9-<name>-set-aside), labelled C(tx9.set-aside=<name>), so
    removing the copy takes no time that grows with it while the box is down.
  - O(state=absent) removes the stage and the data a promotion set aside. When that promotion stopped before it
    removed the superseded copy (killed), the data goes back into that copy instead, so the copy is as it was; a
    promotion run again after such a stop keeps the data already set aside and finishes.
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
      - C(present) stages O(base) or applies O(changes); C(promoted) makes the box (after applying O(changes) when
        given); C(absent) removes the stage.
    type: str
    choices: [present, promoted, absent]
    default: present
  base:
    description: The base C(.tx9) archive on the target host (O(state=present)).
    type: path
  changes:
    description: A change set on the target host, applied before the promotion with O(state=promoted).
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
  peer:
    description:
      - The command that runs a shell command on the old host of a direct move (C(ssh ... -- host)), whose new host
        reaches the old one over SSH, as the O(col_agents.tx9.tx9_preflight#module:peer) check ran it. Needed by
        O(changes_from) and O(journal).
    type: list
    elements: str
  changes_from:
    description:
      - Carry the change set from the old host to O(changes) first, through O(peer), streamed and cut at
        O(changes_from.size) bytes, so nothing the old host sends can fill this host's disk; kept only when it
        arrived whole (else C(PEER_FAILED)), and checked against O(sha256) before it is read.
      - In check mode nothing is carried, and the change set is not checked.
    type: dict
    suboptions:
      path:
        description: The change set's path on the old host (a leading C(~/) is that user's home).
        type: str
        required: true
      size:
        description: Its size in bytes, as written there.
        type: int
        required: true
  journal:
    description:
      - The move's journal on the old host, in which this task records each step it makes, written from this host
        through O(peer), so no task of its own runs on the old host while the box is down. Step C(arrived) once
        O(changes) is applied (or was already), step C(passed) once the promoted box passed its readiness gate
        and, with O(doctor), the doctor's checks.
      - Only with O(changes) or O(state=promoted); with O(base) or O(state=absent) the task fails with
        C(INVALID_ARGUMENT), as there is no step to record.
      - A journal that cannot be written fails the task with C(PEER_FAILED); what the task made stays, for the
        caller to revert. Ignored in check mode.
    type: dict
    suboptions:
      path:
        description: The journal's path on the old host (a leading C(~/) is that user's home).
        type: str
        required: true
      record:
        description: The journal's fields but its C(step), which the task sets (at most 64 KiB as JSON).
        type: dict
        required: true
  resume:
    description:
      - With O(state=promoted) and O(journal), resume the box (C(hb up)) once the journal is written, so the
        box runs again without a task of its own. A box that cannot be resumed is left quiesced with a warning
        and RV(resumed) false (the journal already says this host passed); resume it with
        M(col_agents.tx9.tx9_box) O(col_agents.tx9.tx9_box#module:quiesced=false).
      - Without O(state=promoted) and O(journal), C(true) fails the task with C(INVALID_ARGUMENT), as the box is
        resumed only once the journal says this host passed.
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

- name: Make the box, check it, record that this host passed in the journal on the old host, and resume it
  col_agents.tx9.tx9_stage:
    name: dev
    state: promoted
    doctor: true
    peer: [ssh, -o, BatchMode=yes, --, h1.example.com]
    journal:
      path: /root/.tx9/migrate/dev/journal.json
      record: {box: dev, source: h1, dest: h2, before: {state: running, quiesced: false}}
    resume: true
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
journal:
  description: The last step this task wrote in the journal on the old host.
  returned: when O(journal) was written
  type: str
  sample: passed
resumed:
  description: Whether the promoted box was resumed (O(resume)).
  returned: O(state=promoted)
  type: bool
  sample: true
removed:
  description: Paths of the staged tree the change set took away (the highest of each subtree).
  returned: O(changes)
  type: int
  sample: 3
members:
  description: How many members the change set carried.
  returned: O(changes), unless it was already applied
  type: int
  sample: 12
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
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._module import (
    docker_client,
    new_module,
    run,
    secret_from_env,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._names import validate_box_name
from ansible_collections.col_agents.tx9.plugins.module_utils._ops.doctor import Doctor
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.peer import fetch_file, write_journal
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.stage import Stage
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.stage_promote import resume_promoted


def refuse_unused(params: dict[str, Any]) -> None:
    """INVALID_ARGUMENT for a journal with no step to record, or a resume the journal does not precede."""
    if params['journal'] and (params['state'] == 'absent' or params['base']):
        given = 'state=absent' if params['state'] == 'absent' else 'base'
        raise Tx9Error(
            f'journal was given with {given}, which records no step of a move (only applying changes and a '
            'promotion do); nothing was done.',
            'INVALID_ARGUMENT',
            'Drop journal from this task, or give it with changes or state=promoted.',
        )
    if params['resume'] and not (params['state'] == 'promoted' and params['journal']):
        raise Tx9Error(
            'resume was given without state=promoted and journal: a box is resumed only once the journal '
            'says its new host passed; nothing was done.',
            'INVALID_ARGUMENT',
            'Give resume with state=promoted and journal, or resume the box with tx9_box quiesced=false.',
        )


def stage_box(module: AnsibleModule) -> dict[str, Any]:
    params = dict(with_box_options(module.params, given_options()))
    refuse_unused(params)
    password = secret_from_env(module, params.pop('password'), 'TX9_PASSWORD')
    box = validate_box_name(params['name'])
    stage = Stage(docker_client(module), StateHome(params['state_home']), box, params, password=password)
    journal = None if module.check_mode or not params['journal'] else dict(params['journal'], peer=params['peer'])
    if params['state'] == 'absent':
        return stage.remove(module.check_mode)
    if params['base'] and params['state'] == 'present':
        return stage.stage_base(params['sha256'], module.check_mode)
    applied: dict[str, Any] = {}
    if params['changes']:
        carried = params['changes_from']
        if carried and module.check_mode:
            return dict(changed=True, actions=['carry the change set from the old host', 'check it and apply it'])
        if carried:
            fetch_file(params['peer'], carried['path'], carried['size'], params['changes'])
        applied = stage.apply_changes(params['sha256'], module.check_mode)
        record_step(applied, journal, 'arrived')
        if params['state'] == 'present':
            return applied
    result = promote(module, stage, params)
    result.update((key, applied[key]) for key in ('removed', 'members', 'journal') if key in applied)
    record_step(result, journal, 'passed')
    if journal and params['resume']:
        warning = resume_promoted(stage.client, box)
        result.update(resumed=warning is None, warnings=result.get('warnings', []) + ([warning] if warning else []))
        result['box'].update(quiesced=warning is not None)
    return result


def record_step(result: dict[str, Any], journal: dict[str, Any] | None, step: str) -> None:
    """Write the move's step in its journal on the old host, when asked (journal, whose peer is given)."""
    if journal:
        write_journal(journal['peer'], journal['path'], dict(journal['record'], step=step))
        result['journal'] = step


def promote(module: AnsibleModule, stage: Stage, params: dict[str, Any]) -> dict[str, Any]:
    """The box made of the stage, checked by the doctor when asked (UNHEALTHY when a check fails)."""
    result = dict(stage.promote(module.check_mode), resumed=False)
    if params['doctor'] and not module.check_mode:
        docker_host = connection_from_params(params)['docker_host']
        checked = Doctor(stage.client, stage.home, dict(name=stage.box), docker_host, module.no_log_values.add).run()
        result['doctor'] = checked
        result.setdefault('warnings', []).extend(checked.pop('warnings', []))
    return result


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
        peer=dict(type='list', elements='str'),
        changes_from=dict(
            type='dict',
            options=dict(
                path=dict(type='str', required=True),
                size=dict(type='int', required=True),
            ),
        ),
        journal=dict(
            type='dict',
            options=dict(
                path=dict(type='str', required=True),
                record=dict(type='dict', required=True),
            ),
        ),
        resume=dict(type='bool', default=False),
        state_home=dict(type='path'),
    )
    spec.update(BOX_OPTIONS)
    spec.update(OPTIONS_ARG)
    module = new_module(
        spec,
        supports_check_mode=True,
        mutually_exclusive=[('base', 'changes')],
        required_if=[('state', 'present', ('base', 'changes'), True)],
        required_by=dict(changes_from=('changes', 'peer'), journal='peer'),
    )
    run(module, lambda: stage_box(module))


if __name__ == '__main__':
    main()
