# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host mounts (tx9_mount) through real playbooks on the real engine."""


import io
import os
import shutil
import subprocess
import tempfile
import uuid

import pytest

from conftest import remove_boxes

# A group id no account on the host uses: the share's group, not the agent's own.
SHARE_GID = 4271


def container_ids(client, box):
    return dict((role, client.containers.get('tx9-%s-%s' % (box, role)).id) for role in ('agent', 'executor'))


def in_agent(client, box, command, user='agent'):
    """Run a shell command in the agent container; (exit code, output)."""
    result = client.containers.get('tx9-%s-agent' % box).exec_run(['sh', '-c', command], user=user)
    return result.exit_code, result.output.decode('utf-8', 'replace')


def host_directory(mode=0o755):
    path = tempfile.mkdtemp(prefix='tx9-it-share-')
    os.chmod(path, mode)
    return path


def mount_tmpfs(path):
    subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=4m,mode=0755', 'tx9-it-share', path], check=True)


def unmount(path):
    if subprocess.run(['umount', path], check=False).returncode != 0:
        subprocess.run(['umount', '-l', path], check=True)


def failed_with(result, cause):
    assert result.get('failed') is True, result
    assert result['cause'] == cause, result
    assert result['fix'], result
    assert 'Traceback' not in result['msg'], result


@pytest.fixture(scope='module')
def mount_box(built_image, playbooks, client):
    """One running box for the mount tests; each test leaves it without mounts."""
    prefix = 'it%s' % uuid.uuid4().hex[:6]
    name = prefix + '-mnt'
    created = playbooks.module('tx9_box', dict(name=name))
    assert created['changed'] is True and not created.get('failed'), created
    yield name
    playbooks.module('tx9_box', dict(name=name, state='absent'))
    remove_boxes(client, prefix)


@pytest.fixture
def share():
    """A host directory holding one file the agent may read."""
    path = host_directory()
    with open(os.path.join(path, 'hello.txt'), 'w') as handle:
        handle.write('hello from the host\n')
    os.chmod(os.path.join(path, 'hello.txt'), 0o644)
    yield path
    if os.path.ismount(path):
        unmount(path)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def other_image(built_image, client):
    """The box image under another tag: changing to it is an image change."""
    tag = 'tx9-box:it-%s' % uuid.uuid4().hex[:6]
    dockerfile = 'FROM %s\nLABEL tx9.test=%s\n' % (built_image['tag'], tag.split(':')[1])
    client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=tag, rm=True)
    yield tag
    client.images.remove(tag, force=True)


def test_a_read_only_mount_is_seen_but_not_writable_by_the_agent_and_only_the_agent_is_recreated(
        mount_box, playbooks, client, share):
    name = mount_box
    args = dict(name=name, source=share, target='/mnt/share', read_only=True)
    before = container_ids(client, name)
    predicted = playbooks.module('tx9_mount', args, '--check')
    assert predicted['changed'] is True and container_ids(client, name) == before, predicted
    added = playbooks.module('tx9_mount', args, '--diff')
    assert added['changed'] is True and not added.get('failed'), added
    assert added['diff']['before'] == dict(mounts=[]) and added['diff']['after']['mounts'][0]['target'] == '/mnt/share'
    after = container_ids(client, name)
    assert after['executor'] == before['executor']
    assert after['agent'] != before['agent']
    assert in_agent(client, name, 'cat /mnt/share/hello.txt') == (0, 'hello from the host\n')
    code, output = in_agent(client, name, 'touch /mnt/share/by-agent')
    assert code != 0 and 'Read-only file system' in output
    assert in_agent(client, name, 'touch /mnt/share/by-root', user='root')[0] != 0
    assert os.listdir(share) == ['hello.txt']

    again = playbooks.module('tx9_mount', args)
    assert again['changed'] is False, again['actions']
    assert container_ids(client, name) == after
    listed = playbooks.module('tx9_info', dict(name=name))['boxes'][0]['mounts']
    assert listed == [dict(source=share, target='/mnt/share', read_only=True, require_mountpoint=False)]

    removed = playbooks.module('tx9_mount', dict(name=name, target='/mnt/share', state='absent'))
    assert removed['changed'] is True and removed['mounts'] == [], removed
    gone = container_ids(client, name)
    assert gone['executor'] == before['executor'] and gone['agent'] != after['agent']
    assert in_agent(client, name, 'test -e /mnt/share/hello.txt')[0] != 0
    assert playbooks.module('tx9_mount', dict(name=name, target='/mnt/share', state='absent'))['changed'] is False


