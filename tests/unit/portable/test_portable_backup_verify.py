# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A new archive is proved the way an import reads it, before retention may remove anything."""


import os

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.backup import Backup
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.importer import verify_archive
from ansible_collections.col_agents.tx9.tests.unit.archive.tx9_archive_kit import payload, regular, symlink, write_tx9


def test_a_sound_archive_is_verified_without_anything_being_created(tmp_path):
    path = tmp_path / 'dev-20261130-031500.tx9'
    meta = write_tx9(path, payload(regular('./home/agent/notes.txt', b'hello')))
    proved = verify_archive(str(path))
    assert proved['members'] == 4 and proved['payload_sha256'] == meta['payload_sha256'] and proved['box'] == 'dev'
    assert sorted(os.listdir(str(tmp_path))) == ['dev-20261130-031500.tx9']


def test_an_archive_an_import_would_refuse_fails_verification_with_the_imports_cause(tmp_path):
    path = tmp_path / 'dev-20261130-031500.tx9'
    write_tx9(path, payload(symlink('./home/agent/escape', '/etc/passwd')))
    with pytest.raises(Tx9Error) as caught:
        verify_archive(str(path))
    assert caught.value.cause == 'ARCHIVE_UNSAFE'


def test_a_new_archive_that_fails_verification_is_removed_and_the_older_ones_stay(tmp_path):
    older = tmp_path / 'dev-20261129-031500.tx9'
    write_tx9(older, payload(regular('./home/agent/notes.txt', b'hello')))
    new = tmp_path / 'dev-20261130-031500.tx9'
    new.write_bytes(b'not a tar at all' * 64)
    backup = Backup(None, None, 'dev', str(tmp_path), encrypt=False, keep_last=1)
    with pytest.raises(Tx9Error) as caught:
        backup.prove(str(new), None)
    assert caught.value.cause == 'ARCHIVE_INVALID'
    assert 'removed' in caught.value.reason and 'older archives were kept' in caught.value.reason
    assert os.listdir(str(tmp_path)) == ['dev-20261129-031500.tx9']


def test_keep_last_implies_verify_and_below_one_is_refused_before_anything_runs():
    assert Backup(None, None, 'dev', '/nowhere', encrypt=False, keep_last=3).verify is True
    assert Backup(None, None, 'dev', '/nowhere', encrypt=False).verify is False
    with pytest.raises(Tx9Error) as caught:
        Backup(None, None, 'dev', '/nowhere', encrypt=False, keep_last=0).check_inputs()
    assert caught.value.cause == 'INVALID_ARGUMENT'


def archives(tmp_path, *names):
    for name in names:
        write_tx9(tmp_path / name, payload(regular('./home/agent/notes.txt', name.encode())))


def test_retention_alone_proves_the_newest_archive_then_keeps_the_keep_last_newest(tmp_path):
    dest = tmp_path / 'backups'
    dest.mkdir()
    archives(dest, 'dev-20261128-031500.tx9', 'dev-20261129-031500.tx9', 'dev-20261130-031500.tx9')
    backup = Backup(None, StateHome(str(tmp_path / 'home')), 'dev', str(dest), encrypt=False, keep_last=2)
    result = backup.retain()
    assert result['verified'] is True and result['changed'] is True
    assert result['path'] == str(dest / 'dev-20261130-031500.tx9')
    assert result['removed'] == [str(dest / 'dev-20261128-031500.tx9')]
    assert sorted(os.listdir(str(dest))) == ['dev-20261129-031500.tx9', 'dev-20261130-031500.tx9']
    again = backup.retain()
    assert again['changed'] is False and again['removed'] == []


def test_retention_alone_removes_nothing_when_the_newest_archive_is_truncated_and_keeps_the_truncated_one(tmp_path):
    dest = tmp_path / 'backups'
    dest.mkdir()
    archives(dest, 'dev-20261128-031500.tx9', 'dev-20261129-031500.tx9', 'dev-20261130-031500.tx9')
    newest = dest / 'dev-20261130-031500.tx9'
    whole = newest.read_bytes()
    newest.write_bytes(whole[:len(whole) // 2])
    backup = Backup(None, StateHome(str(tmp_path / 'home')), 'dev', str(dest), encrypt=False, keep_last=1)
    with pytest.raises(Tx9Error) as caught:
        backup.retain()
    assert caught.value.cause == 'ARCHIVE_CORRUPT'
    assert str(newest) in caught.value.reason and 'no archive was removed' in caught.value.reason
    assert len(os.listdir(str(dest))) == 3 and newest.read_bytes() == whole[:len(whole) // 2]


def test_retention_alone_in_check_mode_reads_nothing_and_names_what_it_would_remove(tmp_path):
    dest = tmp_path / 'backups'
    dest.mkdir()
    archives(dest, 'dev-20261129-031500.tx9')
    (dest / 'dev-20261130-031500.tx9').write_bytes(b'unread in check mode')
    backup = Backup(None, StateHome(str(tmp_path / 'home')), 'dev', str(dest), encrypt=False, keep_last=1)
    result = backup.retain(check_mode=True)
    assert result['removed'] == [str(dest / 'dev-20261129-031500.tx9')] and result['verified'] is False
    assert len(os.listdir(str(dest))) == 2


def test_retention_alone_needs_keep_last_and_an_archive_to_keep(tmp_path):
    home = StateHome(str(tmp_path / 'home'))
    with pytest.raises(Tx9Error) as caught:
        Backup(None, home, 'dev', str(tmp_path), encrypt=False).retain()
    assert caught.value.cause == 'INVALID_ARGUMENT' and 'keep_last' in caught.value.fix
    with pytest.raises(Tx9Error) as caught:
        Backup(None, home, 'dev', str(tmp_path), encrypt=False, keep_last=1).retain()
    assert caught.value.cause == 'NO_ARCHIVE'
