# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The command a relayed move writes its journal with on the old host, run by a real sh as journal.yml runs it."""

from __future__ import annotations

import json
import os
import shlex
import subprocess

import yaml

VARS = os.path.join(os.path.dirname(__file__), '..', '..', 'roles', 'tx9_migrate', 'vars', 'main.yml')
RECORD = {'box': 'dev', 'step': 'arrived', 'before': {'state': 'running'},
          'odd': "it's \"quoted\", $HOME, `date` and \\ and a newline\nhere"}


def script():
    with open(VARS, encoding='utf-8') as handle:
        return yaml.safe_load(handle)['tx9_migrate_journal_script']


def write(home, path, record):
    """journal.yml's raw command line, quoted as its template quotes it, run by a login-like shell."""
    line = ' '.join(['sh', '-c', shlex.quote(script()), 'journal', shlex.quote(path),
                     shlex.quote(json.dumps(record, indent=4))])
    return subprocess.run(['sh', '-c', line], env=dict(os.environ, HOME=str(home)), capture_output=True, text=True,
                          check=False)


def test_the_record_lands_whole_and_private_in_the_journal_under_the_users_home(tmp_path):
    (tmp_path / 'work').mkdir()

    done = write(tmp_path, '~/work/journal.json', RECORD)

    assert done.returncode == 0, done.stderr
    journal = tmp_path / 'work' / 'journal.json'
    assert json.loads(journal.read_text()) == RECORD
    assert journal.stat().st_mode & 0o777 == 0o600
    assert not (tmp_path / 'work' / 'journal.json.new').exists()


def test_a_second_step_replaces_the_first_and_an_absolute_path_is_taken_as_it_is(tmp_path):
    journal = tmp_path / 'journal.json'
    write(tmp_path, str(journal), RECORD)

    done = write(tmp_path, str(journal), dict(RECORD, step='passed'))

    assert done.returncode == 0, done.stderr
    assert json.loads(journal.read_text())['step'] == 'passed'


def test_a_journal_that_cannot_be_written_fails_the_command(tmp_path):
    done = write(tmp_path, '~/missing-directory/journal.json', RECORD)

    assert done.returncode != 0
    assert not (tmp_path / 'missing-directory').exists()
