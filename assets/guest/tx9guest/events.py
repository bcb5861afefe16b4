# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""`hb events`: the durable logs and the tools' histories of this volume as one list of events.

Prints one JSON object as its last line: `events` (oldest first, the newest
`--limit` the filters keep), `skipped` (lines and rows that could not be
read) and `partial` (what was read only in part, and why). Each event has
`time` (UTC, milliseconds, Z), `source`, `level`, `message` and `origin`
(tx9-log, codex-session, claude-session, hermes-history), plus what its
origin knows (stream, type, data; kind, role, session, model, file). Every
message passes the log redaction and the box token is replaced, so an event
never carries a secret the durable logs would not.

The host runs it in each container against that container's own volume
(tx9_logs): the agent's for everything but `executor`, the Executor's for
`executor`.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any

from .errors import UsageError
from .eventquery import (
    LEVELS,
    MAX_LIMIT,
    NATIVE_SOURCES,
    SOURCE_RE,
    Collector,
    Query,
    json_lines,
    level_of,
    parse_time,
    read_newest_first,
)
from .history import read_claude, read_codex, read_hermes
from .logview import available_logs, log_files
from .redact import Redactor
from .settings import agent_ids
from .supervise import run_as_agent

if TYPE_CHECKING:
    from .context import Context

MAX_DATA = 2000
USAGE = 'events [--source S]... [--since TIME] [--contains TEXT] [--level LEVEL] [--limit N]'


def parse_events_args(args: list[str]) -> Query:
    """A Query from the command line; anything malformed is a UsageError."""
    options: dict[str, Any] = {'sources': [], 'since': None, 'contains': None, 'level': 'debug', 'limit': 200}
    it = iter(args)
    for arg in it:
        name, sep, value = arg.partition('=')
        if name not in ('--source', '--since', '--contains', '--level', '--limit'):
            raise UsageError(f"events: unexpected argument '{arg}'; usage: hb {USAGE}")
        if not sep:
            following = next(it, None)
            if following is None:
                raise UsageError(f'events: {name} needs a value')
            value = following
        options_set(options, name, value)
    return Query(options['sources'] or None, options['since'], options['contains'], options['level'], options['limit'])


def options_set(options: dict[str, Any], name: str, value: str) -> None:
    if name == '--source':
        if not SOURCE_RE.match(value):
            raise UsageError(
                f"events: no source '{value}'; give agent, executor, hermes, codex, claude or service-NAME"
            )
        options['sources'].append(value)
    elif name == '--since':
        options['since'] = parse_time(value)
        if options['since'] is None:
            raise UsageError('events: --since takes an ISO 8601 time such as 2026-07-04T12:00:00Z')
    elif name == '--contains':
        options['contains'] = value
    elif name == '--level':
        if value not in LEVELS:
            raise UsageError(f'events: --level takes one of {", ".join(LEVELS)}')
        options['level'] = value
    elif not value.isdigit() or not 1 <= int(value) <= MAX_LIMIT:
        raise UsageError(f'events: --limit takes a number from 1 to {MAX_LIMIT}')
    else:
        options['limit'] = int(value)


def read_durable(log_dir: str, collector: Collector) -> None:
    """The tx9 logs (SOURCE.jsonl and its rotations) of the sources the query wants, newest file first."""
    for source in available_logs(log_dir):
        if not SOURCE_RE.match(source) or not collector.query.wants(source):
            continue
        files: list[tuple[float, str]] = []
        for path in reversed(log_files(log_dir, source)):
            try:
                files.append((os.lstat(path).st_mtime, path))
            except OSError:
                continue
        # Called before the next source is looked at, so the lambda reads this one.
        read_newest_first(files, collector, lambda path, _mtime: read_log_file(path, source, collector))


def read_log_file(path: str, source: str, collector: Collector) -> None:
    for record in json_lines(path, collector, source):
        seconds = parse_time(record.get('timestamp'))
        message = record.get('message')
        if seconds is None or not isinstance(message, str):
            collector.skipped += 1
            continue
        data = record.get('data')
        if not isinstance(data, dict) or len(json.dumps(data)) > MAX_DATA:
            data = None
        collector.add(
            seconds,
            source,
            level_of(record.get('level')),
            message,
            origin='tx9-log',
            stream=_word(record.get('stream')),
            type=_word(record.get('type')),
            data=data,
        )


def _word(value: object) -> str | None:
    return value[:40] if isinstance(value, str) else None


def collect(ctx: Context, query: Query) -> dict[str, Any]:
    """The query's result over this container's volume."""
    secrets = [ctx.token] if ctx.token else []
    collector = Collector(query, Redactor(extra=secrets))
    read_durable(ctx.paths.logs, collector)
    if query.wants('codex'):
        read_codex(ctx.paths.codex_home, collector)
    if query.wants('claude'):
        read_claude(ctx.paths.claude_dir, collector)
    if query.wants('hermes'):
        read_hermes(ctx.paths.hermes_home, collector)
    result = collector.result()
    for secret in secrets:
        text = json.dumps(result, ensure_ascii=False)
        escaped = json.dumps(secret, ensure_ascii=False)[1:-1]
        if escaped in text:
            result = json.loads(text.replace(escaped, '[REDACTED]'))
    return result


def cmd_events(ctx: Context, args: list[str]) -> int:
    query = parse_events_args(args)
    natives = any(query.wants(source) for source in NATIVE_SOURCES)
    if natives and os.geteuid() == 0 and agent_ids():
        # SQLite may leave sidecar files behind; they must stay the agent's, as Hermes' own are.
        return run_as_agent(ctx, 'events', args)
    print(json.dumps(collect(ctx, query), ensure_ascii=False))
    sys.stdout.flush()
    return 0
