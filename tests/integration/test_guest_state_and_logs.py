# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""State and logs in a real box: the SQLite checkpoint, the manifest, durable logs, restore-promote."""


import io
import json
import tarfile

import docker
import pytest

from guest_pair import LABELS, Box, eventually, post_initialize, unique_name

STAGE = '/data/.tx9-restore-stage'
ROWS = 500

# A Hermes-style writer: WAL mode, automatic checkpoints off, the rows
# committed (so they live in the WAL), and the connection held open.
WRITER = '''
import os, sqlite3, sys, time
path = os.path.expanduser("~/.hermes/state.db")
conn = sqlite3.connect(path, isolation_level=None)
conn.execute("PRAGMA journal_mode=WAL")
conn.execute("PRAGMA wal_autocheckpoint=0")
conn.execute("CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY, body TEXT)")
conn.execute("BEGIN")
for i in range(%d):
    conn.execute("INSERT INTO messages (body) VALUES (?)", ("m" * 300,))
conn.execute("COMMIT")
open("/tmp/writer-ready", "w").close()
time.sleep(600)
''' % ROWS

# Copies the database file alone (what a backup archives: sidecars are left
# out) and reports integrity_check and the row count of the copy.
INSPECT_COPY = '''
import os, shutil, sqlite3
path = os.path.expanduser("~/.hermes/state.db")
shutil.copyfile(path, "/tmp/copy.db")
conn = sqlite3.connect("/tmp/copy.db")
try:
    count = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
except sqlite3.OperationalError:
    count = None
print(conn.execute("PRAGMA integrity_check").fetchone()[0], count)
'''


@pytest.fixture(scope='module')
def box(built_image):
    client = docker.from_env(version='auto', timeout=120)
    pair = Box(client, built_image['tag'], agent_env={'TX9_IMAGE': built_image['tag']})
    try:
        pair.start()
        eventually(lambda: post_initialize(pair.host_port, pair.token) == 200)
        eventually(lambda: pair.status()['healthy'])
        yield pair
    finally:
        pair.remove()


def test_verify_state_checkpoint_with_a_writer_holding_a_wal_database_leaves_a_copy_that_passes_integrity_check(box):
    box.agent.exec_run(['python3', '-c', WRITER], user='agent', detach=True)
    eventually(lambda: box.run(box.agent, ['test', '-e', '/tmp/writer-ready'])[0] == 0, timeout=90)
    try:
        assert box.run(box.agent, ['python3', '-c', INSPECT_COPY]) == (0, 'ok None\n'), \
            'before the checkpoint a copy of the file alone lacks the rows that live in the WAL'
        code, out = box.hb('down', '--by', 'backup')
        assert code == 0, out
        code, out = box.hb('verify-state', '--checkpoint')
        assert code == 0, out
        report = json.loads(out.strip().splitlines()[-1])
        assert report['ok'] and report['quiesced'] and report['databases'][0]['path'] == 'state.db'
        assert report['databases'][0]['checkpoint']['busy'] == 0
        assert box.run(box.agent, ['python3', '-c', INSPECT_COPY]) == (0, 'ok %d\n' % ROWS)
    finally:
        box.run(box.agent, ['pkill', '-f', 'wal_autocheckpoint'], user='root')
        box.hb('up', '--if-by', 'backup')


def test_write_manifest_records_the_box_image_and_tool_versions_on_data(box):
    code, out = box.hb('write-manifest')
    assert code == 0, out
    code, text = box.run(box.agent, ['cat', '/data/home/agent/.config/hermes-box/manifest.json'])
    manifest = json.loads(text)
    assert manifest == json.loads(out.strip().splitlines()[-1])
    assert manifest['box'] == box.name and manifest['image'] == box.agent_env['TX9_IMAGE']
    for tool in ('claude', 'codex', 'hermes', 'executor', 'node'):
        assert manifest['tools'][tool][0].isdigit(), manifest['tools']


def test_the_loops_own_output_is_kept_in_the_agent_log_on_the_agent_volume(box):
    code, out = box.run(box.agent, ['cat', '/data/logs/agent.jsonl'])
    assert code == 0, out
    records = [json.loads(line) for line in out.splitlines()]
    assert any(r['message'].startswith('hb-workload: started as agent') for r in records)
    assert all(r['schema'] == 'tx9.event.v1' and r['source'] == 'agent' and r['box'] == box.name for r in records)
    assert box.token not in out
    code, out = box.hb('logs', 'workload', '-n', '50')
    assert code == 0 and 'hb-workload: started as agent' in out


def test_the_executors_logs_are_kept_redacted_on_the_executor_volume_and_never_in_the_agent(box):
    def executor_log():
        code, out = box.run(box.executor, ['cat', '/data/logs/executor.jsonl'], user='root')
        return out if code == 0 and 'Executor is up on port 4788' in out else None

    out = eventually(executor_log, timeout=180)
    records = [json.loads(line) for line in out.splitlines()]
    assert {r['source'] for r in records} == {'executor'}
    assert box.token not in out
    assert box.run(box.agent, ['test', '-e', '/data/logs/executor.jsonl'])[0] == 1
    code, out = box.hb('logs', 'executor')
    assert code == 1 and 'Executor volume' in out
    code, out = box.run(box.executor, ['ps', '-eo', 'args'], user='root')
    assert 'tx9-logs capture --source executor' in out and box.token not in out


