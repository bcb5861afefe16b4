# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A play's box selection judged over all its hosts (plugins/plugin_utils/_selection.py)."""

from collections.abc import Callable
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.plugin_utils import _selection

DOCUMENTATION = r"""
name: selection_verdict
short_description: Whether every name and pattern of a play found a box on some host
version_added: 0.2.0
description:
  - Judges the selections that P(col_agents.tx9.select_boxes#filter) made on each host of a play, together,
    so that a name or a pattern that found no box anywhere is never a green no-op.
  - 'Returns C(ok) (every entry found a box), C(unmatched) (the entries that found none, in the order given),
    C(notes) (one line per unmatched entry, such as C(nu-*: skipped, no box on this host matches it)),
    C(names) (every chosen name, sorted), C(confirmation) (those names joined by commas, the text a typed
    confirmation repeats), C(cause) (C(NO_MATCHING_BOX), or empty) and C(msg) (which entries found nothing
    and what to do, or empty).'
  - No entries at all is always C(ok); so is a name chosen with O(col_agents.tx9.select_boxes#filter:as_given).
author:
  - col_agents.tx9 contributors (@col-agents)
options:
  _input:
    description:
      - Each host's chosen names, a list per host. An item that is null (a host that chose nothing yet,
        such as one that failed before) is left out.
    type: list
    elements: raw
    required: true
  wanted:
    description: The names and patterns, as given to P(col_agents.tx9.select_boxes#filter).
    type: raw
    required: true
  variable:
    description: The variable O(wanted) came from, named in the message.
    type: str
    default: boxes
  where:
    description: The place named in the notes and the message.
    type: str
    default: any host
seealso:
  - plugin: col_agents.tx9.select_boxes
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Fail when a name or a pattern found no box on any host of the play
  ansible.builtin.fail:
    msg: "{{ verdict.msg }}"
  vars:
    verdict: "{{ ansible_play_hosts_all | map('extract', hostvars) | map(attribute='chosen', default=None)
      | col_agents.tx9.selection_verdict(wanted, variable='tx9_backup_boxes') }}"
  when: not verdict.ok
  run_once: true
"""

RETURN = r"""
_value:
  description: C(ok), C(unmatched), C(notes), C(names), C(confirmation), C(cause) and C(msg).
  type: dict
"""


def selection_verdict(
    selections: list[Any] | None, wanted: Any, variable: str = 'boxes', where: str = 'any host'
) -> dict[str, Any]:
    try:
        return _selection.verdict(
            [chosen for chosen in selections or [] if chosen is not None], wanted, variable or 'boxes', where
        )
    except Tx9Error as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self) -> dict[str, Callable[..., Any]]:
        return dict(selection_verdict=selection_verdict)
