# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""`hb logs`: read the durable logs, across rotated files, and follow them."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from .errors import HbError, UsageError

if TYPE_CHECKING:
    from .context import Context

LOG_ALIASES = {'workload': 'agent', 'loop': 'agent', 'gateway': 'hermes'}
LOG_NAME_RE = re.compile(r'^[a-z0-9][a-z0-9_.-]{0,79}$')


def log_files(log_dir: str, name: str) -> list[str]:
    """The log's files, oldest first (rotated ones, then the current one)."""
    base = os.path.join(log_dir, f'{name}.jsonl')
    rotated = []
    for entry in os.listdir(log_dir) if os.path.isdir(log_dir) else []:
        if entry.startswith(f'{name}.jsonl.') and entry.rsplit('.', 1)[1].isdigit():
            rotated.append((int(entry.rsplit('.', 1)[1]), os.path.join(log_dir, entry)))
    return [path for _n, path in sorted(rotated, reverse=True)] + ([base] if os.path.isfile(base) else [])


def format_record(line: str) -> str:
    try:
        record = json.loads(line)
    except ValueError:
        return line.rstrip('\n')
    if not isinstance(record, dict):
        return line.rstrip('\n')
    level = f' {record["level"].upper()}' if record.get('level') else ''
    kind = record.get('type')
    message = record.get('message', '')
    if kind == 'output_repeated':
        message = f'(the line above {((record.get("data") or {}).get("count"))} more times)'
    elif kind not in ('output', None):
        message = f'[{kind}] {message}'
    return f'{record.get("timestamp", "")} {record.get("stream", "")}{level}: {message}'


def available_logs(log_dir: str) -> list[str]:
    if not os.path.isdir(log_dir):
        return []
    return sorted(entry[:-6] for entry in os.listdir(log_dir) if entry.endswith('.jsonl'))


def cmd_logs(ctx: Context, args: list[str]) -> int:
    log_dir = ctx.paths.logs
    lines, follow, as_json = '100', False, False
    name: str | None = None
    it = iter(args)
    for arg in it:
        if arg == '-f':
            follow = True
        elif arg == '--json':
            as_json = True
        elif arg == '-n':
            lines = next(it, '')
        elif name is None and not arg.startswith('-'):
            name = arg
        else:
            raise UsageError(f"logs: unexpected argument '{arg}'")
    if not lines.isdigit():
        raise UsageError('logs: -n takes a number of lines')
    if name is None:
        names = available_logs(log_dir)
        print('\n'.join(names) if names else f'no logs in {log_dir} yet')
        return 0
    if not LOG_NAME_RE.match(name):
        raise UsageError("logs: give a log name such as 'agent', 'hermes' or 'service-NAME'")
    name = LOG_ALIASES.get(name, name)
    if name == 'executor':
        raise HbError(
            "Executor's logs live on the Executor volume, which is never mounted into the agent; "
            f'read them on the host (docker logs tx9-{ctx.box}-executor)'
        )
    files = log_files(log_dir, name)
    if not files:
        raise HbError(
            f'no log named {name} in {log_dir}; available: {", ".join(available_logs(log_dir)) or "none yet"}'
        )
    render: Callable[[str], str] = (lambda line: line.rstrip('\n')) if as_json else format_record
    wanted = int(lines)
    tail: list[str] = []
    for path in files:
        with open(path, encoding='utf-8', errors='replace') as f:
            for line in f:
                tail.append(line)
                if len(tail) > wanted:
                    tail.pop(0)
    for line in tail:
        print(render(line))
    if follow:
        follow_log(os.path.join(log_dir, f'{name}.jsonl'), render)
    return 0


def follow_log(path: str, render: Callable[[str], str]) -> None:
    """Print lines appended to path (across rotations) until interrupted."""
    signal.signal(signal.SIGTERM, lambda *args: sys.exit(0))
    handle: TextIO | None = None
    inode: int | None = None
    try:
        while True:
            try:
                info = os.stat(path)
            except FileNotFoundError:
                info = None
            if info is not None and info.st_ino != inode:
                if handle is not None:
                    for line in handle:
                        print(render(line), flush=True)
                    handle.close()
                handle = open(path, encoding='utf-8', errors='replace')  # pylint: disable=consider-using-with
                if inode is None:
                    handle.seek(0, os.SEEK_END)
                inode = info.st_ino
            if handle is not None:
                for line in handle:
                    print(render(line), flush=True)
            time.sleep(0.5)
    except KeyboardInterrupt:
        return
    finally:
        if handle is not None:
            handle.close()
