# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A role's list of names read as a list, never one character at a time (plugins/plugin_utils/_shapes.py)."""

from collections.abc import Callable
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.plugin_utils import _shapes

DOCUMENTATION = r"""
name: names
short_description: A list of names from a list, or from one comma-separated string
version_added: 0.2.0
description:
  - A role variable of names given on the command line (C(-e tx9_backup_boxes=a,b)) is one string;
    this filter splits it at its commas, so it is never read one character at a time.
  - A list of strings is returned as it is (each stripped); anything else fails with C(INVALID_ARGUMENT),
    naming the variable.
author:
  - col_agents.tx9 contributors (@col-agents)
options:
  _input:
    description: The variable's value.
    type: raw
    required: true
  variable:
    description: The variable's name, for the error.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: The boxes to back up, however they were given
  ansible.builtin.set_fact:
    wanted: "{{ tx9_backup_boxes | col_agents.tx9.names('tx9_backup_boxes') }}"
"""

RETURN = r"""
_value:
  description: The names.
  type: list
  elements: str
"""


def names(value: Any, variable: str) -> list[str]:
    try:
        return _shapes.names(value, variable)
    except Tx9Error as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self) -> dict[str, Callable[..., Any]]:
        return dict(names=names)
