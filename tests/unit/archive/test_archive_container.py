# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The .tx9 container: what is written, and what a strict reader refuses."""


import gzip
import io
import json
import os
import subprocess
import tarfile

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._archive import envelope as archive
from ansible_collections.col_agents.tx9.plugins.module_utils._archive import metadata as archive_metadata
from ansible_collections.col_agents.tx9.plugins.module_utils._archive import writing
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.tests.unit.archive.tx9_archive_kit import (
    cli_metadata, container, directory, member, meta_json, metadata_for, payload, regular, sha256, symlink, write_tx9)

DATA = payload(regular('./home/agent/notes', b'remember the milk\n'))
# Bytes that sniff as OpenPGP; the container reader never decrypts.
SEALED = b'\x8c\x0d' + os.urandom(200)


def refused(path, cause):
    with pytest.raises(Tx9Error) as info:
        archive.read_archive(str(path))
    assert info.value.cause == cause, info.value.reason
    return info.value


@pytest.fixture
def tx9(tmp_path):
    return tmp_path / 'dev.tx9'


# Writing.

def test_a_written_archive_is_an_uncompressed_tar_of_metadata_then_payload_both_0600(tx9):
    write_tx9(tx9, DATA)

    with tarfile.open(str(tx9), 'r:') as tar:
        members = tar.getmembers()
        assert [(m.name, m.type, m.mode) for m in members] == [
            ('metadata.json', tarfile.REGTYPE, 0o600), ('data.tar.gz', tarfile.REGTYPE, 0o600)]
        meta = json.loads(tar.extractfile(members[0]).read().decode('utf-8'))
        assert tar.extractfile(members[1]).read() == DATA
    assert meta == dict(format='tx9-archive', format_version=1, box='dev', created_at='2026-11-30T02:47:14Z',
                        tx9_version=meta['tx9_version'], image='tx9-box:0.1.0', encrypted=False, payload='data.tar.gz',
                        payload_sha256=sha256(DATA), payload_size=len(DATA))


def test_a_written_archive_reads_back_with_every_fact_checked(tx9):
    write_tx9(tx9, DATA)

    read = archive.read_archive(str(tx9))

    assert (read.payload_name, read.payload_size, read.payload_sha256, read.encrypted) == (
        'data.tar.gz', len(DATA), sha256(DATA), False)
    assert read.metadata.box == 'dev' and read.metadata.original is False
    with archive.open_payload(read) as stored:
        assert stored.read() == DATA


def file_sha256(path):
    with open(str(path), 'rb') as handle:
        return sha256(handle.read())


def test_an_archive_with_the_expected_whole_file_sha256_reads_back(tx9):
    write_tx9(tx9, DATA)

    read = archive.read_archive(str(tx9), expected_sha256=file_sha256(tx9).upper())

    assert read.payload_sha256 == sha256(DATA)


@pytest.mark.parametrize('where', ['metadata', 'payload', 'end padding'])
def test_a_file_that_is_not_the_expected_sha256_is_corrupt_and_says_so_wherever_it_changed(tx9, where):
    write_tx9(tx9, DATA)
    expected = file_sha256(tx9)
    raw = bytearray(tx9.read_bytes())
    offset = {'metadata': 520, 'payload': raw.index(DATA[:16]) + 8, 'end padding': len(raw) - 10}[where]
    raw[offset] ^= 0x01
    tx9.write_bytes(bytes(raw))

    with pytest.raises(Tx9Error) as info:
        archive.read_archive(str(tx9), expected_sha256=expected)

    assert info.value.cause == 'ARCHIVE_CORRUPT'
    assert 'SHA-256' in info.value.reason and expected in info.value.reason and 'archive_sha256' in info.value.reason


def test_an_encrypted_archive_names_its_payload_data_tar_gz_gpg(tx9):
    write_tx9(tx9, SEALED, encrypted=True)

    read = archive.read_archive(str(tx9))

    assert read.payload_name == 'data.tar.gz.gpg' and read.encrypted


def test_the_tar_cli_lists_a_written_archive(tx9):
    write_tx9(tx9, DATA)

    listing = subprocess.run(['tar', '-tf', str(tx9)], check=True, stdout=subprocess.PIPE).stdout.decode()

    assert listing.split() == ['metadata.json', 'data.tar.gz']


