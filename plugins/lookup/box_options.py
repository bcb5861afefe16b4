# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The box options given as variables of their own names, for create_box (plugin_utils/_create_options.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
name: box_options
short_description: The box options given as variables of their own names, as one mapping
version_added: 0.2.0
description:
  - Returns the box options of M(col_agents.tx9.tx9_box) that are set as variables of the same names, such
    as C(-e agent_memory=3g -e agent_cpus=2), as one mapping for its O(col_agents.tx9.tx9_box#module:options).
    The create_box playbook fills the C(tx9_box_options) of the P(col_agents.tx9.tx9_box#role) role with it.
  - The options are every box option a person gives a new box (limits, budgets, executor options, the
    egress policy); the image, the readiness wait and the name have variables of the role
    (C(tx9_box_image), C(tx9_box_wait_timeout), C(box_name)). A variable that is not set, or null, is
    left out, so the box keeps what it has.
  - Each extra variable (C(-e)) that looks like a box option but is none, such as C(agent_memroy) or
    C(memory), is warned about, naming the options it was likely meant to be; it changes nothing.
  - Takes no terms.
author:
  - col_agents.tx9 contributors (@col-agents)
"""

EXAMPLES = r"""
- name: Create a box with the limits given on the command line (-e agent_memory=3g -e agent_cpus=2)
  ansible.builtin.include_role:
    name: col_agents.tx9.tx9_box
  vars:
    tx9_box_name: dev
    tx9_box_options: "{{ lookup('col_agents.tx9.box_options') }}"
"""

RETURN = r"""
_raw:
  description: One item, the mapping of box option names to the values of the variables of those names.
  type: list
  elements: dict
"""

from collections.abc import Iterable
from typing import Any

from ansible.errors import AnsibleLookupError
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.lookup import LookupBase
from ansible.utils.display import Display
from ansible.utils.vars import load_extra_vars

from ansible_collections.col_agents.tx9.plugins.plugin_utils._create_options import lookalikes, options_from, warning

display = Display()


def extra_var_names(loader: DataLoader | None) -> Iterable[str]:
    """The names of the play's extra variables (-e), as ansible-playbook read them."""
    return list(load_extra_vars(loader)) if loader is not None else []


class LookupModule(LookupBase):
    def run(self, terms: list[Any], variables: dict[str, Any] | None = None, **kwargs: Any) -> list[dict[str, Any]]:
        if terms:
            raise AnsibleLookupError('col_agents.tx9.box_options takes no terms')
        for name, meant in lookalikes(extra_var_names(self._loader)).items():
            display.warning(warning(name, meant))
        given = options_from(variables or {})
        return [{name: self._templar.template(value) for name, value in given.items()}]
