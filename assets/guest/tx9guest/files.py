# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Files the runtime writes: atomically, owned by the agent, under a lock when two writers may race."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from .errors import HbError
from .settings import Paths, agent_ids, read_text

LOCK_WAIT = 10.0


def give_to_agent(path: str) -> None:
    """chown to agent when running as root, so the agent can manage it later."""
    ids = agent_ids()
    if os.geteuid() == 0 and ids:
        os.chown(path, *ids, follow_symlinks=False)


def ensure_dir(path: str, mode: int) -> None:
    if not os.path.isdir(path):
        parent = os.path.dirname(path)
        if parent and not os.path.isdir(parent):
            ensure_dir(parent, 0o755)
        os.mkdir(path, mode)
        os.chmod(path, mode)
        give_to_agent(path)


def write_atomic(path: str, text: str, mode: int | None = None) -> None:
    """Replace path in one rename, so readers never see a half-written file.

    mode None keeps the current file's mode (0644 for a new file).
    """
    if mode is None:
        try:
            mode = os.stat(path).st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o644
    directory = os.path.dirname(path)
    ensure_dir(directory, 0o755)
    fd, tmp = tempfile.mkstemp(prefix='.tmp-', dir=directory)
    try:
        with os.fdopen(fd, 'w', encoding='utf-8') as f:
            os.fchmod(f.fileno(), mode)
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        give_to_agent(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def touch(path: str) -> None:
    """Create an empty file unless something (even a dangling symlink) is there."""
    if os.path.lexists(path):
        return
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644))
        give_to_agent(path)


def remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def ensure_runtime(paths: Paths, sub: str | None = None) -> str:
    """The runtime directory (and sub), created and given to the agent when missing."""
    path = paths.runtime if sub is None else sub
    if os.path.isdir(path):
        return path
    try:
        ensure_dir(paths.runtime, 0o700)
        if sub is not None:
            ensure_dir(sub, 0o700)
    except PermissionError:
        raise HbError(
            f'the runtime directory {paths.runtime} is missing and this user cannot create it; '
            "run `hb init` as root (the container's entrypoint does), or restart the agent container"
        ) from None
    return path


@contextlib.contextmanager
def locked(path: str, what: str, wait: float = LOCK_WAIT) -> Iterator[None]:
    """An exclusive flock, so the loop and a manual run never interleave."""
    try:
        ensure_dir(os.path.dirname(path), 0o700)
    except PermissionError:
        raise HbError(
            f'{os.path.dirname(path)} is missing and this user cannot create it; run `hb init` as root '
            "(the container's entrypoint does), or restart the agent container"
        ) from None
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        if os.geteuid() == 0:
            give_to_agent(path)
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise HbError(
                        f'another {what} is still running (lock {path}); '
                        'wait for it to finish and run the command again'
                    ) from None
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)


def probe_writable(directory: str) -> str | None:
    try:
        fd, tmp = tempfile.mkstemp(prefix='.hb-probe-', dir=directory)
        os.close(fd)
        os.unlink(tmp)
        return None
    except OSError as e:
        return e.strerror or str(e)


def load_json_file(path: str) -> Any:
    """Parsed JSON, {} when the file is absent, or None when it is corrupt."""
    text = read_text(path)
    if text is None:
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return None
