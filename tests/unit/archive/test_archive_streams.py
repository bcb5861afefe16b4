# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The streaming pieces as backup and import put them together, without Docker.

Backup: a container's tar arrives in chunks, is validated as it passes and
gzip-compressed (and encrypted) on the way to disk, then published.
Import: the archive is read, the payload validated (decrypting on the fly),
and only then read again for extraction.
"""


import errno
import gzip
import io
import os
import random

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._archive import envelope as archive
from ansible_collections.col_agents.tx9.plugins.module_utils._archive import metadata as archive_metadata
from ansible_collections.col_agents.tx9.plugins.module_utils._archive import writing
from ansible_collections.col_agents.tx9.plugins.module_utils import _io
from ansible_collections.col_agents.tx9.plugins.module_utils._archive import gpg as _gpg
from ansible_collections.col_agents.tx9.plugins.module_utils._archive import validator
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.tests.unit.archive.tx9_archive_kit import BASE, directory, regular, symlink, tar_bytes, write_tx9

PASSPHRASE = 'backup passphrase'


def container_tar(*extra):
    """The uncompressed tar a container streams for /data."""
    return tar_bytes(BASE + (directory('./home/agent/.config'), regular('./home/agent/.config/app.json', b'{}'),
                             regular('./home/agent/blob', os.urandom(50000)), symlink('./home/agent/app', '.config/app.json'))
                     + extra)


def chunks(data, seed=7):
    """data in uneven chunks, with an empty one, as a Docker stream delivers it."""
    rng = random.Random(seed)
    at = 0
    yield b''
    while at < len(data):
        size = rng.randint(1, 9000)
        yield data[at:at + size]
        at += size


def back_up(raw, out, sink_for_gzip=None):
    """Validate the streamed tar while compressing it into out; return (summary, plain digest, plain size)."""
    plain = _io.HashingWriter(out if sink_for_gzip is None else sink_for_gzip)
    with gzip.GzipFile(fileobj=plain, mode='wb', mtime=0) as compressor:
        source = _io.TeeReader(_io.ChunkReader(chunks(raw)), compressor.write)
        summary = validator.validate_stream(source, compressed=False)
    return summary, plain.hexdigest(), plain.size


def test_a_plain_backup_streams_through_the_validator_and_is_published_and_imported(tmp_path):
    raw = container_tar()
    staged = tmp_path / 'payload'
    with open(str(staged), 'wb') as out:
        summary, digest, size = back_up(raw, out)
    assert summary.members == 7

    meta = archive_metadata.new_metadata('dev', 'tx9-box:0.1.0', False, digest, size)
    with open(str(staged), 'rb') as stored:
        path = writing.publish(str(tmp_path), 'dev', lambda handle: writing.write_archive(handle, meta, stored))

    read = archive.read_archive(path)
    assert archive.validate_payload(read).members == 7
    with archive.plain_payload(read) as stream:
        assert gzip.decompress(stream.read()) == raw


def test_an_encrypted_backup_is_never_plaintext_on_disk_and_reads_back_to_its_digest(tmp_path):
    raw = container_tar()
    staged = tmp_path / 'payload.gpg'
    gpg = _gpg.Gpg()
    with open(str(staged), 'wb') as out:
        stored = _io.HashingWriter(out)
        with gpg.encrypting(stored.write, PASSPHRASE) as sealed:
            summary, digest, size = back_up(raw, None, sink_for_gzip=sealed)
    assert summary.members == 7

    with open(str(staged), 'rb') as src:
        assert archive.digest_plaintext(src, True, PASSPHRASE, gpg) == (digest, size)

    meta = archive_metadata.new_metadata('dev', 'tx9-box:0.1.0', True, stored.hexdigest(), stored.size)
    with open(str(staged), 'rb') as src:
        path = writing.publish(str(tmp_path), 'dev', lambda handle: writing.write_archive(handle, meta, src))
    read = archive.read_archive(path)
    assert read.encrypted and read.payload_name == 'data.tar.gz.gpg'
    assert archive.validate_payload(read, PASSPHRASE, gpg).members == 7
    with archive.plain_payload(read, PASSPHRASE, gpg) as stream:
        assert gzip.decompress(stream.read()) == raw


@pytest.mark.parametrize('passphrase, cause', [(None, 'PASSWORD_REQUIRED'), ('wrong', 'BAD_PASSWORD')])
def test_validating_an_encrypted_archive_needs_the_right_passphrase(tmp_path, passphrase, cause):
    sealed = io.BytesIO()
    _gpg.Gpg().encrypt_stream(io.BytesIO(gzip.compress(container_tar())), sealed.write, PASSPHRASE)
    write_tx9(tmp_path / 'dev.tx9', sealed.getvalue(), encrypted=True)

    with pytest.raises(Tx9Error) as info:
        archive.validate_payload(archive.read_archive(str(tmp_path / 'dev.tx9')), passphrase)

    assert info.value.cause == cause


def test_an_unsafe_container_tar_is_refused_while_it_streams():
    raw = container_tar(regular('./home/agent/../../../etc/cron.d/x', b'* * * * * root sh'))

    with pytest.raises(Tx9Error) as info:
        back_up(raw, io.BytesIO())

    assert info.value.cause == 'ARCHIVE_UNSAFE' and 'etc/cron.d/x' in info.value.reason


def test_an_unsafe_payload_in_a_well_formed_container_is_refused_before_extraction(tmp_path):
    data = gzip.compress(container_tar(symlink('./home/agent/out', '/etc')))
    write_tx9(tmp_path / 'dev.tx9', data)

    read = archive.read_archive(str(tmp_path / 'dev.tx9'))
    with pytest.raises(Tx9Error) as info:
        archive.validate_payload(read)

    assert info.value.cause == 'ARCHIVE_UNSAFE'


def test_validate_payload_passes_limits_to_the_validator(tmp_path):
    write_tx9(tmp_path / 'dev.tx9', gzip.compress(container_tar()))

    with pytest.raises(Tx9Error) as info:
        archive.validate_payload(archive.read_archive(str(tmp_path / 'dev.tx9')), max_members=3)

    assert info.value.cause == 'ARCHIVE_UNSAFE'


def test_a_full_disk_while_teeing_is_no_space_not_a_corrupt_archive():
    def full(_chunk):
        raise OSError(errno.ENOSPC, 'No space left on device')

    with pytest.raises(Tx9Error) as info:
        validator.validate_stream(_io.TeeReader(io.BytesIO(container_tar()), full), compressed=False)

    assert info.value.cause == 'NO_SPACE'


def test_a_chunk_reader_serves_any_read_size_across_uneven_chunks():
    data = os.urandom(30000)
    reader = _io.ChunkReader(chunks(data))

    parts = [reader.read(1), reader.read(4096), reader.read(7)]
    parts.append(reader.read())
    assert b''.join(parts) == data
    assert reader.read(10) == b''


def test_a_bounded_reader_stops_at_its_size():
    reader = _io.BoundedReader(io.BytesIO(b'0123456789'), 4)

    assert (reader.read(3), reader.read(3), reader.read(3)) == (b'012', b'3', b'')


def test_a_hashing_writer_counts_and_hashes_what_passes():
    out = io.BytesIO()
    writer = _io.HashingWriter(out)
    writer.write(b'abc')
    writer.write(b'def')

    assert out.getvalue() == b'abcdef' and writer.size == 6
    assert writer.hexdigest() == 'bef57ec7f53a6d40beb640a780a639c83bc29ac8a9816f1fc6c5c6dcd93c4721'


# ---- read_ahead -----------------------------------------------------------------------------


class Counted:
    """An iterator of numbered chunks that records how far it was read and whether it was closed."""

    def __init__(self, count, fail_at=None):
        self.count = count
        self.fail_at = fail_at
        self.made = 0
        self.closed = False

    def __iter__(self):
        return self

    def __next__(self):
        if self.made == self.fail_at:
            raise Tx9Error('the payload broke off', 'ARCHIVE_CORRUPT', 'read it again')
        if self.made == self.count:
            raise StopIteration
        self.made += 1
        return b'%d' % self.made

    def close(self):
        self.closed = True


def test_read_ahead_yields_every_chunk_in_order_and_closes_its_source():
    source = Counted(50)
    assert list(_io.read_ahead(source, depth=3)) == [b'%d' % n for n in range(1, 51)]
    assert source.closed


def test_read_ahead_raises_the_sources_error_after_the_chunks_made_before_it():
    source = Counted(50, fail_at=7)
    got = []
    with pytest.raises(Tx9Error) as caught:
        for chunk in _io.read_ahead(source):
            got.append(chunk)
    assert caught.value.cause == 'ARCHIVE_CORRUPT'
    assert got == [b'%d' % n for n in range(1, 8)]
    assert source.closed


def test_read_ahead_left_early_stops_its_maker_within_its_depth_and_closes_the_source():
    source = Counted(10000)
    ahead = _io.read_ahead(source, depth=2)
    assert next(ahead) == b'1'
    ahead.close()
    assert source.closed
    # The first chunk, the two held ready and the one waiting to be handed over, at most.
    assert source.made <= 4
