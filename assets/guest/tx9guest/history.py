# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tools' own histories as events: Codex and Claude Code session JSONL, Hermes' SQLite history.

These files belong to the tools and change with their versions, so every
reader is tolerant: a record it does not know is passed over, a line that is
not a JSON object is skipped and counted, and a database that is locked,
damaged or of another schema is skipped and counted as one. Nothing here
writes: the database is opened read-only with a short busy timeout.

Codex:  $CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl, lines of
        {timestamp, type, payload} (older releases: bare records).
Claude: $CLAUDE_CONFIG_DIR/projects/PROJECT/SESSION.jsonl, lines of
        {type, timestamp, sessionId, message: {role, content}}.
Hermes: $HERMES_HOME/state.db, tables sessions and messages (timestamp: epoch seconds).
"""

from __future__ import annotations

import json
import os
import sqlite3
import urllib.parse
from collections.abc import Iterable
from typing import Any

from .eventquery import (
    MAX_MESSAGE,
    REDACT_MARGIN,
    Collector,
    json_lines,
    level_of,
    newest_files,
    parse_time,
    read_newest_first,
)

HERMES_DB = 'state.db'
HERMES_BUSY_TIMEOUT = 0.5
# Rows looked at per query, newest first, whatever the filters drop.
MAX_ROWS = 100000
# Codex records that repeat what a response item already says, or carry no text.
CODEX_REPEATS = ('user_message', 'agent_message', 'agent_reasoning', 'token_count')
CUT = MAX_MESSAGE + REDACT_MARGIN + 1
# How deep text is looked for in nested content blocks.
MAX_DEPTH = 8


class Clock:
    """A file's time so far: records without a time of their own take the last one seen (or the file's)."""

    def __init__(self, fallback: float) -> None:
        self.last = fallback

    def at(self, value: object) -> float:
        seconds = parse_time(value)
        if seconds is not None:
            self.last = seconds
        return self.last


def _text(value: object, depth: int = 0) -> str:
    """Readable text from a string, a list of content blocks, or a dict with text; cut to CUT characters."""
    if isinstance(value, str):
        return value[:CUT]
    if depth >= MAX_DEPTH:
        return ''
    if isinstance(value, dict):
        return _text(value.get('text') or value.get('content') or value.get('output') or '', depth + 1)
    if isinstance(value, list):
        parts = []
        size = 0
        for item in value[:200]:
            part = _text(item, depth + 1)
            if part:
                parts.append(part)
                size += len(part)
            if size >= CUT:
                break
        return '\n'.join(parts)[:CUT]
    return ''


def _short_json(value: object) -> str:
    if value in (None, '', {}):
        return ''
    try:
        return json.dumps(value, ensure_ascii=False)[:CUT]
    except (ValueError, RecursionError):
        return '[too deeply nested]'


# ---- Codex ------------------------------------------------------------------------------------


def codex_message(kind: str | None, payload: dict[str, Any]) -> tuple[str, str, Any] | None:
    """(message, level, role) of one Codex record, or None to pass it over."""
    ptype = payload.get('type')
    if kind == 'session_meta' or (kind is None and 'instructions' in payload and 'id' in payload):
        return f'session {payload.get("id", "")} in {payload.get("cwd", "?")}'.strip(), 'info', None
    if kind == 'turn_context':
        return f'turn context: model {payload.get("model", "?")}', 'info', None
    if kind == 'compacted':
        return _text(payload.get('message')), 'info', None
    if kind == 'event_msg':
        if ptype in CODEX_REPEATS:
            return None
        level = 'error' if ptype == 'error' else 'warning' if ptype == 'stream_error' else 'info'
        return _text(payload.get('message') or payload.get('text') or '') or str(ptype), level, None
    if ptype == 'message':
        return _text(payload.get('content')), 'info', payload.get('role')
    if ptype in ('function_call', 'custom_tool_call'):
        arguments = payload.get('arguments') or payload.get('input')
        return f'[call {payload.get("name", "?")}] {_text(arguments) or _short_json(arguments)}', 'info', None
    if ptype in ('function_call_output', 'custom_tool_call_output'):
        return f'[output] {_text(payload.get("output"))}', 'info', None
    if ptype == 'local_shell_call':
        return f'[shell] {_short_json((payload.get("action") or {}).get("command"))}', 'info', None
    if ptype == 'reasoning':
        return None
    return (str(ptype), 'info', None) if ptype else None


def read_codex(home: str, collector: Collector) -> None:
    root = os.path.join(home, 'sessions')
    files = newest_files(root, '.jsonl', 4, collector, 'codex')

    def read(path: str, mtime: float) -> None:
        clock = Clock(mtime)
        session = os.path.basename(path)[: -len('.jsonl')]
        for record in json_lines(path, collector, 'codex'):
            kind = record.get('type') if isinstance(record.get('payload'), dict) else None
            payload = record['payload'] if kind else record
            if kind == 'session_meta' and isinstance(payload.get('id'), str):
                session = payload['id'][:200]
            seen = codex_message(kind, payload)
            if seen is None or not seen[0]:
                clock.at(record.get('timestamp'))
                continue
            message, level, role = seen
            collector.add(
                clock.at(record.get('timestamp')),
                'codex',
                level,
                message,
                origin='codex-session',
                kind='/'.join(str(k) for k in (kind, payload.get('type')) if k),
                role=role if isinstance(role, str) else None,
                session=session,
                file=path,
            )

    read_newest_first(files, collector, read)


# ---- Claude Code --------------------------------------------------------------------------------


def claude_blocks(content: object) -> tuple[str, bool]:
    """(text, error) of a message's content: a string, or blocks of text, tool use and tool results."""
    if isinstance(content, str):
        return content[:CUT], False
    parts, error = [], False
    for block in content[:200] if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get('type')
        if kind == 'text':
            parts.append(_text(block.get('text')))
        elif kind == 'tool_use':
            parts.append(f'[tool {block.get("name", "?")}] {_short_json(block.get("input"))}')
        elif kind == 'tool_result':
            error = error or block.get('is_error') is True
            parts.append(f'[result] {_text(block.get("content"))}')
        elif kind == 'image':
            parts.append('[image]')
        if sum(len(p) for p in parts) >= CUT:
            break
    return '\n'.join(parts)[:CUT], error


