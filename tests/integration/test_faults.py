# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Full and read-only filesystems under real operations on the real engine: a backup into a destination that
fills, and a state home that is full or read-only. Each fails with its cause, leaves nothing half-made and the
box as it was (proved from the engine, the files and the box's data), and the rerun succeeds once there is
room. The filesystems are small tmpfs mounts of this machine, made and removed by the tests."""


import hashlib
import json
import os
import subprocess

import pytest

from conftest import succeeded
from portable_kit import in_box_ok

PAYLOAD = '/data/home/agent/workspace/fault-payload'
PASSWORD = 'fault pass phrase 1'


def mount_tmpfs(path, size):
    os.makedirs(path, exist_ok=True)
    subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=%s,mode=0700' % size, 'tmpfs', path], check=True)


def unmount(path):
    subprocess.run(['umount', '-l', path], check=False)


def payload_digest(client, box):
    return in_box_ok(client, box, ['sha256sum', PAYLOAD]).split()[0]


def guest_status(client, box):
    return json.loads(in_box_ok(client, box, ['/opt/tx9/bin/hb', 'status', '--json']).strip().splitlines()[-1])


def fill(path):
    """Fill the filesystem of path to its last byte."""
    subprocess.run(['dd', 'if=/dev/zero', 'of=%s' % os.path.join(path, '.filler'), 'bs=64k'], check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def failed_with(result, cause, *words):
    assert result.get('failed') is True, result
    assert result['cause'] == cause and result['fix'], result
    for word in words:
        assert word in result['msg'], result['msg']
    assert 'Traceback' not in result['msg'], result['msg']


@pytest.fixture
def faulty_box(built_image, own_playbooks, client, box_prefix, tmp_path):
    """A running box with 8 MiB of random data, its state home on a tmpfs of its own (the test's to fill)."""
    home = str(tmp_path / 'home')
    mount_tmpfs(home, '4m')
    own_playbooks.state_home = home
    name = box_prefix + '-fault'
    try:
        succeeded(own_playbooks.module('tx9_box', dict(name=name, image=built_image['tag'])), 'tx9_box')
        in_box_ok(client, name, ['sh', '-c', 'head -c 8388608 /dev/urandom > "$1"', 'fill', PAYLOAD])
        yield dict(name=name, home=home, playbooks=own_playbooks, digest=payload_digest(client, name))
    finally:
        subprocess.run(['mount', '-o', 'remount,rw', home], check=False)
        own_playbooks.module('tx9_box', dict(name=name, state='absent'))
        unmount(home)


def test_a_backup_into_a_destination_that_fills_fails_no_space_leaves_no_file_and_resumes_the_box(
        faulty_box, client, tmp_path):
    box, playbooks = faulty_box['name'], faulty_box['playbooks']
    small = str(tmp_path / 'small')
    mount_tmpfs(small, '2m')
    try:
        result = playbooks.module('tx9_backup', dict(name=box, dest=small, password=PASSWORD))
        failed_with(result, 'NO_SPACE', small, 'is full', 'bytes free there now', 'The archive needs up to about')
        assert os.listdir(small) == []
    finally:
        unmount(small)
    status = guest_status(client, box)
    assert status['quiesced'] is False and status['quiesced_by'] is None, status
    assert payload_digest(client, box) == faulty_box['digest']
    roomy = str(tmp_path / 'roomy')
    saved = succeeded(playbooks.module('tx9_backup', dict(name=box, dest=roomy, password=PASSWORD, verify=True)),
                      'tx9_backup')
    assert saved['verified'] is True and os.listdir(roomy) == [os.path.basename(saved['path'])]


@pytest.mark.parametrize('fault', ['full', 'read-only'])
def test_a_state_home_that_is_full_or_read_only_keeps_its_state_file_and_the_box_its_limits(
        faulty_box, client, fault):
    box, home, playbooks = faulty_box['name'], faulty_box['home'], faulty_box['playbooks']
    state_file = os.path.join(home, 'boxes', '%s.env' % box)
    with open(state_file, 'rb') as handle:
        before = handle.read()
    memory = client.containers.get('tx9-%s-agent' % box).attrs['HostConfig']['Memory']
    if fault == 'full':
        fill(home)
    else:
        subprocess.run(['mount', '-o', 'remount,ro', home], check=True)
    try:
        result = playbooks.module('tx9_resources', dict(name=box, agent_memory='3g'))
    finally:
        if fault == 'full':
            os.unlink(os.path.join(home, '.filler'))
        else:
            subprocess.run(['mount', '-o', 'remount,rw', home], check=True)
    if fault == 'full':
        failed_with(result, 'NO_SPACE', state_file, 'is full')
    else:
        failed_with(result, 'STATE_HOME', 'Read-only file system')
    with open(state_file, 'rb') as handle:
        assert hashlib.sha256(handle.read()).digest() == hashlib.sha256(before).digest()
    assert sorted(os.listdir(os.path.join(home, 'boxes'))) == ['%s.env' % box]
    assert client.containers.get('tx9-%s-agent' % box).attrs['HostConfig']['Memory'] == memory
    again = succeeded(playbooks.module('tx9_resources', dict(name=box, agent_memory='3g')), 'tx9_resources')
    assert again['changed'] is True
    assert client.containers.get('tx9-%s-agent' % box).attrs['HostConfig']['Memory'] == 3 * 1024 ** 3
