# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The marker of an import that started and has not finished. Private to the col_agents.tx9 collection."""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING

from ansible_collections.col_agents.tx9.plugins.module_utils._io import write_atomic

if TYPE_CHECKING:
    from ansible_collections.col_agents.tx9.plugins.module_utils._archive.envelope import Archive
    from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome


# A marker is a few hundred bytes; more is not one of ours.
READ_LIMIT = 64 * 1024


class ImportMarker:
    """<home>/imports/<box>.json: an import of box has started and not finished.

    Written before the import creates anything and removed when it returns;
    one left behind by a killed run tells the next import of that name that
    the objects labelled for the box are the remains of an unfinished import.
    """

    def __init__(self, home: StateHome, box: str) -> None:
        self.path = os.path.join(home.path, 'imports', f'{box}.json')

    def exists(self) -> bool:
        return os.path.exists(self.path)

    def archive(self) -> str | None:
        """The archive (or a promotion's stage record) the unfinished import named; None when unreadable."""
        try:
            with open(self.path, encoding='utf-8') as handle:
                found = json.loads(handle.read(READ_LIMIT))
        except (OSError, ValueError):
            return None
        return found.get('archive') if isinstance(found, dict) and isinstance(found.get('archive'), str) else None

    def write(self, archive: Archive) -> None:
        directory = os.path.dirname(self.path)
        if not os.path.isdir(directory):
            os.makedirs(directory, 0o700)
        write_atomic(
            self.path,
            json.dumps(
                dict(
                    archive=archive.path,
                    payload_sha256=archive.payload_sha256,
                    started=int(time.time()),
                    pid=os.getpid(),
                )
            )
            + '\n',
        )

    def remove(self) -> None:
        try:
            os.unlink(self.path)
        except OSError:
            pass
