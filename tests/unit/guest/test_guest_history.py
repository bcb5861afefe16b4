# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tools' own histories as events: Codex and Claude Code sessions, Hermes' SQLite history."""

import json
import os
import sqlite3
import threading

import pytest

from tx9guest import eventquery

from conftest import TOKEN

CODEX_SESSION = [
    {'timestamp': '2026-07-04T12:00:00.000Z', 'type': 'session_meta',
     'payload': {'id': 'c0dex-1', 'cwd': '/data/home/agent', 'cli_version': '0.171.0'}},
    {'timestamp': '2026-07-04T12:00:01.000Z', 'type': 'response_item',
     'payload': {'type': 'message', 'role': 'user', 'content': [{'type': 'input_text', 'text': 'list the files'}]}},
    {'timestamp': '2026-07-04T12:00:01.000Z', 'type': 'event_msg',
     'payload': {'type': 'user_message', 'message': 'list the files'}},
    {'timestamp': '2026-07-04T12:00:02.000Z', 'type': 'response_item',
     'payload': {'type': 'function_call', 'name': 'shell', 'arguments': '{"command": ["ls"]}', 'call_id': 'c1'}},
    {'timestamp': '2026-07-04T12:00:03.000Z', 'type': 'response_item',
     'payload': {'type': 'function_call_output', 'call_id': 'c1', 'output': 'README.md'}},
    {'timestamp': '2026-07-04T12:00:04.000Z', 'type': 'event_msg',
     'payload': {'type': 'error', 'message': 'stream disconnected'}},
    {'timestamp': '2026-07-04T12:00:05.000Z', 'type': 'event_msg', 'payload': {'type': 'token_count', 'info': {}}},
]
CLAUDE_SESSION = [
    {'type': 'summary', 'summary': 'Listing files', 'leafUuid': 'u2'},
    {'type': 'user', 'timestamp': '2026-07-04T13:00:00.000Z', 'sessionId': 'cl-1', 'uuid': 'u1',
     'message': {'role': 'user', 'content': 'what is here?'}},
    {'type': 'assistant', 'timestamp': '2026-07-04T13:00:01.000Z', 'sessionId': 'cl-1', 'uuid': 'u2',
     'message': {'role': 'assistant', 'model': 'claude-test', 'content': [
         {'type': 'thinking', 'thinking': 'private'}, {'type': 'text', 'text': 'Let me look.'},
         {'type': 'tool_use', 'id': 't1', 'name': 'Bash', 'input': {'command': 'ls'}}]}},
    {'type': 'user', 'timestamp': '2026-07-04T13:00:02.000Z', 'sessionId': 'cl-1', 'uuid': 'u3',
     'message': {'role': 'user', 'content': [{'type': 'tool_result', 'tool_use_id': 't1', 'is_error': True,
                                              'content': 'ls: permission denied'}]}},
    {'type': 'file-history-snapshot', 'messageId': 'u3'},
]