def test_writing_refuses_a_payload_that_differs_from_its_metadata():
    meta = metadata_for(DATA)

    with pytest.raises(Tx9Error) as info:
        writing.write_archive(io.BytesIO(), meta, io.BytesIO(DATA[:-1] + b'!'))
    assert info.value.cause == 'ARCHIVE_WRITE_FAILED'
    with pytest.raises(Tx9Error):
        writing.write_archive(io.BytesIO(), meta, io.BytesIO(DATA + b'more'))


def test_a_payload_larger_than_ustar_allows_gets_a_pax_size_header():
    header = writing.member_header('data.tar.gz', 9 * 1024 ** 3, 0)

    info = tarfile.TarInfo.frombuf(header[-512:], 'utf-8', 'strict')
    assert len(header) > 512 and b'size=' in header and info.name == 'data.tar.gz'


# The original CLI's archives.

def test_an_archive_of_the_original_cli_reads_fine(tx9):
    tx9.write_bytes(container([('metadata.json', meta_json(cli_metadata())), ('data.tar.gz', DATA)]))

    read = archive.read_archive(str(tx9))

    assert read.metadata.original is True
    assert (read.metadata.box, read.metadata.cli_version, read.metadata.image_version) == ('dev', '0.12.0', '0.12.0')
    assert read.metadata.payload_sha256 is None and read.payload_sha256 == sha256(DATA)


def test_an_encrypted_archive_of_the_original_cli_reads_fine(tx9):
    tx9.write_bytes(container([('metadata.json', meta_json(cli_metadata(encrypted=True))), ('data.tar.gz.gpg', SEALED)]))

    assert archive.read_archive(str(tx9)).encrypted is True


@pytest.mark.parametrize('key', ['box_name', 'created_at', 'cli_version', 'image_version', 'encrypted', 'format_version'])
def test_an_original_cli_archive_missing_a_key_is_refused(tx9, key):
    meta = cli_metadata()
    del meta[key]
    tx9.write_bytes(container([('metadata.json', meta_json(meta)), ('data.tar.gz', DATA)]))

    assert '"%s"' % key in refused(tx9, 'ARCHIVE_INVALID').reason


def test_unknown_metadata_keys_are_ignored(tx9):
    write_tx9(tx9, DATA, meta=metadata_for(DATA, comment='made on a Tuesday', extra={'nested': [1, 2]}))

    assert archive.read_archive(str(tx9)).metadata.raw['comment'] == 'made on a Tuesday'


# The container's shape.

@pytest.mark.parametrize('members, says', [
    ([('metadata.json', b'{}'), ('data.tar.gz', DATA), ('extra', b'x')], 'third member'),
    ([('data.tar.gz', DATA), ('metadata.json', b'{}')], 'metadata.json must come first'),
    ([('meta.json', b'{}'), ('data.tar.gz', DATA)], 'first member is "meta.json"'),
    ([('metadata.json', b'{}'), ('data.tar', DATA)], 'second member is "data.tar"'),
    ([('./metadata.json', b'{}'), ('data.tar.gz', DATA)], 'path separator'),
    ([('metadata.json', b'{}'), ('payload/data.tar.gz', DATA)], 'path separator'),
    ([('metadata.json', b'{}')], 'holds 1 member'),
    ([], 'holds 0 member'),
], ids=['third-member', 'wrong-order', 'wrong-metadata-name', 'wrong-payload-name', 'dot-slash-name',
        'payload-in-a-directory', 'no-payload', 'empty-tar'])
def test_a_container_of_the_wrong_shape_is_invalid(tx9, members, says):
    tx9.write_bytes(container(members))

    assert says in refused(tx9, 'ARCHIVE_INVALID').reason


@pytest.mark.parametrize('odd', [directory('data.tar.gz'), symlink('data.tar.gz', '/etc/passwd'),
                                 member('data.tar.gz', tarfile.LNKTYPE, link='metadata.json'),
                                 member('data.tar.gz', tarfile.FIFOTYPE)],
                         ids=['directory', 'symlink', 'hard-link', 'fifo'])
def test_a_payload_member_that_is_not_a_regular_file_is_invalid(tx9, odd):
    tx9.write_bytes(container([('metadata.json', meta_json(metadata_for(DATA))), odd]))

    assert 'not a regular file' in refused(tx9, 'ARCHIVE_INVALID').reason


def test_a_metadata_member_that_is_a_directory_is_invalid(tx9):
    tx9.write_bytes(container([directory('metadata.json'), ('data.tar.gz', DATA)]))

    assert 'not a regular file' in refused(tx9, 'ARCHIVE_INVALID').reason


