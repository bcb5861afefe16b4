# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""`hb logs`: read the durable logs, across rotated files, and follow them."""

import json
import os
import re
import signal
import sys
import time

from .errors import HbError, UsageError

LOG_ALIASES = {'workload': 'agent', 'loop': 'agent', 'gateway': 'hermes'}
LOG_NAME_RE = re.compile(r'^[a-z0-9][a-z0-9_.-]{0,79}$')


def log_files(log_dir, name):
    """The log's files, oldest first (rotated ones, then the current one)."""
    base = os.path.join(log_dir, f'{name}.jsonl')
    rotated = []
    for entry in os.listdir(log_dir) if os.path.isdir(log_dir) else []:
        if entry.startswith(f'{name}.jsonl.') and entry.rsplit('.', 1)[1].isdigit():
            rotated.append((int(entry.rsplit('.', 1)[1]), os.path.join(log_dir, entry)))
    return [path for _n, path in sorted(rotated, reverse=True)] + ([base] if os.path.isfile(base) else [])


def format_record(line):
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


def available_logs(log_dir):
    if not os.path.isdir(log_dir):
        return []
    return sorted(entry[:-6] for entry in os.listdir(log_dir) if entry.endswith('.jsonl'))


def cmd_logs(ctx, args):
    log_dir = ctx.paths.logs
    options = {'lines': '100', 'follow': False, 'name': None, 'json': False}
    it = iter(args)
    for arg in it:
        if arg == '-f':
            options['follow'] = True
        elif arg == '--json':
            options['json'] = True
        elif arg == '-n':
            options['lines'] = next(it, '')
        elif options['name'] is None and not arg.startswith('-'):
            options['name'] = arg
        else:
            raise UsageError(f"logs: unexpected argument '{arg}'")
    if not options['lines'].isdigit():
        raise UsageError('logs: -n takes a number of lines')
    name = options['name']
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
    render = (lambda line: line.rstrip('\n')) if options['json'] else format_record
    wanted = int(options['lines'])
    tail = []
    for path in files:
        with open(path, encoding='utf-8', errors='replace') as f:
            for line in f:
                tail.append(line)
                if len(tail) > wanted:
                    tail.pop(0)
    for line in tail:
        print(render(line))
    if options['follow']:
        follow_log(os.path.join(log_dir, f'{name}.jsonl'), render)
    return 0


def follow_log(path, render):
    """Print lines appended to path (across rotations) until interrupted."""
    signal.signal(signal.SIGTERM, lambda *args: sys.exit(0))
    handle, inode = None, None
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
