# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which archives of a box a backup directory holds, which is newest, and which retention removes.

Private to the col_agents.tx9 collection. An archive of box B is a regular
file named exactly B-YYYYMMDD-HHMMSS.tx9 or B-YYYYMMDD-HHMMSS-N.tx9 (the
names _archive/envelope.py gives); anything else in the directory, another
box's archives included, is never counted and never removed. Order comes from
the name (UTC time, then the same-second attempt), not from file times, which
a copy or a restore of the directory changes.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterable

from ansible_collections.col_agents.tx9.plugins.module_utils._archive.envelope import SUFFIX
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._names import validate_box_name


def archive_name_pattern(box: str) -> re.Pattern[str]:
    """The names of box's archives: groups date, time and the optional same-second attempt."""
    return re.compile(
        rf'^{re.escape(validate_box_name(box))}-(\d{{8}})-(\d{{6}})(?:-([1-9]\d{{0,5}}))?{re.escape(SUFFIX)}\Z'
    )


def order_key(box: str, name: str) -> tuple[str, str, int] | None:
    """(date, time, attempt) of an archive name of box, or None when name is not one."""
    match = archive_name_pattern(box).match(name)
    if match is None:
        return None
    return match.group(1), match.group(2), int(match.group(3) or 1)


def newest_first(box: str, names: Iterable[str]) -> list[str]:
    """The archive names of box among names, newest first."""
    keyed = [(order_key(box, name), name) for name in names]
    return [name for _key, name in sorted((k, n) for k, n in keyed if k is not None)[::-1]]


def expired(box: str, names: Iterable[str], keep_last: int, keep: str | None = None) -> list[str]:
    """The archive names of box that retention removes so that keep_last remain.

    keep (the archive just written and verified) always stays and counts as
    one of the keep_last, even when another name sorts after it (a clock set
    back writes older-looking names): a retention run never removes the one
    archive it has proved.
    """
    if keep_last < 1:
        raise Tx9Error(
            f'keep_last={keep_last!r} is not valid: at least one archive must be kept.',
            'INVALID_ARGUMENT',
            'Give keep_last of 1 or more, or leave it out to keep every archive.',
        )
    ordered = newest_first(box, names)
    if keep in ordered:
        ordered.remove(keep)
        keep_last -= 1
    return ordered[keep_last:]


def list_archives(dest: str, box: str) -> list[str]:
    """Names of the regular files (never symlinks) in dest that are archives of box, newest first."""
    try:
        entries = os.listdir(dest)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return []
        raise Tx9Error(
            f'The backup directory {dest} cannot be listed: {exc.strerror}.',
            'ARCHIVE_WRITE_FAILED',
            f'Fix the permissions of {dest}.',
        ) from exc
    found: list[str] = []
    for name in newest_first(box, entries):
        try:
            mode = os.lstat(os.path.join(dest, name)).st_mode
        except OSError:
            continue
        if stat.S_ISREG(mode):
            found.append(name)
    return found


def remove_expired(dest: str, box: str, keep_last: int, keep: str) -> tuple[list[str], list[str]]:
    """Remove the archives of box in dest beyond the keep_last newest, never keep; (removed, kept) paths."""
    names = list_archives(dest, box)
    doomed = expired(box, names, keep_last, keep=os.path.basename(keep))
    removed: list[str] = []
    for name in doomed:
        path = os.path.join(dest, name)
        try:
            os.unlink(path)
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                continue
            raise Tx9Error(
                f'The old archive {path} cannot be removed: {exc.strerror}.',
                'ARCHIVE_WRITE_FAILED',
                f'Fix the permissions of {dest}; the new archive was kept.',
                details=dict(removed=removed),
            ) from exc
        removed.append(path)
    kept = [os.path.join(dest, name) for name in names if name not in doomed]
    return removed, kept
