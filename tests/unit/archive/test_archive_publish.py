# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Publishing a .tx9: a private staging file, then a hard link to a free name, never an overwrite."""


import datetime
import errno
import io
import os
import stat

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._archive import envelope as archive
from ansible_collections.col_agents.tx9.plugins.module_utils._archive import metadata as archive_metadata
from ansible_collections.col_agents.tx9.plugins.module_utils._archive import writing
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.tests.unit.archive.tx9_archive_kit import metadata_for, payload, regular

MOMENT = datetime.datetime(2026, 11, 30, 2, 47, 14, tzinfo=datetime.timezone.utc)
DATA = payload(regular('./home/agent/notes', b'hello\n'))


def writer(data=DATA):
    def write(handle):
        writing.write_archive(handle, metadata_for(data), io.BytesIO(data))
    return write


def listing(directory):
    return sorted(os.listdir(str(directory)))


def test_publishing_writes_box_dash_utc_time_dot_tx9_as_0600_and_leaves_no_staging_file(tmp_path):
    path = writing.publish(str(tmp_path), 'dev', writer(), MOMENT)

    assert path == str(tmp_path / 'dev-20261130-024714.tx9')
    assert listing(tmp_path) == ['dev-20261130-024714.tx9']
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert os.stat(path).st_nlink == 1
    assert archive.read_archive(path).payload_sha256 == metadata_for(DATA)['payload_sha256']


def test_publishing_without_a_moment_uses_the_current_utc_second(tmp_path):
    before = archive_metadata.utc_now()
    path = writing.publish(str(tmp_path), 'dev', writer())

    assert os.path.basename(path) in {archive.archive_file_name('dev', before),
                                      archive.archive_file_name('dev', before + datetime.timedelta(seconds=1))}


def test_two_publishes_in_the_same_second_give_two_files(tmp_path):
    first = writing.publish(str(tmp_path), 'dev', writer(), MOMENT)
    second = writing.publish(str(tmp_path), 'dev', writer(), MOMENT)
    third = writing.publish(str(tmp_path), 'dev', writer(), MOMENT)

    assert [os.path.basename(p) for p in (first, second, third)] == [
        'dev-20261130-024714.tx9', 'dev-20261130-024714-2.tx9', 'dev-20261130-024714-3.tx9']
    assert listing(tmp_path) == sorted(os.path.basename(p) for p in (first, second, third))


def test_a_file_already_at_the_final_name_is_left_byte_identical(tmp_path):
    taken = tmp_path / 'dev-20261130-024714.tx9'
    taken.write_bytes(b'somebody else\'s archive')

    path = writing.publish(str(tmp_path), 'dev', writer(), MOMENT)

    assert taken.read_bytes() == b'somebody else\'s archive'
    assert os.path.basename(path) == 'dev-20261130-024714-2.tx9'


def test_a_symlink_planted_at_the_final_name_is_not_followed(tmp_path):
    target = tmp_path / 'elsewhere'
    target.write_bytes(b'keep me')
    os.symlink(str(target), str(tmp_path / 'dev-20261130-024714.tx9'))

    path = writing.publish(str(tmp_path), 'dev', writer(), MOMENT)

    assert target.read_bytes() == b'keep me'
    assert os.path.basename(path) == 'dev-20261130-024714-2.tx9'


@pytest.mark.parametrize('failure, cause', [
    (RuntimeError('the box went away'), None),
    (OSError(errno.ENOSPC, 'No space left on device'), 'NO_SPACE'),
    (Tx9Error('The payload is unsafe.', 'ARCHIVE_UNSAFE'), 'ARCHIVE_UNSAFE'),
], ids=['unexpected', 'disk-full', 'refusal'])
def test_a_failure_while_writing_leaves_no_tx9_and_no_staging_file(tmp_path, failure, cause):
    (tmp_path / 'older.tx9').write_bytes(b'old')

    def write(handle):
        handle.write(b'half an archive')
        raise failure

    with pytest.raises(Exception) as info:
        writing.publish(str(tmp_path), 'dev', write, MOMENT)

    if cause:
        assert info.value.cause == cause
    assert listing(tmp_path) == ['older.tx9']
    assert (tmp_path / 'older.tx9').read_bytes() == b'old'


def test_a_failure_to_link_leaves_no_tx9_and_no_staging_file(tmp_path, monkeypatch):
    def no_links(src, dst):
        raise OSError(errno.EPERM, 'Operation not permitted')

    monkeypatch.setattr(writing.os, 'link', no_links)

    with pytest.raises(Tx9Error) as info:
        writing.publish(str(tmp_path), 'dev', writer(), MOMENT)

    assert info.value.cause == 'ARCHIVE_WRITE_FAILED'
    assert listing(tmp_path) == []


def test_publishing_into_a_missing_directory_is_a_write_failure(tmp_path):
    with pytest.raises(Tx9Error) as info:
        writing.publish(str(tmp_path / 'missing'), 'dev', writer(), MOMENT)

    assert info.value.cause == 'ARCHIVE_WRITE_FAILED'


@pytest.mark.parametrize('box', ['../evil', 'a/b', '.hidden', ''])
def test_a_box_name_that_could_leave_the_directory_is_refused_before_anything_is_written(tmp_path, box):
    with pytest.raises(Tx9Error) as info:
        writing.publish(str(tmp_path), box, writer(), MOMENT)

    assert info.value.cause == 'INVALID_NAME'
    assert listing(tmp_path) == []
