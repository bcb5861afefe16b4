# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A box's life through real playbooks on the real engine: create, no-op, change, conflict, remove."""


import base64
import contextlib
import fcntl
import io
import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from conftest import box_token, lock_held, recap

INITIALIZE = json.dumps({'jsonrpc': '2.0', 'id': 1, 'method': 'initialize', 'params': {
    'protocolVersion': '2025-03-26', 'capabilities': {}, 'clientInfo': {'name': 'tx9-test', 'version': '1'}}})


def mcp_status(port, token=None):
    """HTTP status of an MCP initialize POST to the published port on this host."""
    headers = {'Content-Type': 'application/json', 'Accept': 'application/json, text/event-stream'}
    if token:
        headers['Authorization'] = 'Bearer %s' % token
    request = urllib.request.Request('http://127.0.0.1:%s/mcp' % port, data=INITIALIZE.encode(), headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def published_port(client, box):
    container = client.containers.get('tx9-%s-executor' % box)
    return container.attrs['NetworkSettings']['Ports']['4788/tcp'][0]['HostPort']


def exec_as_agent(client, box, argv):
    result = client.containers.get('tx9-%s-agent' % box).exec_run(argv, user='agent')
    return result.exit_code, result.output.decode('utf-8', 'replace')


def create_box(playbooks, built_image, name):
    """ansible-playbook playbooks/create-box.yml for name, on the image this run built."""
    return playbooks.run('playbooks/create-box.yml', '-e', 'box_name=%s' % name, '-e', 'tx9_box_image=%s' % built_image['tag'])


@pytest.fixture(scope='module')
def readme_box(built_image, playbooks, module_prefix):
    """A box made by the create-box playbook the README tells people to run."""
    name = module_prefix + '-readme'
    proc = create_box(playbooks, built_image, name)
    yield dict(name=name, output=proc.stdout)
    playbooks.module_ok('tx9_box', dict(name=name, state='absent'))


def test_create_box_playbook_ends_with_a_running_box_whose_executor_demands_the_token(readme_box, client, state_home):
    port = published_port(client, readme_box['name'])
    assert mcp_status(port) == 401
    assert mcp_status(port, box_token(state_home, readme_box['name'])) == 200
    assert 'docker exec -it -u agent tx9-%s-agent tmux new -A -s main' % readme_box['name'] in readme_box['output']


def test_claude_inside_the_box_lists_executor_as_an_mcp_server(readme_box, client):
    code, output = exec_as_agent(client, readme_box['name'], ['claude', 'mcp', 'list'])
    assert code == 0, output
    assert 'executor' in output


def task_section(output, name):
    """What the play printed under the task whose header ends with name, up to the next task."""
    start = output.index(name + ']')
    end = output.find('TASK [', start)
    return output[start:end if end > 0 else len(output)]


def test_running_create_box_again_changes_nothing(readme_box, built_image, playbooks):
    proc = create_box(playbooks, built_image, readme_box['name'])
    assert recap(proc.stdout)['changed'] == 0
    # The host role's probe found the image labelled with these assets: no task planned it again.
    image = task_section(proc.stdout, 'Build the box image (a no-op when it is current)')
    assert 'skipping:' in image, image
    assert 'Find out whether the box image needs a build' not in proc.stdout


def test_tx9_info_lists_the_box_from_labels_after_the_state_home_is_moved_away(readme_box, playbooks, state_home):
    moved = state_home + '.moved'
    os.rename(state_home, moved)
    try:
        result = playbooks.module_ok('tx9_info', dict(name=readme_box['name']))
    finally:
        if os.path.exists(state_home):
            shutil.rmtree(state_home)
        os.rename(moved, state_home)
    assert [b['name'] for b in result['boxes']] == [readme_box['name']]
    assert result['boxes'][0]['state'] == 'running'
    assert result['boxes'][0]['drift'] is False


def test_tx9_info_with_images_lists_the_image_the_box_runs_by_its_id_and_tag(readme_box, built_image, playbooks):
    result = playbooks.module_ok('tx9_info', dict(name=readme_box['name'], images=True))
    held = dict((image['id'], image['tags']) for image in result['images'])
    assert built_image['tag'] in held[built_image['id']]
    assert result['boxes'][0]['containers']['agent']['image_id'] == built_image['id']


def test_the_four_step_check_predicts_then_makes_then_keeps_a_box(built_image, playbooks, box_prefix):
    args = dict(name=box_prefix + '-four')
    first = playbooks.module_ok('tx9_box', args, '--check')
    assert first['changed'] is True
    second = playbooks.module_ok('tx9_box', args)
    assert second['changed'] is True, second
    assert second['box']['state'] == 'running'
    third = playbooks.module_ok('tx9_box', args, '--check')
    assert third['changed'] is False, third['actions']
    fourth = playbooks.module_ok('tx9_box', args)
    assert fourth['changed'] is False, fourth['actions']


def test_changing_agent_memory_updates_the_running_container_in_place(built_image, playbooks, client, box_prefix):
    name = box_prefix + '-mem'
    playbooks.module_ok('tx9_box', dict(name=name))
    before = client.containers.get('tx9-%s-agent' % name)
    result = playbooks.module_ok('tx9_box', dict(name=name, agent_memory='1g'))
    assert result['changed'] is True, result
    after = client.containers.get('tx9-%s-agent' % name)
    assert after.id == before.id
    assert after.attrs['HostConfig']['Memory'] == 1024 ** 3
    assert after.status == 'running'


def test_changing_the_image_recreates_both_containers_and_keeps_files_and_token(
        built_image, playbooks, client, box_prefix, state_home):
    name = box_prefix + '-img'
    playbooks.module_ok('tx9_box', dict(name=name))
    token = box_token(state_home, name)
    old_ids = dict((r, client.containers.get('tx9-%s-%s' % (name, r)).id) for r in ('agent', 'executor'))
    code = exec_as_agent(client, name, ['sh', '-c', 'echo kept > /data/home/agent/marker.txt'])[0]
    assert code == 0
    alt_tag = 'tx9-box:it-%s' % box_prefix
    client.images.build(fileobj=io.BytesIO(('FROM %s\nLABEL tx9.test=%s\n' % (built_image['tag'], box_prefix)).encode()),
                        tag=alt_tag, rm=True)
    try:
        result = playbooks.module_ok('tx9_box', dict(name=name, image=alt_tag))
        assert result['changed'] is True, result
        for role in ('agent', 'executor'):
            container = client.containers.get('tx9-%s-%s' % (name, role))
            assert container.id != old_ids[role]
            assert container.attrs['Config']['Image'] == alt_tag
        code, output = exec_as_agent(client, name, ['cat', '/data/home/agent/marker.txt'])
        assert (code, output.strip()) == (0, 'kept')
        assert box_token(state_home, name) == token
        assert mcp_status(published_port(client, name), token) == 200
        kept = playbooks.module_ok('tx9_box', dict(name=name))
        assert kept['changed'] is False and kept['box']['image'] == alt_tag, 'omitting image must keep the box on its image'
    finally:
        playbooks.module_ok('tx9_box', dict(name=name, state='absent'))
        client.images.remove(alt_tag, force=True)


def test_an_unlabelled_container_with_the_agent_name_is_a_name_conflict_that_names_it_and_is_left_alone(
        built_image, playbooks, client, box_prefix):
    name = box_prefix + '-t2'
    squatter_name = 'tx9-%s-agent' % name
    squatter = client.containers.create(built_image['tag'], name=squatter_name, entrypoint=['sleep', '600'])
    try:
        result = playbooks.module('tx9_box', dict(name=name))
        assert result['failed'] is True
        assert result['cause'] == 'NAME_CONFLICT'
        assert 'container named %s' % squatter_name in result['msg'] and name in result['msg'], result['msg']
        assert squatter_name in result['fix'], result['fix']
        squatter.reload()
        assert squatter.status == 'created'
        assert 'tx9.box' not in squatter.labels
        assert not client.networks.list(names=['tx9-%s' % name])
    finally:
        squatter.remove(force=True)


@contextlib.contextmanager
def holding_lock(path):
    """flock(LOCK_EX) on a box's lock file for the duration of the with block."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield
    finally:
        os.close(fd)


def test_a_tx9_box_recreate_holds_the_box_lock_while_it_works_and_releases_it(
        built_image, playbooks, box_prefix, state_home):
    name = box_prefix + '-lock'
    playbooks.module_ok('tx9_box', dict(name=name))
    lock_path = os.path.join(state_home, 'locks', '%s.lock' % name)
    first = playbooks.popen(os.path.join('tests', 'integration', 'plays', 'recreate.yml'), '-e', 'box_name=%s' % name)
    try:
        # A hang guard, not a speed bound: the recreate takes the lock before its first Docker call.
        deadline = time.time() + 600
        while not lock_held(lock_path):
            assert first.poll() is None, 'the recreate ended without being seen holding the lock:\n' + first.stdout.read()
            assert time.time() < deadline, 'the recreate never took the lock'
            time.sleep(0.05)
    finally:
        output = first.communicate(timeout=1200)[0]
    assert first.returncode == 0, output
    assert not lock_held(lock_path)


def test_a_second_operation_on_a_busy_box_fails_with_box_busy_instead_of_waiting(
        built_image, playbooks, client, box_prefix, state_home):
    name = box_prefix + '-busy'
    playbooks.module_ok('tx9_box', dict(name=name))
    containers = sorted(c.id for c in client.containers.list(all=True, filters={'label': 'tx9.box=%s' % name}))
    # The box lock held as every tx9 operation holds it (flock on its lock file), for as long as this test
    # says: a second operation that waited for it would never return, and the run's timeout (a hang guard)
    # turns that into a failure.
    with holding_lock(os.path.join(state_home, 'locks', '%s.lock' % name)):
        try:
            result = playbooks.module('tx9_box', dict(name=name, recreate=True), timeout=900)
        except subprocess.TimeoutExpired:
            pytest.fail('the second operation waited for the held box lock instead of failing with BOX_BUSY')
    assert result['failed'] is True and result['cause'] == 'BOX_BUSY', result
    assert name in result['msg'], result['msg']
    assert sorted(c.id for c in client.containers.list(all=True, filters={'label': 'tx9.box=%s' % name})) == \
        containers, 'a busy box is left alone'


def test_the_token_never_appears_in_verbose_output_of_create_recreate_or_delete(
        built_image, playbooks, box_prefix, state_home):
    name = box_prefix + '-vvv'
    outputs = []
    created, output = playbooks.module_ok_with_output('tx9_box', dict(name=name), '-vvv')
    assert created['changed'] is True
    outputs.append(output)
    token = box_token(state_home, name)
    recreated, output = playbooks.module_ok_with_output('tx9_box', dict(name=name, recreate=True), '-vvv', '--diff')
    assert recreated['changed'] is True, recreated.get('actions')
    outputs.append(output)
    deleted, output = playbooks.module_ok_with_output('tx9_box', dict(name=name, state='absent'), '-vvv', '--diff')
    assert deleted['changed'] is True, deleted.get('actions')
    outputs.append(output)
    for output in outputs:
        assert token not in output
    assert 'tx9-%s-agent' % name in outputs[0]


def test_state_absent_leaves_no_object_labelled_with_the_box(built_image, playbooks, client, box_prefix, state_home):
    name = box_prefix + '-gone'
    playbooks.module_ok('tx9_box', dict(name=name))
    result = playbooks.module_ok('tx9_box', dict(name=name, state='absent'))
    assert result['changed'] is True
    label = {'label': 'tx9.box=%s' % name}
    assert not client.containers.list(all=True, filters=label)
    assert not client.networks.list(filters=label)
    assert not client.volumes.list(filters=label)
    assert not os.path.exists(os.path.join(state_home, 'boxes', '%s.env' % name))
    again = playbooks.module_ok('tx9_box', dict(name=name, state='absent'))
    assert again['changed'] is False


def test_the_authenticated_url_reaches_the_dashboard_and_stays_out_of_the_output(readme_box, playbooks, state_home, client):
    token = box_token(state_home, readme_box['name'])
    result, output = playbooks.module_ok_with_output('tx9_info', dict(name=readme_box['name'], auth_url=True), '-vvv')
    url = result['boxes'][0]['auth_url']
    assert url.startswith('http://tx9:%s@' % token)
    assert url.endswith('/?_token=%s' % token)
    assert token not in output
    port = published_port(client, readme_box['name'])
    request = urllib.request.Request('http://127.0.0.1:%s/' % port)
    request.add_header('Authorization', 'Basic ' + base64.b64encode(('tx9:%s' % token).encode()).decode())
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
