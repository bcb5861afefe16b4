# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every module's documentation renders with ansible-doc, as a person would read it."""


import os
import subprocess
import sys

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULES = sorted(name[:-3] for name in os.listdir(os.path.join(REPO_ROOT, 'plugins', 'modules')) if name.endswith('.py'))


@pytest.mark.parametrize('module', MODULES)
def test_ansible_doc_renders_the_module(module):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, 'ansible.cfg'), ANSIBLE_NOCOLOR='1')
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-doc'), 'col_agents.tx9.%s' % module],
                          cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stdout
    assert 'EXAMPLES' in proc.stdout and 'RETURN VALUES' in proc.stdout
    assert '[WARNING]' not in proc.stdout and 'ERROR' not in proc.stdout


def test_every_module_is_in_the_tx9_action_group():
    with open(os.path.join(REPO_ROOT, 'meta', 'runtime.yml')) as handle:
        runtime = handle.read()
    missing = [m for m in MODULES if '    - %s\n' % m not in runtime]
    assert missing == []
