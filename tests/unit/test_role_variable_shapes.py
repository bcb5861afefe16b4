# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A role's list or mapping given in another shape is refused naming the variable, never read a character at a time.

Ansible's own check of a role's arguments lets `-e var=a,b` through for a list (it splits the string
at its commas) and `-e var=k=v` for a mapping (it reads the key=value text), yet the role receives the
string unchanged. The plays here run each role against localhost with such a value: the role's first
step refuses it with INVALID_ARGUMENT before anything else runs.
"""

import json
import os
import subprocess
import sys

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.col_agents.tx9.plugins.filter.shaped import shaped

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAY = """
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: col_agents.tx9.{role}
        tasks_from: {entry}
"""


def play(tmp_path, role, extra, entry='main'):
    """ansible-playbook of one role entry point on localhost with the extra vars given as on a command line."""
    path = tmp_path / 'play.yml'
    path.write_text(PLAY.format(role=role, entry=entry))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'), ANSIBLE_NOCOLOR='1')
    argv = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,', '-c', 'local',
            str(path)]
    for item in extra:
        argv += ['-e', item]
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_a_list_and_a_mapping_come_back_as_they_are_and_null_is_empty():
    assert shaped(['a', 'b'], 'tx9_host_python_packages') == ['a', 'b']
    assert shaped(['a', {'name': 'b'}], 'tx9_boxes', 'entries') == ['a', {'name': 'b'}]
    assert shaped({'live-restore': True}, 'tx9_host_engine_config', 'dict') == {'live-restore': True}
    assert shaped(None, 'tx9_boxes', 'entries') == [] and shaped(None, 'tx9_host_engine_config', 'dict') == {}


def test_a_list_documented_as_comma_separated_splits_its_string_at_the_commas():
    assert shaped('docker.io, gnupg,', 'tx9_host_packages', commas=True) == ['docker.io', 'gnupg']
    assert shaped('cache', 'tx9_backup_exclude', commas=True) == ['cache']


@pytest.mark.parametrize('value, kind, said', [
    ('docker>=7.0,<8', 'list', "tx9_x is str 'docker>=7.0,<8', not a list."),
    ('a,b', 'entries', "tx9_x is str 'a,b', not a list."),
    ('live-restore=false', 'dict', "tx9_x is str 'live-restore=false', not a mapping."),
    (['a', 7], 'list', 'tx9_x[1] is int 7, not a string.'),
    ([['a']], 'entries', "tx9_x[0] is list ['a'], not a string or a mapping."),
    (['a'], 'dict', "tx9_x is list ['a'], not a mapping."),
    (3, 'list', 'tx9_x is int 3, not a list.'),
])
def test_any_other_shape_is_refused_naming_the_variable_its_type_and_how_to_write_it(value, kind, said):
    with pytest.raises(AnsibleFilterError) as caught:
        shaped(value, 'tx9_x', kind)
    text = str(caught.value)
    assert said in text and '(INVALID_ARGUMENT)' in text
    assert '-e \'{"tx9_x": ' in text and 'YAML' in text


def test_a_string_is_refused_even_for_a_list_that_splits_at_commas_when_asked_for_entries():
    with pytest.raises(AnsibleFilterError, match='not a list'):
        shaped('a,b', 'tx9_boxes', 'entries', commas=True)


@pytest.mark.parametrize('role, extra, said', [
    ('tx9_host', ['tx9_host_engine_config=live-restore=false'], "tx9_host_engine_config is str 'live-restore=false'"),
    ('tx9_host', ['tx9_host_python_packages=docker>=7.0,<8'], "tx9_host_python_packages is str 'docker>=7.0,<8'"),
    ('tx9_migrate', ['tx9_boxes=nu-a,nu-b'], "tx9_boxes is str 'nu-a,nu-b', not a list"),
    ('tx9_migrate', ['tx9_migrate_peer_ssh_args=-oBatchMode=yes'], 'tx9_migrate_peer_ssh_args is str'),
    ('tx9_upgrade', ['tx9_boxes=nu-a', 'tx9_upgrade_backup=false'], "tx9_boxes is str 'nu-a', not a list"),
    ('tx9_box', ['tx9_box_options=agent_memory=3g'], "tx9_box_options is str 'agent_memory=3g', not a mapping"),
])
def test_a_role_refuses_a_string_that_ansibles_argument_check_lets_through(tmp_path, role, extra, said):
    run = play(tmp_path, role, extra)
    out = run.stdout + run.stderr
    assert run.returncode != 0, out
    assert said in out and 'INVALID_ARGUMENT' in out, out
    # The role's own first step refused it: ansible's argument check (ok) passed, nothing else ran.
    assert 'Validation of arguments failed' not in out and 'ok=2 ' in out and 'failed=1 ' in out, out


def test_the_ship_entry_point_refuses_a_peer_command_given_as_one_string(tmp_path):
    required = dict(tx9_box_ship_from='old', tx9_box_ship_image_id='sha256:0', tx9_box_ship_export='/x.tar.gz',
                    tx9_box_ship_dir='/y', tx9_box_ship_peer='ssh')
    run = play(tmp_path, 'tx9_box', [json.dumps(required)], entry='ship')
    out = run.stdout + run.stderr
    assert run.returncode != 0 and "tx9_box_ship_peer is str 'ssh', not a list" in out, out


def test_each_role_passes_its_shape_check_with_its_defaults_and_with_lists_given_as_json(tmp_path):
    for role, extra in [
        ('tx9_host', ['{"tx9_host_packages": "docker.io,gnupg", "tx9_host_engine_config": {"live-restore": true}}']),
        ('tx9_backup', ['tx9_backup_exclude=cache,*.log']),
        ('tx9_migrate', ['{"tx9_boxes": ["nu-a", {"name": "nu-b", "agent_cpus": 1}]}']),
        ('tx9_upgrade', []),
    ]:
        run = play(tmp_path, role, extra, entry='shapes')
        assert run.returncode == 0, run.stdout + run.stderr
