# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


import os

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.retention import (
    expired, list_archives, newest_first, order_key, remove_expired)


def test_only_names_of_the_box_in_the_archive_form_are_its_archives():
    assert order_key('dev', 'dev-20261130-031500.tx9') == ('20261130', '031500', 1)
    assert order_key('dev', 'dev-20261130-031500-3.tx9') == ('20261130', '031500', 3)
    for name in ('dev-2-20261130-031500.tx9', 'devx-20261130-031500.tx9', 'dev-20261130-031500.tx9.part',
                 '.dev-20261130-031500.tx9.staging-0a1b', 'dev-20261130-0315.tx9', 'dev-20261130-031500-0.tx9',
                 'dev-20261130-031500-2-3.tx9', 'dev-latest.tx9', 'other-20261130-031500.tx9'):
        assert order_key('dev', name) is None, name


def test_a_box_whose_name_looks_like_another_box_with_a_time_keeps_its_archives_apart():
    names = ['dev-20261130-031500.tx9', 'dev-20261130-031500-20261201-010000.tx9']
    assert newest_first('dev', names) == ['dev-20261130-031500.tx9']
    assert newest_first('dev-20261130-031500', names) == ['dev-20261130-031500-20261201-010000.tx9']


def test_archives_are_ordered_by_the_time_in_their_name_then_by_the_same_second_attempt():
    names = ['dev-20261130-031500-2.tx9', 'dev-20261129-235959.tx9', 'dev-20261130-031500.tx9',
             'dev-20261130-031500-10.tx9', 'dev-20251231-120000.tx9']
    assert newest_first('dev', names) == ['dev-20261130-031500-10.tx9', 'dev-20261130-031500-2.tx9',
                                          'dev-20261130-031500.tx9', 'dev-20261129-235959.tx9',
                                          'dev-20251231-120000.tx9']


def test_retention_removes_everything_but_the_newest_keep_last():
    names = ['dev-2026113%d-031500.tx9' % day for day in range(5)]
    assert sorted(expired('dev', names, 2)) == ['dev-20261130-031500.tx9', 'dev-20261131-031500.tx9',
                                                'dev-20261132-031500.tx9']
    assert expired('dev', names, 5) == []
    assert expired('dev', names, 9) == []
    assert expired('dev', names[:1], 1) == []


def test_retention_never_removes_the_archive_just_proved_even_when_an_older_clock_named_it():
    names = ['dev-20261130-031500.tx9', 'dev-20261201-031500.tx9', 'dev-20261202-031500.tx9']
    # A clock set back wrote the new archive with the oldest-looking name.
    new = 'dev-20261101-000000.tx9'
    assert expired('dev', names + [new], 2, keep=new) == ['dev-20261201-031500.tx9', 'dev-20261130-031500.tx9']
    assert expired('dev', names + [new], 1, keep=new) == names[::-1]


def test_retention_leaves_other_files_and_other_boxes_archives_alone():
    names = ['dev-20261130-031500.tx9', 'dev-20261201-031500.tx9', 'dev2-20261101-031500.tx9', 'notes.txt',
             'dev-20261101-031500.tx9.sha256']
    assert expired('dev', names, 1) == ['dev-20261130-031500.tx9']


def test_keep_last_below_one_is_refused():
    with pytest.raises(Tx9Error) as caught:
        expired('dev', [], 0)
    assert caught.value.cause == 'INVALID_ARGUMENT'


def test_listing_counts_regular_files_only_and_a_missing_directory_holds_none(tmp_path):
    (tmp_path / 'dev-20261130-031500.tx9').write_bytes(b'x')
    (tmp_path / 'dev-20261201-031500.tx9').mkdir()
    os.symlink(str(tmp_path / 'dev-20261130-031500.tx9'), str(tmp_path / 'dev-20261202-031500.tx9'))
    assert list_archives(str(tmp_path), 'dev') == ['dev-20261130-031500.tx9']
    assert list_archives(str(tmp_path / 'absent'), 'dev') == []


def test_removing_expired_archives_deletes_only_the_oldest_and_reports_what_stays(tmp_path):
    names = ['dev-20261130-031500.tx9', 'dev-20261201-031500.tx9', 'dev-20261202-031500.tx9', 'other.tx9']
    for name in names:
        (tmp_path / name).write_bytes(b'x')
    newest = str(tmp_path / 'dev-20261202-031500.tx9')
    removed, kept = remove_expired(str(tmp_path), 'dev', 2, newest)
    assert removed == [str(tmp_path / 'dev-20261130-031500.tx9')]
    assert kept == [newest, str(tmp_path / 'dev-20261201-031500.tx9')]
    assert sorted(os.listdir(str(tmp_path))) == sorted(names[1:])
