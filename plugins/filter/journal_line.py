# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The command line that writes a move's journal on the old host (plugins/module_utils/_portable/peer.py)."""

from collections.abc import Callable, Mapping
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._portable import peer

DOCUMENTATION = r"""
name: journal_line
short_description: The command line that writes a move's journal record on the old host
version_added: 0.2.0
description:
  - A relayed move records each of its steps on the old host with one raw command, so no module starts there
    while the box is down. This filter gives that command line; the login shell only starts C(sh) with it, and
    the record travels in base64, so no shell reads its quotes, dollars or backslashes.
  - The record is written beside the journal (mode 0600) and renamed over it, by the same command a direct
    move's M(col_agents.tx9.tx9_stage) runs, so a reader never sees half a journal.
  - A leading C(~/) in the path is the old host's user's home. A record over 64 KiB fails with
    C(INVALID_ARGUMENT) before anything runs.
author:
  - col_agents.tx9 contributors (@col-agents)
options:
  _input:
    description: The journal record.
    type: dict
    required: true
  path:
    description: The journal's path on the old host.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Record the move's step in the journal on the old host
  ansible.builtin.raw: "{{ record | col_agents.tx9.journal_line('~/.tx9/moves/dev/journal.json') }}"
  vars:
    record:
      box: dev
      step: arrived
  delegate_to: old-host
"""

RETURN = r"""
_value:
  description: The command line, quoted for a POSIX shell.
  type: str
"""


def journal_line(record: Mapping[str, Any], path: str) -> str:
    try:
        return peer.journal_line(path, dict(record))
    except Tx9Error as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self) -> dict[str, Callable[..., Any]]:
        return dict(journal_line=journal_line)
