#!/usr/bin/python
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


from __future__ import annotations

DOCUMENTATION = r"""
---
module: tx9_import
short_description: Import a .tx9 archive as a new tx9 box
version_added: 0.1.0
description:
  - Validates the whole archive on the target host before creating anything; the container
    layout, the metadata, the payload's size and SHA-256, the decryption (OpenPGP integrity
    check included) and every payload member. Then creates the box's agent data volume,
    extracts the payload in a throwaway container (no network, no new privileges) into a
    staging directory, promotes it to C(/data), re-arms the C(quiesced) and C(gateway-disabled)
    markers, and creates the box with a fresh token, wired and past the readiness gate.
  - The payload is read with the collection's own strict tar reader; Docker is given only a canonical
    tar written from the validated members (permission bits only, setuid, setgid and sticky bits
    dropped, every member owned by the agent), never the archive's own bytes. The restore container
    has a read-only root filesystem, no network and only the capabilities the promote step needs.
  - An archive that would not fit where the engine keeps its volumes is refused with C(NO_SPACE)
    before anything is created. A volume that fills while the payload is extracted (another writer
    took the room) fails with C(NO_SPACE) too, naming the volume, where it lies and the bytes needed;
    nothing of the import is kept.
  - An engine that dies while the import made its objects is waited for (up to 90 seconds), and what the
    import made is removed once it answers again; the import fails with C(DOCKER_UNAVAILABLE) and the same
    task run again completes.
  - An import that was killed leaves a marker in the state home; the next import under the same
    name removes what it left and starts again, so an interrupted import never blocks a retry.
  - The box arrives quiesced with its Hermes gateway disabled, so a migrated box never becomes a
    second writer; resume it with C(hb up) inside and enable the gateway deliberately.
  - A box name already in use is refused with cause C(NAME_EXISTS) and nothing is touched, unless
    O(replace_superseded) is set and what holds the name is a copy a move left behind (marked
    superseded). A failure at any later step removes everything the import created.
  - Archives written by the original tx9 CLI import too.
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
    description: Validates the archive completely (decryption included) and the name; creates nothing.
  diff_mode:
    support: none
    description: An import creates a new box; RV(box) describes it.
  idempotent:
    support: none
    description: A second import of the same archive under the same name fails with C(NAME_EXISTS).
options:
  path:
    description:
      - The C(.tx9) archive on the target host.
    type: path
    required: true
  name:
    description:
      - The new box's name. When omitted, the name stored in the archive.
    type: str
  password:
    description:
      - The passphrase of an encrypted archive. When omitted, E(TX9_PASSWORD) on the target host.
    type: str
  archive_sha256:
    description:
      - The SHA-256 (hex) the whole C(.tx9) file must have, such as the C(sha256) M(col_agents.tx9.tx9_backup)
        returned where it was written. Checked in the same read as the container, before anything else; a
        file that differs (changed on its way here) is refused with C(ARCHIVE_CORRUPT) and nothing is created.
    type: str
  replace_superseded:
    description:
      - When the name is held on this host by a copy marked superseded (a move left it behind, see
        M(col_agents.tx9.tx9_box)), replace it; a move back to this host does. The copy, its data and its
        state file are removed only once the whole archive validated (checksum, decryption, every
        member) and, where the engine keeps its volumes on this host, once the payload is extracted
        whole into a volume beside the copy (C(tx9-<name>-import-stage)), whose tree then becomes the
        box's by renames, so a volume that fills or an engine that dies before then leaves the copy as it
        was. Nothing else on the host is touched.
      - A name held by a box without the mark is refused with C(NAME_EXISTS) all the same.
    type: bool
    default: false
requirements:
  - python-gnupg 0.5.4 or newer and gpg 2.2.7 or newer on the target host, for an encrypted archive
seealso:
  - module: col_agents.tx9.tx9_backup
  - module: col_agents.tx9.tx9_box
"""

EXAMPLES = r"""
- name: Bring a box over from another machine under a new name
  col_agents.tx9.tx9_import:
    path: /root/Downloads/dev-20261130-031500.tx9
    name: dev2
    password: "{{ vault_tx9_backup_password }}"
  register: imported

- name: Import an archive copied from another host only if it arrived unchanged
  col_agents.tx9.tx9_import:
    path: /root/incoming/dev-20261130-031500.tx9
    archive_sha256: "{{ backup_on_old_host.sha256 }}"
    password: "{{ vault_tx9_backup_password }}"

- name: Import a moved box with the box options it had, as one mapping
  col_agents.tx9.tx9_import:
    path: /root/incoming/dev-20261130-031500.tx9
    options: {agent_cpus: 2, agent_memory: 4g, executor_publish: "127.0.0.1:4788"}

- name: Refuse quietly when the name is taken
  col_agents.tx9.tx9_import:
    path: /root/Downloads/dev-20261130-031500.tx9
  register: imported
  failed_when: imported.failed and imported.cause != 'NAME_EXISTS'
"""

RETURN = r"""
box:
  description: The new box, as M(col_agents.tx9.tx9_box) returns it, plus C(quiesced) and C(gateway_disabled).
  returned: success
  type: dict
  sample: {"name": "dev2", "state": "running", "quiesced": true, "gateway_disabled": true}
archive:
  description: The archive's path, payload facts and metadata.
  returned: success
  type: dict
  sample: {"path": "/root/Downloads/dev-20261130-031500.tx9", "metadata": {"box": "dev", "encrypted": true}}
members:
  description: Members in the payload.
  returned: success
  type: int
  sample: 1542
special_modes_dropped:
  description: How many payload members had setuid, setgid or sticky bits, which the restore dropped.
  returned: success
  type: int
  sample: 0
actions:
  description: What the import did (or would do in check mode), in order.
  returned: success
  type: list
  elements: str
  sample: ["validate the archive", "create the agent volume", "restore /data"]
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
from ansible_collections.col_agents.tx9.plugins.module_utils._module import (
    docker_client,
    new_module,
    run,
    secret_from_env,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.importer import Import


def import_box(module: AnsibleModule) -> dict[str, Any]:
    params = dict(with_box_options(module.params, given_options()))
    password = secret_from_env(module, params.pop('password'), 'TX9_PASSWORD')
    job = Import(docker_client(module), StateHome(params['state_home']), params['path'], params, password=password)
    return job.run(check_mode=module.check_mode)


def main() -> None:
    spec = dict(
        path=dict(type='path', required=True),
        name=dict(type='str'),
        password=dict(type='str', no_log=True),
        archive_sha256=dict(type='str'),
        replace_superseded=dict(type='bool', default=False),
        state_home=dict(type='path'),
    )
    spec.update(BOX_OPTIONS)
    spec.update(OPTIONS_ARG)
    module = new_module(spec, supports_check_mode=True)
    run(module, lambda: import_box(module))


if __name__ == '__main__':
    main()
