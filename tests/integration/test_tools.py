# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tx9_tools on the real engine with real npm: a Codex pin on one box, shared by the tests of this file in order
(pinned, refused twice without harm, removed)."""


import json
import uuid

import pytest

from conftest import remove_boxes, succeeded

PIN = '0.169.0'
HANG_PIN = '0.168.0'
MISSING_PIN = '0.999.999'
MARKER = '/data/home/agent/.local/share/tx9/tools/codex/.installed-openai-codex-%s.json' % PIN
NPMRC = '/data/home/agent/.npmrc'
LISTEN_PORT = 48731
# Accepts every connection and never answers: a registry that hangs.
LISTENER = ('import socket, time\n'
            's = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n'
            's.bind(("127.0.0.1", %d)); s.listen(64); held = []\n'
            'while True: held.append(s.accept()[0])\n' % LISTEN_PORT)
HANG_TIMEOUT = 5


def in_agent(client, box, argv, user='agent'):
    """(exit code, output) of argv in the agent container."""
    result = client.containers.get('tx9-%s-agent' % box).exec_run(argv, user=user)
    return result.exit_code, result.output.decode('utf-8', 'replace').strip()


def codex_versions(client, box):
    """Codex's version line as agent in a login shell and through a plain docker exec."""
    login = in_agent(client, box, ['bash', '-lc', 'codex --version'])
    plain = in_agent(client, box, ['codex', '--version'])
    assert login[0] == 0 and plain[0] == 0, (login, plain)
    return login[1].split()[-1], plain[1].split()[-1]


def npm_processes(client, box):
    code, output = in_agent(client, box, ['ps', '-eo', 'pid,args'], user='root')
    assert code == 0, output
    return [line for line in output.splitlines() if 'npm' in line and 'ps -eo' not in line]


def registry(client, box, url):
    """Point the agent's npm at url (None: the image's registry again)."""
    command = 'rm -f "$1"' if url is None else 'printf "registry=%s\\n" "$2" > "$1"'
    code, output = in_agent(client, box, ['sh', '-c', command, 'npmrc', NPMRC, url or ''])
    assert code == 0, output


def failed_with(result, cause):
    assert result.get('failed') is True, result
    assert result['cause'] == cause and result['fix'], result
    assert 'Traceback' not in result['msg'], result


@pytest.fixture(scope='module')
def tools_box(built_image, playbooks, client):
    """One running box whose Codex the tests of this file pin, refuse and unpin in turn."""
    prefix = 'it%s' % uuid.uuid4().hex[:6]
    name = prefix + '-tools'
    succeeded(playbooks.module('tx9_box', dict(name=name, image=built_image['tag'])), 'tx9_box')
    image_codex = in_agent(client, name, ['/usr/local/bin/codex', '--version'])[1].split()[-1]
    assert image_codex != PIN and image_codex != HANG_PIN
    yield dict(name=name, image_codex=image_codex)
    playbooks.module('tx9_box', dict(name=name, state='absent'))
    remove_boxes(client, prefix)


