#!/usr/bin/python
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


from __future__ import annotations

DOCUMENTATION = r"""
---
module: tx9_backup
short_description: Back up a tx9 box into a validated, encrypted .tx9 archive
version_added: 0.1.0
description:
  - Archives the box's agent C(/data) volume (Executor data is scratch and does not travel) into
    C(<box>-<YYYYMMDD-HHMMSS>.tx9) in O(dest) on the target host.
  - Under the box lock it quiesces the box (C(hb down) stops the gateway and custom services),
    checkpoints Hermes' SQLite state, writes the box manifest, streams a tar of C(/data) out of the
    agent container through the member-by-member validator into gzip and OpenPGP (AES-256,
    symmetric), reads the stored payload back (it must decrypt to a gzip stream with the SHA-256
    taken while writing it; the stored bytes' SHA-256 goes into the metadata), publishes the
    file without ever overwriting one, and resumes the box.
  - Caches, C(node_modules), virtualenvs, C(__pycache__)/C(*.pyc), tool scratch directories,
    PID and lock files, SQLite C(-wal)/C(-shm)/C(-journal) sidecars and the quiesce marker are
    left out; O(exclude) adds patterns.
  - Files keep their modes, owners, links and modification times to the second (the payload is a
    GNU-format tar; it carries no access, change or sub-second times).
  - The published archive (its time, path and SHA-256, and that it read back) is recorded in the box's
    state file as its last backup, which M(col_agents.tx9.tx9_info) reports and the
    C(col_agents.tx9.boxes) inventory plugin judges against its C(backup_max_age).
  - Any failure leaves no file under a C(.tx9) name and resumes the box. Memory stays bounded
    whatever the size of C(/data).
  - The payload decrypts with plain C(gpg --decrypt) and lists with plain C(tar -tz); see the
    collection's archive format documentation.
author:
  - col_agents.tx9 contributors (@col-agents)
extends_documentation_fragment:
  - col_agents.tx9.connection
  - col_agents.tx9.passphrase
attributes:
  check_mode:
    support: full
    description: Checks the box, the passphrase and gpg; writes no archive and does not quiesce.
  diff_mode:
    support: none
    description: A backup adds a file; RV(path) names it.
  idempotent:
    support: none
    description: Every run writes a new archive.
options:
  name:
    description:
      - The box to back up. Its agent container must be running.
    type: str
    required: true
  dest:
    description:
      - The directory on the target host that receives the archive; created (mode C(0700)) when
        missing. A file at that path (or at a part of it) is refused as not a directory
        (C(ARCHIVE_WRITE_FAILED)), and left alone.
      - The default, C(~/Downloads) of the user the module runs as, is the original command line's, for a
        person backing up a box at their desk. The P(col_agents.tx9.tx9_backup#role) role, made for hosts and
        scheduled runs, defaults to C(/var/backups/tx9) instead; give O(dest) to choose.
    type: path
    default: ~/Downloads
  password:
    description:
      - The passphrase of the encrypted payload. When omitted, E(TX9_PASSWORD) on the target
        host. Required unless O(encrypt=false).
    type: str
  encrypt:
    description:
      - Encrypt the payload. V(false) writes a plain C(data.tar.gz) payload for quick local
        snapshots; everything in the box, the tools' sign-ins and the box's MCP wiring
        included, is then readable by anyone who can read the file.
    type: bool
    default: true
  exclude:
    description:
      - GNU tar exclude patterns added to the defaults, relative to C(/data)
        (for example C(./home/agent/workspace/big-build)).
    type: list
    elements: str
    default: []
  leave_quiesced:
    description:
      - Leave the box quiesced afterwards (for a migration whose source must stay still).
    type: bool
    default: false
  disable_gateway:
    description:
      - Before quiescing, stop the box's Hermes gateway and keep it disabled, as
        M(col_agents.tx9.tx9_gateway) with O(col_agents.tx9.tx9_gateway#module:state=disabled) does, so that
        this copy runs no gateway after the backup (for a migration, whose new copy may enable its own).
      - It stays disabled whether or not the backup succeeds; enable it again with
        M(col_agents.tx9.tx9_gateway).
    type: bool
    default: false
  verify:
    description:
      - After publishing, read the new archive again exactly as M(col_agents.tx9.tx9_import) reads
        it, creating nothing (the container, the metadata, the payload's SHA-256, the decryption and
        every payload member against the import's rules).
      - An archive that fails is removed and the task fails with the cause the import would give.
      - Implied by O(keep_last).
    type: bool
    default: false
  keep_last:
    description:
      - Retention. Once the new archive is verified, remove this box's older archives in O(dest) so
        that this many remain, the new one included. Nothing is removed when the backup or its
        verification fails.
      - Only regular files named C(<box>-<YYYYMMDD-HHMMSS>.tx9) (or C(-2.tx9), C(-3.tx9), ... for the
        same second) count, ordered by the time in their names; other files, and other boxes'
        archives, are never touched. The new archive is always kept.
      - Omitted, every archive is kept.
    type: int
  retain_only:
    description:
      - Write no archive; apply O(keep_last) to the box's archives already in O(dest). The newest of
        them is first read again exactly as O(verify) reads a new archive; when it does not pass, the
        task fails with the import's cause and nothing is removed, the unreadable archive included.
      - The box itself need not exist or run. Requires O(keep_last); O(password) is needed when the
        newest archive is encrypted.
      - C(changed) is true only when an archive was removed. In check mode nothing is read, and
        RV(removed) names what retention would remove if the newest archive passes.
    type: bool
    default: false
requirements:
  - python-gnupg 0.5.4 or newer and gpg 2.2.7 or newer on the target host, when encrypting
seealso:
  - module: col_agents.tx9.tx9_import
"""

