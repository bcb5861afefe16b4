# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the state home keeps of boxes that no longer exist: state files, lock files, drill records, and
leases that expired.

Private to the col_agents.tx9 collection. A box exists while any Docker object
carries its label or it has a state file. A lock file is removed only by the
holder of its lock (BoxLock.discard), so an operation that holds it is never
disturbed.
"""

from __future__ import annotations

import errno
import os
from typing import TYPE_CHECKING, Any

from ansible_collections.col_agents.tx9.plugins.module_utils._box.drill_record import (
    drilled_names,
    record_path,
    remove_drill,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._docker import box_has_objects, box_names_from_labels
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._lock import BoxLock

if TYPE_CHECKING:
    from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome


def prune_box_files(client: Any, home: StateHome, check_mode: bool) -> tuple[list[str], list[str], list[str]]:
    """(boxes whose state files, lock files, drill records) were removed, or would be in check mode.

    A box with a labelled object keeps all three; one whose lock is held is skipped.
    """
    state_files: list[str] = []
    lock_files: list[str] = []
    drills: list[str] = []
    live = set(box_names_from_labels(client))
    for box in sorted((set(home.box_names()) | set(home.lock_names()) | set(drilled_names(home))) - live):
        had_lock = os.path.exists(home.lock_file(box))
        try:
            lock = BoxLock(home, box, create=not had_lock or not check_mode).acquire()
        except Tx9Error as err:
            if err.cause != 'BOX_BUSY':
                raise
            continue
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                raise
            continue  # removed meanwhile by its holder
        try:
            # Look again under the lock: a create may have started meanwhile.
            if box_has_objects(client, box):
                continue
            if os.path.exists(home.box_file(box)):
                if not check_mode:
                    home.delete_box(box)
                state_files.append(box)
            if os.path.exists(record_path(home, box)):
                if not check_mode:
                    remove_drill(home, box)
                drills.append(box)
            if had_lock:
                lock_files.append(box)
            if not check_mode or not had_lock:
                lock.discard()
        finally:
            lock.release()
    return state_files, lock_files, drills
