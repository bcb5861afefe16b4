# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A box's last backup, as recorded in its state file.

Private to the col_agents.tx9 collection. tx9_backup records each archive it
publishes (when, where, its SHA-256, and that the stored payload read back to
the bytes written); tx9_info reports it, joined with the box's last
restore drill (drill_record.py). The record lives in the box's state
file (0600), so it goes away with the box.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome

AT_KEY = 'TX9_LAST_BACKUP_AT'
PATH_KEY = 'TX9_LAST_BACKUP_PATH'
SHA256_KEY = 'TX9_LAST_BACKUP_SHA256'
VERIFIED_KEY = 'TX9_LAST_BACKUP_VERIFIED'
TIME_FORMAT = '%Y-%m-%dT%H:%M:%SZ'


def rfc3339(epoch: float) -> str:
    """An RFC 3339 UTC time to the second."""
    return time.strftime(TIME_FORMAT, time.gmtime(epoch))


def record_backup(home: StateHome, box: str, path: str, sha256: str, verified: bool, when: float | None = None) -> None:
    """Write the archive just published into the box's state file. The caller holds the box lock."""
    state = home.read_box(box)
    state.update(
        {
            AT_KEY: rfc3339(time.time() if when is None else when),
            PATH_KEY: path,
            SHA256_KEY: sha256,
            VERIFIED_KEY: 'true' if verified else 'false',
        }
    )
    home.write_box(box, state)


def last_backup(persisted: Mapping[str, str], drill: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The box's last backup from its state file joined with its last restore drill, or None.

    time, path, sha256 and verified come from the state file; drill is the last
    drill record (of whichever archive, or None), and drilled is true only when
    that drill restored this very archive and passed: a backup is worth what
    its last restore proved.
    """
    if not persisted.get(AT_KEY):
        return None
    path = persisted.get(PATH_KEY)
    drilled = bool(drill and drill.get('ok') is True and drill.get('archive') == path)
    return dict(
        time=persisted[AT_KEY],
        path=path,
        sha256=persisted.get(SHA256_KEY),
        verified=persisted.get(VERIFIED_KEY) == 'true',
        drill=drill,
        drilled=drilled,
    )