EXAMPLES = r"""
- name: Back up the box dev into ~/Downloads
  col_agents.tx9.tx9_backup:
    name: dev
    password: "{{ vault_tx9_backup_password }}"
  register: saved

- name: Back up dev, prove the archive readable, then keep only the 7 newest
  col_agents.tx9.tx9_backup:
    name: dev
    dest: /var/backups/tx9
    password: "{{ vault_tx9_backup_password }}"
    keep_last: 7
  register: saved

- name: Retention alone, after the newest archive was copied off the host; nothing is removed unless it reads back
  col_agents.tx9.tx9_backup:
    name: dev
    dest: /var/backups/tx9
    password: "{{ vault_tx9_backup_password }}"
    keep_last: 7
    retain_only: true

- name: Back up dev for a move, its gateway stopped first and kept disabled, and leave it quiesced
  col_agents.tx9.tx9_backup:
    name: dev
    dest: /var/tmp/tx9-move
    password: "{{ vault_tx9_backup_password }}"
    disable_gateway: true
    leave_quiesced: true

- name: A quick unencrypted snapshot
  col_agents.tx9.tx9_backup:
    name: dev
    dest: /var/backups/tx9
    encrypt: false
"""

RETURN = r"""
path:
  description: The archive written (null in check mode); with O(retain_only), the newest archive retention proved.
  returned: always
  type: str
  sample: /root/Downloads/dev-20261130-031500.tx9
sha256:
  description: SHA-256 of the archive file.
  returned: success
  type: str
  sample: 9b0f4c2e
size:
  description: Size of the archive file in bytes.
  returned: success
  type: int
  sample: 104857600
members:
  description: Members (files, directories, links) in the payload.
  returned: success
  type: int
  sample: 1542
encrypted:
  description: Whether the payload is encrypted.
  returned: always
  type: bool
  sample: true
duration:
  description: Seconds the backup took.
  returned: success
  type: float
  sample: 12.5
box:
  description: The box that was backed up.
  returned: always
  type: str
  sample: dev
image:
  description: The image the box ran, as recorded in the archive's metadata.
  returned: always
  type: str
  sample: tx9-box:0.1.0
payload_sha256:
  description: SHA-256 of the payload member as stored (also in the archive's metadata).
  returned: success
  type: str
  sample: 5d41402abc4b2a76
dest:
  description: The destination directory (check mode, and with O(retain_only)).
  returned: check mode, or with O(retain_only)
  type: str
  sample: /root/Downloads
quiesced:
  description: Whether the box is left quiesced.
  returned: success
  type: bool
  sample: false
gateway:
  description:
    - The box's gateway once O(disable_gateway) disabled it (in check mode, as it would be), with the
      keys M(col_agents.tx9.tx9_gateway) returns.
  returned: when O(disable_gateway=true)
  type: dict
  sample: {enabled: false, running: false, state: disabled, pid: null, since: null, detail: "disabled", quiesced: false}
verified:
  description:
    - Whether the new archive (with O(retain_only), the newest) was read again as an import reads it,
      and passed.
  returned: always
  type: bool
  sample: true
removed:
  description:
    - The older archives retention removed (in check mode, the ones it would remove).
  returned: when O(keep_last) is set
  type: list
  elements: str
  sample: [/var/backups/tx9/dev-20261128-031500.tx9]
kept:
  description: The box's archives in O(dest) after retention, newest first.
  returned: when O(keep_last) is set and not in check mode, and with O(retain_only)
  type: list
  elements: str
  sample: [/var/backups/tx9/dev-20261130-031500.tx9, /var/backups/tx9/dev-20261129-031500.tx9]
last_drill:
  description:
    - The record of the box's last restore drill (M(col_agents.tx9.tx9_drill)), or null when it was
      never drilled. A drill of this backup has not happened yet when its C(archive) is not RV(path).
  returned: always
  type: dict
  sample: {archive: /var/backups/tx9/dev-20261129-031500.tx9, ok: true, time: "2026-11-29T03:16:02Z"}
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
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.backup import Backup


def back_up(module: AnsibleModule) -> dict[str, Any]:
    params = module.params
    if params['encrypt'] and not HAS_GNUPG:
        missing_library(module, 'python-gnupg', GNUPG_IMPORT_ERROR)
    backup = Backup(
        docker_client(module),
        StateHome(params['state_home']),
        params['name'],
        params['dest'],
        password=secret_from_env(module, params['password'], 'TX9_PASSWORD'),
        encrypt=params['encrypt'],
        exclude=params['exclude'],
        leave_quiesced=params['leave_quiesced'],
        verify=params['verify'],
        keep_last=params['keep_last'],
        disable_gateway=params['disable_gateway'],
    )
    if params['retain_only']:
        return backup.retain(module.check_mode)
    return backup.plan() if module.check_mode else backup.run()


def main() -> None:
    module = new_module(
        dict(
            name=dict(type='str', required=True),
            dest=dict(type='path', default='~/Downloads'),
            password=dict(type='str', no_log=True),
            encrypt=dict(type='bool', default=True),
            exclude=dict(type='list', elements='str', default=[]),
            leave_quiesced=dict(type='bool', default=False),
            disable_gateway=dict(type='bool', default=False),
            verify=dict(type='bool', default=False),
            keep_last=dict(type='int'),
            retain_only=dict(type='bool', default=False),
            state_home=dict(type='path'),
        ),
        supports_check_mode=True,
    )
    run(module, lambda: back_up(module))


if __name__ == '__main__':
    main()
