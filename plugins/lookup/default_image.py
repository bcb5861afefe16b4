# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's box image, for the roles' defaults: one fact, kept in module_utils/_version.py."""

from __future__ import annotations

DOCUMENTATION = r"""
---
name: default_image
short_description: The collection's box image reference, tx9-box:<collection version>
version_added: 0.1.0
description:
  - Returns the image reference the modules use when no O(col_agents.tx9.tx9_box#module:image) is given,
    C(tx9-box:<collection version>). The roles' defaults take their image from it, so a new release of
    the collection moves them all at once.
  - Takes no terms.
author:
  - col_agents.tx9 contributors (@col-agents)
"""

EXAMPLES = r"""
- name: Say which image this collection builds
  ansible.builtin.debug:
    msg: "{{ lookup('col_agents.tx9.default_image') }}"
"""

RETURN = r"""
_raw:
  description: One item, the image reference.
  type: list
  elements: str
"""

from typing import Any

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.col_agents.tx9.plugins.module_utils._version import DEFAULT_IMAGE


class LookupModule(LookupBase):
    def run(self, terms: list[Any], variables: dict[str, Any] | None = None, **kwargs: Any) -> list[str]:
        if terms:
            raise AnsibleLookupError('col_agents.tx9.default_image takes no terms')
        return [DEFAULT_IMAGE]
