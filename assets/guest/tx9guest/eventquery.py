# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What `hb events` asks and how it reads: the query, the newest-N collector, bounded JSON lines.

Every log line and database row is untrusted and may be anything, so every
read is bounded before work proportional to it: a line longer than
MAX_LINE_BYTES is skipped (read past in fixed pieces, never held), only the
last MAX_FILE_BYTES of a file are read, at most MAX_FILES files and
MAX_DIR_ENTRIES directory entries per source are looked at, and a message is
cut to MAX_MESSAGE characters. A line that is not a UTF-8 JSON object is
skipped and counted, never an error.
"""

from __future__ import annotations

import datetime
import heapq
import json
import os
import re
import stat
from collections.abc import Callable, Iterator
from typing import IO, Any

from .redact import normal_level

MAX_LINE_BYTES = 1024 * 1024
MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_FILES = 500
MAX_DIR_ENTRIES = 20000
MAX_MESSAGE = 2000
# Room kept past MAX_MESSAGE while redacting, so a secret cut at the edge is still matched whole.
REDACT_MARGIN = 512
MAX_LIMIT = 5000
MAX_NOTES = 20
LEVELS = ('debug', 'info', 'warning', 'error', 'critical')
LEVEL_RANK = {name: rank for rank, name in enumerate(LEVELS)}
NATIVE_SOURCES = ('codex', 'claude', 'hermes')
SOURCE_RE = re.compile(r'^(agent|executor|hermes|codex|claude|service-[a-z0-9][a-z0-9_-]{0,62})$')
_READ_CHUNK = 64 * 1024
# A file to read: (its modification time, its path).
Found = tuple[float, str]


def parse_time(value: object) -> float | None:
    """Seconds since the epoch from an ISO 8601 text (Z or an offset; naive means UTC) or a number, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        seconds = float(value) / 1000.0 if value > 1e11 else float(value)
        return seconds if 0 < seconds < 1e10 else None
    if not isinstance(value, str) or not 10 <= len(value) <= 40:
        return None
    text = value.strip()
    if text.endswith(('Z', 'z')):
        text = text[:-1] + '+00:00'
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


def format_time(seconds: float) -> str:
    """2026-07-04T12:00:00.123Z: one format for every event, so the texts sort as the times do."""
    moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    return moment.strftime('%Y-%m-%dT%H:%M:%S.') + f'{moment.microsecond // 1000:03d}Z'


def level_of(value: object, default: str = 'info') -> str:
    """The canonical level a record's level field names; an unleveled record counts as info."""
    return (normal_level(value) if isinstance(value, str) else None) or default


class Query:
    """The sources, oldest time, text and lowest level wanted, and how many of the newest events."""

    def __init__(
        self,
        sources: list[str] | None = None,
        since: float | None = None,
        contains: str | None = None,
        level: str | None = 'info',
        limit: int = 200,
    ) -> None:
        self.sources = set(sources) if sources else None
        self.since = since
        self.contains = contains.lower() if contains else None
        self.min_rank = LEVEL_RANK[level] if level else 0
        self.limit = limit

    def wants(self, source: str) -> bool:
        return self.sources is None or source in self.sources

    def wants_time(self, seconds: float) -> bool:
        return self.since is None or seconds >= self.since

    def wants_level(self, level: str) -> bool:
        return LEVEL_RANK.get(level, 1) >= self.min_rank

    def wants_text(self, message: str) -> bool:
        return self.contains is None or self.contains in message.lower()


