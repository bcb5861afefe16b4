# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The per-box lock: one operation per box, failing fast, never queueing.

Private to the col_agents.tx9 collection.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import Iterator
from types import TracebackType
from typing import Any, Protocol

from ansible_collections.col_agents.tx9.plugins.module_utils._docker import box_has_objects, is_engine_error
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._names import validate_box_name

# How often acquire opens the lock file again when the file it locked was removed meanwhile.
REOPENS = 5


class Home(Protocol):
    """What the lock needs of the state home (_box/state.py's StateHome)."""

    def ensure(self) -> Home:
        """The state home, made when missing."""

    def lock_file(self, box: str) -> str:
        """The path of the box's lock file."""

    def box_file(self, box: str) -> str:
        """The path of the box's state file."""


class BoxLock:
    """flock(LOCK_EX | LOCK_NB) on <home>/locks/<box>.lock, held until release.

    A lock file carries nothing but its flock, so the holder may remove it
    (discard) when the box no longer exists. Whoever opened the file before it
    went and locks it after finds it no longer at its path, and opens the path
    again: two holders never hold two different files of one box.
    """

    def __init__(self, home: Home, box: str, create: bool = True) -> None:
        self.box = validate_box_name(box)
        self.path = home.ensure().lock_file(box)
        self.create = create
        self._fd: int | None = None

    def acquire(self) -> BoxLock:
        """Take the lock or fail with BOX_BUSY; with create=False, OSError(ENOENT) when there is no lock file."""
        for _attempt in range(REOPENS):
            fd = self._open()
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

    def _open(self) -> int:
        try:
            return os.open(self.path, os.O_RDWR | (os.O_CREAT if self.create else 0), 0o600)
        except OSError as exc:
            if exc.errno == errno.ENOENT and not self.create:
                raise
            raise Tx9Error(
                f'The lock file of box {self.box} cannot be opened ({self.path}): {exc.strerror}. Nothing was changed.',
                'STATE_HOME',
                f'Make {os.path.dirname(self.path)} writable (it may be on a read-only filesystem), or point '
                'TX9_HOME elsewhere.',
            ) from exc

    def _still_at_path(self, fd: int) -> bool:
        """Whether the file locked through fd is still the one at the lock's path."""
        try:
            linked = os.stat(self.path)
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                return False
            raise
        locked = os.fstat(fd)
        return (locked.st_dev, locked.st_ino) == (linked.st_dev, linked.st_ino)

    def busy(self) -> Tx9Error:
        return Tx9Error(
            f'Another tx9 operation is running on box {self.box}.',
            'BOX_BUSY',
            f'Wait for the other operation on {self.box} to finish, then run this again.',
        )

    @property
    def held(self) -> bool:
        return self._fd is not None

    def discard(self) -> None:
        """Remove the lock file while the lock is held, then release it."""
        if self._fd is None:
            raise RuntimeError('discard() needs the lock held')
        try:
            os.unlink(self.path)
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                raise
        self.release()

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> BoxLock:
        return self.acquire()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.release()


def box_gone(client: Any, home: Home, box: str) -> bool:
    """Whether box has neither a labelled Docker object nor a state file."""
    return not os.path.exists(home.box_file(box)) and not box_has_objects(client, box)


def discard_if_gone(lock: BoxLock, client: Any, home: Home, box: str) -> bool:
    """Remove the held lock's file when the box does not exist; True when removed.

    Best effort: when the engine cannot be asked, the file stays (tx9_prune removes it later).
    """
    if client is None:  # no engine was asked for (retention alone): whether the box exists is unknown
        return False
    try:
        if lock.held and box_gone(client, home, box):
            lock.discard()
            return True
    except OSError:
        pass
    except Exception as exc:
        if not is_engine_error(exc):
            raise
    return False


@contextlib.contextmanager
def box_lock(client: Any, home: Home, box: str, discard_after: bool = False) -> Iterator[BoxLock]:
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
