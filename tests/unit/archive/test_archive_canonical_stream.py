# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The canonical stream an import extracts: the validated members as our writer writes them, and its end mark."""

import io
import tarfile

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._archive.envelope import CanonicalStream, read_archive
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.tests.unit.archive.tx9_archive_kit import (
    directory, hardlink, payload, regular, symlink, write_tx9)

MARK = '.tx9-stream-end-0123456789abcdef0123456789abcdef'


def sample_payload(text=b'hello'):
    return payload(directory('./home/agent/w'), regular('./home/agent/w/a.txt', text, mode=0o4755),
                   symlink('./home/agent/w/link', 'a.txt'), hardlink('./home/agent/w/hard', './home/agent/w/a.txt'))


def listed(chunks):
    with tarfile.open(fileobj=io.BytesIO(b''.join(chunks)), mode='r:') as tar:
        return [(info.name, info.type, info.mode, info.uid, info.gid, info.size) for info in tar.getmembers()]


def test_without_an_end_mark_the_stream_holds_exactly_the_validated_members(tmp_path):
    write_tx9(tmp_path / 'dev.tx9', sample_payload())
    stream = CanonicalStream(read_archive(str(tmp_path / 'dev.tx9')), None, None, 1001, 1001)

    members = listed(stream)

    # tarfile reads a directory's name without its trailing slash.
    assert [name for name, *_rest in members] == ['.', 'home', 'home/agent', 'home/agent/w', 'home/agent/w/a.txt',
                                                  'home/agent/w/link', 'home/agent/w/hard']
    assert all(uid == gid == 1001 for _name, _type, _mode, uid, gid, _size in members)
    assert members[4][2] == 0o755  # permission bits only
    assert stream.check().members == 7


def test_with_an_end_mark_its_empty_file_is_the_last_member_after_every_validated_one(tmp_path):
    write_tx9(tmp_path / 'dev.tx9', sample_payload())
    stream = CanonicalStream(read_archive(str(tmp_path / 'dev.tx9')), None, None, 1001, 1001, end_mark=MARK)

    members = listed(stream)

    assert len(members) == 8
    assert members[-1] == (MARK, tarfile.REGTYPE, 0o600, 1001, 1001, 0)
    # The mark is no member of the payload: the summary counts the payload's members only.
    assert stream.check().members == 7


def test_a_payload_changed_after_validation_raises_and_never_sends_the_end_mark(tmp_path):
    path = tmp_path / 'dev.tx9'
    write_tx9(path, sample_payload(b'first'))
    archive = read_archive(str(path))
    write_tx9(path, sample_payload(b'other'))  # same size, other bytes
    stream = CanonicalStream(archive, None, None, 1001, 1001, end_mark=MARK)
    sent = []

    with pytest.raises(Tx9Error) as caught:
        for chunk in stream:
            sent.append(chunk)

    assert caught.value.cause == 'ARCHIVE_CORRUPT'
    assert MARK.encode() not in b''.join(sent)
    assert stream.error is caught.value
    with pytest.raises(Tx9Error):
        stream.check()


def test_a_stream_not_read_to_its_end_is_not_complete(tmp_path):
    write_tx9(tmp_path / 'dev.tx9', sample_payload())
    stream = CanonicalStream(read_archive(str(tmp_path / 'dev.tx9')), None, None, 1001, 1001, end_mark=MARK, chunk_size=512)
    chunks = iter(stream)
    next(chunks)
    chunks.close()

    with pytest.raises(Tx9Error) as caught:
        stream.check()

    assert caught.value.cause == 'ARCHIVE_CORRUPT'