def test_hb_logs_lists_the_logs_of_the_agent_volume(box):
    code, out = box.hb('logs')
    assert code == 0 and 'agent' in out.split()


# --------------------------------------------------------------------------
# restore-promote in a throwaway container, then a box on the restored volume


def staged_backup(with_home=True):
    """A tar for `put_archive` into the staging directory: what an extracted backup holds."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode='w') as tar:
        def add(name, data=None, kind=tarfile.REGTYPE, mode=0o644, link='', uid=1001):
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.uid, info.gid, info.linkname = kind, mode, uid, uid, link
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)

        add('home', kind=tarfile.DIRTYPE, mode=0o755, uid=0)
        if with_home:
            add('home/agent', kind=tarfile.DIRTYPE, mode=0o755)
            add('home/agent/notes.md', b'restored notes\n')
            add('home/agent/escape', kind=tarfile.SYMTYPE, link='/etc/passwd', mode=0o777)
            for path in ('home/agent/.config', 'home/agent/.config/hermes-box', 'home/agent/.config/hermes-box/services.d'):
                add(path, kind=tarfile.DIRTYPE, mode=0o700)
            add('home/agent/.config/hermes-box/services.d/ticker', b'#!/bin/sh\nwhile true; do sleep 1; done\n',
                mode=0o755)
        add('logs', kind=tarfile.DIRTYPE, mode=0o700)
        add('logs/agent.jsonl', b'{}\n', mode=0o600)
    return buffer.getvalue()


def stage_directory():
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode='w') as tar:
        info = tarfile.TarInfo(STAGE.rsplit('/', 1)[1])
        info.type, info.mode = tarfile.DIRTYPE, 0o700
        tar.addfile(info)
    return buffer.getvalue()


def promote(client, image, volume, payload):
    """Run hb restore-promote the way an import does: root, no network, no new privileges; (exit code, logs)."""
    api = client.api
    host_config = api.create_host_config(binds={volume: {'bind': '/data', 'mode': 'rw'}}, network_mode='none',
                                         security_opt=['no-new-privileges'])
    helper = api.create_container(image, name=volume + '-restore', user='root', labels=LABELS, host_config=host_config,
                                  entrypoint=['/opt/tx9/bin/hb', 'restore-promote', STAGE])['Id']
    try:
        api.put_archive(helper, '/data', stage_directory())
        api.put_archive(helper, STAGE, payload)
        api.start(helper)
        code = api.wait(helper, timeout=300)['StatusCode']
        return code, api.logs(helper).decode('utf-8', 'replace')
    finally:
        api.remove_container(helper, force=True)


@pytest.fixture
def volume():
    client = docker.from_env(version='auto', timeout=120)
    name = unique_name() + '-agent-data'
    client.volumes.create(name, labels=LABELS)
    yield client, name
    try:
        client.volumes.get(name).remove(force=True)
    except docker.errors.NotFound:
        pass


def test_restore_promote_refuses_a_backup_without_an_agent_home_and_says_so(built_image, volume):
    client, name = volume
    code, logs = promote(client, built_image['tag'], name, staged_backup(with_home=False))
    assert code == 1 and 'hb restore-promote: refused: the staged agent home' in logs


def test_a_restored_box_arrives_quiesced_with_its_gateway_disabled_and_is_wired_while_quiesced(built_image, volume):
    client, name = volume
    code, logs = promote(client, built_image['tag'], name, staged_backup())
    assert code == 0, logs
    assert 'quiesced (by import) with its gateway disabled' in logs
    pair = Box(client, built_image['tag'], name=name[:-len('-agent-data')], agent_volume=name)
    try:
        pair.start()
        eventually(lambda: post_initialize(pair.host_port, pair.token) == 200)
        status = eventually(lambda: pair.status()['healthy'] and pair.status())
        assert status['quiesced_by'] == 'import' and status['gateway_disabled'] is True
        assert status['wiring']['current'], 'the loop wired the new token although the box is quiesced'
        assert status['services'] == {'defined': 1, 'running': 0, 'gave_up': [], 'ignored': 0}
        assert pair.run(pair.agent, ['cat', '/data/home/agent/notes.md']) == (0, 'restored notes\n')
        code, out = pair.run(pair.agent, ['stat', '-c', '%U %a', '/data', '/data/home/agent', '/data/logs'], user='root')
        assert out.split('\n')[:3] == ['root 711', 'agent 755', 'agent 700'], out
        assert pair.run(pair.agent, ['stat', '-c', '%U', '/etc/passwd'], user='root') == (0, 'root\n')
        assert pair.run(pair.agent, ['test', '-e', STAGE], user='root')[0] == 1
        code, out = pair.hb('up', '--if-by', 'import')
        assert code == 0, out
        assert eventually(lambda: pair.status()['services']['running'] == 1, timeout=60)
        assert pair.status()['gateway']['state'] == 'disabled', 'resuming never enables the gateway'
    finally:
        pair.remove()
