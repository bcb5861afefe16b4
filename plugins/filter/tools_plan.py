# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tool pins of a host's boxes: which get col_agents.tx9.tx9_tools, and why others do not
(plugins/plugin_utils/_plans/tools.py)."""

from collections.abc import Callable
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.col_agents.tx9.plugins.plugin_utils._plans.tools import PinError, tools_plan

DOCUMENTATION = r"""
name: tools_plan
short_description: Which tx9 boxes of a host get their tool pins, and which are left alone
version_added: 0.2.0
description:
  - The tool plan of the C(col_agents.tx9.tx9_upgrade) role (C(playbooks/tools.yml)) for one host, from the
    host's boxes as M(col_agents.tx9.tx9_info) lists them.
  - A box's pins are the host's O(pins) (C(tx9_tools)), then, tool by tool, the C(tools) of its entry in the
    host's C(tx9_boxes) (a tool given as null there is not pinned for that box).
  - Only a running box gets its pins (the install runs in its agent container); a copy a move left behind
    gets none. Each selected box that gets nothing is in C(skipped) with the reason.
  - Returns C(installs) (each with C(box) and C(tools), the mapping for M(col_agents.tx9.tx9_tools)) and
    C(skipped) (each with C(box) and C(reason)). Pins of the wrong shape fail, naming the variable.
author:
  - col_agents.tx9 contributors (@col-agents)
options:
  _input:
    description: The host's boxes, RV(col_agents.tx9.tx9_info#module:boxes).
    type: list
    elements: dict
    required: true
  pins:
    description: The host's C(tx9_tools), tool to version (or V(latest)).
    type: dict
  declared:
    description: The host's C(tx9_boxes) entries (a name, or a dict with C(name), box options and C(tools)).
    type: list
    elements: raw
  selected:
    description: The names of the boxes to consider.
    type: list
    elements: str
    required: true
  host:
    description: The host's name, for the reasons and errors.
    type: str
"""

EXAMPLES = r"""
- name: Plan the pins of this host's boxes
  ansible.builtin.set_fact:
    plan: "{{ info.boxes | col_agents.tx9.tools_plan(pins={'codex': '0.169.0'}, selected=['dev']) }}"
"""

RETURN = r"""
_value:
  description: C(installs) and C(skipped).
  type: dict
"""


def plan_tools(
    boxes: list[dict[str, Any]] | None,
    pins: dict[str, Any] | None = None,
    declared: list[Any] | None = None,
    selected: list[str] | None = None,
    host: str | None = None,
) -> dict[str, list[dict[str, Any]]]:
    try:
        return tools_plan(boxes or [], pins, declared, list(selected or []), host or 'this host')
    except PinError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self) -> dict[str, Callable[..., Any]]:
        return dict(tools_plan=plan_tools)