def write_jsonl(path, records, corrupt=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    lines = [json.dumps(r) for r in records]
    if corrupt is not None:
        lines.insert(corrupt, '{"type": "response_item", "payload": {')
    with open(path, 'w') as f:
        f.write(''.join(line + '\n' for line in lines))
    return path


def codex_path(ctx, name='rollout-2026-07-04T12-00-00-c0dex-1.jsonl'):
    return os.path.join(ctx.paths.codex_home, 'sessions', '2026', '07', '04', name)


def claude_path(ctx, name='cl-1.jsonl'):
    return os.path.join(ctx.paths.claude_dir, 'projects', '-data-home-agent', name)


HERMES_SCHEMA = '''
CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, model TEXT, started_at REAL NOT NULL);
CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL, content TEXT, tool_name TEXT, timestamp REAL NOT NULL);
'''


def hermes_db(ctx, rows, wal=True):
    os.makedirs(ctx.paths.hermes_home, exist_ok=True)
    path = os.path.join(ctx.paths.hermes_home, 'state.db')
    conn = sqlite3.connect(path)
    if wal:
        conn.execute('PRAGMA journal_mode=WAL')
    conn.executescript(HERMES_SCHEMA)
    conn.execute("INSERT INTO sessions VALUES ('h-1', 'telegram', 'hermes-model', 1783170000)")
    conn.executemany('INSERT INTO messages (session_id, role, content, tool_name, timestamp) VALUES (?, ?, ?, ?, ?)',
                     rows)
    conn.commit()
    conn.close()
    return path


def events(run_hb, ctx, *args):
    code, out, err = run_hb(ctx, 'events', *args)
    assert code == 0, err
    return json.loads(out.strip().splitlines()[-1])


def test_a_codex_session_comes_back_as_events_and_its_corrupt_line_is_counted(box, run_hb):
    ctx = box()
    path = write_jsonl(codex_path(ctx), CODEX_SESSION, corrupt=2)
    result = events(run_hb, ctx, '--source', 'codex')
    assert [(e['message'], e['level']) for e in result['events']] == [
        ('session c0dex-1 in /data/home/agent', 'info'),
        ('list the files', 'info'),
        ('[call shell] {"command": ["ls"]}', 'info'),
        ('[output] README.md', 'info'),
        ('stream disconnected', 'error'),
    ]
    first = result['events'][1]
    assert first['origin'] == 'codex-session' and first['role'] == 'user' and first['session'] == 'c0dex-1'
    assert first['kind'] == 'response_item/message' and first['file'] == path
    assert result['skipped'] == 1


def test_an_older_codex_session_without_envelopes_is_read_too(box, run_hb):
    ctx = box()
    write_jsonl(codex_path(ctx, 'rollout-old.jsonl'), [
        {'id': 'legacy-1', 'timestamp': '2025-05-01T10:00:00Z', 'instructions': None},
        {'type': 'message', 'role': 'assistant', 'content': [{'type': 'output_text', 'text': 'done'}]},
        {'record_type': 'state'}])
    result = events(run_hb, ctx, '--source', 'codex')
    assert [e['message'] for e in result['events']] == ['session legacy-1 in ?', 'done']
    assert result['events'][1]['time'] == '2025-05-01T10:00:00.000Z', 'a record without a time takes the last one'


def test_a_claude_code_session_comes_back_with_tool_errors_as_errors_and_untimed_records_at_the_files_time(
        box, run_hb):
    ctx = box()
    write_jsonl(claude_path(ctx), CLAUDE_SESSION, corrupt=3)
    result = events(run_hb, ctx, '--source', 'claude')
    assert [(e['message'], e['level'], e.get('role')) for e in result['events']] == [
        ('what is here?', 'info', 'user'),
        ('Let me look.\n[tool Bash] {"command": "ls"}', 'info', 'assistant'),
        ('[result] ls: permission denied', 'error', 'user'),
        ('Listing files', 'info', None),
    ]
    assert result['events'][1]['model'] == 'claude-test' and result['events'][1]['session'] == 'cl-1'
    assert 'private' not in json.dumps(result)
    assert result['skipped'] == 1


def test_hermes_messages_come_back_from_its_database(box, run_hb):
    ctx = box()
    hermes_db(ctx, [('h-1', 'user', 'hello hermes', None, 1783170001.5),
                    ('h-1', 'tool', 'sunny', 'weather', 1783170002.0),
                    ('h-1', 'assistant', 'It is sunny.', None, 1783170003.0)])
    result = events(run_hb, ctx, '--source', 'hermes')
    assert [e['message'] for e in result['events']] == ['hello hermes', '[weather] sunny', 'It is sunny.']
    assert result['events'][0] == {'time': '2026-07-04T13:00:01.500Z', 'source': 'hermes', 'level': 'info',
                                   'message': 'hello hermes', 'origin': 'hermes-history', 'kind': 'message',
                                   'role': 'user', 'session': 'h-1', 'platform': 'telegram', 'model': 'hermes-model'}
    assert result['skipped'] == 0


def test_hermes_rows_respect_since_contains_and_limit(box, run_hb):
    ctx = box()
    hermes_db(ctx, [('h-1', 'user', 'ping %d' % n, None, 1783170000 + n) for n in range(50)])
    result = events(run_hb, ctx, '--source', 'hermes', '--since', '2026-07-04T13:00:10Z', '--contains', 'PING 1',
                    '--limit', '3')
    assert [e['message'] for e in result['events']] == ['ping 17', 'ping 18', 'ping 19']


def test_a_locked_hermes_database_is_skipped_and_counted(box, run_hb):
    ctx = box()
    path = hermes_db(ctx, [('h-1', 'user', 'hello', None, 1783170001.0)], wal=False)
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute('BEGIN EXCLUSIVE')
    try:
        write_jsonl(claude_path(ctx), CLAUDE_SESSION[1:2])
        result = events(run_hb, ctx, '--source', 'hermes', '--source', 'claude')
    finally:
        holder.execute('ROLLBACK')
        holder.close()
    assert [e['source'] for e in result['events']] == ['claude']
    assert result['skipped'] == 1 and any('hermes' in note for note in result['partial'])


@pytest.mark.parametrize('content', [b'not a database at all' * 100, b'SQLite format 3\x00' + b'\x00' * 200])
def test_a_damaged_hermes_database_is_skipped_and_counted(box, run_hb, content):
    ctx = box()
    os.makedirs(ctx.paths.hermes_home)
    with open(os.path.join(ctx.paths.hermes_home, 'state.db'), 'wb') as f:
        f.write(content)
    result = events(run_hb, ctx, '--source', 'hermes')
    assert result['events'] == [] and result['skipped'] == 1


def test_the_hermes_database_is_only_read(box, run_hb):
    ctx = box()
    path = hermes_db(ctx, [('h-1', 'user', 'hello', None, 1783170001.0)], wal=False)
    before = os.stat(path)
    events(run_hb, ctx, '--source', 'hermes')
    after = os.stat(path)
    assert (before.st_mtime_ns, before.st_size) == (after.st_mtime_ns, after.st_size)


def test_a_level_above_info_does_not_open_the_hermes_database(box, run_hb):
    ctx = box()
    os.makedirs(ctx.paths.hermes_home)
    with open(os.path.join(ctx.paths.hermes_home, 'state.db'), 'wb') as f:
        f.write(b'garbage')
    assert events(run_hb, ctx, '--source', 'hermes', '--level', 'error') == {'events': [], 'skipped': 0, 'partial': []}


def test_older_session_files_are_not_opened_once_the_newest_fill_the_limit(box, run_hb):
    ctx = box()
    write_jsonl(codex_path(ctx, 'rollout-new.jsonl'), CODEX_SESSION[:2])
    old = write_jsonl(codex_path(ctx, 'rollout-old.jsonl'), [{'broken': True}], corrupt=0)
    os.utime(old, (1_000_000_000, 1_000_000_000))
    result = events(run_hb, ctx, '--source', 'codex', '--limit', '2')
    assert len(result['events']) == 2 and result['skipped'] == 0


def test_only_the_newest_files_of_a_source_are_read_and_that_is_said(box, run_hb, monkeypatch):
    monkeypatch.setattr(eventquery, 'MAX_FILES', 2)
    ctx = box()
    for n in range(4):
        path = write_jsonl(claude_path(ctx, 's%d.jsonl' % n), [dict(CLAUDE_SESSION[1], sessionId='s%d' % n)])
        os.utime(path, (1783170000 + n, 1783170000 + n))
    result = events(run_hb, ctx, '--source', 'claude')
    assert sorted(e['session'] for e in result['events']) == ['s2', 's3']
    assert any('newest 2 of 4' in note for note in result['partial'])


def test_session_files_behind_symlinks_are_not_read(box, run_hb, tmp_path):
    ctx = box()
    elsewhere = tmp_path / 'elsewhere'
    write_jsonl(str(elsewhere / 'x.jsonl'), CLAUDE_SESSION[1:2])
    os.makedirs(os.path.join(ctx.paths.claude_dir, 'projects'))
    os.symlink(str(elsewhere), os.path.join(ctx.paths.claude_dir, 'projects', 'linked'))
    assert events(run_hb, ctx, '--source', 'claude')['events'] == []


def test_the_token_in_a_session_is_redacted(box, run_hb):
    ctx = box()
    leaked = dict(CLAUDE_SESSION[1], message={'role': 'user', 'content': 'my token is %s ok' % TOKEN})
    write_jsonl(claude_path(ctx), [leaked])
    out = json.dumps(events(run_hb, ctx, '--source', 'claude'))
    assert TOKEN not in out and '[REDACTED]' in out


def test_deeply_nested_content_is_read_without_recursing_forever(box, run_hb):
    ctx = box()
    content = 'deep'
    for _level in range(300):
        content = [{'type': 'text', 'text': content}]
    write_jsonl(claude_path(ctx), [dict(CLAUDE_SESSION[2], message={'role': 'assistant', 'content': content})])
    result = events(run_hb, ctx, '--source', 'claude')
    assert result['skipped'] == 0


def test_a_reader_thread_does_not_block_while_hermes_writes(box, run_hb):
    ctx = box()
    path = hermes_db(ctx, [('h-1', 'user', 'before', None, 1783170001.0)])
    writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    writer.execute('BEGIN IMMEDIATE')
    writer.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('h-1', 'user', 'pending', 1783170009)")
    done = []
    reader = threading.Thread(target=lambda: done.append(events(run_hb, ctx, '--source', 'hermes')))
    reader.start()
    reader.join(10)
    writer.execute('COMMIT')
    writer.close()
    assert [e['message'] for e in done[0]['events']] == ['before'], 'a WAL reader sees the committed rows at once'