def test_a_codex_pin_answers_in_login_shells_exec_and_hb_and_a_second_run_calls_no_npm(tools_box, playbooks, client):
    box = tools_box['name']
    pinned = succeeded(playbooks.module('tx9_tools', dict(name=box, tools=dict(codex=PIN))), 'tx9_tools')
    assert pinned['changed'] is True
    assert pinned['tools']['codex'] == dict(requested=PIN, installed=PIN, source='box', package='@openai/codex',
                                            action='install')
    assert codex_versions(client, box) == (PIN, PIN)
    assert json.loads(in_agent(client, box, ['/opt/tx9/bin/hb', 'versions', '--json'])[1])['codex'] == PIN
    marker = in_agent(client, box, ['stat', '-c', '%Y %i', MARKER])
    written = json.loads(in_agent(client, box, ['cat', MARKER])[1])
    assert written == dict(tool='codex', package='@openai/codex', requested=PIN, version=PIN)
    # A registry nobody serves: a run that called npm would fail.
    registry(client, box, 'http://127.0.0.1:9/')
    try:
        again = succeeded(playbooks.module('tx9_tools', dict(name=box, tools=dict(codex=PIN))), 'tx9_tools again')
        checked = succeeded(playbooks.module('tx9_tools', dict(name=box, tools=dict(codex='0.169.1')), '--check'),
                            'tx9_tools --check')
    finally:
        registry(client, box, None)
    assert again['changed'] is False and again['tools']['codex']['action'] == 'none'
    assert again['tools']['codex']['installed'] == PIN
    assert checked['changed'] is True and checked['tools']['codex']['action'] == 'install'
    assert checked['tools']['codex']['installed'] == PIN
    assert in_agent(client, box, ['stat', '-c', '%Y %i', MARKER]) == marker
    listed = succeeded(playbooks.module('tx9_info', dict(name=box)), 'tx9_info')['boxes'][0]['tools']
    assert listed['codex'] == dict(installed=PIN, source='box', pinned=PIN, package='@openai/codex')
    assert listed['claude']['source'] == 'image' and listed['claude']['pinned'] is None


def test_an_npm_that_hangs_is_stopped_within_the_timeout_and_the_previous_pin_still_answers(
        tools_box, playbooks, client):
    box = tools_box['name']
    agent = client.containers.get('tx9-%s-agent' % box)
    agent.exec_run(['python3', '-c', LISTENER, 'tx9-it-listener'], user='agent', detach=True)
    registry(client, box, 'http://127.0.0.1:%d/' % LISTEN_PORT)
    try:
        # The module returns at all only because the time limit stopped npm, which never gets an answer.
        result = playbooks.module('tx9_tools', dict(name=box, tools=dict(codex=HANG_PIN), timeout=HANG_TIMEOUT))
    finally:
        registry(client, box, None)
        in_agent(client, box, ['pkill', '-f', 'tx9-it-listene[r]'], user='root')
    failed_with(result, 'TOOL_INSTALL_FAILED')
    assert 'the install took too long and was stopped' in result['msg'], result['msg']
    assert npm_processes(client, box) == []
    assert codex_versions(client, box) == (PIN, PIN)
    assert in_agent(client, box, ['test', '-f', MARKER])[0] == 0


def test_a_version_npm_does_not_have_fails_with_npms_words_and_keeps_the_install_and_its_marker(
        tools_box, playbooks, client):
    box = tools_box['name']
    before = in_agent(client, box, ['cat', MARKER])
    result = playbooks.module('tx9_tools', dict(name=box, tools=dict(codex=MISSING_PIN)))
    failed_with(result, 'TOOL_INSTALL_FAILED')
    assert 'No matching version found for @openai/codex@%s' % MISSING_PIN in result['msg'], result['msg']
    assert in_agent(client, box, ['cat', MARKER]) == before
    assert codex_versions(client, box) == (PIN, PIN)
    assert in_agent(client, box, ['test', '-e', '/data/home/agent/.local/share/tx9/tools/codex/.staging'])[0] != 0


def test_state_absent_returns_the_box_to_the_images_codex_and_again_changes_nothing(tools_box, playbooks, client):
    box = tools_box['name']
    image_codex = tools_box['image_codex']
    removed = succeeded(playbooks.module('tx9_tools', dict(name=box, tools=dict(codex=None), state='absent')),
                        'tx9_tools absent')
    assert removed['changed'] is True
    assert removed['tools']['codex'] == dict(requested=None, installed=image_codex, source='image',
                                             package='@openai/codex', action='remove')
    assert codex_versions(client, box) == (image_codex, image_codex)
    again = succeeded(playbooks.module('tx9_tools', dict(name=box, tools=dict(codex=None), state='absent')),
                      'tx9_tools absent again')
    assert again['changed'] is False
    listed = succeeded(playbooks.module('tx9_info', dict(name=box)), 'tx9_info')['boxes'][0]['tools']
    assert listed['codex'] == dict(installed=image_codex, source='image', pinned=None, package='@openai/codex')
