# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The record of a box's last restore drill: <state home>/drills/<box>.json (0600).

Private to the col_agents.tx9 collection. tx9_drill writes it when a drill
ends, passed or failed; read_drill() is the one reader. A backup whose path is
not the record's "archive" has not been drilled.

Keys: box, time (RFC 3339, UTC, when the drill started), archive (its path),
payload_sha256, ok, duration (seconds), throwaway (the box it was imported
as), failed_checks, and cause and msg when it failed before the health checks.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Mapping
from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._io import ensure_dir, write_atomic
from ansible_collections.col_agents.tx9.plugins.module_utils._names import names_in, validate_box_name

DRILLS_DIR = 'drills'
RECORD_SUFFIX = '.json'
# A drill under way: which throwaway box it imports, which process, since when.
RUNNING_SUFFIX = '.running'


def drills_dir(home: StateHome) -> str:
    return os.path.join(home.path, DRILLS_DIR)


def drilled_names(home: StateHome) -> list[str]:
    """Names of boxes that have a drill record (invalid names skipped)."""
    return names_in(drills_dir(home), RECORD_SUFFIX)


def record_path(home: StateHome, box: str, suffix: str = RECORD_SUFFIX) -> str:
    return os.path.join(drills_dir(home), validate_box_name(box) + suffix)


def read_drill(home: StateHome, box: str, suffix: str = RECORD_SUFFIX) -> dict[str, Any] | None:
    """The last drill of box as a dict, or None when it has never been drilled (or its record is unreadable)."""
    try:
        with open(record_path(home, box, suffix)) as handle:
            record = json.load(handle)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise Tx9Error(
            f'The drill record of box {box} cannot be read: {exc.strerror}.',
            'STATE_HOME',
            f'Check the permissions of {record_path(home, box, suffix)}.',
        )
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def write_drill(home: StateHome, box: str, record: Mapping[str, Any], suffix: str = RECORD_SUFFIX) -> None:
    """Save record for box, atomically, as 0600 in a 0700 directory."""
    ensure_dir(home.path)
    ensure_dir(drills_dir(home))
    write_atomic(record_path(home, box, suffix), json.dumps(record, sort_keys=True, indent=2) + '\n')


def remove_drill(home: StateHome, box: str, suffix: str = RECORD_SUFFIX) -> None:
    try:
        os.unlink(record_path(home, box, suffix))
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            raise
