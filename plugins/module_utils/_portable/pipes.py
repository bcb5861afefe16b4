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

import errno
import fcntl
import os
import select
import shutil
import tempfile
import time

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._io import remove_left_by_dead_processes

PIPE_PATH = '/tx9-pipe'
# A pipe's directory: this prefix, the process's ID, a random part.
PIPE_DIR_PREFIX = '.tx9-pipe-'
CHUNK_SIZE = 1024 * 1024
# How often the helper container is asked whether it still runs while the pipe is quiet.
POLL_SECONDS = 1.0


def engine_on_this_host(client):
    """Whether the SDK talks to the engine over a unix socket (a pipe made here can be bound)."""
    return str(getattr(getattr(client, 'api', None), 'base_url', '')).startswith('http+docker://')


def pipe_mount(pipe):
    """The Mounts entry that binds pipe into a container (a missing source is refused, never created)."""
    return dict(Type='bind', Source=pipe.path, Target=PIPE_PATH, ReadOnly=False)


def container_alive(api, container):
    """A callable: whether container is still running (False once it exited or is gone)."""

    def alive():
        try:
            return bool(api.inspect_container(container)['State'].get('Running'))
        except Exception:
            return False

    return alive


class PipeNotOpened(Exception):
    """The helper container ended without opening its end of the pipe (it could not, or failed first)."""


def _quiet_for_too_long(waited, timeout, what):
    if waited >= timeout:
        raise Tx9Error(
            'The helper container stopped %s for %d seconds.' % (what, timeout),
            'DOCKER_ERROR',
            "Check the host's disk and load and the engine, then run again; nothing was kept.",
        )


def remove_stale_pipes(parent):
    """Remove the pipe directories under parent whose process is gone (a killed run's)."""
    remove_left_by_dead_processes(parent, PIPE_DIR_PREFIX)


class NamedPipe:
    """A FIFO in a private directory of its own (under parent, named for this process), removed by close()."""

    def __init__(self, parent=None):
        """OSError when parent's filesystem holds no pipes."""
        self.directory = tempfile.mkdtemp(prefix='%s%d-' % (PIPE_DIR_PREFIX, os.getpid()), dir=parent)
        self.path = os.path.join(self.directory, 'pipe')
        try:
            os.mkfifo(self.path, 0o600)
        except OSError:
            shutil.rmtree(self.directory, ignore_errors=True)
            raise
        # Reached only through the 0700 directory; the container's user may be mapped to another uid.
        os.chmod(self.path, 0o666)
        self.fd = None
        self.poller = None
        self.timeout = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = None
        shutil.rmtree(self.directory, ignore_errors=True)

    def _widen(self):
        try:
            fcntl.fcntl(self.fd, fcntl.F_SETPIPE_SZ, CHUNK_SIZE)
        except (AttributeError, OSError):
            pass

    def open_for_reading(self, alive, timeout):
        """Wait until the container opened the pipe for writing (or already wrote and closed it).

        PipeNotOpened when it exits first; timeout bounds the wait.
        """
        self.fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        self._widen()
        self.poller = select.poll()
        self.poller.register(self.fd, select.POLLIN)
        self.timeout = timeout
        waited = 0.0
        # Linux reports nothing on a pipe no writer has opened yet, and POLLHUP once one came and went.
        while not self.poller.poll(POLL_SECONDS * 1000):
            if not alive() and not self.poller.poll(0):
                raise PipeNotOpened('the helper container ended without opening the pipe')
            waited += POLL_SECONDS
            _quiet_for_too_long(waited, timeout, 'writing')

    def chunks(self):
        """What the container writes into the pipe opened with open_for_reading(), until it closes its end."""
        waited = 0.0
        while True:
            if not self.poller.poll(POLL_SECONDS * 1000):
                waited += POLL_SECONDS
                _quiet_for_too_long(waited, self.timeout, 'writing')
                continue
            waited = 0.0
            try:
                data = os.read(self.fd, CHUNK_SIZE)
            except BlockingIOError:
                continue
            if not data:
                return
            yield data

    def open_for_writing(self, alive, timeout):
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
                    raise PipeNotOpened('the helper container ended without opening the pipe')
                _quiet_for_too_long(time.monotonic() - started, timeout, 'reading')
                time.sleep(0.02)
        self._widen()
        self.timeout = timeout

    def write(self, data):
        """Write all of data; BrokenPipeError once the container stopped reading."""
        view = memoryview(data)
        poller = None
        while view:
            try:
                view = view[os.write(self.fd, view) :]
                continue
            except BlockingIOError:
                pass
            if poller is None:
                poller = select.poll()
                poller.register(self.fd, select.POLLOUT)
            if not poller.poll(self.timeout * 1000):
                _quiet_for_too_long(self.timeout, self.timeout, 'reading')

    def close_write(self):
        """End the input: the container reads its end."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
