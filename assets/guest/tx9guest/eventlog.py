# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The durable log of one source: JSON lines in LOG_DIR/SOURCE.jsonl, rotated by size.

Each JSON line: schema "tx9.event.v1", timestamp (UTC, milliseconds, Z), box,
source, stream (stdout, stderr or event), type (output, output_repeated,
process_start, process_start_failed, process_exit, process_restart,
process_gave_up, truncated), message, and level / data when known. Identical
consecutive lines within 60 s are stored once, followed by one
output_repeated event with their count.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import stat
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from .redact import detect_level

SCHEMA = 'tx9.event.v1'
DEFAULT_MAX_BYTES = 20 * 1024 * 1024
DEFAULT_MAX_FILES = 5
REPEAT_WINDOW = 60.0
NAME = 'tx9-logs'


class LogFileError(Exception):
    """The log destination cannot be used."""


def timestamp(now: float | None = None) -> str:
    moment = datetime.datetime.fromtimestamp(time.time() if now is None else now, datetime.UTC)
    return moment.strftime('%Y-%m-%dT%H:%M:%S.') + f'{moment.microsecond // 1000:03d}Z'


def open_log(path: str) -> tuple[int, int]:
    """Open path for appending without following a symlink or blocking on a FIFO."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as e:
        raise LogFileError(f'cannot open {path}: {e.strerror or e}') from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise LogFileError(f'{path} is not a regular file')
    os.set_blocking(fd, True)
    return fd, info.st_size


class RotatingFile:
    """Appends lines to path; rotates when the next write would pass max_bytes."""

    def __init__(self, path: str, max_bytes: int = DEFAULT_MAX_BYTES, max_files: int = DEFAULT_MAX_FILES) -> None:
        self.path = path
        self.max_bytes = max(1024, int(max_bytes))
        self.max_files = max(1, int(max_files))
        self.fd: int | None
        self.fd, self.size = open_log(path)

    def rotated_name(self, index: int) -> str:
        return self.path if index == 0 else f'{self.path}.{index}'

    def rotate(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
        self.fd = None
        oldest = self.rotated_name(self.max_files - 1)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(oldest)
        for index in range(self.max_files - 2, -1, -1):
            with contextlib.suppress(FileNotFoundError):
                os.rename(self.rotated_name(index), self.rotated_name(index + 1))
        self.fd, self.size = open_log(self.path)

    def write(self, data: bytes) -> None:
        if self.size > 0 and self.size + len(data) > self.max_bytes:
            self.rotate()
        fd = self.fd
        if fd is None:
            raise LogFileError(f'{self.path} is closed')
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        self.size += len(data)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def log_file_path(log_dir: str, source: str) -> str:
    return os.path.join(log_dir, f'{source}.jsonl')


def prepare_log_dir(log_dir: str) -> None:
    if not os.path.isdir(log_dir):
        try:
            os.makedirs(log_dir, 0o700, exist_ok=True)
        except OSError as e:
            raise LogFileError(f'cannot create {log_dir}: {e.strerror or e}') from None
    if os.path.islink(log_dir):
        raise LogFileError(f'{log_dir} is a symlink')


class EventLog:
    """JSON lines for one source: redaction, levels, repeats, rotation, mirror."""

    def __init__(
        self,
        source: str,
        box: str,
        log_dir: str,
        max_bytes: int,
        max_files: int,
        redactor: Callable[[str], str],
        mirror: bool = True,
    ) -> None:
        self.source = source
        self.box = box
        self.redact = redactor
        self.mirror = mirror
        self.lock = threading.Lock()
        self.file: RotatingFile | None = None
        self.problem: str | None = None
        self.repeat: list[Any] | None = None  # [stream, message, level, count, first_time]
        try:
            prepare_log_dir(log_dir)
            self.file = RotatingFile(log_file_path(log_dir, source), max_bytes, max_files)
        except LogFileError as e:
            self.problem = str(e)

    def _record(
        self,
        stream: str,
        kind: str,
        message: str,
        level: str | None = None,
        data: dict[str, Any] | None = None,
        now: float | None = None,
    ) -> dict[str, Any]:
        record: dict[str, Any] = {
            'schema': SCHEMA,
            'timestamp': timestamp(now),
            'box': self.box,
            'source': self.source,
            'stream': stream,
            'type': kind,
            'message': message,
        }
        if level:
            record['level'] = level
        if data:
            record['data'] = data
        return record

    def _write(self, record: dict[str, Any]) -> None:
        if self.file is None:
            return
        data = (json.dumps(record, ensure_ascii=False, separators=(',', ':')) + '\n').encode('utf-8', 'replace')
        try:
            self.file.write(data)
        except (OSError, LogFileError) as e:
            # Keep the child running; say once that its log could not be written.
            if self.problem is None:
                self.problem = f'writing {self.file.path} failed: {e}'
                self._mirror('stderr', f'{NAME}: {self.problem}')

    def _mirror(self, stream: str, text: str) -> None:
        if not self.mirror:
            return
        target = sys.stdout if stream == 'stdout' else sys.stderr
        with contextlib.suppress(OSError, ValueError):
            target.write(text + '\n')
            target.flush()

    def _flush_repeat(self) -> None:
        if self.repeat and self.repeat[3] > 0:
            stream, message, level, count, _first = self.repeat
            self._write(self._record(stream, 'output_repeated', message, level, {'count': count}))
        self.repeat = None

    def line(self, stream: str, text: str, truncated: bool = False) -> None:
        message = self.redact(text)
        level = detect_level(message)
        with self.lock:
            self._mirror(stream, message)
            now = time.time()
            if (
                self.repeat
                and self.repeat[0] == stream
                and self.repeat[1] == message
                and now - self.repeat[4] < REPEAT_WINDOW
            ):
                self.repeat[3] += 1
                return
            self._flush_repeat()
            self._write(self._record(stream, 'truncated' if truncated else 'output', message, level, now=now))
            self.repeat = [stream, message, level, 0, now]

    def event(self, kind: str, message: str, level: str | None = None, data: dict[str, Any] | None = None) -> None:
        message = self.redact(message)
        with self.lock:
            self._flush_repeat()
            self._mirror('stderr', f'{NAME}[{self.source}]: {message}')
            self._write(self._record('event', kind, message, level, data))

    def close(self) -> None:
        with self.lock:
            self._flush_repeat()
            if self.file is not None:
                self.file.close()
