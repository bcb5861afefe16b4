# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Ansible face shared by every tx9 module. Private to the col_agents.tx9 collection.

Engine code raises Tx9Error; this turns it into a failed result carrying
msg, cause and fix.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.col_agents.tx9.plugins.module_utils._docker import (
    CONNECTION_ARGS,
    DOCKER_IMPORT_ERROR,
    HAS_DOCKER,
    connect,
    connection_from_params,
    docker_error,
    is_engine_error,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error


def new_module(argument_spec: dict[str, Any], **kwargs: Any) -> AnsibleModule:
    """An AnsibleModule with the shared Docker connection options added."""
    spec = dict(CONNECTION_ARGS)
    spec.update(argument_spec)
    return AnsibleModule(argument_spec=spec, **kwargs)


def missing_library(module: AnsibleModule, library: str, import_error: str | None) -> None:
    """Fail because a Python library is missing on the target, saying how to install it."""
    module.fail_json(
        msg=missing_required_lib(library),
        cause='MISSING_LIBRARY',
        fix=f'Install {library} for {sys.executable} (pip install {library}), or run the col_agents.tx9.tx9_host role.',
        exception=import_error,
    )


def docker_client(module: AnsibleModule) -> Any:
    """A connected Docker client, or a failed result saying why there is none."""
    if not HAS_DOCKER:
        missing_library(module, 'docker', DOCKER_IMPORT_ERROR)
    return connect(connection_from_params(module.params))


def secret_from_env(module: AnsibleModule, value: str | None, variable: str) -> str | None:
    """value, else the target's environment variable; either way hidden from all output."""
    secret = value or os.environ.get(variable)
    if secret:
        module.no_log_values.add(secret)
    return secret


def run(module: AnsibleModule, action: Callable[[], dict[str, Any]]) -> None:
    """Call action(); exit with its result dict, or fail with the Tx9Error's cause.

    fail_json is called outside the except block, so a refusal carries its
    cause and fix, not a Python traceback of our own error, even with -vvv.
    """
    failure = None
    try:
        result = action()
    except Tx9Error as err:
        failure = err
    except Exception as exc:
        if not is_engine_error(exc):
            raise  # a bug: its traceback, not a cause
        # an engine failure no step anticipated: still a cause and a fix
        failure = docker_error('complete the operation', exc)
    if failure is not None:
        module.fail_json(**failure.as_result())
    # Warnings go through warn(): exit_json's own warnings argument is going away.
    for warning in result.pop('warnings', None) or []:
        module.warn(str(warning))
    module.exit_json(**result)
