# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Operating a real box through real plays: tx9_logs, tx9_gateway and tx9_doctor.

One box, made by tx9_box, serves every test in file order. The gateway cannot
reach a chat platform here, so the gateway tests give the box a stand-in
gateway command (TX9_GATEWAY_ARGV in the agent container's /etc/tx9-box.env,
which hb reads afresh on every command and loop pass): a process hb starts,
supervises and stops exactly as it would `hermes gateway run`. The doctor
tests stop the Executor container last.
"""


import datetime
import hashlib
import json
import os
import shlex
import stat
import tarfile
import time
import uuid

import pytest

from conftest import box_token, remove_boxes
from guest_pair import eventually

HOME = '/data/home/agent'
HERMES_PYTHON = '/opt/tx9/hermes/bin/python3'
SERVICES = HOME + '/.config/hermes-box/services.d'
MARK = 'on port 4788'
STAND_IN = 'tx9-test-gateway'
GATEWAY_ARGV = ['python3', '-u', '-c', 'import time; print("stand-in gateway up", flush=True); time.sleep(86400)',
                STAND_IN]
WEB_SERVICE = '''#!/bin/sh
echo "ERROR web: tx9-it failure while starting"
n=0
while true; do
  n=$((n + 1))
  echo "web: tick $n, waiting for Executor %s"
  sleep 1
done
''' % MARK
WRITE_FILE = 'import os, sys\nos.makedirs(os.path.dirname(sys.argv[1]), exist_ok=True)\nopen(sys.argv[1], "w").write(sys.argv[2])'
WRITE_HERMES_ROW = r'''
import sys
from hermes_state import SessionDB
db = SessionDB()
db.create_session('tx9-it-ops', 'cli', model='tx9-it-model')
db.append_message('tx9-it-ops', 'user', content=sys.argv[1])
db.close()
'''
CORRUPT = '{"type": "response_item", "payload": {"type": "message", "content": [{"type": "inp'


@pytest.fixture(scope='module')
def box(built_image, playbooks, client):
    name = 'ops%s' % uuid.uuid4().hex[:6]
    try:
        result = playbooks.module('tx9_box', dict(name=name, image=built_image['tag']))
        assert not result.get('failed'), result
        yield name
    finally:
        playbooks.module('tx9_box', dict(name=name, state='absent'))
        remove_boxes(client, name)


def in_box(client, box, argv, user='agent', role='agent'):
    result = client.containers.get('tx9-%s-%s' % (box, role)).exec_run(argv, user=user, environment=dict(HOME=HOME))
    output = result.output.decode('utf-8', 'replace')
    assert result.exit_code == 0, '%s exited %d:\n%s' % (argv[:3], result.exit_code, output[-2000:])
    return output


def write_in_box(client, box, path, content):
    in_box(client, box, ['python3', '-c', WRITE_FILE, path, content])


def logs(playbooks, box, **args):
    result = playbooks.module('tx9_logs', dict(args, name=box))
    assert not result.get('failed'), result
    return result


def iso(moment):
    return moment.strftime('%Y-%m-%dT%H:%M:%S.') + '%03dZ' % (moment.microsecond // 1000)


def now():
    return datetime.datetime.now(datetime.timezone.utc)


def test_a_service_event_and_an_executor_event_come_back_filtered_by_sources_since_and_contains(playbooks, client, box):
    write_in_box(client, box, SERVICES + '/web', WEB_SERVICE)
    in_box(client, box, ['chmod', '0755', SERVICES + '/web'])
    in_box(client, box, ['hb', 'services-reload'])
    query = dict(sources=['service-web', 'executor'], since='10m', contains=MARK.upper())

    def both_sources():
        result = logs(playbooks, box, **query)
        return result if {e['source'] for e in result['events']} == {'service-web', 'executor'} else None

    found = eventually(both_sources, timeout=60)
    assert all(MARK in e['message'].lower() for e in found['events'])
    assert any('Executor is up on port 4788' in e['message'] for e in found['events'] if e['source'] == 'executor')
    assert all(e['origin'] == 'tx9-log' for e in found['events'])

    executor_last = max(e['time'] for e in found['events'] if e['source'] == 'executor')
    later = datetime.datetime.strptime(executor_last, '%Y-%m-%dT%H:%M:%S.%fZ') + datetime.timedelta(milliseconds=1)
    since = iso(later.replace(tzinfo=datetime.timezone.utc))
    time.sleep(2)
    query['since'] = since
    newer = logs(playbooks, box, **query)
    assert newer['events'] and {e['source'] for e in newer['events']} == {'service-web'}
    assert all(e['time'] >= since for e in newer['events'])


def test_level_error_returns_only_errors(playbooks, box):
    result = logs(playbooks, box, level='error')
    assert result['events'], 'the web service said ERROR at its start'
    assert {e['level'] for e in result['events']} <= {'error', 'critical'}
    assert any(e['source'] == 'service-web' and 'tx9-it failure' in e['message'] for e in result['events'])


def test_codex_and_claude_sessions_and_a_hermes_row_come_back_with_corrupt_lines_counted(playbooks, client, box):
    stamp = iso(now())
    marker = uuid.uuid4().hex[:8]
    codex = [
        {'timestamp': stamp, 'type': 'session_meta', 'payload': {'id': 'it-%s' % marker, 'cwd': HOME}},
        {'timestamp': stamp, 'type': 'response_item', 'payload': {
            'type': 'message', 'role': 'user', 'content': [{'type': 'input_text', 'text': 'codex-it %s' % marker}]}},
    ]
    claude = [{'type': 'user', 'timestamp': stamp, 'sessionId': 'it-%s' % marker,
               'message': {'role': 'user', 'content': 'claude-it %s' % marker}}]
    write_in_box(client, box, HOME + '/.codex/sessions/2026/07/04/rollout-it-%s.jsonl' % marker,
                 json.dumps(codex[0]) + '\n' + CORRUPT + '\n' + json.dumps(codex[1]) + '\n')
    write_in_box(client, box, HOME + '/.claude/projects/-data-home-agent/it-%s.jsonl' % marker,
                 CORRUPT + '\n' + json.dumps(claude[0]) + '\n')
    in_box(client, box, [HERMES_PYTHON, '-c', WRITE_HERMES_ROW, 'hermes-it %s' % marker])

    result = logs(playbooks, box, sources=['codex', 'claude', 'hermes'], contains=marker)
    found = dict((e['source'], e) for e in result['events'] if marker in e['message'])
    assert found['codex']['message'] == 'codex-it %s' % marker and found['codex']['origin'] == 'codex-session'
    assert found['claude']['message'] == 'claude-it %s' % marker and found['claude']['session'] == 'it-%s' % marker
    assert found['hermes']['message'] == 'hermes-it %s' % marker and found['hermes']['origin'] == 'hermes-history'
    assert found['hermes']['session'] == 'tx9-it-ops' and found['hermes']['model'] == 'tx9-it-model'
    assert result['skipped_count'] == 2, 'one corrupt line in each session file'


def test_the_token_never_appears_in_returned_events(playbooks, client, box, state_home):
    token = box_token(state_home, box)
    write_in_box(client, box, HOME + '/.claude/projects/-data-home-agent/leak.jsonl', json.dumps(
        {'type': 'user', 'timestamp': iso(now()), 'sessionId': 'leak', 'message': {'role': 'user', 'content': 'tok ' + token}}))
    result, output = playbooks.module_with_output('tx9_logs', dict(name=box, sources=['claude'], contains='tok '), '-vvv')
    assert any(e['session'] == 'leak' for e in result['events'])
    assert token not in json.dumps(result) and token not in output


def test_the_export_bundle_is_mode_0600_holds_both_volumes_logs_and_is_never_overwritten(
        playbooks, client, box, state_home, tmp_path):
    token = box_token(state_home, box)
    write_in_box(client, box, '/data/logs/service-planted.jsonl', json.dumps(
        {'timestamp': iso(now()), 'source': 'service-planted', 'message': 'raw ' + token}) + '\n')
    path = str(tmp_path / 'bundle.tar.gz')
    result = logs(playbooks, box, export_path=path)
    assert result['changed'] is True and result['export']['path'] == path
    assert result['export']['size'] == os.stat(path).st_size
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with tarfile.open(path, 'r:gz') as bundle:
        members = dict((m.name, bundle.extractfile(m).read()) for m in bundle.getmembers() if m.isfile())
    root = 'tx9-%s-logs/' % box
    for name in ('agent/agent.jsonl', 'agent/service-web.jsonl', 'agent/service-planted.jsonl',
                 'executor/executor.jsonl', 'manifest.json'):
        assert root + name in members, sorted(members)
    assert b'Executor is up on port 4788' in members[root + 'executor/executor.jsonl']
    assert not any(token.encode() in data for data in members.values())
    assert b'raw [REDACTED]' in members[root + 'agent/service-planted.jsonl']

    digest = hashlib.sha256(open(path, 'rb').read()).hexdigest()
    again = playbooks.module('tx9_logs', dict(name=box, export_path=path))
    assert again['failed'] is True and again['cause'] == 'DEST_EXISTS'
    assert hashlib.sha256(open(path, 'rb').read()).hexdigest() == digest


def gateway(playbooks, box, *flags, **args):
    return playbooks.module('tx9_gateway', dict(args, name=box), *flags)


def stand_in_runs(client, box):
    output = in_box(client, box, ['ps', '-eo', 'args'], user='root')
    return any(STAND_IN in line and 'tx9-logs' not in line for line in output.splitlines())


def test_enabling_the_gateway_without_confirmation_is_refused(playbooks, client, box):
    line = 'TX9_GATEWAY_ARGV=%s\n' % shlex.quote(json.dumps(GATEWAY_ARGV))
    in_box(client, box, ['python3', '-c', 'import sys; open("/etc/tx9-box.env", "a").write(sys.argv[1])', line],
           user='root')
    result = gateway(playbooks, box, state='enabled')
    assert result['failed'] is True and result['cause'] == 'CONFIRMATION_REQUIRED'
    status = gateway(playbooks, box)
    assert status['changed'] is False and status['gateway']['enabled'] is False
    assert not stand_in_runs(client, box)


def test_enabling_with_confirmation_runs_the_stand_in_gateway_and_a_repeat_changes_nothing(playbooks, client, box):
    predicted = gateway(playbooks, box, '--check', state='enabled', confirm_single_writer=True)
    assert predicted['changed'] is True and predicted['gateway']['running'] is True
    assert not stand_in_runs(client, box), 'check mode starts nothing'
    result = gateway(playbooks, box, state='enabled', confirm_single_writer=True)
    assert result['changed'] is True and not result.get('failed'), result
    assert result['gateway']['enabled'] is True and result['gateway']['running'] is True
    assert result['gateway']['pid'] and result['gateway']['since']
    assert stand_in_runs(client, box)
    again = gateway(playbooks, box, state='enabled', confirm_single_writer=True)
    assert again['changed'] is False and again['gateway']['pid'] == result['gateway']['pid']


def test_disabling_stops_the_gateway_and_a_repeat_changes_nothing(playbooks, client, box):
    result = gateway(playbooks, box, state='disabled')
    assert result['changed'] is True and result['gateway']['enabled'] is False
    assert result['gateway']['running'] is False
    assert not stand_in_runs(client, box)
    assert gateway(playbooks, box, state='disabled')['changed'] is False


HOST_CHECKS = ['agent container', 'executor container', 'executor port', 'mcp handshake', 'mcp without token',
               'image version', 'agent volume', 'executor volume']


def test_doctor_on_a_healthy_box_passes_every_check(playbooks, box):
    result = playbooks.module('tx9_doctor', dict(name=box))
    assert not result.get('failed'), [c for c in result.get('checks', []) if not c['ok']]
    assert result['ok'] is True and result['failed_checks'] == [] and result['changed'] is False
    names = [c['name'] for c in result['checks']]
    assert names[:len(HOST_CHECKS)] == HOST_CHECKS
    assert {'hb executor', 'hb wiring', 'hb gateway', 'hb services', 'hb hermes state'} <= set(names)
    assert all(c['ok'] for c in result['checks'])


def test_a_stopped_executor_still_has_its_log_read_from_its_own_volume(playbooks, client, box):
    client.containers.get('tx9-%s-executor' % box).stop(timeout=10)
    result = logs(playbooks, box, sources=['executor'], contains='Executor is up')
    assert result['events'] and {e['source'] for e in result['events']} == {'executor'}


def test_doctor_after_the_executor_stops_names_the_failing_checks(playbooks, box):
    failed = playbooks.module('tx9_doctor', dict(name=box))
    assert failed['failed'] is True and failed['cause'] == 'UNHEALTHY'
    for name in ('executor container', 'executor port', 'mcp handshake', 'mcp without token', 'hb executor'):
        assert name in failed['failed_checks'], failed['failed_checks']
        assert name in failed['msg']
    assert 'agent container' not in failed['failed_checks']
    report = playbooks.module('tx9_doctor', dict(name=box, fail_on_error=False))
    assert not report.get('failed') and report['ok'] is False
    assert report['failed_checks'] == failed['failed_checks']
