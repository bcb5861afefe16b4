# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


import os
import stat

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._names import validate_box_name
from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils import _lock
from ansible_collections.col_agents.tx9.plugins.module_utils._portable import drill as drill_module
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.drill import (
    Drill, created_at, outcome, throwaway_name)
from ansible_collections.col_agents.tx9.plugins.module_utils._box.drill_record import (
    RUNNING_SUFFIX, read_drill, record_path, remove_drill, write_drill)


def test_the_throwaway_box_is_named_after_the_box_and_stays_a_valid_name():
    assert throwaway_name('dev') == 'dev-drill'
    long_name = 'a' * 63
    assert throwaway_name(long_name) == 'a' * 57 + '-drill'
    assert validate_box_name(throwaway_name(long_name)) and len(throwaway_name(long_name)) == 63
    with pytest.raises(Tx9Error):
        throwaway_name('Not A Box')


def test_dockers_creation_times_are_read_with_their_zone_and_anything_else_is_unknown():
    assert created_at('2026-12-01T01:57:04Z') == 1796090224.0
    assert created_at('2026-12-01T02:57:04+01:00') == 1796090224.0
    assert created_at('2026-12-01T01:57:04.123456789Z') == 1796090224.0
    assert created_at('') is None and created_at(None) is None and created_at('yesterday') is None


def test_a_drill_record_is_saved_0600_in_a_0700_directory_and_read_back(tmp_path):
    home = StateHome(str(tmp_path / 'home'))
    assert read_drill(home, 'dev') is None
    record = dict(box='dev', ok=True, archive='/b/dev-20261130-031500.tx9', time='2026-11-30T03:16:02Z')
    write_drill(home, 'dev', record)
    assert read_drill(home, 'dev') == record
    path = record_path(home, 'dev')
    assert path == str(tmp_path / 'home' / 'drills' / 'dev.json')
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700


def test_the_running_marker_is_kept_apart_from_the_record(tmp_path):
    home = StateHome(str(tmp_path))
    write_drill(home, 'dev', dict(ok=False))
    write_drill(home, 'dev', dict(throwaway='dev-drill', pid=1), RUNNING_SUFFIX)
    remove_drill(home, 'dev', RUNNING_SUFFIX)
    remove_drill(home, 'dev', RUNNING_SUFFIX)
    assert read_drill(home, 'dev', RUNNING_SUFFIX) is None
    assert read_drill(home, 'dev') == dict(ok=False)


def test_an_unreadable_record_counts_as_no_drill(tmp_path):
    home = StateHome(str(tmp_path))
    write_drill(home, 'dev', dict(ok=True))
    with open(record_path(home, 'dev'), 'w') as handle:
        handle.write('{not json')
    assert read_drill(home, 'dev') is None


def test_a_passed_drill_is_a_result_and_a_failed_one_fails_with_its_cause_and_record():
    passed = dict(box='dev', ok=True, archive='/b/a.tx9', failed_checks=[])
    assert outcome(passed, [])['drill'] == passed
    unhealthy = dict(box='dev', ok=False, archive='/b/a.tx9', failed_checks=['mcp handshake'])
    with pytest.raises(Tx9Error) as caught:
        outcome(unhealthy, [dict(name='mcp handshake', ok=False, detail='x')])
    assert caught.value.cause == 'UNHEALTHY' and 'mcp handshake' in caught.value.reason
    assert caught.value.details['drill'] == unhealthy
    refused = dict(box='dev', ok=False, archive='/b/a.tx9', failed_checks=[], cause='ARCHIVE_CORRUPT', msg='damaged')
    with pytest.raises(Tx9Error) as caught:
        outcome(refused, [])
    assert caught.value.cause == 'ARCHIVE_CORRUPT'
    assert outcome(refused, [], fail_on_error=False)['drill'] == refused


def test_the_newest_archive_of_the_box_is_drilled_and_none_is_refused_before_anything_is_made(tmp_path):
    for name in ('dev-20261130-031500.tx9', 'dev-20261201-031500.tx9', 'dev2-20261202-031500.tx9'):
        (tmp_path / name).write_bytes(b'x')
    home = StateHome(str(tmp_path / 'home'))
    drill = Drill(None, home, 'dev', dest=str(tmp_path))
    assert drill.archive() == str(tmp_path / 'dev-20261201-031500.tx9')
    with pytest.raises(Tx9Error) as caught:
        Drill(None, home, 'other', dest=str(tmp_path)).archive()
    assert caught.value.cause == 'NO_ARCHIVE'
    with pytest.raises(Tx9Error) as caught:
        Drill(None, home, 'dev', dest=str(tmp_path), docker_host='tcp://192.0.2.1:2375').archive()
    assert caught.value.cause == 'INVALID_ARGUMENT'
    assert not os.path.exists(str(tmp_path / 'home'))


def test_removing_the_throwaway_box_takes_its_state_file_and_its_lock_file_with_it(tmp_path, monkeypatch):
    home = StateHome(str(tmp_path / 'home'))
    home.write_box('dev-drill', dict(EXECUTOR_MCP_TOKEN='t'))
    removed = []
    monkeypatch.setattr(drill_module, 'remove_labelled', lambda client, box: removed.append(box))
    monkeypatch.setattr(_lock, 'box_has_objects', lambda client, box: False)
    Drill(object(), home, 'dev', dest=str(tmp_path)).remove('dev-drill')
    assert removed == ['dev-drill']
    assert not os.path.exists(home.box_file('dev-drill'))
    assert not os.path.exists(home.lock_file('dev-drill'))
