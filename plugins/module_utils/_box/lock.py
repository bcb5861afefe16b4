# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The per-box lock: one operation per box, failing fast, never queueing.

Private to the col_agents.tx9 collection.
"""


import errno
import fcntl
import os

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._box.names import validate_box_name


class BoxLock:
    """flock(LOCK_EX | LOCK_NB) on <home>/locks/<box>.lock, held until release."""

    def __init__(self, home, box):
        self.box = validate_box_name(box)
        self.path = os.path.join(home.ensure().locks_dir, '%s.lock' % box)
        self._fd = None

    def acquire(self):
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except (IOError, OSError) as exc:
            os.close(fd)
            if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise Tx9Error(
                    'Another tx9 operation is running on box %s.' % self.box, 'BOX_BUSY',
                    'Wait for the other operation on %s to finish, then run this again.' % self.box)
            raise
        self._fd = fd
        return self

    def release(self):
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc_info):
        self.release()
        return False
