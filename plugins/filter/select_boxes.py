# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The boxes of a host that names and patterns choose (plugins/plugin_utils/_selection.py)."""

from collections.abc import Callable
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.plugin_utils import _selection

DOCUMENTATION = r"""
name: select_boxes
short_description: The boxes of a host chosen by names, shell-style patterns, or a list mixing them
version_added: 0.2.0
description:
  - Returns the names of the host's boxes that O(wanted) chooses, sorted, each once.
  - An entry with one of the characters C(*), C(?) or C([) is a shell-style pattern (as in C(nu-*) or
    C(dev-?)), matched case-sensitively against whole box names; any other entry is a box name, taken as
    written. Box names never hold those characters, so no entry is both.
  - O(wanted) is a list, or one string separated by commas (C(-e tx9_backup_boxes=dev,nu-*)), as
    P(col_agents.tx9.names#filter) reads it; no entries at all chooses every box of the host.
  - With O(only) (a box host's C(tx9_box_name) from the C(col_agents.tx9.boxes) inventory plugin), that box
    is the only candidate, so a play over an inventory group such as C(tx9_stopped) chooses each box once,
    on its own host; entries, when given, narrow that down.
  - An entry that finds nothing here is not an error here (boxes live on one host each);
    P(col_agents.tx9.selection_verdict#filter) judges the selections of all hosts of a play together.
author:
  - col_agents.tx9 contributors (@col-agents)
options:
  _input:
    description: The host's boxes, RV(col_agents.tx9.tx9_info#module:boxes), or a list of box names.
    type: list
    elements: raw
    required: true
  wanted:
    description: The names and patterns, as a list or as one string separated by commas.
    type: raw
    required: true
  variable:
    description: The variable O(wanted) came from, for the error about a wrong shape.
    type: str
    default: boxes
  only:
    description: The one candidate box (a box host's C(tx9_box_name)); empty considers every box of the host.
    type: str
    default: ""
  as_given:
    description:
      - Choose a name even when the host does not have it (patterns still choose only boxes that exist).
      - C(playbooks/delete_box.yml) uses it, so that deleting a box that is already gone stays repeatable.
    type: bool
    default: false
seealso:
  - plugin: col_agents.tx9.selection_verdict
    plugin_type: filter
"""

EXAMPLES = r"""
- name: List the boxes of the host
  col_agents.tx9.tx9_info:
  register: info

- name: Choose the boxes whose names start with nu-, and dev
  ansible.builtin.set_fact:
    chosen: "{{ info.boxes | col_agents.tx9.select_boxes('nu-*,dev', variable='tx9_backup_boxes') }}"
"""

RETURN = r"""
_value:
  description: The chosen box names, sorted.
  type: list
  elements: str
"""


def select_boxes(
    boxes: list[Any] | None, wanted: Any, variable: str = 'boxes', only: str | None = None, as_given: bool = False
) -> list[str]:
    try:
        return _selection.select(boxes, wanted, variable or 'boxes', only or None, bool(as_given))
    except Tx9Error as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self) -> dict[str, Callable[..., Any]]:
        return dict(select_boxes=select_boxes)
