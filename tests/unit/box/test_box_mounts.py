# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host mounts: target rules, source checks, the mount set, the state file and the agent's binds."""


import os
import subprocess

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._box import limits as resources
from ansible_collections.col_agents.tx9.plugins.module_utils._box import host_mounts
from ansible_collections.col_agents.tx9.plugins.module_utils._box.objects import BoxSpec
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error

FIX = 'Give a target below /mnt, such as /mnt/share.'
EXECUTOR_VALUES = dict(executor_web_base_url=None, executor_publish=None, executor_dns=[], executor_allowed_hosts=[])


def refusal(call, *args, **kwargs):
    with pytest.raises(Tx9Error) as info:
        call(*args, **kwargs)
    return info.value


def mount(source='/srv/share', target='/mnt/share', read_only=False, require_mountpoint=False, gid=0):
    return host_mounts.new_mount(source, target, read_only, require_mountpoint, gid)


def mountinfo_file(tmp_path, *points):
    path = tmp_path / 'mountinfo'
    lines = ['%d 1 0:%d / %s rw,relatime - tmpfs tmpfs rw' % (20 + n, n, point) for n, point in enumerate(points)]
    path.write_text('\n'.join(lines) + '\n')
    return str(path)


# ---- targets ----------------------------------------------------------------------------------

@pytest.mark.parametrize('given, normal', [
    ('/mnt/share', '/mnt/share'),
    ('/mnt/share/', '/mnt/share'),
    ('/mnt//nas///photos', '/mnt/nas/photos'),
    ('/mnt/./share/.', '/mnt/share'),
    ('//mnt/share', '/mnt/share'),
    ('/mnt/with space', '/mnt/with space'),
])
def test_a_target_below_mnt_is_normalised(given, normal):
    assert host_mounts.normalize_target(given) == normal


@pytest.mark.parametrize('given, why', [
    ('/data/x', 'it lies in /data, the box volume that backups copy whole, and external content must stay out of it'),
    ('/data', 'it lies in /data, the box volume that backups copy whole, and external content must stay out of it'),
    ('//data/./x/', 'it lies in /data, the box volume that backups copy whole, and external content must stay out of it'),
    ('/mnt/../etc', 'it contains "..", and a target must name its place directly'),
    ('/mnt/share/../other', 'it contains "..", and a target must name its place directly'),
    ('/mnt/..', 'it contains "..", and a target must name its place directly'),
    ('/mnt', 'it is /mnt itself; a mount goes below /mnt'),
    ('/mnt/', 'it is /mnt itself; a mount goes below /mnt'),
    ('/mnt/.', 'it is /mnt itself; a mount goes below /mnt'),
    ('/etc', 'it is not below /mnt'),
    ('/mntx/share', 'it is not below /mnt'),
    ('/', 'it is not below /mnt'),
    ('mnt/share', 'it is not an absolute path'),
    ('share', 'it is not an absolute path'),
    ('', 'it is empty'),
    ('   ', 'it is empty'),
    (None, 'it is empty'),
    ('/mnt/a:b', 'it contains a ":", which a bind mount cannot carry'),
    ('/mnt/a\nb', 'it contains a line break, which a bind mount cannot carry'),
    ('/mnt/a\rb', 'it contains a carriage return, which a bind mount cannot carry'),
    ('/mnt/a\x00b', 'it contains a NUL byte, which a bind mount cannot carry'),
])
def test_a_target_not_strictly_below_mnt_is_refused_saying_why(given, why):
    err = refusal(host_mounts.normalize_target, given)
    assert err.cause == 'MOUNT_TARGET_INVALID'
    assert err.reason == 'target=%r is not valid: %s.' % (given, why)
    assert err.fix == FIX


# ---- sources ----------------------------------------------------------------------------------

def test_a_source_is_resolved_through_symlinks(tmp_path):
    real = tmp_path / 'real'
    real.mkdir()
    (tmp_path / 'link').symlink_to(real)
    assert host_mounts.normalize_source(str(tmp_path / 'link')) == str(real)


