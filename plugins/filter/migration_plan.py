# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The migration role's plan: which boxes move where (plugins/plugin_utils/_plans/migration.py)."""

from collections.abc import Callable
from typing import Any

from ansible_collections.col_agents.tx9.plugins.plugin_utils._plans.migration import plan

DOCUMENTATION = r"""
name: migration_plan
short_description: Which tx9 boxes move where, from the inventory and what each host runs
version_added: 0.1.0
description:
  - The plan of the C(col_agents.tx9.tx9_migrate) role. Each host's C(tx9_boxes) places boxes on
    it; each host's report says which boxes it runs (by labels) and which migration journals it
    holds. A box found on one host and placed on another moves; an interrupted move is redone from
    the backup, or only finished when its destination had passed its checks.
  - Returns C(moves), C(errors) (placements that cannot be carried out, such as one box placed on
    two hosts, or an arrived move whose journal does not say what arrived) and C(notes).
author:
  - col_agents.tx9 contributors (@col-agents)
options:
  _input:
    description: Host name to C(declared) (its tx9_boxes), C(boxes) (tx9_info's boxes, or null when
      the host did not answer), C(journals), C(work_dir) (where its journals are, named in the
      errors about them) and C(oversized_journals) (path to size of each journal too large to read,
      which the plan refuses).
    type: dict
    required: true
  move_box:
    description: The box of an explicit move (with O(move_to)); the inventory's placements are then ignored.
    type: str
  move_to:
    description: The host the box of an explicit move goes to.
    type: str
"""

EXAMPLES = r"""
- name: Plan the moves
  ansible.builtin.set_fact:
    plan: "{{ reports | col_agents.tx9.migration_plan(tx9_move_box | default(none), tx9_move_to | default(none)) }}"
"""

RETURN = r"""
_value:
  description: C(moves) (each with C(box), C(source), C(dest), C(phase), C(options), C(before), ...),
    C(errors) and C(notes).
  type: dict
"""


def migration_plan(
    reports: dict[str, Any], move_box: str | None = None, move_to: str | None = None
) -> dict[str, list[Any]]:
    return plan(dict(reports), move_box or None, move_to or None)


class FilterModule:
    def filters(self) -> dict[str, Callable[..., Any]]:
        return dict(migration_plan=migration_plan)
