# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A passphrase given ad hoc stays off the screen in the forms the modules' notes and the README teach.

ansible-core prints a failed ad-hoc task's arguments as written (its Origin line), so `-a password=...`
shows the passphrase; TX9_PASSWORD in the environment, or a template naming a variable, does not.
"""

import glob
import json
import os
import re
import subprocess
import sys

import pytest
from ansible.release import __version__ as ansible_version

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SECRET = 'pw-8f3a'  # short: ansible-core cuts the Origin line's arguments at some length
# ansible-core prints the Origin line from 2.19 on; 2.18 shows only the module's own result.
ORIGIN_SHOWN = tuple(int(part) for part in ansible_version.split('.')[:2]) >= (2, 19)


def modules_with_a_secret():
    found = []
    for path in sorted(glob.glob(os.path.join(ROOT, 'plugins', 'modules', '*.py'))):
        with open(path) as handle:
            if 'no_log=True' in handle.read():
                found.append(os.path.basename(path)[:-3])
    return found


def test_the_modules_that_take_a_secret_are_known():
    assert modules_with_a_secret() == ['tx9_backup', 'tx9_drill', 'tx9_import', 'tx9_precopy', 'tx9_stage']


@pytest.mark.parametrize('module', modules_with_a_secret())
def test_each_module_that_takes_a_secret_notes_the_safe_ad_hoc_forms(module):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'))
    argv = [os.path.join(os.path.dirname(sys.executable), 'ansible-doc'), '-j', 'col_agents.tx9.' + module]
    run = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True)
    documentation = json.loads(run.stdout)['col_agents.tx9.' + module]['doc']
    notes = ' '.join(documentation.get('notes') or [])
    for words in ('ad-hoc', 'E(TX9_PASSWORD)', 'vault_tx9_backup_password', "-a 'password=...'"):
        assert words in notes, (module, words)


def test_no_example_in_the_readme_or_the_docs_puts_a_passphrase_on_a_command_line():
    paths = [os.path.join(ROOT, 'README.md')] + glob.glob(os.path.join(ROOT, 'docs', '*.md'))
    for path in paths:
        with open(path) as handle:
            for number, line in enumerate(handle, 1):
                for found in re.finditer(r'password=(\S*)', line):
                    value = found.group(1)
                    assert value.startswith('{{') or value.startswith('...'), '%s:%d: %s' % (path, number, line)
    with open(os.path.join(ROOT, 'README.md')) as handle:
        readme = handle.read()
    assert 'TX9_PASSWORD' in readme and "password={{ vault_tx9_backup_password }}" in readme


def ad_hoc(args, extra_env=None, *flags):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'), ANSIBLE_NOCOLOR='1')
    env.pop('TX9_PASSWORD', None)
    env.update(extra_env or {})
    argv = [os.path.join(os.path.dirname(sys.executable), 'ansible'), 'localhost', '-m', 'col_agents.tx9.tx9_backup',
            '-a', args] + list(flags)
    run = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode != 0, run.stdout + run.stderr  # no such box: the task fails, as the notes warn of
    return run.stdout + run.stderr


def test_a_failed_ad_hoc_backup_shows_a_passphrase_given_as_an_argument_and_neither_safe_form(tmp_path):
    assert (SECRET in ad_hoc('name=shapes-no password=%s' % SECRET)) == ORIGIN_SHOWN
    assert SECRET not in ad_hoc('name=shapes-no', {'TX9_PASSWORD': SECRET})
    secrets = tmp_path / 'vault.yml'
    secrets.write_text('vault_tx9_backup_password: %s\n' % SECRET)
    shown = ad_hoc('name=shapes-no password={{ vault_tx9_backup_password }}', None, '-e', '@%s' % secrets)
    assert SECRET not in shown and ('vault_tx9_backup_password' in shown) == ORIGIN_SHOWN