@pytest.mark.parametrize('given, words', [
    ('srv/share', "source='srv/share' is not valid: it is not an absolute path."),
    ('/srv/a:b', "source='/srv/a:b' is not valid: it contains a \":\", which a bind mount cannot carry."),
    ('/srv/a\nb', "source='/srv/a\\nb' is not valid: it contains a line break, which a bind mount cannot carry."),
    ('', 'source is empty.'),
])
def test_a_malformed_source_is_refused_as_an_invalid_argument(given, words):
    err = refusal(host_mounts.normalize_source, given)
    assert (err.cause, err.reason) == ('INVALID_ARGUMENT', words)


def test_a_source_whose_symlink_resolves_to_a_colon_is_refused(tmp_path):
    real = tmp_path / 'a:b'
    real.mkdir()
    (tmp_path / 'link').symlink_to(real)
    err = refusal(host_mounts.normalize_source, str(tmp_path / 'link'))
    assert err.cause == 'INVALID_ARGUMENT' and 'resolves to' in err.reason


def test_a_missing_source_is_refused_with_mount_source_missing(tmp_path):
    source = str(tmp_path / 'gone')
    err = refusal(host_mounts.check_source, mount(source))
    assert err.cause == 'MOUNT_SOURCE_MISSING'
    assert err.reason == 'The mount source %s does not exist.' % source
    assert err.fix == 'Create the directory or bring its share online, or correct source.'


def test_a_source_below_a_file_is_refused_as_missing(tmp_path):
    (tmp_path / 'file').write_text('x')
    err = refusal(host_mounts.check_source, mount(str(tmp_path / 'file' / 'below')))
    assert err.cause == 'MOUNT_SOURCE_MISSING' and err.reason.endswith('does not exist.')


def test_a_file_as_source_is_refused_with_mount_source_missing(tmp_path):
    source = tmp_path / 'file'
    source.write_text('x')
    err = refusal(host_mounts.check_source, mount(str(source)))
    assert err.cause == 'MOUNT_SOURCE_MISSING'
    assert err.reason == 'The mount source %s is not a directory.' % source


def test_a_plain_directory_is_accepted_when_no_mount_point_is_required(tmp_path):
    info = host_mounts.check_source(mount(str(tmp_path)), mountinfo_file(tmp_path))
    assert info.st_ino == os.stat(str(tmp_path)).st_ino


def test_require_mountpoint_refuses_a_plain_directory_with_mount_not_mounted(tmp_path):
    err = refusal(host_mounts.check_source, mount(str(tmp_path), require_mountpoint=True), mountinfo_file(tmp_path, '/'))
    assert err.cause == 'MOUNT_NOT_MOUNTED'
    assert err.reason == (
        'The mount source %s is not a mount point, and require_mountpoint is set: the share meant to be there is '
        'not mounted, and its empty directory is not bound in its place.' % tmp_path)
    assert err.fix == 'Mount the share at %s and run again, or set require_mountpoint: false.' % tmp_path


def test_require_mountpoint_accepts_a_path_listed_as_a_mount_point(tmp_path):
    host_mounts.check_source(mount(str(tmp_path), require_mountpoint=True), mountinfo_file(tmp_path, str(tmp_path)))


def test_require_mountpoint_accepts_a_real_tmpfs_mount_point(tmp_path):
    point = tmp_path / 'share'
    point.mkdir()
    subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=1m', 'tx9-share', str(point)], check=True)
    try:
        assert host_mounts.is_mount_point(str(point))
        host_mounts.check_source(mount(str(point), require_mountpoint=True))
    finally:
        subprocess.run(['umount', str(point)], check=True)
    assert not host_mounts.is_mount_point(str(point))


