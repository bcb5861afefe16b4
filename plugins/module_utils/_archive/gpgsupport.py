# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the Gpg runner (gpg.py) relies on, each testable alone. Private to the col_agents.tx9 collection.

The passphrase check, gpg's verdict read from its status lines, the
environment gpg runs in and the removal of homes left by killed runs, the
gate and pipe sink its worker threads read and write through, the exclusive
creation of an output file, and the python-gnupg version it needs.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Mapping
from typing import IO, Any

from ansible_collections.col_agents.tx9.plugins.module_utils._archive.tarstream import Readable
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._io import remove_left_by_dead_processes, write_failure

FILE_MODE = 0o600
HOME_PREFIX = 'tx9g-'
# The environment gpg and its agent must not see.
SCRUBBED_ENV = ('TX9_PASSWORD', 'GNUPGHOME', 'GPG_AGENT_INFO')

BAD_PASSWORD_FIX = 'Give the passphrase the backup was made with.'
CORRUPT_FIX = 'The encrypted payload is damaged or was altered; copy the archive again or use another backup.'

# Where output goes: a callable given each chunk (what it returns is ignored).
Sink = Callable[[bytes], object]


def check_passphrase(passphrase: object) -> None:
    """Refuse a passphrase gpg cannot take from a pipe; never echo it."""
    if not passphrase:
        raise Tx9Error(
            'An encrypted archive needs a passphrase, and none was given.',
            'PASSWORD_REQUIRED',
            'Give the passphrase (for example through the TX9_PASSWORD environment variable).',
        )
    if not isinstance(passphrase, str):
        raise Tx9Error('The passphrase must be text.', 'INVALID_ARGUMENT', 'Give the passphrase as a string.')
    if '\n' in passphrase or '\r' in passphrase or '\0' in passphrase:
        raise Tx9Error(
            'The passphrase contains a line break or NUL character, which gpg cannot read.',
            'INVALID_ARGUMENT',
            'Choose a passphrase on one line.',
        )


def statuses(result: Any) -> list[str]:
    """The [GNUPG:] status keywords gpg reported, in order."""
    keys = []
    for line in (result.stderr or '').splitlines():
        if line.startswith('[GNUPG:] '):
            words = line[9:].split()
            if words:
                keys.append(words[0])
    return keys


def decryption_error(result: Any) -> Tx9Error | None:
    """None when gpg decrypted everything and checked its integrity code, else the Tx9Error."""
    keys = statuses(result)
    if (
        result.returncode == 0
        and 'DECRYPTION_OKAY' in keys
        and 'GOODMDC' in keys
        and 'BADMDC' not in keys
        and 'DECRYPTION_FAILED' not in keys
    ):
        return None
    wrong_key = 'BAD_PASSPHRASE' in (result.stderr or '') or (
        'NEED_PASSPHRASE_SYM' in keys
        and 'DECRYPTION_FAILED' in keys
        and 'PLAINTEXT' not in keys
        and 'BADMDC' not in keys
    )
    if wrong_key:
        return Tx9Error('The passphrase does not decrypt this archive.', 'BAD_PASSWORD', BAD_PASSWORD_FIX)
    if 'BADMDC' in keys:
        detail = 'its integrity check failed'
    elif 'NODATA' in keys:
        detail = 'it is not OpenPGP data'
    else:
        detail = 'gpg could not decrypt it completely'
    return Tx9Error(f'The encrypted payload cannot be trusted: {detail}.', 'ARCHIVE_CORRUPT', CORRUPT_FIX)


def create_exclusive(path: str) -> IO[bytes]:
    """A new file at path, 0600, opened for writing; refuse when anything is there already."""
    try:
        fd = os.open(
            path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, 'O_CLOEXEC', 0), FILE_MODE
        )
    except OSError as exc:
        if exc.errno == errno.EEXIST:
            raise Tx9Error(
                f'{path} already exists; tx9 never overwrites a file.',
                'ARCHIVE_WRITE_FAILED',
                f'Choose another output path, or move {path} away.',
            ) from exc
        raise write_failure(path, exc) from exc
    os.fchmod(fd, FILE_MODE)
    return os.fdopen(fd, 'wb')


class Gate:
    """Reads from src until closed; then reads as EOF, so gpg stops early."""

    def __init__(self, src: Readable) -> None:
        self.src = src
        self.closed = False
        self.at_eof = False

    def read(self, size: int = -1, /) -> bytes:
        if self.closed:
            return b''
        data = self.src.read(size)
        if not data:
            self.at_eof = True
        return data

    def close(self) -> None:
        self.closed = True


def gpg_environment(environ: Mapping[str, str], home: str) -> dict[str, str]:
    """The environment gpg runs in: no passphrase or other home, and messages in English.

    Only the messages: the character set of the person's locale stays, so a
    passphrase means the same bytes it always did; English messages are what
    the statuses and errors read here are in.
    """
    env = {key: value for key, value in environ.items() if key not in SCRUBBED_ENV + ('LANGUAGE',)}
    if 'LC_ALL' in env:
        env['LC_CTYPE'] = env.pop('LC_ALL')
    env['LC_MESSAGES'] = 'C'
    env['GNUPGHOME'] = home
    return env


def pipe_sink(fd: int) -> Sink:
    """A sink that writes each chunk whole to the pipe fd."""

    def sink(chunk: bytes) -> None:
        view = memoryview(chunk)
        while view:
            view = view[os.write(fd, view) :]

    return sink


def remove_stale_homes(parent: str) -> None:
    """Remove GNUPGHOMEs left by killed operations (their owner process is gone)."""
    remove_left_by_dead_processes(parent, HOME_PREFIX)


def remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def close_quietly(handle: IO[bytes]) -> None:
    try:
        handle.close()
    except OSError:
        pass


MIN_GNUPG = (0, 5, 4)


def gnupg_is_recent(version: object) -> bool:
    """True when a python-gnupg version string is at least MIN_GNUPG."""
    parts = []
    for piece in str(version).split('.')[:3]:
        digits = ''.join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts + [0] * (3 - len(parts))) >= MIN_GNUPG
