# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The box options as one `options` mapping (tx9_import, tx9_preflight): each key takes the place of its
top-level option, checked as that option is; anything else is refused with INVALID_ARGUMENT."""


import json
import os
import subprocess
import sys

import pytest

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.col_agents.tx9.plugins.module_utils._box import limits
from ansible_collections.col_agents.tx9.plugins.module_utils._box_options import with_box_options
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._box_option_spec import BOX_OPTIONS

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(REPO_ROOT, '.cache', 'collections')


def params(**given):
    """A module's parameters as the argument spec leaves them: every box option, defaults filled in."""
    found = dict((key, spec.get('default')) for key, spec in BOX_OPTIONS.items())
    found.update(given)
    return found


def test_each_key_of_options_takes_the_place_of_its_top_level_option_converted_as_it_is():
    # Limits and budgets are taken as given; the box's limits parser reads them (INVALID_RESOURCES when malformed).
    merged = with_box_options(params(options={'agent_cpus': '2', 'executor_dns': '1.1.1.1', 'wait_timeout': '300'}), set())
    assert (merged['agent_cpus'], merged['executor_dns'], merged['wait_timeout']) == ('2', ['1.1.1.1'], 300)
    assert merged['agent_memory'] is None and merged['clear_executor_config'] is False


def test_without_options_the_parameters_are_the_top_level_ones():
    given = params(agent_cpus=1.0, options=None)
    assert with_box_options(given, {'agent_cpus'}) is given
    assert with_box_options(params(agent_cpus=1.0, options={}), {'agent_cpus'})['agent_cpus'] == 1.0


def test_a_top_level_option_left_to_its_default_yields_to_options():
    merged = with_box_options(params(options={'clear_executor_config': True, 'wait_timeout': 30}), {'options'})
    assert merged['clear_executor_config'] is True and merged['wait_timeout'] == 30


def test_the_same_value_given_both_ways_is_taken():
    merged = with_box_options(params(agent_cpus=2.0, wait_timeout=300, options={'agent_cpus': 2, 'wait_timeout': '300'}),
                              {'agent_cpus', 'wait_timeout', 'options'})
    assert (merged['agent_cpus'], merged['wait_timeout']) == (2.0, 300)
    # A limit written two ways that read the same is the same value: '2' CPUs and 2.0, '1g' and its bytes.
    same = with_box_options(params(agent_cpus='2', agent_memory='1g', options={'agent_cpus': 2.0, 'agent_memory': 1024 ** 3}),
                            {'agent_cpus', 'agent_memory', 'options'})
    assert (same['agent_cpus'], same['agent_memory']) == (2.0, 1024 ** 3)


@pytest.mark.parametrize('option, fix', [
    ('agent_cpus', 'Give a number of CPUs such as 1.5'),
    ('executor_cpus', 'Give a number of CPUs such as 1.5'),
    ('agent_memory', 'a size such as 512m'),
    ('executor_memory', 'a size such as 512m'),
    ('agent_volume_budget', 'or unlimited'),
    ('executor_volume_budget', 'or unlimited'),
])
def test_a_malformed_limit_passes_the_argument_spec_and_is_refused_with_invalid_resources_and_the_fix(option, fix):
    # Ansible's own conversion would only say "cannot be converted to a float"; the spec lets the value
    # through to the box's limits parser, which names it and says what to give (top level or in options).
    for given in (params(**{option: 'lots'}), with_box_options(params(options={option: 'lots'}), {'options'})):
        assert not ArgumentSpecValidator(BOX_OPTIONS).validate({option: given[option]}).error_messages
        with pytest.raises(Tx9Error) as refused:
            limits.resolve(given, {}, lambda: 8)
        assert refused.value.cause == 'INVALID_RESOURCES'
        assert refused.value.reason.startswith("%s='lots' is not valid" % option) and fix in refused.value.fix


@pytest.mark.parametrize('top, options', [
    (dict(agent_cpus=1.0), {'agent_cpus': 2}),
    (dict(clear_executor_config=False), {'clear_executor_config': True}),
    (dict(wait_timeout=180), {'wait_timeout': 300}),
], ids=['a-value', 'a-default-given-explicitly', 'the-wait'])
def test_an_option_given_both_ways_with_different_values_is_refused(top, options):
    with pytest.raises(Tx9Error) as refused:
        with_box_options(params(options=options, **top), set(top) | {'options'})
    assert refused.value.cause == 'INVALID_ARGUMENT'
    assert '%s is given both as an option and in options' % list(top)[0] in refused.value.reason


def test_a_key_that_is_no_box_option_is_refused_naming_it_and_the_box_options():
    with pytest.raises(Tx9Error) as refused:
        with_box_options(params(options={'agent_cpus': 2, 'mounts': [], 'password': 'x'}), {'options'})
    assert refused.value.cause == 'INVALID_ARGUMENT'
    assert 'mounts, password' in refused.value.reason and 'agent_cpus' not in refused.value.reason
    assert 'executor_volume_budget' in refused.value.fix


def test_a_value_its_top_level_option_would_refuse_is_refused():
    with pytest.raises(Tx9Error) as refused:
        with_box_options(params(options={'wait_timeout': 'soon'}), {'options'})
    assert refused.value.cause == 'INVALID_ARGUMENT' and 'wait_timeout' in refused.value.reason


def run_module(module, args, tmp_path):
    """The module run for real in a Python of its own (as Ansible runs it), its JSON result."""
    path = tmp_path / 'args.json'
    path.write_text(json.dumps({'ANSIBLE_MODULE_ARGS': args}))
    proc = subprocess.run([sys.executable, '-m', 'ansible_collections.col_agents.tx9.plugins.modules.%s' % module, str(path)],
                          cwd=COLLECTIONS, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          check=False)
    return json.loads(proc.stdout)


@pytest.mark.parametrize('module, args', [
    ('tx9_preflight', {}),
    ('tx9_import', {'path': '/nonexistent/box.tx9', 'name': 'dev'}),
])
def test_the_modules_refuse_an_unknown_key_and_a_clash_before_anything_else(module, args, tmp_path):
    unknown = run_module(module, dict(args, options={'agent_cpu': 2}), tmp_path)
    assert unknown['failed'] is True and unknown['cause'] == 'INVALID_ARGUMENT', unknown
    assert 'agent_cpu' in unknown['msg']
    clash = run_module(module, dict(args, agent_memory='1g', options={'agent_memory': '2g'}), tmp_path)
    assert clash['failed'] is True and clash['cause'] == 'INVALID_ARGUMENT', clash
    assert 'agent_memory is given both' in clash['msg']


def test_the_preflight_takes_the_same_value_given_both_ways(tmp_path):
    result = run_module('tx9_preflight', dict(agent_memory='1g', options={'agent_memory': '1g', 'wait_timeout': 60}), tmp_path)
    assert result.get('failed') is not True and result['ok'] is True, result
