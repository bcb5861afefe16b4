# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The col_agents.tx9.boxes plugin read by Ansible's own inventory manager, with the listing answered
from a file (plugin_reader.py): groups, variables, compose, keyed groups and the stale backup line."""


import json
import os
import subprocess
import sys
import time

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._box.backup_record import rfc3339

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
COLLECTIONS = os.path.join(REPO_ROOT, '.cache', 'collections')

HOSTS = {'fleet': {'hosts': {
    'fleet1': {'ansible_host': '10.0.0.11', 'ansible_user': 'root', 'ansible_ssh_private_key_file': '/keys/fleet'},
    'fleet2.example.com': {'ansible_port': 2222}}},
    'all': {'vars': {'ansible_python_interpreter': '/venv/bin/python',
                     'ansible_ssh_common_args': '-o ProxyJump={{ inventory_hostname }}-jump',
                     'backup_password': 'never copied'}}}


def box(name, state='running', drift=False, hours_since_backup=None):
    last = None if hours_since_backup is None else dict(
        time=rfc3339(time.time() - hours_since_backup * 3600), path='/b/%s.tx9' % name, sha256='00', verified=True)
    return dict(name=name, state=state, image='tx9-box:0.1.0', version='0.0.9' if drift else '0.1.0', drift=drift,
                dashboard_url='http://h:1/', last_backup=last, volumes={'agent': {'used_bytes': 5}})


LISTINGS = {'fleet1': [box('dev', hours_since_backup=1), box('old', state='stopped', drift=True)],
            'fleet2.example.com': [box('dev', hours_since_backup=30)]}


@pytest.fixture
def read(tmp_path):
    """Read hosts.yml, then tx9.boxes.yml with the given configuration."""
    def run(config, listings=None):
        (tmp_path / 'hosts.yml').write_text(json.dumps(HOSTS))
        (tmp_path / 'listings.json').write_text(json.dumps(LISTINGS if listings is None else listings))
        (tmp_path / 'tx9.boxes.yml').write_text(json.dumps(dict(config, plugin='col_agents.tx9.boxes')))
        env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, 'ansible.cfg'),
                   ANSIBLE_INVENTORY_UNPARSED_FAILED='true', ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED='true')
        proc = subprocess.run([sys.executable, os.path.join(HERE, 'plugin_reader.py'), COLLECTIONS,
                               str(tmp_path / 'listings.json'), str(tmp_path / 'hosts.yml'),
                               str(tmp_path / 'tx9.boxes.yml')],
                              cwd=str(tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
        found = json.loads(proc.stdout)
        # ansible-core 2.18 wraps warnings at the terminal's width; 2.19 does not.
        found['stderr'] = ' '.join(proc.stderr.split())
        return found
    return run


def test_each_box_of_each_host_of_the_group_is_one_host_in_its_groups(read):
    found = read(dict(host_group='fleet'))
    groups = found['groups']
    assert sorted(found['calls'][0]['hosts']) == ['fleet1', 'fleet2.example.com']
    assert groups['tx9_boxes'] == ['dev@fleet1', 'dev@fleet2.example.com', 'old@fleet1']
    assert groups['tx9_running'] == ['dev@fleet1', 'dev@fleet2.example.com']
    assert groups['tx9_stopped'] == ['old@fleet1']
    assert groups['tx9_drift'] == ['old@fleet1']
    assert groups['tx9_host_fleet1'] == ['dev@fleet1', 'old@fleet1']
    assert groups['tx9_host_fleet2_example_com'] == ['dev@fleet2.example.com']
    assert groups['tx9_backup_stale'] == ['dev@fleet2.example.com', 'old@fleet1']
    assert groups['fleet'] == ['fleet1', 'fleet2.example.com']


def test_a_box_host_carries_its_docker_hosts_connection_rendered_for_that_host(read):
    found = read(dict(host_group='fleet'))
    first = found['vars']['dev@fleet1']
    assert (first['ansible_host'], first['ansible_user'], first['ansible_ssh_private_key_file']) == (
        '10.0.0.11', 'root', '/keys/fleet')
    assert first['ansible_ssh_common_args'] == '-o ProxyJump=fleet1-jump'
    assert first['ansible_python_interpreter'] == '/venv/bin/python'
    assert (first['tx9_box_name'], first['tx9_host'], first['tx9_backup_stale']) == ('dev', 'fleet1', False)
    assert first['tx9_last_backup']['path'] == '/b/dev.tx9'
    second = found['vars']['dev@fleet2.example.com']
    assert (second['ansible_host'], second['ansible_port']) == ('fleet2.example.com', 2222)
    assert second['ansible_ssh_common_args'] == '-o ProxyJump=fleet2.example.com-jump'
    # The listing reached each host with the same variables, and no others.
    listed = found['calls'][0]['hosts']
    assert listed['fleet1']['ansible_ssh_common_args'] == '-o ProxyJump=fleet1-jump'
    assert 'backup_password' not in listed['fleet1'] and 'backup_password' not in first
    assert COLLECTIONS in found['calls'][0]['collections_paths']


def test_compose_groups_and_keyed_groups_apply_to_box_hosts(read):
    found = read(dict(host_group='fleet', compose=dict(x_dashboard='tx9_dashboard_url'),
                      groups=dict(tx9_has_data='tx9_box_info.volumes.agent.used_bytes > 0'),
                      keyed_groups=[dict(key='tx9_version', prefix='v')]))
    assert found['vars']['old@fleet1']['x_dashboard'] == 'http://h:1/'
    assert found['groups']['tx9_has_data'] == ['dev@fleet1', 'dev@fleet2.example.com', 'old@fleet1']
    assert found['groups']['v_0_0_9'] == ['old@fleet1']


def test_backup_max_age_moves_the_line_between_fresh_and_stale(read):
    assert read(dict(host_group='fleet', backup_max_age='2d'))['groups']['tx9_backup_stale'] == ['old@fleet1']


def test_a_host_that_cannot_be_listed_is_left_out_with_a_warning_and_the_others_are_listed(read):
    found = read(dict(host_group='fleet'), listings={'fleet1': LISTINGS['fleet1']})
    assert found['groups']['tx9_boxes'] == ['dev@fleet1', 'old@fleet1']
    assert 'The boxes on fleet2.example.com are not in the inventory: unreachable in this test' in found['stderr']


def test_a_group_missing_from_the_inventory_read_so_far_is_refused_saying_what_to_do(read):
    found = read(dict(host_group='nowhere'))
    assert found['error'].startswith('Completely failed to parse inventory source')
    assert 'host_group nowhere is not in the inventory; list the source that defines it before this one ' \
        '(-i hosts.yml -i tx9.boxes.yml)' in found['stderr']


def test_a_backup_max_age_that_is_no_duration_is_refused(read):
    found = read(dict(host_group='fleet', backup_max_age='soon'))
    assert 'error' in found and "backup_max_age must be seconds or a duration such as 24h, 90m, 7d or 1d12h, " \
        "not 'soon'" in found['stderr']


def test_with_caching_a_second_read_uses_the_cached_listing_and_judges_staleness_again(read, tmp_path):
    config = dict(host_group='fleet', cache=True, cache_plugin='ansible.builtin.jsonfile',
                  cache_connection=str(tmp_path / 'cache'), backup_max_age='2h')
    first = read(config)
    assert len(first['calls']) == 1 and first['groups']['tx9_backup_stale'] == ['dev@fleet2.example.com', 'old@fleet1']
    second = read(dict(config, backup_max_age='30m'), listings={})
    assert second['calls'] == []
    assert second['groups']['tx9_boxes'] == first['groups']['tx9_boxes']
    assert second['groups']['tx9_backup_stale'] == first['groups']['tx9_boxes']
