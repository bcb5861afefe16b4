# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The per-box lock: one operation per box, failing fast, never queueing.

Private to the col_agents.tx9 collection.
"""

import contextlib
import errno
import fcntl
import os

from ansible_collections.col_agents.tx9.plugins.module_utils._docker import box_has_objects
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._names import validate_box_name

# How often acquire opens the lock file again when the file it locked was removed meanwhile.
REOPENS = 5


class BoxLock:
    """flock(LOCK_EX | LOCK_NB) on <home>/locks/<box>.lock, held until release.

    A lock file carries nothing but its flock, so the holder may remove it
    (discard) when the box no longer exists. Whoever opened the file before it
    went and locks it after finds it no longer at its path, and opens the path
    again: two holders never hold two different files of one box.
    """

    def __init__(self, home, box, create=True):
        self.box = validate_box_name(box)
        self.path = home.ensure().lock_file(box)
        self.create = create
        self._fd = None

    def acquire(self):
        """Take the lock or fail with BOX_BUSY; with create=False, OSError(ENOENT) when there is no lock file."""
        for _attempt in range(REOPENS):
            fd = os.open(self.path, os.O_RDWR | (os.O_CREAT if self.create else 0), 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise self.busy()
                raise
            if self._still_at_path(fd):
                self._fd = fd
                return self
            os.close(fd)
            if not self.create:
                raise OSError(errno.ENOENT, 'The lock file was removed', self.path)
        raise self.busy()

    def _still_at_path(self, fd):
        """Whether the file locked through fd is still the one at the lock's path."""
        try:
            linked = os.stat(self.path)
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                return False
            raise
        locked = os.fstat(fd)
        return (locked.st_dev, locked.st_ino) == (linked.st_dev, linked.st_ino)

    def busy(self):
        return Tx9Error(
            f'Another tx9 operation is running on box {self.box}.',
            'BOX_BUSY',
            f'Wait for the other operation on {self.box} to finish, then run this again.',
        )

    @property
    def held(self):
        return self._fd is not None

    def discard(self):
        """Remove the lock file while the lock is held, then release it."""
        if self._fd is None:
            raise RuntimeError('discard() needs the lock held')
        try:
            os.unlink(self.path)
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                raise
        self.release()

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


def box_gone(client, home, box):
    """Whether box has neither a labelled Docker object nor a state file."""
    return not os.path.exists(home.box_file(box)) and not box_has_objects(client, box)


def discard_if_gone(lock, client, home, box):
    """Remove the held lock's file when the box does not exist; True when removed.

    Best effort: when the engine cannot be asked, the file stays (tx9_prune removes it later).
    """
    try:
        if lock.held and box_gone(client, home, box):
            lock.discard()
            return True
    except Exception:
        pass
    return False


@contextlib.contextmanager
def box_lock(client, home, box, discard_after=False):
    """The box lock for a with block; its file goes when the box does not exist after a failure
    (and after success too with discard_after)."""
    lock = BoxLock(home, box).acquire()
    try:
        yield lock
    except BaseException:
        discard_if_gone(lock, client, home, box)
        raise
    else:
        if discard_after:
            discard_if_gone(lock, client, home, box)
    finally:
        lock.release()
