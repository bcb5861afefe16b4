# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lines of the table playbooks/list.yml prints (plugins/plugin_utils/_list_table.py)."""

from collections.abc import Callable
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.plugin_utils import _list_table

DOCUMENTATION = r"""
name: list_table
short_description: The table of every host's tx9 boxes, fitted to a terminal's width
version_added: 0.2.0
description:
  - Turns each host's registered M(col_agents.tx9.tx9_info) result (best with
    O(col_agents.tx9.tx9_info#module:usage=true)) into the lines of one table, host by host, sorted by host name.
  - "Columns: host, box, state (C(stopped, superseded by h2) for a copy a move left behind), version, drift,
    CPU and memory the box's running containers use (C(-) when none runs), its volumes' use against their
    budgets (C(!) when one is over) and the dashboard URL. Sizes are in powers of 1024 (C(1.2G/8G))."
  - Anything but a mapping as input, or a width below 40, fails with C(INVALID_ARGUMENT).
  - A host that could not be reached or listed gets a row saying so, with the first line of its error
    indented on the line below.
  - No line is longer than O(width). When the dashboard column does not fit, each URL moves to an indented
    line of its own below its row (none for a box without one); when the rest still does not fit, the widest
    of host, box, state and version are cut, marked with C(~).
author:
  - col_agents.tx9 contributors (@col-agents)
options:
  _input:
    description: Host name -> its registered M(col_agents.tx9.tx9_info) result.
    type: dict
    required: true
  width:
    description: The longest a line may be.
    type: int
    default: 100
"""

EXAMPLES = r"""
- name: Print one table of the boxes of every host
  ansible.builtin.debug:
    msg: "{{ {'nas': nas_info, 'lab': lab_info} | col_agents.tx9.list_table(width=100) }}"
"""

RETURN = r"""
_value:
  description: The table's lines, the header first; C((no boxes)) after it when there is no row.
  type: list
  elements: str
"""


def list_table(infos: Any, width: int = 100) -> list[str]:
    try:
        return _list_table.render(infos, width)
    except Tx9Error as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self) -> dict[str, Callable[..., Any]]:
        return dict(list_table=list_table)
