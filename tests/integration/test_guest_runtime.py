# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The in-box guest runtime on a real agent + executor container pair.

Uses the box image built by the session's build fixture and creates its own
network, volumes and containers the way tx9's box module does.
"""


import json

import docker
import pytest

from guest_pair import INITIALIZE, Box, eventually, post_initialize

# Run inside the agent container: POST initialize to the executor by its
# network alias, reading the token from the container's environment so it
# never appears on a command line.
PROBE = '''
import os, sys, urllib.request, urllib.error
headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
if sys.argv[1] == "with-token":
    headers["Authorization"] = "Bearer " + os.environ["BOXD_EXECUTOR_TOKEN"]
req = urllib.request.Request("http://executor:4788/mcp", data=%r, headers=headers)
try:
    print(urllib.request.urlopen(req, timeout=5).status)
except urllib.error.HTTPError as e:
    print(e.code)
''' % INITIALIZE


@pytest.fixture(scope='module')
def box(built_image):
    client = docker.from_env(version='auto', timeout=120)
    pair = Box(client, built_image['tag'])
    try:
        pair.start()
        eventually(lambda: post_initialize(pair.host_port, pair.token) == 200)
        yield pair
    finally:
        pair.remove()


def test_executor_refuses_requests_without_the_token_and_answers_with_it(box):
    assert post_initialize(box.host_port) == 401
    assert post_initialize(box.host_port, 'wrong' + box.token) == 401
    assert post_initialize(box.host_port, box.token) == 200


def test_executor_answers_other_containers_by_its_network_alias(box):
    assert box.run(box.agent, ['python3', '-c', PROBE, 'with-token']) == (0, '200\n')
    assert box.run(box.agent, ['python3', '-c', PROBE, 'without']) == (0, '401\n')


def test_the_token_is_in_no_command_line_of_either_container(box):
    for container in (box.agent, box.executor):
        container.reload()
        attrs = container.attrs
        shown = json.dumps([attrs['Path'], attrs['Args'], attrs['Config']['Cmd'], attrs['Config']['Entrypoint']])
        assert box.token not in shown
        code, processes = box.run(container, ['ps', '-eo', 'args'], user='root')
        assert code == 0 and 'ps -eo args' in processes
        assert box.token not in processes
    code, processes = box.run(box.executor, ['ps', '-eo', 'args'], user='root')
    assert '--hostname 127.0.0.1' in processes and '--auth-token' not in processes, \
        'the daemon runs on loopback behind the front, never given the token'


def test_hb_versions_as_agent_lists_every_tool_with_a_version(box):
    code, out = box.hb('versions', '--json')
    assert code == 0, out
    versions = json.loads(out.strip().splitlines()[-1])
    for tool in ('claude', 'codex', 'hermes', 'executor'):
        assert versions[tool][0].isdigit(), versions


def test_the_workload_wires_the_box_and_status_reports_it_healthy(box):
    def healthy():
        report = box.status()
        return report if report['healthy'] else None

    report = eventually(healthy)
    assert report['executor']['mcp_ok'] and report['executor']['url'] == 'http://executor:4788/mcp'
    assert report['wiring'] == {'enabled': True, 'current': True, 'stale': []}
    assert report['gateway_disabled'] is True and report['quiesced'] is False
    code, out = box.hb('wire-once')
    assert (code, out.strip()) == (0, 'hb wire-once: wiring current')


def test_claude_code_lists_the_executor_server(box):
    code, out = box.run(box.agent, ['claude', 'mcp', 'list'])
    assert code == 0, out
    assert 'executor: http://executor:4788/mcp (HTTP)' in out


def test_hb_doctor_passes_then_names_the_executor_once_it_is_stopped(box):
    code, out = box.hb('doctor')
    assert code == 0, out
    box.executor.stop(timeout=10)
    code, out = box.hb('doctor')
    assert code != 0
    assert 'FAIL executor' in out and 'check(s) failed: executor' in out


def test_stopping_the_agent_container_ends_its_loop_with_143(box):
    box.agent.stop(timeout=10)
    assert box.agent.wait(timeout=30)['StatusCode'] == 143
