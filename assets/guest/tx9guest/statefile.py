# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The state record of a supervised process, in the runtime directory.

A log capture writes one for itself and its child (`tx9-logs capture
--state-file`), and the workload loop one for itself; hb reads them to find
those processes again from any invocation. A process is named by its PID and
its start time, so a reused PID is never mistaken for it.

Keys: source, pid, pid_start, fingerprint, state (starting, running,
restarting, gave-up, stopped, exited), child_pid, child_start,
child_started_at, restarts, fast_failures, last_exit, last_exit_at,
next_start_at, started_at, detail.
"""

from __future__ import annotations

import json
import os
from typing import Any

from .files import write_atomic
from .pids import start_ticks
from .settings import read_text


def own_record(**fields: Any) -> dict[str, Any]:
    """A record naming this process, with the given fields."""
    return dict({'pid': os.getpid(), 'pid_start': start_ticks(os.getpid())}, **fields)


def write_state(path: str, record: dict[str, Any], mode: int = 0o600) -> None:
    """Replace the record at path in one rename, so a reader never sees half of it."""
    write_atomic(path, json.dumps(record), mode)


def read_state(path: str) -> dict[str, Any] | None:
    """The record at path, or None when there is none or it is not a JSON object."""
    text = read_text(path)
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
