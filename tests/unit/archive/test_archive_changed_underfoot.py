# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


import gzip
import hashlib
import io
import tarfile

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._archive.envelope import (
    plain_payload, read_archive, validate_payload)
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.metadata import new_metadata
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.writing import write_archive
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error


def payload(text):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode='w') as tar:
        for name in ('.', 'home', 'home/agent'):
            info = tarfile.TarInfo(name)
            info.type = tarfile.DIRTYPE
            tar.addfile(info)
        data = text.encode()
        info = tarfile.TarInfo('home/agent/note.txt')
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0)


def write(path, data):
    metadata = new_metadata('dev', 'tx9-box:0.1.0', False, hashlib.sha256(data).hexdigest(), len(data))
    with open(path, 'wb') as handle:
        write_archive(handle, metadata, io.BytesIO(data))


def test_an_archive_replaced_after_it_was_checked_is_refused_when_read_again(tmp_path):
    path = str(tmp_path / 'dev.tx9')
    write(path, payload('first'))
    archive = read_archive(path)
    validate_payload(archive)
    write(path, payload('other!'))  # same size, other bytes
    with pytest.raises(Tx9Error) as caught:
        with plain_payload(archive) as stream:
            while stream.read(65536):
                pass
    assert caught.value.cause == 'ARCHIVE_CORRUPT'


def test_an_unchanged_archive_reads_the_same_in_every_pass(tmp_path):
    path = str(tmp_path / 'dev.tx9')
    write(path, payload('first'))
    archive = read_archive(path)
    assert validate_payload(archive).files == 1
    with plain_payload(archive) as stream:
        assert gzip.decompress(stream.read())
