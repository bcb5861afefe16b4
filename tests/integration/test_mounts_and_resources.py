# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host mounts (tx9_mount) and live resources (tx9_resources) through real playbooks on the real engine."""


import io
import os
import shutil
import subprocess
import tempfile
import time
import uuid

import pytest

from conftest import remove_boxes

GIB = 1024 ** 3
MIB = 1024 ** 2
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
    created = playbooks.module('tx9_box', dict(name=name, image=built_image['tag']))
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


def workload_processes(client, box):
    """[(pid, uid, groups)] of the agent's workload loop and its log capture, the processes its entrypoint started."""
    result = client.containers.get('tx9-%s-agent' % box).exec_run(['python3', '-c', WORKLOAD_GROUPS], user='root')
    assert result.exit_code == 0, result.output
    found = []
    for line in result.output.decode().splitlines():
        pid, uid, groups = line.split(' ', 2)
        found.append((int(pid), int(uid), set(int(gid) for gid in groups.split())))
    return found


# Run in the agent container: each process whose argv holds `.../hb workload`, with its uid and groups.
WORKLOAD_GROUPS = r'''
import os
for pid in sorted(p for p in os.listdir('/proc') if p.isdigit()):
    try:
        argv = open('/proc/%s/cmdline' % pid, 'rb').read().split(b'\0')
        status = dict(line.split(':', 1) for line in open('/proc/%s/status' % pid).read().splitlines() if ':' in line)
    except OSError:
        continue
    if any(arg.endswith(b'/hb') for arg in argv) and b'workload' in argv:
        print(pid, status['Uid'].split()[0], status['Groups'].strip())
'''


def test_the_agent_writes_to_a_setgid_directory_of_a_non_root_group_from_exec_sessions_and_its_own_loop(
        mount_box, playbooks, client, share):
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
        # The entrypoint's own processes (not docker exec sessions) hold the share's group as well.
        loop = workload_processes(client, name)
        assert len(loop) >= 2, 'expected the workload loop and its log capture: %s' % loop
        for pid, uid, groups in loop:
            assert uid == 1001 and SHARE_GID in groups and 1001 in groups and 0 not in groups, (pid, uid, groups)
    finally:
        removed = playbooks.module('tx9_mount', dict(name=name, target='/mnt/team', state='absent'))
        assert not removed.get('failed'), removed


def test_agent_volume_usage_grows_with_its_files_and_a_smaller_budget_is_reported_over_but_not_enforced(
        mount_box, playbooks, client):
    name = mount_box
    first = playbooks.module('tx9_resources', dict(name=name))
    assert first['changed'] is False and not first.get('failed'), first
    used = first['volumes']['agent']['used_bytes']
    assert used is not None and first['volumes']['agent']['over_budget'] is False
    try:
        assert in_agent(client, name, 'head -c 20971520 /dev/urandom > /data/home/agent/blob')[0] == 0
        grown = playbooks.module('tx9_resources', dict(name=name))
        assert grown['volumes']['agent']['used_bytes'] >= used + 20 * MIB, (used, grown['volumes'])
        budget = playbooks.module('tx9_resources', dict(name=name, agent_volume_budget='10m'))
        assert budget['changed'] is True, budget
        agent_volume = budget['volumes']['agent']
        assert agent_volume['budget_bytes'] == 10 * MIB
        assert agent_volume['over_budget'] is True and agent_volume['budget_enforced'] is False
        assert in_agent(client, name, 'head -c 1048576 /dev/zero > /data/home/agent/more')[0] == 0
    finally:
        in_agent(client, name, 'rm -f /data/home/agent/blob /data/home/agent/more')
        playbooks.module('tx9_resources', dict(name=name, agent_volume_budget='unlimited'))


