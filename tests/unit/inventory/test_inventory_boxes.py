# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The boxes of a fleet as inventory hosts: names, groups, variables and a stale backup."""


import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._box.backup_record import rfc3339
from ansible_collections.col_agents.tx9.plugins.plugin_utils._inventory import boxes

NOW = 1796009558  # 2026-11-30T03:32:38Z
HOUR = 3600


def record(name='dev', state='running', drift=False, last_backup=None, superseded=None):
    return dict(name=name, state=state, image='tx9-box:0.1.0', version='0.1.0', drift=drift,
                dashboard_url='http://192.0.2.10:32768/', last_backup=last_backup, volumes={}, superseded=superseded)


def backup(hours_ago, verified=True):
    return dict(time=rfc3339(NOW - hours_ago * HOUR), path='/srv/dev.tx9', sha256='ab' * 32, verified=verified)


@pytest.mark.parametrize('value, seconds', [
    ('24h', 86400), ('90m', 5400), ('7d', 604800), ('1d12h', 129600), ('2w', 1209600), ('3600', 3600),
    (900, 900), (' 12H ', 43200)])
def test_backup_max_age_takes_seconds_or_a_duration(value, seconds):
    assert boxes.parse_max_age(value) == seconds


@pytest.mark.parametrize('value', ['', 'h', '1.5h', '24 hours', '-1h', '1y', '24h!'])
def test_a_backup_max_age_that_is_no_duration_is_refused_naming_the_value(value):
    with pytest.raises(ValueError, match='backup_max_age'):
        boxes.parse_max_age(value)


def test_a_verified_backup_within_the_max_age_is_not_stale():
    assert boxes.backup_stale(backup(23), 24 * HOUR, NOW) is False


def test_a_backup_older_than_the_max_age_is_stale():
    assert boxes.backup_stale(backup(25), 24 * HOUR, NOW) is True


def test_a_box_never_backed_up_is_stale():
    assert boxes.backup_stale(None, 24 * HOUR, NOW) is True


def test_an_unverified_backup_does_not_count_however_recent():
    assert boxes.backup_stale(backup(0, verified=False), 24 * HOUR, NOW) is True


def test_a_backup_time_that_does_not_parse_counts_as_no_backup():
    assert boxes.backup_stale(dict(time='yesterday', verified=True), 24 * HOUR, NOW) is True


def test_a_backup_time_ahead_of_the_controller_clock_is_not_stale():
    assert boxes.backup_stale(backup(-1), 24 * HOUR, NOW) is False


def test_a_running_box_is_in_every_box_group_its_state_and_its_hosts_group():
    assert boxes.box_groups(record(), 'fleet1', False) == ['tx9_boxes', 'tx9_running', 'tx9_host_fleet1']


def test_a_stopped_box_with_drift_and_a_stale_backup_is_in_those_groups_too():
    groups = boxes.box_groups(record(state='stopped', drift=True), 'fleet2', True)
    assert groups == ['tx9_boxes', 'tx9_stopped', 'tx9_host_fleet2', 'tx9_drift', 'tx9_backup_stale']


def test_a_copy_a_move_left_behind_is_in_tx9_superseded_and_in_no_state_drift_or_stale_group():
    mark = dict(by='fleet2', at='2026-12-03T15:00:00Z', move='fleet1 -> fleet2')
    groups = boxes.box_groups(record(state='stopped', drift=True, superseded=mark), 'fleet1', True)
    assert groups == ['tx9_boxes', 'tx9_superseded', 'tx9_host_fleet1']
    assert boxes.box_vars(record(superseded=mark), 'fleet1', True)['tx9_superseded'] == mark


def test_a_host_name_with_dots_and_dashes_makes_a_valid_group_name():
    assert 'tx9_host_web_1_example_com' in boxes.box_groups(record(), 'web-1.example.com', False)


def test_a_box_host_is_named_after_the_box_and_its_docker_host():
    assert boxes.box_host_name('dev', 'fleet1') == 'dev@fleet1'


def test_a_box_hosts_variables_name_the_box_its_docker_host_and_carry_the_record():
    rec = record(last_backup=backup(2))
    variables = boxes.box_vars(rec, 'fleet1', False)
    assert variables == dict(tx9_box_name='dev', tx9_host='fleet1', tx9_state='running', tx9_image='tx9-box:0.1.0',
                             tx9_version='0.1.0', tx9_drift=False, tx9_dashboard_url='http://192.0.2.10:32768/',
                             tx9_last_backup=rec['last_backup'], tx9_backup_stale=False, tx9_superseded=None,
                             tx9_box_info=rec)


def test_connection_variables_are_the_docker_hosts_ansible_variables_only():
    found = boxes.connection_vars('fleet1', dict(
        ansible_host='10.0.0.11', ansible_user='root', ansible_ssh_private_key_file='/k', ansible_port=2222,
        ansible_python_interpreter='/venv/bin/python', ansible_become=True, ansible_facts={}, tx9_other='x',
        backup_password='s'))
    assert found == dict(ansible_host='10.0.0.11', ansible_user='root', ansible_ssh_private_key_file='/k',
                         ansible_port=2222, ansible_python_interpreter='/venv/bin/python', ansible_become=True)


def test_a_docker_host_without_ansible_host_is_reached_by_its_inventory_name():
    assert boxes.connection_vars('nas.example.com', dict(ansible_user='admin')) == dict(
        ansible_user='admin', ansible_host='nas.example.com')


@pytest.mark.parametrize('url, name', [
    ('unix:///var/run/docker.sock', 'localhost'), ('ssh://root@192.0.2.10', '192.0.2.10'),
    ('ssh://admin@nas.example.com:2222', 'nas.example.com_2222'), ('tcp://192.0.2.11:2376', '192.0.2.11_2376'),
    ('tcp://[2001:db8::1]:2376', '2001:db8::1_2376')])
def test_a_docker_host_url_names_its_docker_host_and_runs_tasks_on_the_controller_against_it(url, name):
    found, variables = boxes.url_source(url, '/venv/bin/python')
    assert found == name
    assert variables == dict(ansible_connection='local', ansible_python_interpreter='/venv/bin/python',
                             tx9_docker_host=url)


def test_a_docker_host_entry_that_is_no_url_is_refused():
    with pytest.raises(ValueError, match='docker_hosts'):
        boxes.url_source('192.0.2.10', '/venv/bin/python')


def test_the_plan_has_one_host_per_box_across_hosts_even_with_the_same_box_name():
    listings = {'fleet2': [record('dev', 'stopped')], 'fleet1': [record('web'), record('dev', last_backup=backup(1))]}
    plan = boxes.populate_plan(listings, 24 * HOUR, NOW)
    assert [name for name, _groups, _vars in plan] == ['dev@fleet1', 'web@fleet1', 'dev@fleet2']
    stale = dict((name, 'tx9_backup_stale' in groups) for name, groups, _vars in plan)
    assert stale == {'dev@fleet1': False, 'web@fleet1': True, 'dev@fleet2': True}
    assert [v['tx9_host'] for _name, _groups, v in plan] == ['fleet1', 'fleet1', 'fleet2']