class Collector:
    """Keeps the newest `limit` events the query wants, counts skipped lines, notes partial reads."""

    def __init__(self, query: Query, redact: Callable[[str], str]) -> None:
        self.query = query
        self.redact = redact
        self.heap: list[tuple[float, int, dict[str, Any]]] = []
        self.seq = 0
        self.skipped = 0
        self.notes: list[str] = []

    def full_after(self, seconds: float) -> bool:
        """True when nothing at or before this time can be among the newest `limit` any more."""
        return len(self.heap) >= self.query.limit and self.heap[0][0] > seconds

    def add(self, seconds: float, source: str, level: str, message: object, **fields: Any) -> None:
        """Offer one event; the cheap filters first, redaction only for what may be kept."""
        query = self.query
        if not query.wants_time(seconds) or not query.wants_level(level) or self.full_after(seconds):
            return
        full = message if isinstance(message, str) else json.dumps(message, ensure_ascii=False)
        text = self.redact(full[: MAX_MESSAGE + REDACT_MARGIN])
        if not query.wants_text(text):
            return
        event: dict[str, Any] = {
            'time': format_time(seconds),
            'source': source,
            'level': level,
            'message': text[:MAX_MESSAGE],
        }
        if len(text) > MAX_MESSAGE or len(full) > MAX_MESSAGE + REDACT_MARGIN:
            event['truncated'] = True
        event.update((key, value) for key, value in fields.items() if value not in (None, '', {}, []))
        self.seq += 1
        heapq.heappush(self.heap, (seconds, self.seq, event))
        if len(self.heap) > query.limit:
            heapq.heappop(self.heap)

    def note(self, text: str) -> None:
        if len(self.notes) < MAX_NOTES:
            self.notes.append(text)

    def result(self) -> dict[str, Any]:
        return {
            'events': [event for _t, _s, event in sorted(self.heap)],
            'skipped': self.skipped,
            'partial': self.notes,
        }


def open_regular(path: str) -> tuple[IO[bytes], os.stat_result] | None:
    """(binary file, its stat) without following a symlink or blocking on a FIFO; None for anything else."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        return None
    return os.fdopen(fd, 'rb'), info


def json_lines(path: str, collector: Collector, source: str) -> Iterator[dict[str, Any]]:
    """Each JSON object in the file, in order; lines that are not one are skipped and counted."""
    opened = open_regular(path)
    if opened is None:
        return
    handle, info = opened
    with handle:
        left = info.st_size
        if left > MAX_FILE_BYTES:
            handle.seek(left - MAX_FILE_BYTES)
            left = MAX_FILE_BYTES - _skip_line(handle, MAX_FILE_BYTES)
            collector.note(f'{source}: read only the last {MAX_FILE_BYTES // (1024 * 1024)} MiB of {path}')
        while left > 0:
            line = handle.readline(min(MAX_LINE_BYTES + 1, left))
            if not line:
                return
            left -= len(line)
            if len(line) > MAX_LINE_BYTES and not line.endswith(b'\n'):
                left -= _skip_line(handle, left)
                collector.skipped += 1
                continue
            record = _decode(line)
            if record is None:
                # An unfinished last line is still being written, not unreadable.
                if line.strip() and (line.endswith(b'\n') or left > 0):
                    collector.skipped += 1
                continue
            yield record


def _skip_line(handle: IO[bytes], left: int) -> int:
    """Read past the rest of the current line in fixed pieces; the bytes consumed."""
    used = 0
    while used < left:
        piece = handle.readline(min(_READ_CHUNK, left - used))
        if not piece:
            break
        used += len(piece)
        if piece.endswith(b'\n'):
            break
    return used


def _decode(line: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(line.decode('utf-8'))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def newest_files(root: str, suffix: str, max_depth: int, collector: Collector, source: str) -> list[Found]:
    """(mtime, path) of regular files ending in suffix below root, newest first, never following links."""
    found: list[Found] = []
    seen = 0
    pending = [(root, 0)]
    while pending:
        directory, depth = pending.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > MAX_DIR_ENTRIES:
                collector.note(f'{source}: looked at only the first {MAX_DIR_ENTRIES} entries below {root}')
                return _newest(found, collector, source)
            try:
                if entry.is_dir(follow_symlinks=False) and depth < max_depth:
                    pending.append((entry.path, depth + 1))
                elif entry.name.endswith(suffix) and entry.is_file(follow_symlinks=False):
                    found.append((entry.stat(follow_symlinks=False).st_mtime, entry.path))
            except OSError:
                continue
    return _newest(found, collector, source)


def _newest(found: list[Found], collector: Collector, source: str) -> list[Found]:
    found.sort(reverse=True)
    if len(found) > MAX_FILES:
        collector.note(f'{source}: read only the newest {MAX_FILES} of {len(found)} files')
    return found[:MAX_FILES]


def read_newest_first(files: list[Found], collector: Collector, read_file: Callable[[str, float], None]) -> None:
    """read_file(path, mtime) for files (newest first) until none can hold a wanted event."""
    for mtime, path in files:
        if not collector.query.wants_time(mtime) or collector.full_after(mtime):
            return
        read_file(path, mtime)
