# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hermes' state: the SQLite checkpoint and integrity check, and the manifest."""

import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys

import pytest

from tx9guest import quiesce, state, tools

ROWS = 400


# A Hermes-style writer: WAL mode, no automatic checkpoint, rows committed to
# the WAL, then the connection stays open (optionally inside a transaction).
WRITER = '''
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA journal_mode=WAL")
conn.execute("PRAGMA wal_autocheckpoint=0")
conn.execute("CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY, body TEXT)")
conn.execute("BEGIN")
for i in range(int(sys.argv[2])):
    conn.execute("INSERT INTO messages (body) VALUES (?)", ("x" * 200,))
conn.execute("COMMIT")
if sys.argv[3] == "hold-transaction":
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO messages (body) VALUES ('pending')")
print("ready", flush=True)
time.sleep(120)
'''


@pytest.fixture
def writer(tmp_path):
    started = []

    def start(path, mode='idle'):
        proc = subprocess.Popen([sys.executable, '-c', WRITER, path, str(ROWS), mode], stdout=subprocess.PIPE, text=True)
        started.append(proc)
        assert proc.stdout.readline().strip() == 'ready'
        return proc

    yield start
    for proc in started:
        proc.kill()
        proc.wait()


def copy_without_sidecars(path, tmp_path):
    """What a backup archives: the database file alone (sidecars are left out)."""
    copy = str(tmp_path / 'copy.db')
    shutil.copyfile(path, copy)
    return copy


def inspect(path):
    conn = sqlite3.connect(path)
    try:
        integrity = conn.execute('PRAGMA integrity_check').fetchall()
        try:
            count = conn.execute('SELECT count(*) FROM messages').fetchone()[0]
        except sqlite3.OperationalError:
            count = None
        return integrity, count
    finally:
        conn.close()


def hermes_db(ctx, name='state.db'):
    os.makedirs(ctx.paths.hermes_home, exist_ok=True)
    return os.path.join(ctx.paths.hermes_home, name)


def damage(path):
    """Overwrite the b-tree page headers after the first page."""
    size = os.path.getsize(path)
    with open(path, 'r+b') as f:
        for offset in range(4096, size, 4096):
            f.seek(offset)
            f.write(b'\x07' * 12)


def test_checkpoint_with_a_writer_holding_the_database_leaves_a_copy_that_passes_integrity_check(box, writer, tmp_path):
    ctx = box()
    path = hermes_db(ctx)
    writer(path)
    assert os.path.getsize(path + '-wal') > 0
    assert inspect(copy_without_sidecars(path, tmp_path))[1] is None, 'before: the rows are only in the WAL'
    report = state.check_database(path, checkpoint=True)
    assert report['ok'] and report['checkpoint']['busy'] == 0 and report['integrity'] == 'ok'
    assert os.path.getsize(path + '-wal') == 0, 'TRUNCATE empties the WAL'
    assert inspect(copy_without_sidecars(path, tmp_path)) == ([('ok',)], ROWS)


def test_checkpoint_fails_with_a_sentence_when_a_transaction_stays_open(box, writer):
    ctx = box()
    path = hermes_db(ctx)
    writer(path, 'hold-transaction')
    report = state.check_database(path, checkpoint=True, tries=2, busy_seconds=0.2)
    assert not report['ok'] and report['checkpoint']['busy'] == 1 and report['checkpoint']['attempts'] == 2
    assert 'stayed busy after 2 tries' in report['problem'] and '`hb down`' in report['problem']


def test_a_damaged_database_fails_the_integrity_check(box):
    ctx = box()
    path = hermes_db(ctx)
    conn = sqlite3.connect(path)
    conn.execute('CREATE TABLE t (x TEXT)')
    conn.executemany('INSERT INTO t VALUES (?)', [('y' * 500,)] * 200)
    conn.commit()
    conn.close()
    damage(path)
    report = state.check_database(path, checkpoint=False)
    assert not report['ok'] and report['problem']


def test_databases_are_found_without_following_symlinks_or_entering_venvs_and_caches(box, tmp_path):
    ctx = box()
    good = hermes_db(ctx, 'state.db')
    sqlite3.connect(good).execute('CREATE TABLE t (x)').connection.close()
    nested = os.path.join(ctx.paths.hermes_home, 'profiles', 'p1')
    os.makedirs(nested)
    shutil.copyfile(good, os.path.join(nested, 'sessions.sqlite'))
    for skipped in ('.venv', 'node_modules', '__pycache__'):
        os.makedirs(os.path.join(ctx.paths.hermes_home, skipped))
        shutil.copyfile(good, os.path.join(ctx.paths.hermes_home, skipped, 'x.db'))
    outside = tmp_path / 'outside'
    outside.mkdir()
    shutil.copyfile(good, str(outside / 'other.db'))
    os.symlink(str(outside), os.path.join(ctx.paths.hermes_home, 'linked'))
    os.symlink(good, os.path.join(ctx.paths.hermes_home, 'alias.db'))
    with open(os.path.join(ctx.paths.hermes_home, 'notes.db'), 'w') as f:
        f.write('not sqlite')
    found = [os.path.relpath(p, ctx.paths.hermes_home) for p in state.find_databases(ctx.paths.hermes_home)]
    assert found == ['state.db', 'profiles/p1/sessions.sqlite']


def test_verify_state_prints_a_json_report_last_and_exits_by_the_result(box, writer, capsys):
    ctx = box()
    path = hermes_db(ctx)
    writer(path)
    assert state.cmd_verify_state(ctx, ['--checkpoint']) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report['ok'] is True and report['checkpoint'] is True and report['quiesced'] is False
    assert [d['path'] for d in report['databases']] == ['state.db']
    assert report['databases'][0]['checkpoint']['busy'] == 0
    damage(path)
    assert state.cmd_verify_state(ctx, []) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out.strip().splitlines()[-1])['ok'] is False
    assert captured.err.startswith('hb verify-state: ')


def test_verify_state_with_no_databases_succeeds(box, capsys):
    assert state.cmd_verify_state(box(), ['--checkpoint']) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])['databases'] == []


def test_write_manifest_writes_box_image_tools_and_time_on_data(box, monkeypatch, capsys):
    ctx = box(TX9_IMAGE='tx9-box:0.1.0')
    monkeypatch.setattr(tools, 'all_versions', lambda names: dict(
        (n, ('1.2.3', None) if n != 'hermes' else (None, 'not installed')) for n in names))
    quiesce.cmd_down(ctx, ['--by', 'backup'])
    capsys.readouterr()
    assert state.cmd_write_manifest(ctx, []) == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    with open(ctx.paths.manifest) as f:
        manifest = json.load(f)
    assert manifest == printed
    assert ctx.paths.manifest.endswith('/.config/hermes-box/manifest.json')
    assert stat.S_IMODE(os.stat(ctx.paths.manifest).st_mode) == 0o600
    assert manifest['box'] == 'demo' and manifest['image'] == 'tx9-box:0.1.0'
    assert manifest['tools']['claude'] == '1.2.3' and manifest['tools']['hermes'] is None
    assert manifest['quiesced_by'] == 'backup' and manifest['written_at'].endswith('Z')


def test_write_manifest_without_an_image_variable_records_null(box, monkeypatch, capsys):
    monkeypatch.setattr(tools, 'all_versions', lambda names: dict((n, (None, 'x')) for n in names))
    ctx = box()
    state.cmd_write_manifest(ctx, [])
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])['image'] is None
