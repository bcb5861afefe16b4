# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the new host of a direct move does on the old host itself, through the command that reaches it.

Private to the col_agents.tx9 collection. When the new host reaches the old
one over SSH (a direct move), tx9_stage carries the change set here and
writes the journal's next step there itself, in the task that applies the
change set or promotes the box, rather than in tasks of their own: fewer task
starts while the box is down. The change set is streamed and cut at the size
its writer reported (nothing the old host sends can fill this host's disk),
kept only when it arrived whole, and its SHA-256 is checked before it is
read. The journal is written beside itself (0600) and renamed over itself, by
one command that a relayed move's raw task runs too (journal_line), so a
reader never sees half a journal.
"""

from __future__ import annotations

import base64
import json
import os
import shlex
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from typing import IO, Any

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error

# How long writing the journal on the old host may take.
WRITE_TIMEOUT = 60
# Bounds what a caller can ask to write: a journal is a few hundred bytes.
RECORD_LIMIT = 64 * 1024
CHUNK = 1024 * 1024
PEER_FIX = 'Check that this host still reaches the old host over SSH, then run the move again.'


def remote_path(path: str) -> str:
    """path as the old host's shell reads it: quoted, a leading ~/ its user's home."""
    if path.startswith('~/'):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)


def journal_command(path: str, source: str = 'cat') -> str:
    """The old host's command that writes what source prints (its standard input by default) as the journal at path.

    Written beside the journal (0600), then renamed over it: a reader never sees half a journal.
    """
    target = remote_path(path)
    partial = remote_path(path + '.new')
    return f'umask 077 && {source} > {partial} && mv -f -- {partial} {target}'


def journal_data(record: Mapping[str, Any]) -> bytes:
    """record as the journal holds it; INVALID_ARGUMENT over RECORD_LIMIT, before anything is written."""
    data = json.dumps(record, indent=4, sort_keys=True).encode() + b'\n'
    if len(data) > RECORD_LIMIT:
        raise Tx9Error(
            f'The journal to write on the old host is {len(data)} bytes, over the {RECORD_LIMIT} a journal may have.',
            'INVALID_ARGUMENT',
            'Give a journal record of the move (a few hundred bytes).',
        )
    return data


def journal_line(path: str, record: Mapping[str, Any]) -> str:
    """The whole command line a relayed move's raw task runs on the old host, through sh: the record inside in
    base64, which no shell reads as anything but letters (a 64 KiB record makes an argument under 90 KiB)."""
    encoded = base64.b64encode(journal_data(record)).decode('ascii')
    return 'sh -c ' + shlex.quote(journal_command(path, f'printf %s {encoded} | base64 -d'))


def last_line(data: bytes, otherwise: str) -> str:
    lines = data.decode('utf-8', 'replace').strip().splitlines()
    return lines[-1][:300] if lines else otherwise


def require_peer(peer: Sequence[str], path: str) -> None:
    if not peer or not path:
        raise Tx9Error(
            f'The old host cannot be reached without a command and a path (peer {list(peer)!r}, path {path!r}).',
            'INVALID_ARGUMENT',
            'Give peer (the command that reaches the old host, ssh ... -- host) and the path there.',
        )


def write_journal(peer: Sequence[str], path: str, record: Mapping[str, Any], timeout: float = WRITE_TIMEOUT) -> None:
    """Write record as the journal at path on the old host through peer (ssh ... -- host); PEER_FAILED if it cannot."""
    require_peer(peer, path)
    data = journal_data(record)
    try:
        done = subprocess.run(
            [*peer, journal_command(path)],
            input=data,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise Tx9Error(
            f'Writing the journal {path} on the old host took more than {timeout:g} s.', 'PEER_FAILED', PEER_FIX
        ) from exc
    except OSError as exc:
        raise Tx9Error(
            f'Writing the journal {path} on the old host could not start: {exc.strerror or exc}.',
            'PEER_FAILED',
            PEER_FIX,
        ) from exc
    if done.returncode != 0:
        said = last_line(done.stderr, 'nothing')
        raise Tx9Error(
            f'Writing the journal {path} on the old host failed (exit {done.returncode}): {said}.',
            'PEER_FAILED',
            PEER_FIX,
        )


def fetch_file(peer: Sequence[str], src: str, size: int, target: str) -> None:
    """Carry src (size bytes as written) from the old host to target here (0600), whole or not at all; PEER_FAILED."""
    require_peer(peer, src)
    os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
    partial = target + '.partial'
    with tempfile.TemporaryFile() as errors:
        try:
            proc = subprocess.Popen(
                [*peer, 'cat -- ' + remote_path(src)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors
            )
        except OSError as exc:
            raise Tx9Error(
                f'Carrying {src} from the old host could not start: {exc}.', 'PEER_FAILED', PEER_FIX
            ) from exc
        try:
            arrived = copy_bounded(proc.stdout, partial, size) if proc.stdout else 0
            if arrived > size:
                proc.kill()
            status = proc.wait()
        except BaseException:
            proc.kill()
            proc.wait()
            remove_quietly(partial)
            raise
        errors.seek(0)
        said = last_line(errors.read(), f'exit {status}')
    if arrived > size or status != 0 or arrived != size:
        remove_quietly(partial)
        what = (
            f'sends more than the {size} bytes it wrote'
            if arrived > size
            else f'broke off after {arrived} of {size} bytes ({said})'
        )
        raise Tx9Error(
            f'The transfer of {src} from the old host {what}; nothing was kept here.', 'PEER_FAILED', PEER_FIX
        )
    os.replace(partial, target)


def copy_bounded(source: IO[bytes], partial: str, size: int) -> int:
    """Copy source into partial (0600), at most size + 1 bytes; how many arrived (size + 1: too many)."""
    arrived = 0
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, 'wb') as out:
        while arrived <= size:
            chunk = source.read(min(CHUNK, size + 1 - arrived))
            if not chunk:
                break
            out.write(chunk)
            arrived += len(chunk)
    return arrived


def remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
