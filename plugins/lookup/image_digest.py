# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tx9.assets label a box image built from the controller's assets carries (plugins/module_utils/_image)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
name: image_digest
short_description: The assets label a box image built from this collection's assets carries on a host
version_added: 0.2.0
description:
  - Returns the value of the C(tx9.assets) label that M(col_agents.tx9.tx9_image) gives an image built
    from the assets of this collection on a host whose CA bundle has the given SHA-256.
  - An image on that host carrying this label is current; M(col_agents.tx9.tx9_image) would not build it again.
    The box role plans its image with it from what the host role's probe found, with no task of its own.
  - Takes no terms.
author:
  - col_agents.tx9 contributors (@col-agents)
options:
  ca_sha256:
    description:
      - SHA-256 of the CA bundle the build trusts on that host; of no bytes when it trusts none.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Say whether the box image on this host is current
  ansible.builtin.debug:
    msg: "{{ probe.image_assets == lookup('col_agents.tx9.image_digest', ca_sha256=probe.ca_sha256) }}"
  vars:
    probe:
      image_assets: 5962888484e8047ba337d4dee7a78dc9a4d0019c953886adb4a77e078932b460
      ca_sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
"""

RETURN = r"""
_raw:
  description: One item, the label's value (64 hexadecimal digits).
  type: list
  elements: str
"""

import re
from typing import Any

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.col_agents.tx9.plugins.module_utils._image.context import image_digest
from ansible_collections.col_agents.tx9.plugins.plugin_utils._assets import controller_assets_digest

SHA256 = re.compile(r'[0-9a-f]{64}\Z')


class LookupModule(LookupBase):
    def run(self, terms: list[Any], variables: dict[str, Any] | None = None, **kwargs: Any) -> list[str]:
        if terms:
            raise AnsibleLookupError('col_agents.tx9.image_digest takes no terms')
        unknown = sorted(set(kwargs) - {'ca_sha256'})
        if unknown:
            raise AnsibleLookupError(f'col_agents.tx9.image_digest takes only ca_sha256, not {", ".join(unknown)}')
        ca_sha256 = str(kwargs.get('ca_sha256', ''))
        if not SHA256.match(ca_sha256):
            raise AnsibleLookupError(
                f'col_agents.tx9.image_digest: ca_sha256 must be 64 hexadecimal digits, not {ca_sha256[:80]!r}.'
            )
        try:
            assets = controller_assets_digest()
        except (OSError, ValueError) as exc:
            raise AnsibleLookupError(
                f"col_agents.tx9.image_digest: the collection's image assets are not usable ({exc}); "
                'reinstall the col_agents.tx9 collection.'
            ) from exc
        return [image_digest(assets, ca_sha256)]
