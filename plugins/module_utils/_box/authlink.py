# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Saving a box's token-bearing dashboard link to a private file. Private to the col_agents.tx9 collection."""

from __future__ import annotations

import errno
import os
from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._io import refuse_non_directory


def refuse_existing(path: str) -> str:
    """OUTPUT_EXISTS when path exists (as anything, a dangling symlink too); else its absolute form."""
    path = os.path.abspath(os.path.expanduser(path))
    if os.path.lexists(path):
        raise Tx9Error(
            f'{path} already exists; tx9 never overwrites it.',
            'OUTPUT_EXISTS',
            'Remove it first, or give auth_url_file a new path.',
        )
    refuse_non_directory(
        os.path.dirname(path), "the link file's directory", 'auth_url_file', 'Give auth_url_file a path in a directory'
    )
    return path


def write_auth_url_file(path: str, url: str) -> str:
    """Create path (0600, never replacing anything) holding url and a newline."""
    path = refuse_existing(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        if exc.errno == errno.EEXIST:
            raise Tx9Error(
                f'{path} already exists; tx9 never overwrites it.',
                'OUTPUT_EXISTS',
                'Remove it first, or give auth_url_file a new path.',
            )
        raise Tx9Error(
            f'{path} cannot be created: {exc.strerror}.',
            'ARCHIVE_WRITE_FAILED',
            'Fix the permissions of its directory, or give another path.',
        )
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, 'w') as handle:
            handle.write(url + '\n')
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        os.unlink(path)
        raise
    return path


def save_auth_link(boxes: list[dict[str, Any]], name: str, path: str, keep_in_result: bool, check_mode: bool) -> str:
    """Write the one listed box's auth_url to path (check mode: only refuse a taken path); the path.

    The link leaves the listing unless the caller asked for it there too.
    """
    url = boxes[0].get('auth_url') if boxes else None
    if not keep_in_result:
        for box in boxes:
            box.pop('auth_url', None)
    if not url:
        raise Tx9Error(
            f'Box {name} has no published dashboard or no token to link to.',
            'TOKEN_MISSING' if boxes else 'NO_BOX',
            'Check the box with col_agents.tx9.tx9_info, then run again.',
        )
    if check_mode:
        return refuse_existing(path)
    return write_auth_url_file(path, url)
