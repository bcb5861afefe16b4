# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A file streamed from one host to another through the controller, nothing of it on the controller's disk.

Private to the col_agents.tx9 collection; controller-side, no Ansible imports (the tx9_relay action
plugin maps a task's variables onto these). A reader on the source host (`cat` of the file) and a
writer on the destination host (WRITER, a small Python program) are two processes here, ssh (or a
local shell), joined by a copy loop with a fixed buffer: memory stays bounded whatever the file's
size. The writer writes into a temporary file beside the target, hashes what it writes, takes no
byte beyond the size given, and renames the file into place only when size and SHA-256 match; on
any failure it removes the temporary file. A watchdog ends both processes when no byte moved for
the idle timeout.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import threading
import time
from collections.abc import Mapping
from typing import IO, Any

# The copy loop's buffer: the most bytes of the file the controller holds at any time.
CHUNK = 1 << 20
# How much of a process's error output is kept for the message.
STDERR_TAIL = 2000

SSH_CONNECTIONS = frozenset(
    (
        'ssh',
        'smart',
        'paramiko',
        'ansible.builtin.ssh',
        'ansible.legacy.ssh',
        'ansible.builtin.paramiko_ssh',
        'paramiko_ssh',
    )
)
LOCAL_CONNECTIONS = frozenset(('local', 'ansible.builtin.local', 'ansible.legacy.local'))
LOCAL_NAMES = frozenset(('localhost', '127.0.0.1', '::1'))

# Runs on the destination host: python -c WRITER DIR NAME SIZE SHA256 (SHA256 may be '').
# Prints one JSON line ({path, size, sha256} or {error}); exit 0 only when the file is in place.
WRITER = r"""
import hashlib, json, os, signal, sys, tempfile
def stop(*_):
    raise SystemExit(4)
for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
    signal.signal(s, stop)
d, name, size, want = os.path.expanduser(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
os.makedirs(d, mode=0o700, exist_ok=True)
os.chmod(d, 0o700)
fd, tmp = tempfile.mkstemp(prefix='.' + name + '.', suffix='.partial', dir=d)
digest, got, error = hashlib.sha256(), 0, ''
try:
    with os.fdopen(fd, 'wb') as out:
        while True:
            chunk = sys.stdin.buffer.read1(1048576)
            if not chunk:
                break
            got += len(chunk)
            if got > size:
                error = 'sends more than the %d bytes it wrote' % size
                break
            digest.update(chunk)
            out.write(chunk)
        out.flush()
        os.fsync(out.fileno())
    if not error and got != size:
        error = 'broke off after %d of %d bytes' % (got, size)
    if not error and want and digest.hexdigest() != want:
        error = 'arrived with SHA-256 %s, not the %s it was written with' % (digest.hexdigest(), want)
    if not error:
        os.replace(tmp, os.path.join(d, name))
finally:
    if os.path.exists(tmp):
        os.unlink(tmp)
if error:
    print(json.dumps(dict(error=error, size=got)))
    sys.exit(3)
print(json.dumps(dict(path=os.path.join(d, name), size=got, sha256=digest.hexdigest())))
"""


class RelayError(Exception):
    """A relay that failed at step (connect, read, write, check), with what to do."""

    def __init__(self, step: str, reason: str, fix: str) -> None:
        super().__init__(reason)
        self.step = step
        self.reason = reason
        self.fix = fix


def first(hostvars: Mapping[str, Any], *names: str) -> Any:
    """The value of the first of names hostvars sets (not None, not '')."""
    for name in names:
        value = hostvars.get(name)
        if value is not None and value != '':
            return value
    return None


def connection_kind(host: str, hostvars: Mapping[str, Any]) -> str:
    """'ssh' or 'local': how the relay reaches host; refuses a connection it cannot stream through."""
    kind = first(hostvars, 'ansible_connection')
    if kind is None:
        return 'local' if host in LOCAL_NAMES else 'ssh'
    if kind in LOCAL_CONNECTIONS:
        return 'local'
    if kind in SSH_CONNECTIONS:
        return 'ssh'
    raise RelayError(
        'connect',
        f'{host} is reached by the {kind} connection; the relay streams over ssh or local only.',
        'Reach the host over ssh for the move, or let the two hosts reach each other (tx9_migrate_transfer direct).',
    )


def ssh_argv(host: str, hostvars: Mapping[str, Any], check_host_keys: bool, connect_timeout: int = 10) -> list[str]:
    """The ssh command that runs a command on host as Ansible's ssh connection would reach it.

    Ordered as Ansible orders them (ssh takes an option's first value): ssh_args, host key checking,
    batch mode, port, key, user, timeout, ssh_common_args, ssh_extra_args; the command follows.
    """
    if first(hostvars, 'ansible_ssh_pass', 'ansible_password', 'ansible_ssh_password') is not None:
        raise RelayError(
            'connect',
            f'{host} is reached with an SSH password; the relay streams with keys only.',
            f'Give {host} a key (ansible_ssh_private_key_file) or an agent that holds one.',
        )
    argv = ['ssh']
    for name in ('ansible_ssh_args',):
        argv += shlex.split(str(first(hostvars, name) or ''))
    if not check_host_keys:
        argv += ['-o', 'StrictHostKeyChecking=no']
    argv += ['-o', 'BatchMode=yes', '-o', 'PasswordAuthentication=no', '-o', 'KbdInteractiveAuthentication=no']
    port = first(hostvars, 'ansible_port', 'ansible_ssh_port')
    if port is not None:
        argv += ['-o', f'Port={int(port)}']
    key = first(hostvars, 'ansible_ssh_private_key_file', 'ansible_private_key_file')
    if key is not None:
        argv += ['-o', f'IdentityFile="{os.path.expanduser(str(key))}"']
    user = first(hostvars, 'ansible_user', 'ansible_ssh_user')
    if user is not None:
        argv += ['-o', f'User="{user}"']
    argv += ['-o', f'ConnectTimeout={connect_timeout}']
    for name in ('ansible_ssh_common_args', 'ansible_ssh_extra_args'):
        argv += shlex.split(str(first(hostvars, name) or ''))
    return argv + ['--', str(first(hostvars, 'ansible_host', 'ansible_ssh_host') or host)]


def remote_argv(kind: str, base: list[str], command: list[str], become_user: str | None) -> list[str]:
    """argv that runs command (words) on the host base reaches ([] for local), as become_user by sudo when set."""
    if become_user:
        command = ['sudo', '-n', '-u', become_user, '--'] + command
    line = ' '.join(shlex.quote(word) for word in command)
    if kind == 'local':
        return ['/bin/sh', '-c', line]
    return base + [line]


def reader_command(src: str) -> list[str]:
    return ['cat', '--', src]


def writer_command(python: str, dest_dir: str, name: str, size: int, sha256: str) -> list[str]:
    return [python, '-c', WRITER, dest_dir, name, str(size), sha256]


class _Tail(threading.Thread):
    """Reads a process's error output, keeping its last STDERR_TAIL bytes."""

    def __init__(self, stream: IO[bytes]) -> None:
        super().__init__(daemon=True)
        self.stream = stream
        self.text = b''

    def run(self) -> None:
        for line in iter(lambda: self.stream.read(4096), b''):
            self.text = (self.text + line)[-STDERR_TAIL:]

    def message(self) -> str:
        self.join(5)
        return self.text.decode('utf-8', 'replace').strip()


def _copy(src: IO[bytes], dst: IO[bytes], moved: list[float]) -> int:
    """Bytes of src copied into dst, CHUNK at a time; moved[0] is the time a byte last moved."""
    total = 0
    while True:
        chunk = os.read(src.fileno(), CHUNK)
        if not chunk:
            return total
        view = memoryview(chunk)
        while view:
            written = os.write(dst.fileno(), view)
            view = view[written:]
        total += len(chunk)
        moved[0] = time.monotonic()


def _watch(
    procs: list[subprocess.Popen[bytes]], moved: list[float], idle: float, done: threading.Event, fired: list[bool]
) -> None:
    """Kills procs when no byte moved for idle seconds before done is set."""
    while not done.wait(1.0):
        if time.monotonic() - moved[0] > idle:
            fired[0] = True
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
            return


def _parse(out: bytes) -> dict[str, Any]:
    lines = out.decode('utf-8', 'replace').strip().splitlines()
    try:
        parsed = json.loads(lines[-1]) if lines else {}
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _failure(what: str, host: str, code: int, tail: str, timed_out: bool, idle: float) -> RelayError:
    """The RelayError of a reader or writer (what) on host that ended with code."""
    step = 'read' if what == 'reader' else 'write'
    if timed_out:
        return RelayError(
            'stream',
            f'No byte moved for {idle:g} seconds; the relay was stopped.',
            'Check that both hosts answer over SSH, or raise the relay timeout; run again.',
        )
    if code == 255:
        return RelayError(
            'connect',
            f'The controller could not reach {host} over SSH: {tail or "no message"}.',
            f"Check that the controller reaches {host} with the inventory's connection variables.",
        )
    if what == 'reader':
        return RelayError(
            step,
            f'Reading the file on {host} failed (exit {code}): {tail or "no message"}.',
            f'Check that the file exists on {host} and that the connection user (or become) may read it.',
        )
    return RelayError(
        step,
        f'Writing the file on {host} failed (exit {code}): {tail or "no message"}.',
        f'Check that {host} has python3 (ansible_python_interpreter), room and permission in the directory.',
    )


def stream(
    reader_argv: list[str], writer_argv: list[str], source: str, dest: str, idle: float = 300.0
) -> dict[str, Any]:
    """Runs the reader (on source) and the writer (on dest) joined through this process.

    Returns the writer's {path, size, sha256}; raises RelayError naming the step that failed.
    """
    try:
        reader = subprocess.Popen(reader_argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        reason = f'The reader for {source} could not start: {exc}.'
        raise RelayError('connect', reason, 'Install ssh on the controller.') from exc
    try:
        writer = subprocess.Popen(writer_argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        reader.kill()
        reader.wait()
        reason = f'The writer for {dest} could not start: {exc}.'
        raise RelayError('connect', reason, 'Install ssh on the controller.') from exc
    if not (reader.stdout and reader.stderr and writer.stdin and writer.stdout and writer.stderr):
        raise RuntimeError("the relay's processes were started without their pipes")  # cannot happen: all are PIPE
    tails = (_Tail(reader.stderr), _Tail(writer.stderr))
    for tail in tails:
        tail.start()
    moved, fired, done = [time.monotonic()], [False], threading.Event()
    watchdog = threading.Thread(target=_watch, args=([reader, writer], moved, idle, done, fired), daemon=True)
    watchdog.start()
    try:
        try:
            _copy(reader.stdout, writer.stdin, moved)
        except OSError:
            pass  # the writer is gone (it took too many bytes, or failed): its answer says why
        finally:
            try:
                writer.stdin.close()
            except OSError:
                pass
        answer = _parse(writer.stdout.read())
        writer.wait()
        cut = reader.poll() is None  # the writer ended first: the reader is stopped, not failed
        if cut:
            reader.kill()
        reader.wait()
    finally:
        done.set()
        for proc in (reader, writer):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    codes = (0 if cut and not fired[0] else reader.returncode, writer.returncode)
    return _outcome(answer, codes, [tail.message() for tail in tails], source, dest, fired[0], idle)


def _outcome(
    answer: dict[str, Any],
    codes: tuple[int, int],
    tails: list[str],
    source: str,
    dest: str,
    timed_out: bool,
    idle: float,
) -> dict[str, Any]:
    """The writer's answer when the file is in place; the RelayError of the step that failed otherwise."""
    if codes[1] == 0 and 'path' in answer:
        return answer
    if 'error' in answer and 'more than' in answer['error']:
        raise RelayError(
            'check',
            f'{source} {answer["error"]}; nothing was kept on {dest}.',
            f'Write the file on {source} again; it changed after its size was taken.',
        )
    if timed_out or codes[0] != 0:
        raise _failure('reader', source, codes[0], tails[0], timed_out, idle)
    if 'error' in answer:
        raise RelayError(
            'check',
            f'The file from {source} {answer["error"]}; nothing was kept on {dest}.',
            'Run again; if it fails the same way, the file changed on its host after it was written.',
        )
    raise _failure('writer', dest, codes[1], tails[1], False, idle)