def test_mount_points_decode_the_kernel_octal_escapes():
    text = ('36 35 98:0 / /mnt/with\\040space rw - ext4 /dev/sda rw\n'
            '37 35 98:0 / /srv/tab\\011here rw - ext4 /dev/sda rw\n'
            '38 35 98:0 / /srv/back\\134slash rw - ext4 /dev/sda rw\n')
    assert host_mounts.mount_points(text) == {'/mnt/with space', '/srv/tab\there', '/srv/back\\slash'}


def test_a_preflight_refusal_says_the_box_was_not_changed(tmp_path):
    good = mount(str(tmp_path))
    gone = mount(str(tmp_path / 'gone'), '/mnt/gone')
    err = refusal(host_mounts.preflight, [good, gone], 'dev')
    assert err.cause == 'MOUNT_SOURCE_MISSING'
    assert err.reason == 'The mount source %s does not exist. Box dev was not changed.' % gone['source']


# ---- the set ----------------------------------------------------------------------------------

def test_adding_a_mount_keeps_the_set_sorted_by_target():
    first = mount('/srv/b', '/mnt/b')
    second = mount('/srv/a', '/mnt/a')
    assert host_mounts.with_mount([first], second) == [second, first]


def test_adding_the_same_source_on_its_target_again_replaces_its_options():
    assert host_mounts.with_mount([mount()], mount(read_only=True)) == [mount(read_only=True)]


def test_another_source_on_a_taken_target_is_refused_with_mount_target_taken():
    err = refusal(host_mounts.with_mount, [mount('/srv/a')], mount('/srv/b'))
    assert err.cause == 'MOUNT_TARGET_TAKEN'
    assert err.reason == 'target /mnt/share already holds /srv/a; one target takes one mount.'
    assert err.fix == 'Choose another target below /mnt, or remove the mount at /mnt/share first (state: absent).'


@pytest.mark.parametrize('existing, added', [('/mnt/share', '/mnt/share/inner'), ('/mnt/share/inner', '/mnt/share')])
def test_nested_targets_are_refused_with_mount_target_taken(existing, added):
    err = refusal(host_mounts.with_mount, [mount('/srv/a', existing)], mount('/srv/b', added))
    assert err.cause == 'MOUNT_TARGET_TAKEN'
    assert err.reason == 'target %s overlaps the mount of /srv/a at %s; mounts cannot nest.' % (added, existing)


def test_targets_that_only_share_a_prefix_do_not_nest():
    assert len(host_mounts.with_mount([mount('/srv/a', '/mnt/share')], mount('/srv/b', '/mnt/shared'))) == 2


def test_the_same_source_may_be_mounted_at_two_targets():
    assert len(host_mounts.with_mount([mount(target='/mnt/one')], mount(target='/mnt/two'))) == 2


def test_removing_a_mount_by_target_with_or_without_its_source():
    both = [mount('/srv/a', '/mnt/a'), mount('/srv/b', '/mnt/b')]
    assert host_mounts.without_mount(both, '/mnt/a') == both[1:]
    assert host_mounts.without_mount(both, '/mnt/a', '/srv/a') == both[1:]
    assert host_mounts.without_mount(both, '/mnt/c') == both


def test_removing_with_a_source_other_than_the_mounted_one_is_refused():
    err = refusal(host_mounts.without_mount, [mount('/srv/a')], '/mnt/share', '/srv/b')
    assert err.cause == 'MOUNT_TARGET_TAKEN'
    assert err.reason == 'target /mnt/share holds /srv/a, not /srv/b, so nothing is removed.'


# ---- the state file ---------------------------------------------------------------------------

def test_mounts_round_trip_through_the_state_file_as_one_sorted_json_line():
    wanted = [mount('/srv/b', '/mnt/b', read_only=True, gid=4242), mount('/srv/a', '/mnt/a', require_mountpoint=True)]
    state = host_mounts.to_state(wanted)
    assert state[host_mounts.MOUNTS_KEY] == (
        '[{"require_mountpoint":true,"source":"/srv/a","target":"/mnt/a"},'
        '{"gid":4242,"read_only":true,"source":"/srv/b","target":"/mnt/b"}]')
    assert host_mounts.from_state(state) == sorted(wanted, key=lambda m: m['target'])


