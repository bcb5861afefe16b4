#!/usr/bin/python
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


from __future__ import annotations

DOCUMENTATION = r"""
---
module: tx9_prune
short_description: Remove unused tx9 images and stale tx9 state files
version_added: 0.1.0
description:
  - Removes C(tx9-box:*) images that no container uses, except the collection's current image.
  - Removes state files, lock files and drill records of boxes that have no object left in the daemon.
    A box's files are removed only while its box lock is held by this module (taken without waiting),
    so a box another operation is working on is skipped, and a box with any labelled object left keeps
    its files.
  - Removes leases (C(leases/<box>.json) in the state home) that expired, which a run killed on another
    controller leaves; a live lease, and a file that is not a lease tx9 wrote, stay.
author:
  - col_agents.tx9 contributors (@col-agents)
extends_documentation_fragment:
  - col_agents.tx9.connection
attributes:
  check_mode:
    support: full
    description: Lists what would be removed and removes nothing.
  diff_mode:
    support: none
    description: RV(images), RV(state_files), RV(lock_files), RV(drill_records) and RV(leases) list what is removed.
  idempotent:
    support: full
    description: A second run finds nothing left to remove.
options:
  images:
    description:
      - Remove unused C(tx9-box:*) images.
    type: bool
    default: true
  state_files:
    description:
      - Remove state files, lock files (C(locks/<box>.lock) in the state home) and drill records
        (C(drills/<box>.json)) of boxes that no longer exist, and leases that expired.
    type: bool
    default: true
  keep_images:
    description:
      - Image tags never removed, besides the collection's current one.
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Remove what no box uses any more
  col_agents.tx9.tx9_prune:

- name: See what would be removed
  col_agents.tx9.tx9_prune:
  check_mode: true
  register: would_prune
"""

RETURN = r"""
images:
  description: Image tags (or IDs of untagged tx9 images) removed, or that would be in check mode.
  returned: always
  type: list
  elements: str
  sample: [tx9-box:0.0.9]
state_files:
  description: Box names whose state files were removed (or would be).
  returned: always
  type: list
  elements: str
  sample: [old-box]
lock_files:
  description:
    - Box names whose lock files were removed (or would be, in check mode). A box that does not exist
      keeps no lock file; one is left by a run that was killed, or by a lock taken for a name that
      never became a box.
  returned: always
  type: list
  elements: str
  sample: [old-box, typo-box]
drill_records:
  description: Box names whose drill records (a box removed by hand leaves its last one) were removed (or would be).
  returned: always
  type: list
  elements: str
  sample: [old-box]
leases:
  description: Box names whose expired leases were removed (or would be).
  returned: always
  type: list
  elements: str
  sample: [moved-box]
"""

from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
from ansible_collections.col_agents.tx9.plugins.module_utils._image.build import remove_images, unused_box_images
from ansible_collections.col_agents.tx9.plugins.module_utils._lease import Leases
from ansible_collections.col_agents.tx9.plugins.module_utils._module import docker_client, new_module, run
from ansible_collections.col_agents.tx9.plugins.module_utils._ops.prune import prune_box_files
from ansible_collections.col_agents.tx9.plugins.module_utils._version import DEFAULT_IMAGE


def prune(module: AnsibleModule) -> dict[str, Any]:
    client = docker_client(module)
    home = StateHome(module.params['state_home'])
    result: dict[str, Any] = dict(changed=False, images=[], state_files=[], lock_files=[], drill_records=[], leases=[])
    if module.params['images']:
        unused = unused_box_images(client, keep_tags=[DEFAULT_IMAGE] + module.params['keep_images'])
        result['images'] = [tags[0] if tags else image_id for image_id, tags in unused]
        if unused and not module.check_mode:
            remove_images(client, unused)
    if module.params['state_files']:
        result['state_files'], result['lock_files'], result['drill_records'] = prune_box_files(
            client, home, module.check_mode
        )
        result['leases'] = Leases(home.path).prune_expired(module.check_mode)
    result['changed'] = any(result[key] for key in ('images', 'state_files', 'lock_files', 'drill_records', 'leases'))
    return result


def main() -> None:
    module = new_module(
        dict(
            images=dict(type='bool', default=True),
            state_files=dict(type='bool', default=True),
            keep_images=dict(type='list', elements='str', default=[]),
            state_home=dict(type='path'),
        ),
        supports_check_mode=True,
    )
    run(module, lambda: prune(module))


if __name__ == '__main__':
    main()
