# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Named pipes between this process and a helper container on an engine that runs on this host.

Private to the col_agents.tx9 collection. A backup reads the tar of /data,
and an import writes its restore stream, through Docker's exec and attach
streams, which the engine copies chunk by chunk (several times slower than
the disk here for a box's gigabytes). When the engine listens on a local
socket, the bytes go through a named pipe bound into the helper container
instead, and the kernel carries them. The pipe is made in a private (0700)
directory of this process and removed with it; inside the container it is
PIPE_PATH. An engine that cannot bind it (it runs elsewhere, behind a
forwarded socket) refuses the container, and a container that cannot open
it (a security policy) exits before opening it (PipeNotOpened); either way
the caller uses the streams.
"""

from __future__ import annotations

import errno
import fcntl
import os
import select
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._docker import is_engine_error
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._io import remove_left_by_dead_processes

PIPE_PATH = '/tx9-pipe'
# A pipe's directory: this prefix, the process's ID, a random part.
PIPE_DIR_PREFIX = '.tx9-pipe-'
CHUNK_SIZE = 1024 * 1024
# How often the helper container is asked whether it still runs while the pipe is quiet.
POLL_SECONDS = 1.0


def engine_on_this_host(client: Any) -> bool:
    """Whether the SDK talks to the engine over a unix socket (a pipe made here can be bound)."""
    return str(getattr(getattr(client, 'api', None), 'base_url', '')).startswith('http+docker://')


def pipe_mount(pipe: NamedPipe) -> dict[str, Any]:
    """The Mounts entry that binds pipe into a container (a missing source is refused, never created)."""
    return dict(Type='bind', Source=pipe.path, Target=PIPE_PATH, ReadOnly=False)


def container_alive(api: Any, container: str) -> Callable[[], bool]:
    """A callable: whether container is still running (False once it exited or is gone)."""

    def alive() -> bool:
        try:
            return bool(api.inspect_container(container)['State'].get('Running'))
        except Exception as exc:
            if not is_engine_error(exc):
                raise
            return False

    return alive


class PipeNotOpened(Exception):
    """The helper container ended without opening its end of the pipe (it could not, or failed first)."""


def _quiet_for_too_long(waited: float, timeout: float, what: str) -> None:
    if waited >= timeout:
        raise Tx9Error(
            f'The helper container stopped {what} for {int(timeout)} seconds.',
            'DOCKER_ERROR',
            "Check the host's disk and load and the engine, then run again; nothing was kept.",
        )


def remove_stale_pipes(parent: str) -> None:
    """Remove the pipe directories under parent whose process is gone (a killed run's)."""
    remove_left_by_dead_processes(parent, PIPE_DIR_PREFIX)


class NamedPipe:
    """A FIFO in a private directory of its own (under parent, named for this process), removed by close()."""

    def __init__(self, parent: str | None = None) -> None:
        """OSError when parent's filesystem holds no pipes."""
        self.directory = tempfile.mkdtemp(prefix=f'{PIPE_DIR_PREFIX}{os.getpid()}-', dir=parent)
        self.path = os.path.join(self.directory, 'pipe')
        try:
            os.mkfifo(self.path, 0o600)
        except OSError:
            shutil.rmtree(self.directory, ignore_errors=True)
            raise
        # Reached only through the 0700 directory; the container's user may be mapped to another uid.
        os.chmod(self.path, 0o666)
        self.fd: int | None = None
        self.timeout: float | None = None

    def __enter__(self) -> NamedPipe:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = None
        shutil.rmtree(self.directory, ignore_errors=True)

    def _opened(self) -> tuple[int, float]:
        """The descriptor and the timeout of a pipe opened with open_for_reading() or open_for_writing()."""
        if self.fd is None or self.timeout is None:
            raise ValueError(f'the pipe {self.path} is not open')
        return self.fd, self.timeout

    @staticmethod
    def _widen(fd: int) -> None:
        try:
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, CHUNK_SIZE)
        except (AttributeError, OSError):
            pass

    @staticmethod
    def _poller(fd: int, event: int) -> select.poll:
        poller = select.poll()
        poller.register(fd, event)
        return poller

    def open_for_reading(self, alive: Callable[[], bool], timeout: float) -> None:
        """Wait until the container opened the pipe for writing (or already wrote and closed it).

        PipeNotOpened when it exits first; timeout bounds the wait.
        """
        self.fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        self._widen(self.fd)
        poller = self._poller(self.fd, select.POLLIN)
        self.timeout = timeout
        waited = 0.0
        # Linux reports nothing on a pipe no writer has opened yet, and POLLHUP once one came and went.
        while not poller.poll(POLL_SECONDS * 1000):
            if not alive() and not poller.poll(0):
                raise PipeNotOpened('the helper container ended without opening the pipe')
            waited += POLL_SECONDS
            _quiet_for_too_long(waited, timeout, 'writing')

    def chunks(self) -> Iterator[bytes]:
        """What the container writes into the pipe opened with open_for_reading(), until it closes its end."""
        fd, timeout = self._opened()
        poller = self._poller(fd, select.POLLIN)
        waited = 0.0
        while True:
            if not poller.poll(POLL_SECONDS * 1000):
                waited += POLL_SECONDS
                _quiet_for_too_long(waited, timeout, 'writing')
                continue
            waited = 0.0
            try:
                data = os.read(fd, CHUNK_SIZE)
            except BlockingIOError:
                continue
            if not data:
                return
            yield data

    def open_for_writing(self, alive: Callable[[], bool], timeout: float) -> None:
        """Wait until the container opened the pipe for reading, and hold its writing end.

        PipeNotOpened when the container exits first; timeout bounds the wait.
        """
        started = time.monotonic()
        while self.fd is None:
            try:
                self.fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as exc:
                if exc.errno != errno.ENXIO:
                    raise
                if not alive():
                    raise PipeNotOpened('the helper container ended without opening the pipe') from exc
                _quiet_for_too_long(time.monotonic() - started, timeout, 'reading')
                time.sleep(0.02)
        self._widen(self.fd)
        self.timeout = timeout

    def write(self, data: bytes) -> None:
        """Write all of data; BrokenPipeError once the container stopped reading."""
        fd, timeout = self._opened()
        view = memoryview(data)
        poller = None
        while view:
            try:
                view = view[os.write(fd, view) :]
                continue
            except BlockingIOError:
                pass
            if poller is None:
                poller = self._poller(fd, select.POLLOUT)
            if not poller.poll(timeout * 1000):
                _quiet_for_too_long(timeout, timeout, 'reading')

    def close_write(self) -> None:
        """End the input: the container reads its end."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
