# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The command line a relayed move writes its journal with on the old host, run by a real sh as journal.yml runs it."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.col_agents.tx9.plugins.filter.journal_line import FilterModule

RECORD = {'box': 'dev', 'step': 'arrived', 'before': {'state': 'running'},
          'odd': "it's \"quoted\", $HOME, `date` and \\ and a newline\nhere"}
journal_line = FilterModule().filters()['journal_line']


def write(home, path, record):
    """journal.yml's raw command line, as the filter gives it, run by a login-like shell."""
    return subprocess.run(['sh', '-c', journal_line(record, path)], env=dict(os.environ, HOME=str(home)),
                          capture_output=True, text=True, check=False)


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


def test_a_record_over_the_journal_limit_fails_the_template_before_any_command_is_given(tmp_path):
    with pytest.raises(AnsibleFilterError, match='INVALID_ARGUMENT|over the'):
        journal_line(dict(RECORD, padding='x' * 70000), str(tmp_path / 'journal.json'))


def test_a_record_near_the_limit_full_of_quotes_still_fits_one_command_line(tmp_path):
    journal = tmp_path / 'journal.json'
    record = dict(RECORD, padding="'" * 60000)

    done = write(tmp_path, str(journal), record)

    assert done.returncode == 0, done.stderr[-300:]
    assert json.loads(journal.read_text()) == record
