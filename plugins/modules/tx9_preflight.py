#!/usr/bin/python
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


from __future__ import annotations

DOCUMENTATION = r"""
---
module: tx9_preflight
short_description: Check, changing nothing, that a host can receive a tx9 box
version_added: 0.1.0
description:
  - Answers before a box is moved or restored onto the target host, so that a host that cannot
    take it is refused before anything else is touched. The migration role runs it on the
    destination (and, for the archive it relays, on the controller).
  - Each check is returned in RV(checks) (C(name), C(ok), C(detail)). C(engine) the Docker engine
    answers; C(name) no Docker object is labelled for O(name) and no state file carries it; C(image)
    O(image) is present; C(options) the box options are valid on this host (no more CPUs than it
    has); C(space) every filesystem that receives part of O(space) or O(volume_bytes) has room for
    all of what lands on it together (the archive and the payload extracted from it on one disk
    count twice).
  - Without O(name) and O(volume_bytes) only C(space) is checked, and no Docker engine is needed.
  - A failed check fails the task with the cause of the first one (C(DOCKER_UNAVAILABLE),
    C(NAME_EXISTS), C(IMAGE_MISSING), C(INVALID_ARGUMENT), C(NO_SPACE)); the message names every
    failed check with its numbers.
author:
  - col_agents.tx9 contributors (@col-agents)
extends_documentation_fragment:
  - col_agents.tx9.connection
  - col_agents.tx9.box_options
  - col_agents.tx9.box_options.resources
  - col_agents.tx9.box_options.mapping
  - col_agents.tx9.attributes.read_only
options:
  name:
    description:
      - The box that would arrive; checked to be free on this host.
    type: str
  replace_superseded:
    description:
      - The name counts as free when what holds it here is a copy a move left behind (marked superseded),
        which M(col_agents.tx9.tx9_import) with the same option replaces.
    type: bool
    default: false
  space:
    description:
      - Files that would be written on this host, each C(path) (a directory that may not exist yet;
        its closest existing ancestor is measured), C(bytes), and C(what) for the message.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Where the files would be written.
        type: path
        required: true
      bytes:
        description: How many bytes.
        type: int
        required: true
      what:
        description: What the files are, for the message.
        type: str
        default: files
  volume_bytes:
    description:
      - Bytes the box's data would take where the Docker engine keeps its volumes.
    type: int
    default: 0
  fail_on_error:
    description:
      - Fail when a check fails. V(false) only reports.
    type: bool
    default: true
  peer:
    description:
      - A command (argument list, run without a shell) that reaches the box's old host, such as
        C(ssh -o BatchMode=yes -- old-host). It is run with C(true) appended, and whether that
        succeeded is returned in RV(peer). It never fails the task; the migration role relays the
        archive through the controller when the old host cannot be reached directly.
    type: list
    elements: str
seealso:
  - module: col_agents.tx9.tx9_import
"""

EXAMPLES = r"""
- name: Can this host take dev, a 2 GB box, archived here first?
  col_agents.tx9.tx9_preflight:
    name: dev
    image: tx9-box:0.1.0
    space:
      - path: /var/tmp/tx9-incoming
        bytes: 2200000000
        what: the archive
    volume_bytes: 2000000000

- name: The same for a box moving here, with the box options its move carries
  col_agents.tx9.tx9_preflight:
    name: dev
    options: "{{ move.options }}"
    volume_bytes: 2000000000
"""

RETURN = r"""
ok:
  description: Whether every check passed.
  returned: always
  type: bool
  sample: false
failed_checks:
  description: Names of the checks that failed.
  returned: always
  type: list
  elements: str
  sample: [space]
checks:
  description: Every check, in order, with C(name), C(ok) and C(detail).
  returned: always
  type: list
  elements: dict
  sample:
    - name: space
      ok: false
      detail: "not enough room: the archive (20971520 bytes at /tmp/in): 20971520 bytes needed, 1048576 free"
peer:
  description: Whether O(peer) reached the old host (C(reached)), and if not, why (C(detail), its last error line).
  returned: when O(peer) is given
  type: dict
  sample: {"reached": false, "detail": "ssh: connect to host 10.0.0.5 port 22: Connection refused"}
"""

from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
from ansible_collections.col_agents.tx9.plugins.module_utils._box_option_spec import BOX_OPTIONS
from ansible_collections.col_agents.tx9.plugins.module_utils._box_options import (
    OPTIONS_ARG,
    given_options,
    with_box_options,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._module import docker_client, new_module, run
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.preflight import Preflight


def check(module: AnsibleModule) -> dict[str, Any]:
    params = with_box_options(module.params, given_options())
    result: dict[str, Any] = Preflight(lambda: docker_client(module), StateHome(params['state_home']), params).run()
    return result


def main() -> None:
    spec = dict(
        name=dict(type='str'),
        space=dict(
            type='list',
            elements='dict',
            default=[],
            options=dict(
                path=dict(type='path', required=True),
                bytes=dict(type='int', required=True),
                what=dict(type='str', default='files'),
            ),
        ),
        replace_superseded=dict(type='bool', default=False),
        volume_bytes=dict(type='int', default=0),
        fail_on_error=dict(type='bool', default=True),
        peer=dict(type='list', elements='str'),
        state_home=dict(type='path'),
    )
    spec.update(BOX_OPTIONS)
    spec.update(OPTIONS_ARG)
    module = new_module(spec, supports_check_mode=True)
    run(module, lambda: check(module))


if __name__ == '__main__':
    main()