def test_no_mounts_leave_the_state_entry_empty_and_read_back_as_none():
    assert host_mounts.to_state([]) == {host_mounts.MOUNTS_KEY: ''}
    assert host_mounts.from_state({}) == []


@pytest.mark.parametrize('text', ['not json', '[{"source": "/srv/a"}]', '[{"source": "/srv/a", "target": "/data/x"}]', '{}'])
def test_an_unreadable_mount_list_in_the_state_file_is_a_state_home_error(text):
    err = refusal(host_mounts.from_state, {host_mounts.MOUNTS_KEY: text}, 'dev')
    assert err.cause == 'STATE_HOME'
    assert err.reason.startswith('The state file of box dev holds a mount list tx9 cannot read')


# ---- the agent container ----------------------------------------------------------------------

def test_binds_and_groups_follow_the_mount_set():
    wanted = [mount('/srv/b', '/mnt/b', read_only=True, gid=4242), mount('/srv/a', '/mnt/a', gid=100),
              mount('/srv/c', '/mnt/c', gid=4242)]
    assert host_mounts.docker_binds(wanted) == ['/srv/a:/mnt/a:rw', '/srv/b:/mnt/b:ro', '/srv/c:/mnt/c:rw']
    assert host_mounts.group_ids(wanted + [mount('/srv/d', '/mnt/d', gid=0)]) == [100, 4242]


def test_live_mounts_are_the_binds_below_mnt_of_an_inspected_agent():
    attrs = {'Mounts': [
        {'Type': 'volume', 'Name': 'tx9-dev-agent-data', 'Destination': '/data', 'RW': True},
        {'Type': 'bind', 'Source': '/srv/b', 'Destination': '/mnt/b', 'RW': False},
        {'Type': 'bind', 'Source': '/srv/a', 'Destination': '/mnt/a', 'RW': True},
        {'Type': 'bind', 'Source': '/etc/x', 'Destination': '/etc/x', 'RW': True},
    ]}
    assert host_mounts.live_mounts(attrs) == [('/srv/a', '/mnt/a', False), ('/srv/b', '/mnt/b', True)]


def spec(with_mounts=(), create_from=None):
    return BoxSpec('dev', 'tx9-box:0.1.0', 'sha256:image', '0.1.0', 'f' * 64, EXECUTOR_VALUES,
                   resources.defaults(8), with_mounts, create_from)


def test_an_agent_without_mounts_has_no_mount_settings_so_its_config_hash_is_unchanged():
    settings, _hash = spec().container('agent')
    assert 'mounts' not in settings and 'group_add' not in settings
    assert 'TX9_AGENT_MOUNT_GIDS' not in settings['environment']


def test_an_agent_with_mounts_binds_them_adds_their_groups_and_changes_only_the_agent_hash():
    with_mounts = spec([mount('/srv/a', '/mnt/a', read_only=True, gid=4242)])
    settings, agent_hash = with_mounts.container('agent')
    assert settings['mounts'] == ['/srv/a:/mnt/a:ro']
    assert settings['group_add'] == ['4242']
    assert settings['environment']['TX9_AGENT_MOUNT_GIDS'] == '4242'
    assert agent_hash != spec().container('agent')[1]
    assert with_mounts.container('executor') == spec().container('executor')


def test_a_mount_of_a_root_group_source_adds_no_group():
    settings, _hash = spec([mount(gid=0)]).container('agent')
    assert settings['group_add'] == []
    assert 'TX9_AGENT_MOUNT_GIDS' not in settings['environment']


def test_containers_are_created_from_the_image_reference_unless_pinned_to_an_id():
    assert spec().create_from == 'tx9-box:0.1.0'
    assert spec(create_from='sha256:older').create_from == 'sha256:older'
