#!/usr/bin/python
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


from __future__ import annotations

DOCUMENTATION = r"""
---
module: tx9_relay
short_description: Stream a file from another host to this one through the controller
version_added: 0.1.0
description:
  - Copies a file (a box's archive, in a relayed move of P(col_agents.tx9.tx9_migrate#role)) from
    the host O(src_host) to the task's host through the controller, in one pipe. Nothing of the
    file is written on the controller's disk, and the controller holds at most one buffer of it (1 MiB)
    whatever its size.
  - The controller runs C(cat) of O(src) on O(src_host) and a small Python writer on the task's
    host, each over SSH built from that host's inventory connection variables (C(ansible_host),
    C(ansible_user), C(ansible_port), C(ansible_ssh_private_key_file), C(ansible_ssh_args),
    C(ansible_ssh_common_args), C(ansible_ssh_extra_args)), or a local shell for a host with the
    C(local) connection. The hosts need not reach each other.
  - The writer writes into a temporary file in O(dest_dir) (made C(0700)), hashes what it writes,
    takes no byte beyond O(size), and renames the file into place only when its size is O(size) and
    its SHA-256 is O(sha256). On any failure nothing is left in O(dest_dir) and the task fails with
    cause C(RELAY_FAILED), naming the step (C(connect), C(read), C(write), C(stream), C(check)).
  - SSH with keys only (no passwords); become by C(sudo) only, applied on both hosts.
  - This is an action; it runs on the controller and needs Python 3 on the task's host.
author:
  - col_agents.tx9 contributors (@col-agents)
attributes:
  check_mode:
    support: full
    description: Nothing is copied in check mode; reports C(changed=true).
  diff_mode:
    support: none
    description: Copies a file; no diff.
  idempotent:
    support: none
    description: Copies the file on every run.
  action:
    support: full
    description: Runs on the controller and opens both hosts' connections.
options:
  src:
    description:
      - The file's path on O(src_host). The file keeps its name in O(dest_dir).
    type: path
    required: true
  src_host:
    description:
      - The inventory name of the host that holds O(src).
    type: str
    required: true
  dest_dir:
    description:
      - The directory on the task's host that receives the file (made C(0700), with its parents).
    type: path
    required: true
  size:
    description:
      - The file's size in bytes as written. A file that is longer or shorter is refused.
    type: int
    required: true
  sha256:
    description:
      - The file's SHA-256 as written. When given, a file that arrives with another is refused.
    type: str
  timeout:
    description:
      - Seconds without any byte moving after which the relay is stopped.
    type: int
    default: 300
notes:
  - The file is read as the connection user (or the task's become user), as M(ansible.builtin.fetch) would.
"""

EXAMPLES = r"""
- name: Relay a box's archive from hostA to this host
  col_agents.tx9.tx9_relay:
    src: /root/.tx9/migrate/dev/archive/dev.tx9
    src_host: hostA
    dest_dir: /root/.tx9/migrate/dev/incoming
    size: 104857600
    sha256: "{{ backup.sha256 }}"
  register: relayed
"""

RETURN = r"""
path:
  description: The file's path on the task's host.
  returned: success
  type: str
  sample: /root/.tx9/migrate/dev/incoming/dev.tx9
size:
  description: The bytes that arrived.
  returned: success
  type: int
  sample: 104857600
sha256:
  description: The SHA-256 of the file that arrived.
  returned: success
  type: str
  sample: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
step:
  description: The step that failed.
  returned: failure with cause C(RELAY_FAILED)
  type: str
  sample: read
"""
