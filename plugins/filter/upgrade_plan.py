# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The upgrade role's plan: which boxes of a host move to the target image (plugins/plugin_utils/_plans/upgrade.py)."""

from collections.abc import Callable
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.col_agents.tx9.plugins.plugin_utils._plans.migration import PlanError
from ansible_collections.col_agents.tx9.plugins.plugin_utils._plans.upgrade import plan

DOCUMENTATION = r"""
name: upgrade_plan
short_description: Which tx9 boxes of a host move to the target image, and which are left alone
version_added: 0.2.0
description:
  - The plan of the C(col_agents.tx9.tx9_upgrade) role for one host, from the host's boxes as
    M(col_agents.tx9.tx9_info) lists them.
  - A box whose containers all run O(target_id) is current. A box that is neither running nor
    stopped is left alone. A box whose owner chose an image (its inventory entry names an image
    other than O(target), or its desired image is neither a C(tx9-box:<version>) tag nor an image
    ID) is left alone unless O(force).
  - Returns C(upgrades) (each with C(box), C(state), C(target), C(target_id), C(from_image),
    C(from_image_id), C(from_version) and C(pinned)) and C(skipped) (each with C(box), C(reason)
    and C(current)).
author:
  - col_agents.tx9 contributors (@col-agents)
options:
  _input:
    description: The host's boxes, RV(col_agents.tx9.tx9_info#module:boxes).
    type: list
    elements: dict
    required: true
  target:
    description: The image reference the boxes are upgraded to.
    type: str
    required: true
  target_id:
    description: The ID of O(target) on the host's engine.
    type: str
    required: true
  wanted:
    description: The boxes to consider; empty considers every box of the host.
    type: list
    elements: str
  declared:
    description: The host's C(tx9_boxes) entries (a name, or a dict with C(name) and box options such as C(image)).
    type: list
    elements: raw
  force:
    description: Upgrade boxes whose owner chose an image too.
    type: bool
    default: false
  host:
    description: The host's name, for the reasons and errors.
    type: str
"""

EXAMPLES = r"""
- name: Plan the upgrade of this host's boxes
  ansible.builtin.set_fact:
    plan: "{{ info.boxes | col_agents.tx9.upgrade_plan('tx9-box:0.1.0', image.image_id) }}"
"""

RETURN = r"""
_value:
  description: C(upgrades) and C(skipped).
  type: dict
"""


def upgrade_plan(
    boxes: list[dict[str, Any]] | None,
    target: str,
    target_id: str,
    wanted: list[str] | None = None,
    declared: list[Any] | None = None,
    force: bool = False,
    host: str | None = None,
) -> dict[str, list[dict[str, Any]]]:
    try:
        return plan(boxes, target, target_id, wanted or [], declared or [], bool(force), host or 'this host')
    except PlanError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self) -> dict[str, Callable[..., Any]]:
        return dict(upgrade_plan=upgrade_plan)
