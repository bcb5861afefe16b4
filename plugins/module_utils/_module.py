# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Ansible face shared by every tx9 module. Private to the col_agents.tx9 collection.

Engine code raises Tx9Error; this turns it into a failed result carrying
msg, cause and fix.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import sys

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.col_agents.tx9.plugins.module_utils._docker import (
    CONNECTION_ARGS, DOCKER_IMPORT_ERROR, HAS_DOCKER, connect, connection_from_params)
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error


def new_module(argument_spec, **kwargs):
    """An AnsibleModule with the shared Docker connection options added."""
    spec = dict(CONNECTION_ARGS)
    spec.update(argument_spec)
    return AnsibleModule(argument_spec=spec, **kwargs)


def docker_client(module):
    """A connected Docker client, or a failed result saying why there is none."""
    if not HAS_DOCKER:
        module.fail_json(msg=missing_required_lib('docker'), cause='MISSING_LIBRARY',
                         fix='Install the Docker SDK for Python (pip install docker) for %s, or run '
                             'the col_agents.tx9.tx9_host role.' % sys.executable,
                         exception=DOCKER_IMPORT_ERROR)
    return connect(connection_from_params(module.params))


def run(module, action):
    """Call action(); exit with its result dict, or fail with the Tx9Error's cause."""
    try:
        result = action()
    except Tx9Error as err:
        module.fail_json(**err.as_result())
    module.exit_json(**result)
