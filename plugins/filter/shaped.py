# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A role's list or mapping in its shape, never read a character at a time (plugins/plugin_utils/_role_vars.py)."""

from collections.abc import Callable
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.plugin_utils import _role_vars

DOCUMENTATION = r"""
name: shaped
short_description: A role variable's list or mapping, refused in any other shape
version_added: 0.2.0
description:
  - A role variable given on the command line (C(-e tx9_host_engine_config=live-restore=false)) is one string.
    Ansible's check of a role's arguments lets it through (it splits a list's string at its commas and reads
    C(key=value) text as a mapping) but the role still receives the string, which a loop would read one
    character at a time.
  - This filter returns a list or a mapping as it is and refuses a string, or any other shape, with
    C(INVALID_ARGUMENT), naming the variable, the type of its value and how to write it.
  - With O(commas=true), a string is split at its commas instead (for lists whose items never hold a comma).
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
  kind:
    description:
      - V(list) is a list of strings; V(entries) a list of names or mappings (C(tx9_boxes)); V(dict) a mapping.
    type: str
    choices: [list, entries, dict]
    default: list
  commas:
    description: Split a string at its commas (only for V(list)).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: The engine settings, only as a mapping
  ansible.builtin.set_fact:
    settings: "{{ tx9_host_engine_config | col_agents.tx9.shaped('tx9_host_engine_config', 'dict') }}"

- name: Debian packages, a list or one string separated by commas
  ansible.builtin.set_fact:
    packages: "{{ tx9_host_packages | col_agents.tx9.shaped('tx9_host_packages', commas=true) }}"
"""

RETURN = r"""
_value:
  description: The list or the mapping (an empty one for null).
  type: raw
"""


def shaped(value: Any, variable: str, kind: str = 'list', commas: bool = False) -> Any:
    try:
        return _role_vars.shaped(value, variable, kind, commas)
    except Tx9Error as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self) -> dict[str, Callable[..., Any]]:
        return dict(shaped=shaped)
