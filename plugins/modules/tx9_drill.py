#!/usr/bin/python
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


from __future__ import annotations

DOCUMENTATION = r"""
---
module: tx9_drill
short_description: Restore drill of a tx9 backup into a throwaway box, with a record of the result
version_added: 0.1.0
description:
  - Proves that a backup restores. The box's newest archive in O(dest) (or the archive at O(path))
    is imported exactly as M(col_agents.tx9.tx9_import) imports it (every archive check, a fresh
    token, the readiness gate) as a throwaway box named C(<name>-drill), whose dashboard is
    published on the host's loopback address only (C(127.0.0.1), a free port), so nothing outside
    the host reaches it.
  - The throwaway box then runs M(col_agents.tx9.tx9_doctor)'s checks, and is removed (containers,
    network, both volumes and its state file) whether they pass or not. The box named O(name) is
    never touched; it need not even exist on this host.
  - The outcome is saved as the box's drill record, C(<state home>/drills/<name>.json) (mode
    C(0600)), holding when the drill started, the archive, whether it passed, its duration, the
    failed checks, and the cause when the import itself failed. M(col_agents.tx9.tx9_backup) returns the
    record as C(last_drill), so a backup that was never drilled shows.
  - A drill that was killed leaves a marker beside the record; the next drill of the box removes the
    throwaway box it left, once that box's agent volume proves the killed drill made it. A box of
    the throwaway's name that is not a drill's is never changed (the import refuses it with
    C(NAME_EXISTS)).
  - Needs the Docker engine of the host the module runs on (a remote O(docker_host) is refused).
author:
  - col_agents.tx9 contributors (@col-agents)
extends_documentation_fragment:
  - col_agents.tx9.connection
  - col_agents.tx9.passphrase
attributes:
  check_mode:
    support: full
    description: Names the archive and the throwaway box; imports nothing and writes no record.
  diff_mode:
    support: none
    description: A drill leaves no box behind; its record is returned as RV(drill).
  idempotent:
    support: none
    description: Every run drills again and writes a new record.
options:
  name:
    description:
      - The box whose backup is drilled; the record is kept under this name.
    type: str
    required: true
  dest:
    description:
      - The directory holding the box's archives (as given to M(col_agents.tx9.tx9_backup)); the newest
        C(<name>-<YYYYMMDD-HHMMSS>.tx9) in it is drilled.
      - Ignored when O(path) is given.
    type: path
    default: ~/Downloads
  path:
    description:
      - The archive to drill, instead of the newest one in O(dest).
    type: path
  password:
    description:
      - The passphrase of an encrypted archive. When omitted, E(TX9_PASSWORD) on the target host.
    type: str
  wait_timeout:
    description:
      - Seconds the throwaway box's readiness gate may take.
    type: int
    default: 300
  fail_on_error:
    description:
      - Fail the task when the drill fails, with the cause of the import's failure, or C(UNHEALTHY)
        when the throwaway box failed checks. The record is written either way.
      - V(false) only records and reports.
    type: bool
    default: true
requirements:
  - python-gnupg 0.5.4 or newer and gpg 2.2.7 or newer on the target host, for an encrypted archive
seealso:
  - module: col_agents.tx9.tx9_backup
  - module: col_agents.tx9.tx9_import
  - module: col_agents.tx9.tx9_doctor
"""

EXAMPLES = r"""
- name: Drill the newest backup of dev
  col_agents.tx9.tx9_drill:
    name: dev
    dest: /var/backups/tx9
    password: "{{ vault_tx9_backup_password }}"
  register: drilled

- name: Drill one archive, recording a failure without failing the play
  col_agents.tx9.tx9_drill:
    name: dev
    path: /var/backups/tx9/dev-20261130-031500.tx9
    password: "{{ vault_tx9_backup_password }}"
    fail_on_error: false
"""

RETURN = r"""
box:
  description: The box whose backup was drilled.
  returned: always
  type: str
  sample: dev
archive:
  description: The archive that would be drilled.
  returned: check mode
  type: str
  sample: /var/backups/tx9/dev-20261130-031500.tx9
throwaway:
  description: The throwaway box's name.
  returned: check mode
  type: str
  sample: dev-drill
last_drill:
  description: The box's drill record before this run, or null.
  returned: check mode
  type: dict
  sample: null
drill:
  description: The record this drill saved in the state home.
  returned: success, and on a failed drill
  type: dict
  contains:
    box:
      description: The box whose backup was drilled.
      type: str
      sample: dev
    time:
      description: When the drill started (UTC, RFC 3339).
      type: str
      sample: "2026-11-30T03:16:02Z"
    archive:
      description: The archive drilled.
      type: str
      sample: /var/backups/tx9/dev-20261130-031500.tx9
    payload_sha256:
      description: SHA-256 of the archive's payload as imported (null when the import failed first).
      type: str
      sample: 5d41402abc4b2a76
    ok:
      description: Whether the import, the readiness gate and every check passed.
      type: bool
      sample: true
    duration:
      description: Seconds the drill took, removal included.
      type: float
      sample: 48.2
    throwaway:
      description: The throwaway box it was imported as (removed again).
      type: str
      sample: dev-drill
    failed_checks:
      description: The names of the throwaway box's failed checks.
      type: list
      elements: str
      sample: []
    cause:
      description: The cause of a failure before the checks (import or readiness gate).
      type: str
      sample: NOT_READY
    msg:
      description: What that failure said.
      type: str
      sample: Executor did not answer in time.
checks:
  description: Every check of the throwaway box, as M(col_agents.tx9.tx9_doctor) returns them.
  returned: success, and on a failed drill
  type: list
  elements: dict
  sample: [{name: mcp handshake, ok: true, detail: initialize and notifications/initialized accepted}]
"""

from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.col_agents.tx9.plugins.module_utils._archive.gpg import GNUPG_IMPORT_ERROR, HAS_GNUPG
from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
from ansible_collections.col_agents.tx9.plugins.module_utils._docker import connection_from_params
from ansible_collections.col_agents.tx9.plugins.module_utils._module import (
    docker_client,
    missing_library,
    new_module,
    run,
    secret_from_env,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.drill import Drill, outcome


def drill(module: AnsibleModule) -> dict[str, Any]:
    params = module.params
    password = secret_from_env(module, params['password'], 'TX9_PASSWORD')
    if password and not HAS_GNUPG:
        missing_library(module, 'python-gnupg', GNUPG_IMPORT_ERROR)
    job = Drill(
        docker_client(module),
        StateHome(params['state_home']),
        params['name'],
        path=params['path'],
        dest=params['dest'],
        password=password,
        docker_host=connection_from_params(params)['docker_host'],
        wait_timeout=params['wait_timeout'],
        hide=module.no_log_values.add,
    )
    if module.check_mode:
        return job.plan()
    record, checks = job.run()
    return outcome(record, checks, params['fail_on_error'])


def main() -> None:
    module = new_module(
        dict(
            name=dict(type='str', required=True),
            dest=dict(type='path', default='~/Downloads'),
            path=dict(type='path'),
            password=dict(type='str', no_log=True),
            wait_timeout=dict(type='int', default=300),
            fail_on_error=dict(type='bool', default=True),
            state_home=dict(type='path'),
        ),
        supports_check_mode=True,
    )
    run(module, lambda: drill(module))


if __name__ == '__main__':
    main()
