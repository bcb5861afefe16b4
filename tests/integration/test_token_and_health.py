# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The box token and the boxes' health on the real engine: rotation, health checks, no token on any command line."""


import base64
import gzip
import json
import os
import tarfile
import threading
import time
import urllib.request
import uuid

import pytest

from conftest import box_token, remove_boxes
from test_box_lifecycle import mcp_status, published_port


def wait_for(predicate, seconds, step=1.0):
    deadline = time.time() + seconds
    while True:
        value = predicate()
        if value or time.time() >= deadline:
            return value
        time.sleep(step)


def health(client, container_name):
    return (client.containers.get(container_name).attrs['State'].get('Health') or {}).get('Status')


def both_healthy(client, box):
    return all(health(client, 'tx9-%s-%s' % (box, role)) == 'healthy' for role in ('agent', 'executor'))


def exec_in(client, container_name, argv, user='root'):
    result = client.containers.get(container_name).exec_run(argv, user=user)
    return result.exit_code, result.output.decode('utf-8', 'replace')


class CmdlineWatch:
    """Reads every process's command line on this host, over and over, while it runs."""

    def __init__(self, secret):
        self.secret = secret.encode()
        self.found = []
        self.daemons_seen = 0
        self.rounds = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop.is_set():
            for entry in os.listdir('/proc'):
                if not entry.isdigit():
                    continue
                try:
                    with open('/proc/%s/cmdline' % entry, 'rb') as handle:
                        line = handle.read()
                except OSError:
                    continue
                if self.secret in line:
                    self.found.append(line.replace(b'\0', b' ').decode('utf-8', 'replace'))
                if b'daemon\0run\0' in line:
                    self.daemons_seen += 1
            self.rounds += 1

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(30)


@pytest.fixture(scope='module')
def token_box(built_image, playbooks, client):
    """A box on the image under test; removed afterwards."""
    name = 'tk%s' % uuid.uuid4().hex[:6]
    created = time.time()
    result = playbooks.module('tx9_box', dict(name=name, image=built_image['tag']))
    assert result['changed'] is True and not result.get('failed'), result
    yield dict(name=name, created=created, result=result)
    playbooks.module('tx9_box', dict(name=name, state='absent'))
    remove_boxes(client, name)


def test_both_containers_turn_healthy_within_a_minute_and_tx9_info_reports_it(token_box, client, playbooks):
    name = token_box['name']
    remaining = 60 - (time.time() - token_box['created'])
    assert wait_for(lambda: both_healthy(client, name), remaining), [
        (role, health(client, 'tx9-%s-%s' % (name, role))) for role in ('agent', 'executor')]
    info = playbooks.module('tx9_info', dict(name=name))['boxes'][0]
    assert info['containers']['executor']['health'] == 'healthy'
    assert info['containers']['agent']['health'] == 'healthy'


def test_no_command_line_on_the_host_shows_the_token_over_three_executor_starts(token_box, client, state_home):
    name = token_box['name']
    token = box_token(state_home, name)
    executor = client.containers.get('tx9-%s-executor' % name)
    with CmdlineWatch(token) as watch:
        for _start in range(3):
            executor.restart(timeout=10)
            port = published_port(client, name)
            assert wait_for(lambda: mcp_status(port, token) == 200, 120), 'Executor did not come back'
    assert watch.found == []
    assert watch.daemons_seen > 0 and watch.rounds > 10, 'the watch must have seen Executor booting'
    code, processes = exec_in(client, executor.name, ['ps', '-eo', 'args'])
    assert code == 0 and token not in processes and '--auth-token' not in processes


def test_the_dashboard_still_opens_with_the_token_as_basic_password(token_box, client, state_home):
    port = published_port(client, token_box['name'])
    token = box_token(state_home, token_box['name'])
    request = urllib.request.Request('http://127.0.0.1:%s/' % port, headers={
        'Authorization': 'Basic ' + base64.b64encode(('tx9:%s' % token).encode()).decode()})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


def payload_bytes(tx9_path):
    """The uncompressed data tar of an unencrypted .tx9 archive."""
    with tarfile.open(tx9_path) as outer:
        for member in outer.getmembers():
            if member.name.startswith('data.tar'):
                return gzip.decompress(outer.extractfile(member).read())
    raise AssertionError('no payload in %s' % tx9_path)


def test_rotating_the_token_recreates_only_executor_and_the_agent_works_with_the_new_one(
        token_box, client, playbooks, state_home, tmp_path):
    name = token_box['name']
    old = box_token(state_home, name)
    agent_id = client.containers.get('tx9-%s-agent' % name).id
    executor_id = client.containers.get('tx9-%s-executor' % name).id
    check = playbooks.module('tx9_box', dict(name=name, rotate_token=True), '--check')
    assert check['changed'] is True and box_token(state_home, name) == old
    result, output = playbooks.module_with_output('tx9_box', dict(name=name, rotate_token=True), '-vvv')
    assert result['changed'] is True and not result.get('failed'), result
    new = box_token(state_home, name)
    assert new != old and new not in output and old not in output
    assert client.containers.get('tx9-%s-agent' % name).id == agent_id
    assert client.containers.get('tx9-%s-executor' % name).id != executor_id
    port = published_port(client, name)
    assert mcp_status(port, old) == 401
    assert mcp_status(port, new) == 200
    code, listed = exec_in(client, 'tx9-%s-agent' % name, ['claude', 'mcp', 'list'], user='agent')
    assert code == 0 and 'executor' in listed and 'Connected' in listed, listed
    backup = playbooks.module('tx9_backup', dict(name=name, dest=str(tmp_path), encrypt=False))
    assert not backup.get('failed'), backup
    data = payload_bytes(backup['path'])
    assert old.encode() not in data, 'the backup still carries the old token'
    assert new.encode() in data


def executor_daemon_pid(client, name):
    code, text = exec_in(client, 'tx9-%s-executor' % name,
                         ['cat', '/data/home/agent/.executor/server-control/server.json'])
    assert code == 0, text
    return str(json.loads(text)['pid'])


def test_stopping_executors_daemon_turns_it_unhealthy_and_tx9_info_says_so(token_box, client, playbooks):
    name = token_box['name']
    container = 'tx9-%s-executor' % name
    assert wait_for(lambda: health(client, container) == 'healthy', 90)
    pid = executor_daemon_pid(client, name)
    assert exec_in(client, container, ['kill', '-STOP', pid])[0] == 0
    try:
        assert wait_for(lambda: health(client, container) == 'unhealthy', 90)
        info = playbooks.module('tx9_info', dict(name=name))['boxes'][0]
        assert info['containers']['executor']['health'] == 'unhealthy'
    finally:
        exec_in(client, container, ['kill', '-CONT', pid])
    assert wait_for(lambda: health(client, container) == 'healthy', 90)