def test_tx9_info_with_usage_reports_the_cpu_and_memory_the_running_containers_use_as_docker_stats_does(
        mount_box, playbooks, client):
    name = mount_box
    plain = playbooks.module('tx9_info', dict(name=name))
    assert not plain.get('failed') and 'usage' not in plain['boxes'][0], plain
    agent = client.containers.get('tx9-%s-agent' % name)
    # A busy loop in the agent for a few seconds: its CPU share must show in the sample.
    agent.exec_run(['sh', '-c', 'timeout 8 sh -c "while :; do :; done"'], detach=True)
    time.sleep(1)
    listed = playbooks.module('tx9_info', dict(name=name, usage=True))
    assert not listed.get('failed'), listed
    usage = listed['boxes'][0]['usage']
    assert sorted(usage) == ['agent', 'executor'], usage
    assert usage['agent']['cpu_percent'] > 20, usage
    for role in ('agent', 'executor'):
        sample = usage[role]
        attrs = client.containers.get('tx9-%s-%s' % (name, role)).attrs
        assert isinstance(sample['cpu_percent'], float) and sample['cpu_percent'] >= 0, usage
        assert 0 < sample['memory_bytes'] < sample['memory_limit_bytes'], usage
        if attrs['HostConfig'].get('Memory'):
            assert sample['memory_limit_bytes'] == attrs['HostConfig']['Memory'], usage
        stats = client.api.stats(attrs['Id'], stream=False)
        assert sample['memory_limit_bytes'] == stats['memory_stats']['limit']


def test_agent_memory_set_live_survives_an_image_change_and_a_mount_change_until_reset(
        built_image, playbooks, client, box_prefix, share, other_image):
    name = box_prefix + '-res'
    playbooks.module('tx9_box', dict(name=name, image=built_image['tag']))
    before = container_ids(client, name)
    result = playbooks.module('tx9_resources', dict(name=name, agent_memory='1g'), '--diff')
    assert result['changed'] is True and result['actions'] == ['update the agent limits live', 'save the desired state']
    assert result['limits']['agent_memory'] == GIB
    assert result['diff']['after']['agent_memory'] == '1 GiB', result['diff']
    assert container_ids(client, name) == before
    assert client.containers.get('tx9-%s-agent' % name).attrs['HostConfig']['Memory'] == GIB
    assert playbooks.module('tx9_resources', dict(name=name, agent_memory='1g'))['changed'] is False

    upgraded = playbooks.module('tx9_box', dict(name=name, image=other_image))
    assert upgraded['changed'] is True and not upgraded.get('failed'), upgraded
    agent = client.containers.get('tx9-%s-agent' % name)
    assert agent.id != before['agent'] and agent.attrs['Config']['Image'] == other_image
    assert agent.attrs['HostConfig']['Memory'] == GIB

    mounted = playbooks.module('tx9_mount', dict(name=name, source=share, target='/mnt/share'))
    assert mounted['changed'] is True and not mounted.get('failed'), mounted
    remounted = client.containers.get('tx9-%s-agent' % name)
    assert remounted.id != agent.id and remounted.attrs['HostConfig']['Memory'] == GIB

    host_cpus = client.info()['NCPU']
    reset = playbooks.module('tx9_resources', dict(name=name, reset=True))
    assert reset['changed'] is True and not reset.get('failed'), reset
    assert reset['limits'] == dict(agent_cpus=float(min(4, host_cpus)), agent_memory=8 * GIB,
                                   executor_cpus=float(min(2, host_cpus)), executor_memory=2 * GIB)
    assert client.containers.get('tx9-%s-agent' % name).id == remounted.id
    playbooks.module('tx9_box', dict(name=name, state='absent'))


@pytest.mark.parametrize('option, value', [
    ('agent_memory', '12 parsecs'),
    ('executor_memory', '9' * 30 + 't'),
    ('agent_cpus', -1),
    ('executor_cpus', 'inf'),
])
def test_an_invalid_resource_value_fails_with_invalid_resources_naming_the_option(mount_box, playbooks, option, value):
    result, output = playbooks.module_with_output('tx9_resources', {'name': mount_box, option: value})
    failed_with(result, 'INVALID_RESOURCES')
    assert result['msg'].startswith('%s=' % option), result['msg']
    assert 'Traceback' not in output


