# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A box's last backup: written into its state file by tx9_backup, read back for tx9_info."""


import os
import stat

from ansible_collections.col_agents.tx9.plugins.module_utils._box import backup_record
from ansible_collections.col_agents.tx9.plugins.module_utils._ops.info import TOKEN_KEY
from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.backup import Backup


def test_a_recorded_backup_is_read_back_with_its_time_path_digest_and_verification(tmp_path):
    home = StateHome(str(tmp_path / 'home'))
    backup_record.record_backup(home, 'dev', '/srv/dev-20261130-032238.tx9', 'ab' * 32, True, when=1796009558)
    assert backup_record.last_backup(home.read_box('dev')) == dict(
        time='2026-11-30T03:32:38Z', path='/srv/dev-20261130-032238.tx9', sha256='ab' * 32, verified=True,
        drill=None, drilled=False)


def test_recording_a_backup_keeps_the_rest_of_the_state_file_and_its_mode(tmp_path):
    home = StateHome(str(tmp_path / 'home'))
    home.write_box('dev', {TOKEN_KEY: 'secret-token', 'TX9_IMAGE': 'tx9-box:0.1.0'})
    backup_record.record_backup(home, 'dev', '/srv/a.tx9', 'cd' * 32, True, when=0)
    backup_record.record_backup(home, 'dev', '/srv/b.tx9', 'ef' * 32, True, when=60)
    persisted = home.read_box('dev')
    assert persisted[TOKEN_KEY] == 'secret-token' and persisted['TX9_IMAGE'] == 'tx9-box:0.1.0'
    assert backup_record.last_backup(persisted)['path'] == '/srv/b.tx9'
    assert backup_record.last_backup(persisted)['time'] == '1970-01-01T00:01:00Z'
    assert stat.S_IMODE(os.stat(home.box_file('dev')).st_mode) == 0o600


def test_a_box_never_backed_up_has_no_last_backup():
    assert backup_record.last_backup({TOKEN_KEY: 'x'}) is None


def test_an_unverified_record_reads_as_unverified():
    persisted = {backup_record.AT_KEY: '2026-11-30T03:22:38Z', backup_record.VERIFIED_KEY: 'false'}
    assert backup_record.last_backup(persisted)['verified'] is False


def test_the_backup_records_the_archive_it_published_as_verified(tmp_path):
    home = StateHome(str(tmp_path / 'home'))
    backup = Backup(client=None, home=home, box='dev', dest=str(tmp_path), encrypt=False)
    assert backup.record(dict(path='/srv/dev.tx9', sha256='12' * 32)) == []
    last = backup_record.last_backup(home.read_box('dev'))
    assert last['path'] == '/srv/dev.tx9' and last['verified'] is True and last['sha256'] == '12' * 32


def test_a_backup_whose_record_cannot_be_written_still_stands_and_says_so(tmp_path):
    blocked = tmp_path / 'home'
    blocked.write_text('a file where the state home should be')
    backup = Backup(client=None, home=StateHome(str(blocked)), box='dev', dest=str(tmp_path), encrypt=False)
    warnings = backup.record(dict(path='/srv/dev.tx9', sha256='12' * 32))
    assert len(warnings) == 1 and '/srv/dev.tx9 was written' in warnings[0] and 'box dev' in warnings[0]


def test_a_backup_reads_as_drilled_only_when_its_last_drill_restored_that_very_archive_and_passed():
    persisted = {backup_record.AT_KEY: '2026-11-30T03:22:38Z', backup_record.PATH_KEY: '/srv/dev-2.tx9'}
    passed = dict(archive='/srv/dev-2.tx9', ok=True, time='2026-11-30T03:25:00Z')
    assert backup_record.last_backup(persisted, passed) == dict(
        time='2026-11-30T03:22:38Z', path='/srv/dev-2.tx9', sha256=None, verified=False, drill=passed, drilled=True)
    failed = dict(passed, ok=False, cause='ARCHIVE_INVALID')
    assert backup_record.last_backup(persisted, failed)['drilled'] is False
    older = dict(passed, archive='/srv/dev-1.tx9')
    last = backup_record.last_backup(persisted, older)
    assert last['drilled'] is False and last['drill'] == older