@pytest.mark.parametrize('target', ['/data/x', '/mnt/../etc', '/mnt'])
def test_a_target_outside_mnt_is_refused_with_mount_target_invalid_and_no_container_changes(
        mount_box, playbooks, client, share, target):
    before = container_ids(client, mount_box)
    result = playbooks.module('tx9_mount', dict(name=mount_box, source=share, target=target))
    failed_with(result, 'MOUNT_TARGET_INVALID')
    assert repr(target) in result['msg']
    assert container_ids(client, mount_box) == before


def test_require_mountpoint_refuses_a_plain_directory_and_the_running_agent_keeps_its_id(
        mount_box, playbooks, client, share):
    before = container_ids(client, mount_box)
    result = playbooks.module('tx9_mount', dict(name=mount_box, source=share, target='/mnt/nas', require_mountpoint=True))
    failed_with(result, 'MOUNT_NOT_MOUNTED')
    assert share in result['msg']
    assert container_ids(client, mount_box) == before
    assert client.containers.get('tx9-%s-agent' % mount_box).status == 'running'


def test_a_share_that_went_offline_stops_an_image_change_and_the_box_keeps_running_on_its_old_image(
        mount_box, playbooks, client, share, other_image):
    name = mount_box
    mount_tmpfs(share)
    args = dict(name=name, source=share, target='/mnt/nas', require_mountpoint=True)
    try:
        added = playbooks.module('tx9_mount', args)
        assert added['changed'] is True and not added.get('failed'), added
        with open(os.path.join(share, 'on-the-share.txt'), 'w') as handle:
            handle.write('online\n')
        assert in_agent(client, name, 'cat /mnt/nas/on-the-share.txt') == (0, 'online\n')
        before = container_ids(client, name)
        image_before = client.containers.get('tx9-%s-agent' % name).attrs['Image']
        unmount(share)
        result = playbooks.module('tx9_box', dict(name=name, image=other_image))
        failed_with(result, 'MOUNT_NOT_MOUNTED')
        assert container_ids(client, name) == before
        agent = client.containers.get('tx9-%s-agent' % name)
        assert agent.status == 'running' and agent.attrs['Image'] == image_before
        assert client.containers.get('tx9-%s-executor' % name).status == 'running'
    finally:
        removed = playbooks.module('tx9_mount', dict(name=name, target='/mnt/nas', state='absent'))
        assert not removed.get('failed'), removed


def test_the_agent_writes_to_a_setgid_directory_of_a_non_root_group(mount_box, playbooks, client, share):
    name = mount_box
    os.chown(share, 0, SHARE_GID)
    os.chmod(share, 0o2770)
    try:
        added = playbooks.module('tx9_mount', dict(name=name, source=share, target='/mnt/team'))
        assert added['changed'] is True and not added.get('failed'), added
        agent = client.containers.get('tx9-%s-agent' % name)
        assert str(SHARE_GID) in agent.attrs['HostConfig']['GroupAdd']
        assert in_agent(client, name, 'echo by agent > /mnt/team/note.txt') == (0, '')
        written = os.stat(os.path.join(share, 'note.txt'))
        assert (written.st_uid, written.st_gid) == (1001, SHARE_GID)
    finally:
        removed = playbooks.module('tx9_mount', dict(name=name, target='/mnt/team', state='absent'))
        assert not removed.get('failed'), removed
