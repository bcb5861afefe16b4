# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every module's documentation, and every role's argument specs, render with ansible-doc, as a person would read them."""


import os
import subprocess
import sys

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULES = sorted(name[:-3] for name in os.listdir(os.path.join(REPO_ROOT, 'plugins', 'modules')) if name.endswith('.py'))
ROLES = sorted(os.listdir(os.path.join(REPO_ROOT, 'roles')))


def ansible_doc(*args):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, 'ansible.cfg'), ANSIBLE_NOCOLOR='1')
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-doc')] + list(args),
                          cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stdout
    assert '[WARNING]' not in proc.stdout and 'ERROR' not in proc.stdout
    return proc.stdout


@pytest.mark.parametrize('module', MODULES)
def test_ansible_doc_renders_the_module(module):
    text = ansible_doc('col_agents.tx9.%s' % module)
    assert 'EXAMPLES' in text and 'RETURN VALUES' in text


@pytest.mark.parametrize('role', ROLES)
def test_every_role_has_argument_specs_for_its_main_entry_point_that_ansible_doc_renders(role):
    assert os.path.isfile(os.path.join(REPO_ROOT, 'roles', role, 'meta', 'argument_specs.yml'))
    entry_points = [line for line in ansible_doc('-t', 'role', 'col_agents.tx9.%s' % role).splitlines()
                    if line.startswith('ENTRY POINT: ')]
    assert entry_points and entry_points[0].split()[2].strip('*') == 'main', entry_points


def test_every_module_is_in_the_tx9_action_group():
    with open(os.path.join(REPO_ROOT, 'meta', 'runtime.yml')) as handle:
        runtime = handle.read()
    missing = [m for m in MODULES if '    - %s\n' % m not in runtime]
    assert missing == []
