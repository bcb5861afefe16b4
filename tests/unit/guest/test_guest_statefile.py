# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The state record one process writes and another reads to find it again."""

import os
import stat

from tx9guest import pids, statefile


def test_a_record_reads_back_as_it_was_written_private_to_its_owner(tmp_path):
    path = str(tmp_path / 'web.state')
    statefile.write_state(path, {'state': 'running', 'child_pid': 42})
    assert statefile.read_state(path) == {'state': 'running', 'child_pid': 42}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_a_missing_or_malformed_record_reads_as_none(tmp_path):
    path = tmp_path / 'x.state'
    assert statefile.read_state(str(path)) is None
    path.write_text('[1, 2]')
    assert statefile.read_state(str(path)) is None
    path.write_text('{half')
    assert statefile.read_state(str(path)) is None


def test_own_record_names_this_process_by_pid_and_start_time():
    record = statefile.own_record(state='starting')
    assert record == {'pid': os.getpid(), 'pid_start': pids.start_ticks(os.getpid()), 'state': 'starting'}
    assert pids.pid_alive(record['pid'], record['pid_start'])
    assert not pids.pid_alive(record['pid'], record['pid_start'] + 1), 'a reused PID is not mistaken for it'
