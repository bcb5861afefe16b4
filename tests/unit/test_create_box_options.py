# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The create_box playbook takes every box option a person gives a new box as a variable of its own name
(-e agent_memory=3g), passes it to tx9_box through the tx9_box role's tx9_box_options, and warns about a
variable that looks like a box option but is none."""


import json
import os
import re
import subprocess
import sys

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from ansible_collections.col_agents.tx9.plugins.lookup import box_options as lookup_plugin
from ansible_collections.col_agents.tx9.plugins.module_utils._box_options import with_box_options
from ansible_collections.col_agents.tx9.plugins.module_utils._docker import CONNECTION_ARGS
from ansible_collections.col_agents.tx9.plugins.module_utils._box_option_spec import BOX_OPTIONS
from ansible_collections.col_agents.tx9.plugins.modules import tx9_box
from ansible_collections.col_agents.tx9.plugins.plugin_utils._create_options import (
    CREATE_OPTIONS,
    NOT_AT_CREATION,
    ROLE_VARIABLES,
    lookalikes,
    options_from,
)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(REPO_ROOT, '.cache', 'collections')
# A value of each option type, as -e gives it (a string) or as JSON does.
SAMPLES = {'str': '3g', 'float': '2', 'list': 'a,b', 'raw': {'mode': 'open'}, 'int': '60', 'bool': 'true'}


def load(*parts):
    with open(os.path.join(REPO_ROOT, *parts)) as handle:
        return yaml.safe_load(handle)


def tx9_box_spec(monkeypatch):
    """The argument spec tx9_box builds in main(), caught before the module would read its input."""
    caught = {}

    def new_module(spec, **kwargs):
        caught.update(spec)
        raise SystemExit(0)

    monkeypatch.setattr(tx9_box, 'new_module', new_module)
    with pytest.raises(SystemExit):
        tx9_box.main()
    return caught


def sample(name):
    """A value a person would give on the command line: limits and budgets are read by our own parser (raw)."""
    if BOX_OPTIONS[name]['type'] == 'raw' and name != 'egress':
        return '2' if name.endswith('_cpus') else '3g'
    return SAMPLES[BOX_OPTIONS[name]['type']]


def test_every_option_of_tx9_box_is_a_variable_of_the_playbook_a_role_variable_or_no_setting_of_a_new_box(monkeypatch):
    options = set(tx9_box_spec(monkeypatch)) - set(CONNECTION_ARGS)
    classified = set(CREATE_OPTIONS) | set(ROLE_VARIABLES) | set(NOT_AT_CREATION)
    assert options - classified == set(), (
        'tx9_box options no create_box variable reaches: add them to BOX_OPTIONS (a person sets them at creation) '
        'or to NOT_AT_CREATION in plugins/plugin_utils/_create_options.py')
    assert classified - options == set()
    assert set(CREATE_OPTIONS) >= {'agent_memory', 'agent_cpus', 'executor_memory', 'executor_cpus', 'agent_volume_budget',
                                   'executor_volume_budget', 'executor_publish', 'executor_web_base_url', 'executor_dns',
                                   'executor_allowed_hosts', 'egress'}


def test_every_box_option_set_at_creation_reaches_the_module_from_its_variable_checked_as_the_option_is():
    variables = dict(box_name='dev', tx9_hosts='localhost', unrelated='x', **{name: sample(name) for name in CREATE_OPTIONS})
    given = options_from(variables)
    assert sorted(given) == sorted(CREATE_OPTIONS)
    params = dict((key, spec.get('default')) for key, spec in BOX_OPTIONS.items())
    merged = with_box_options(dict(params, options=given), {'options'})
    assert all(merged[name] is not None for name in CREATE_OPTIONS)
    assert (merged['agent_cpus'], merged['agent_memory'], merged['executor_dns']) == ('2', '3g', ['a', 'b'])


def test_an_option_variable_left_unset_or_null_is_left_out_so_the_box_keeps_what_it_has():
    assert options_from(dict(agent_memory='3g', agent_cpus=None, box_name='dev')) == {'agent_memory': '3g'}
    assert options_from({}) == {}


def lookup(variables, extra_names, monkeypatch):
    """The lookup run as a play runs it: its result and the warnings it gave."""
    warned = []
    monkeypatch.setattr(lookup_plugin, 'extra_var_names', lambda loader: list(extra_names))
    monkeypatch.setattr(lookup_plugin.display, 'warning', warned.append)
    loader = DataLoader()
    plugin = lookup_plugin.LookupModule(loader=loader, templar=Templar(loader=loader, variables=variables))
    return plugin.run([], variables), warned


def test_the_lookup_returns_the_options_given_as_variables_as_one_mapping_and_warns_of_nothing_else(monkeypatch):
    variables = dict(agent_memory='3g', agent_cpus='2', agent_volume_budget='50g', box_name='dev', tx9_hosts='all')
    result, warned = lookup(variables, variables, monkeypatch)
    assert result == [{'agent_memory': '3g', 'agent_cpus': '2', 'agent_volume_budget': '50g'}]
    assert warned == []


def test_the_lookup_warns_of_each_extra_variable_that_looks_like_an_option_naming_the_one_meant(monkeypatch):
    result, warned = lookup(dict(agent_memroy='3g', memory='3g'), ['agent_memroy', 'memory'], monkeypatch)
    assert result == [{}]
    assert len(warned) == 2
    assert 'agent_memroy is no box option' in warned[0] and 'did you mean agent_memory?' in warned[0]
    assert 'memory is no box option' in warned[1] and 'agent_memory or executor_memory' in warned[1]


def test_the_lookup_takes_no_terms(monkeypatch):
    with pytest.raises(Exception, match='takes no terms'):
        lookup_plugin.LookupModule(loader=DataLoader()).run(['agent_memory'], {})


@pytest.mark.parametrize('name, meant', [
    ('agent_memroy', ['agent_memory']),
    ('agent_cpu', ['agent_cpus']),
    ('agentmemory', ['agent_memory']),
    ('memory', ['agent_memory', 'executor_memory']),
    ('cpus', ['agent_cpus', 'executor_cpus']),
    ('mem', ['agent_memory', 'executor_memory']),
    ('volume_budget', ['agent_volume_budget', 'executor_volume_budget']),
    ('egres', ['egress']),
    ('executor_publsh', ['executor_publish']),
    ('image', ['tx9_box_image']),
    ('name', ['box_name']),
])
def test_a_variable_that_looks_like_a_box_option_is_found_with_the_options_it_was_meant_to_be(name, meant):
    assert lookalikes([name]) == {name: meant}


def test_options_the_playbooks_own_variables_and_unrelated_names_are_never_taken_for_a_misspelt_option():
    names = list(CREATE_OPTIONS) + ['box_name', 'tx9_hosts', 'mounts', 'tx9_box_image', 'tx9_box_wait_timeout',
                                    'tx9_confirm_delete', 'ansible_python_interpreter', 'foo', 'debug', 'x']
    assert lookalikes(names) == {}


def task_args(tasks, action):
    found = [task[action] for task in tasks if action in task]
    assert len(found) == 1, (action, tasks)
    return found[0], [task for task in tasks if action in task][0]


def test_the_playbook_fills_the_roles_options_from_the_lookup_and_its_mounts_from_the_mounts_variable():
    play = load('playbooks', 'create_box.yml')[0]
    role = [r for r in play['roles'] if r['role'] == 'col_agents.tx9.tx9_box'][0]
    assert role['vars']['tx9_box_options'] == "{{ lookup('col_agents.tx9.box_options') }}"
    assert role['vars']['tx9_box_mounts'] == '{{ mounts | default([]) }}'


def test_the_role_passes_its_options_to_tx9_box_whole_and_mounts_each_directory_with_tx9_mount():
    tasks = load('roles', 'tx9_box', 'tasks', 'main.yml')
    box = task_args(tasks, 'col_agents.tx9.tx9_box')[0]
    assert 'tx9_box_options' in box['options']
    assert not set(box) & set(CREATE_OPTIONS), 'the role names no box option by hand: they travel in options'
    mount, task = task_args(tasks, 'col_agents.tx9.tx9_mount')
    assert task['loop'] == '{{ tx9_box_mounts }}'
    spec = load('roles', 'tx9_box', 'meta', 'argument_specs.yml')['argument_specs']['main']['options']
    assert spec['tx9_box_options']['type'] == 'dict' and spec['tx9_box_options']['default'] == {}
    assert sorted(spec['tx9_box_mounts']['options']) == sorted(k for k in mount if k not in ('name', 'wait_timeout'))
    defaults = load('roles', 'tx9_box', 'defaults', 'main.yml')
    assert (defaults['tx9_box_options'], defaults['tx9_box_mounts']) == ({}, [])


def test_the_readme_names_every_box_option_variable_in_create_a_box():
    with open(os.path.join(REPO_ROOT, 'README.md')) as handle:
        readme = handle.read()
    section = readme.split('## Create a box', 1)[1].split('\n## ', 1)[0]
    named = set(re.findall(r'`([a-z0-9_]+)`', section))
    assert set(CREATE_OPTIONS) - named == set()
    assert {'box_name', 'mounts', 'tx9_box_options'} <= named


def run_tx9_box(args, tmp_path):
    path = tmp_path / 'args.json'
    path.write_text(json.dumps({'ANSIBLE_MODULE_ARGS': args}))
    proc = subprocess.run([sys.executable, '-m', 'ansible_collections.col_agents.tx9.plugins.modules.tx9_box', str(path)],
                          cwd=COLLECTIONS, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          check=False)
    return json.loads(proc.stdout)


def test_tx9_box_refuses_a_key_of_options_that_is_no_box_option_before_it_touches_the_engine(tmp_path):
    result = run_tx9_box(dict(name='create-unit', options={'agent_memroy': '3g'}, state_home=str(tmp_path),
                              docker_host='unix:///nonexistent.sock'), tmp_path)
    assert result['failed'] is True and result['cause'] == 'INVALID_ARGUMENT', result
    assert 'agent_memroy' in result['msg']
