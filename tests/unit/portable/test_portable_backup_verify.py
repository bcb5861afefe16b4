# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A new archive is proved the way an import reads it, before retention may remove anything."""


import os

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.backup import Backup
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.imports import verify_archive
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