@pytest.mark.parametrize('content, says', [
    (gzip.compress(b'not a tar'), 'not an uncompressed tar'),
    (b'hello', 'not an uncompressed tar'),
], ids=['gzip-compressed', 'text'])
def test_a_file_that_is_not_an_uncompressed_tar_is_invalid(tx9, content, says):
    tx9.write_bytes(content)

    assert says in refused(tx9, 'ARCHIVE_INVALID').reason


def test_a_gzip_compressed_tx9_is_invalid(tx9, tmp_path):
    write_tx9(tmp_path / 'real.tx9', DATA)
    tx9.write_bytes(gzip.compress((tmp_path / 'real.tx9').read_bytes()))

    refused(tx9, 'ARCHIVE_INVALID')


def test_a_missing_file_is_invalid_and_says_it_cannot_be_opened(tmp_path):
    assert 'cannot be opened' in refused(tmp_path / 'nope.tx9', 'ARCHIVE_INVALID').reason


def test_data_after_the_end_of_the_container_is_invalid(tx9):
    write_tx9(tx9, DATA)
    with open(str(tx9), 'ab') as handle:
        handle.write(b'smuggled')

    assert 'follows the end' in refused(tx9, 'ARCHIVE_INVALID').reason


@pytest.mark.parametrize('keep', [lambda size: size - 1024, lambda size: size // 2, lambda size: 700],
                         ids=['no-end-blocks', 'cut-in-the-payload', 'cut-in-the-metadata'])
def test_a_container_cut_short_is_corrupt(tx9, keep):
    write_tx9(tx9, payload(regular('./home/agent/big', os.urandom(5000))))
    data = tx9.read_bytes()
    tx9.write_bytes(data[:keep(len(data))])

    refused(tx9, 'ARCHIVE_CORRUPT')


# Metadata.

@pytest.mark.parametrize('key', [key for key, _kind in archive_metadata.METADATA_KEYS])
def test_metadata_missing_a_key_is_invalid(tx9, key):
    meta = metadata_for(DATA)
    del meta[key]
    tx9.write_bytes(container([('metadata.json', meta_json(meta)), ('data.tar.gz', DATA)]))

    assert '"%s"' % key in refused(tx9, 'ARCHIVE_INVALID').reason


@pytest.mark.parametrize('key, value', [
    ('format', 1), ('format_version', '1'), ('format_version', True), ('format_version', 1.0), ('box', None),
    ('created_at', 1764470834), ('tx9_version', 0.1), ('image', ['tx9-box']), ('encrypted', 'false'),
    ('encrypted', 0), ('payload', None), ('payload_sha256', 12), ('payload_size', '97'), ('payload_size', False),
], ids=repr)
def test_metadata_with_a_key_of_the_wrong_type_is_invalid(tx9, key, value):
    meta = metadata_for(DATA)
    meta[key] = value
    tx9.write_bytes(container([('metadata.json', meta_json(meta)), ('data.tar.gz', DATA)]))

    assert '"%s"' % key in refused(tx9, 'ARCHIVE_INVALID').reason


@pytest.mark.parametrize('changes, says', [
    (dict(format_version=2), 'newer'),
    (dict(format_version=0), 'does not exist'),
    (dict(format='zip'), "format is 'zip'"),
    (dict(payload='data.tar.gz.gpg'), 'names the payload'),
    (dict(payload_sha256='ABC'), 'lowercase hex'),
    (dict(payload_sha256='A' * 64), 'lowercase hex'),
    (dict(payload_size=-1), 'negative'),
], ids=['newer-version', 'version-zero', 'other-format', 'payload-name-mismatch', 'short-sha', 'upper-case-sha',
        'negative-size'])
def test_metadata_with_a_value_this_reader_cannot_accept_is_invalid(tx9, changes, says):
    tx9.write_bytes(container([('metadata.json', meta_json(metadata_for(DATA, **changes))), ('data.tar.gz', DATA)]))

    assert says in refused(tx9, 'ARCHIVE_INVALID').reason


def test_a_newer_format_version_says_to_upgrade_the_collection(tx9):
    tx9.write_bytes(container([('metadata.json', meta_json(metadata_for(DATA, format_version=2))), ('data.tar.gz', DATA)]))

    assert 'Upgrade' in refused(tx9, 'ARCHIVE_INVALID').fix


@pytest.mark.parametrize('raw, says', [
    (b'not json', 'not UTF-8 JSON'),
    (b'[1, 2]', 'not a JSON object'),
    (b'\xff\xfe{}', 'not UTF-8 JSON'),
    (b'{"format": "tx9-archive", "format": "tx9-archive"}', 'appears twice'),
    (b'{"payload_size": NaN}', 'not UTF-8 JSON'),
    (b'{"format": "tx9-archive"}', 'has no "format_version"'),
    (b'{}', 'has no "format"'),
], ids=['not-json', 'array', 'not-utf8', 'duplicate-key', 'nan', 'partial', 'empty-object'])
def test_metadata_that_is_not_a_clean_json_object_is_invalid(tx9, raw, says):
    tx9.write_bytes(container([('metadata.json', raw), ('data.tar.gz', DATA)]))

    assert says in refused(tx9, 'ARCHIVE_INVALID').reason


def test_metadata_larger_than_64_kib_is_invalid(tx9):
    meta = metadata_for(DATA, padding='x' * 70000)
    tx9.write_bytes(container([('metadata.json', meta_json(meta)), ('data.tar.gz', DATA)]))

    assert 'larger than' in refused(tx9, 'ARCHIVE_INVALID').reason


# Size, checksum and sniffing.

def test_a_payload_size_that_does_not_match_is_corrupt(tx9):
    tx9.write_bytes(container([('metadata.json', meta_json(metadata_for(DATA, payload_size=len(DATA) + 1))),
                               ('data.tar.gz', DATA)]))

    assert 'holds %d bytes' % len(DATA) in refused(tx9, 'ARCHIVE_CORRUPT').reason


def test_a_payload_sha256_that_does_not_match_is_corrupt(tx9):
    tampered = DATA[:-20] + bytes([DATA[-20] ^ 1]) + DATA[-19:]
    tx9.write_bytes(container([('metadata.json', meta_json(metadata_for(DATA))), ('data.tar.gz', tampered)]))

    assert 'SHA-256' in refused(tx9, 'ARCHIVE_CORRUPT').reason


@pytest.mark.parametrize('encrypted, name, data, says', [
    (True, 'data.tar.gz.gpg', DATA, 'gzip data but its metadata says encrypted=true'),
    (False, 'data.tar.gz', SEALED, 'OpenPGP data but its metadata says encrypted=false'),
    (False, 'data.tar.gz', b'PK\x03\x04zip', 'neither gzip nor OpenPGP'),
    (False, 'data.tar.gz', b'', 'neither gzip nor OpenPGP'),
], ids=['says-encrypted-but-gzip', 'says-plain-but-openpgp', 'neither', 'empty'])
def test_encrypted_that_disagrees_with_the_sniffed_bytes_is_invalid(tx9, encrypted, name, data, says):
    meta = metadata_for(data, encrypted=encrypted)
    tx9.write_bytes(container([('metadata.json', meta_json(meta)), (name, data)]))

    assert says in refused(tx9, 'ARCHIVE_INVALID').reason


def test_a_payload_name_that_disagrees_with_encrypted_is_invalid(tx9):
    meta = metadata_for(DATA, payload='data.tar.gz.gpg')
    tx9.write_bytes(container([('metadata.json', meta_json(meta)), ('data.tar.gz.gpg', DATA)]))

    assert 'encrypted=false' in refused(tx9, 'ARCHIVE_INVALID').reason


def test_an_original_cli_archive_whose_payload_name_disagrees_with_encrypted_is_invalid(tx9):
    tx9.write_bytes(container([('metadata.json', meta_json(cli_metadata(encrypted=True))), ('data.tar.gz', DATA)]))

    refused(tx9, 'ARCHIVE_INVALID')


@pytest.mark.parametrize('head, kind', [(b'\x1f\x8b\x08', 'gzip'), (b'\x8c\x0d', 'openpgp'), (b'\xc3\x04', 'openpgp'),
                                        (b'\x1f', None), (b'{"', None), (b'', None)])
def test_sniffing_tells_gzip_from_openpgp_by_the_first_bytes(head, kind):
    assert archive.sniff(head) == kind


# Names.

def test_an_archive_file_name_is_the_box_and_the_utc_time():
    import datetime
    moment = datetime.datetime(2026, 11, 30, 3, 47, 14, tzinfo=datetime.timezone(datetime.timedelta(hours=1)))

    assert archive.archive_file_name('dev', moment) == 'dev-20261130-024714.tx9'
    assert archive.archive_file_name('dev', moment, 3) == 'dev-20261130-024714-3.tx9'
    assert archive_metadata.rfc3339(moment) == '2026-11-30T02:47:14Z'