def test_more_cpus_than_the_host_has_fail_with_invalid_resources(mount_box, playbooks, client):
    too_many = client.info()['NCPU'] + 1
    result = playbooks.module('tx9_resources', dict(name=mount_box, agent_cpus=too_many))
    failed_with(result, 'INVALID_RESOURCES')
    assert 'only %d CPUs' % (too_many - 1) in result['msg']


@pytest.fixture
def shapes_box(built_image, playbooks, client):
    """A running box made with its agent memory given as a size; removed afterwards."""
    name = 'shapes-%s' % uuid.uuid4().hex[:6]
    created = playbooks.module('tx9_box', dict(name=name, image=built_image['tag'], agent_memory='1g'))
    try:
        assert created['changed'] is True and not created.get('failed'), created
        yield name
    finally:
        playbooks.module('tx9_box', dict(name=name, state='absent'))
        remove_boxes(client, name)


def test_cpus_that_are_not_a_number_are_refused_with_invalid_resources_and_the_fix_before_any_box_is_made(
        built_image, playbooks, client):
    name = 'shapes-%s' % uuid.uuid4().hex[:6]
    try:
        for module, args in (('tx9_resources', dict(name=name, agent_cpus='lots')),
                             ('tx9_box', dict(name=name, image=built_image['tag'], executor_cpus='lots'))):
            result = playbooks.module(module, args)
            failed_with(result, 'INVALID_RESOURCES')
            assert "cpus='lots' is not valid: it is not a number of CPUs" in result['msg'], result
            assert 'a number of CPUs such as 1.5' in result['fix'], result
        budget = playbooks.module('tx9_resources', dict(name=name, agent_volume_budget='lots'))
        failed_with(budget, 'INVALID_RESOURCES')
        assert 'unlimited' in budget['fix'], budget
        assert not client.containers.list(all=True, filters={'label': 'tx9.box=%s' % name})
    finally:
        remove_boxes(client, name)


def test_tx9_info_gives_desired_memory_and_budgets_as_integer_bytes_which_tx9_box_takes_back_unchanged(
        shapes_box, playbooks):
    name = shapes_box
    playbooks.module_ok('tx9_resources', dict(name=name, agent_volume_budget='10g'))
    box = playbooks.module_ok('tx9_info', dict(name=name))['boxes'][0]
    desired = box['desired']
    assert desired['agent_memory'] == GIB and box['limits']['agent_memory'] == GIB, box
    assert isinstance(desired['executor_memory'], int) and desired['agent_volume_budget'] == 10 * GIB, desired
    assert desired['executor_volume_budget'] == 'unlimited', desired
    limits = dict((key, desired[key]) for key in ('agent_cpus', 'agent_memory', 'executor_cpus', 'executor_memory',
                                                  'agent_volume_budget', 'executor_volume_budget'))
    again, output = playbooks.module_ok_with_output('tx9_box', dict(name=name, image=desired['image'], **limits))
    assert again['changed'] is False, again
    assert 'converted' not in output, output


def test_a_volume_over_its_advisory_budget_is_a_doctor_warning_never_a_failure(shapes_box, playbooks, client):
    name = shapes_box
    assert in_agent(client, name, 'head -c 4194304 /dev/urandom > /data/home/agent/blob')[0] == 0
    over = playbooks.module_ok('tx9_resources', dict(name=name, agent_volume_budget='1m'))
    assert over['volumes']['agent']['over_budget'] is True, over['volumes']
    result, output = playbooks.module_ok_with_output('tx9_doctor', dict(name=name))
    checks = dict((check['name'], check) for check in result['checks'])
    assert checks['agent volume']['state'] == 'warn' and checks['agent volume']['ok'] is True, checks
    assert 'over budget (advisory, never enforced)' in checks['agent volume']['detail'], checks
    assert checks['executor volume']['state'] == 'pass', checks
    assert result['ok'] is True and result['failed_checks'] == [] and result['warned_checks'] == ['agent volume']
    assert '[WARNING]' in output and 'agent volume' in output, output