def claude_message(record: dict[str, Any]) -> tuple[str, str, Any, str | None] | None:
    """(message, level, role, model) of one Claude Code record, or None to pass it over."""
    kind = record.get('type')
    if kind in ('user', 'assistant'):
        message = record.get('message')
        if not isinstance(message, dict):
            message = {}
        text, error = claude_blocks(message.get('content'))
        level = 'error' if error or record.get('isApiErrorMessage') is True else 'info'
        model = message.get('model')
        return text, level, message.get('role') or kind, model if isinstance(model, str) else None
    if kind == 'system':
        return _text(record.get('content')), level_of(record.get('level')), 'system', None
    if kind == 'summary':
        return _text(record.get('summary')), 'info', None, None
    return None


def read_claude(config_dir: str, collector: Collector) -> None:
    root = os.path.join(config_dir, 'projects')
    files = newest_files(root, '.jsonl', 3, collector, 'claude')

    def read(path: str, mtime: float) -> None:
        clock = Clock(mtime)
        for record in json_lines(path, collector, 'claude'):
            seen = claude_message(record)
            when = clock.at(record.get('timestamp'))
            if seen is None or not seen[0]:
                continue
            message, level, role, model = seen
            session = record.get('sessionId') if isinstance(record.get('sessionId'), str) else None
            collector.add(
                when,
                'claude',
                level,
                message,
                origin='claude-session',
                kind=str(record.get('type')),
                role=role if isinstance(role, str) else None,
                session=session and session[:200],
                model=model and model[:200],
                file=path,
            )

    read_newest_first(files, collector, read)


# ---- Hermes -------------------------------------------------------------------------------------

HERMES_QUERY = (
    "SELECT m.session_id, m.role, substr(CAST(coalesce(m.content, '') AS TEXT), 1, ?), m.tool_name, m.timestamp,"
    ' s.source, s.model FROM messages m LEFT JOIN sessions s ON s.id = m.session_id'
    ' WHERE m.timestamp >= ? ORDER BY m.timestamp DESC, m.id DESC'
)


def read_hermes(hermes_home: str, collector: Collector) -> None:
    """Hermes' messages, newest first; a database that cannot be read is one skipped row."""
    path = os.path.join(hermes_home, HERMES_DB)
    if not collector.query.wants_level('info') or not os.path.isfile(path) or os.path.islink(path):
        return
    uri = 'file:' + urllib.parse.quote(os.path.abspath(path)) + '?mode=ro'
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=HERMES_BUSY_TIMEOUT)
    except sqlite3.Error as e:
        collector.skipped += 1
        collector.note(f'hermes: {path} could not be opened: {e}')
        return
    try:
        conn.execute('PRAGMA query_only=1')
        rows = conn.execute(HERMES_QUERY, (CUT, collector.query.since or 0))
        _hermes_rows(rows, collector)
    except sqlite3.Error as e:
        collector.skipped += 1
        collector.note(f'hermes: {path} could not be read: {e}')
    finally:
        conn.close()


def _hermes_rows(rows: Iterable[tuple[Any, ...]], collector: Collector) -> None:
    for number, row in enumerate(rows):
        if number >= MAX_ROWS:
            collector.note(f'hermes: looked at only the newest {MAX_ROWS} messages')
            return
        session, role, content, tool, stamp, origin, model = row
        seconds = parse_time(stamp)
        if seconds is None or not isinstance(content, str):
            collector.skipped += 1
            continue
        if collector.full_after(seconds):
            return
        message = f'[{tool}] {content}' if isinstance(tool, str) and tool else content
        collector.add(
            seconds,
            'hermes',
            'info',
            message,
            origin='hermes-history',
            kind='message',
            role=role if isinstance(role, str) else None,
            session=str(session)[:200],
            platform=origin if isinstance(origin, str) else None,
            model=model[:200] if isinstance(model, str) else None,
        )
