# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A volume's directory on this host, for the steps that read or rename a box's files there.

Private to the col_agents.tx9 collection. A pre-copied move walks the agent
volume (precopy.py) and builds the box of a staged volume by renames
(stage.py); an import that replaces a superseded copy moves its tree into the
new agent volume the same way (import_beside.py). Each needs the engine on
this host and the volume's directory in this host's filesystem; each names
its own cause and fix when they are not.
"""

from __future__ import annotations

import os
from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._docker import ENGINE_ERRORS, docker_error
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.pipes import engine_on_this_host


def volume_directory(client: Any, name: str, cause: str, fix: str) -> str:
    """The directory of volume name on this host; cause (with fix) when the engine runs elsewhere or the
    directory the engine names is not on this host, DOCKER_ERROR when the engine refuses to inspect it."""
    if not engine_on_this_host(client):
        raise Tx9Error(f'The volume {name} cannot be read from this host: the engine runs elsewhere.', cause, fix)
    try:
        found = str(client.api.inspect_volume(name).get('Mountpoint') or '')
    except ENGINE_ERRORS as exc:
        raise docker_error(f'inspect volume {name}', exc) from exc
    if not os.path.isdir(found):
        raise Tx9Error(f'The directory of volume {name} ({found or "none named"}) is not on this host.', cause, fix)
    return found
