# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A backup writes its payload once, in place in the archive, behind room kept for metadata.json.

The box's tar stream is stood in for by GNU tar's tar of a directory made
here; everything after it (validator, gzip, gpg, the archive, its read-back
and publishing) is the real code, and the result is read as an import reads it.
"""


import hashlib
import json
import os
import subprocess
import tarfile

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._archive import writing
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.envelope import read_archive
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._portable import backup_payload
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.backup import DEFAULT_EXCLUDES, Backup
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.backup_payload import tar_command
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.importer import verify_archive

PASSWORD = 'correct horse battery staple'
AGENT = {'Id': 'agent-id', 'Config': {'Image': 'tx9-box:0.1.0'}}


@pytest.fixture
def box_tar(tmp_path, monkeypatch):
    """The tar the box would stream: /data with a home, some text and some noise."""
    root = tmp_path / 'data'
    (root / 'home' / 'agent' / 'notes').mkdir(parents=True)
    (root / 'home' / 'agent' / 'notes' / 'todo.md').write_text('remember the milk\n' * 500)
    (root / 'home' / 'agent' / 'noise.bin').write_bytes(os.urandom(300 * 1024))
    argv = tar_command(DEFAULT_EXCLUDES)
    argv[argv.index('--directory=/data')] = '--directory=%s' % root
    data = subprocess.run(argv, stdout=subprocess.PIPE, check=True).stdout

    class BoxTar:
        def __init__(self, client, container_id, argv):
            pass

        def chunks(self):
            for start in range(0, len(data), 65536):
                yield data[start:start + 65536]

        def check(self):
            pass

        def close(self):
            pass

    monkeypatch.setattr(backup_payload, 'TarStream', BoxTar)
    return data


def back_up(tmp_path, encrypt):
    dest = tmp_path / 'backups'
    dest.mkdir(exist_ok=True)
    job = Backup(None, None, 'dev', str(dest), password=PASSWORD if encrypt else None, encrypt=encrypt)
    gpg = job.check_inputs()
    return job.archive(AGENT, str(dest), gpg), dest


def sha256_of(path):
    with open(path, 'rb') as handle:
        return hashlib.sha256(handle.read()).hexdigest()


@pytest.mark.parametrize('encrypt', [False, True], ids=['plain', 'encrypted'])
def test_an_archive_written_in_place_reads_as_an_import_reads_it_and_its_digest_is_the_files(tmp_path, box_tar, encrypt):
    result, dest = back_up(tmp_path, encrypt)

    assert sorted(os.listdir(str(dest))) == [os.path.basename(result['path'])]
    assert (result['sha256'], result['size']) == (sha256_of(result['path']), os.path.getsize(result['path']))
    proved = verify_archive(result['path'], PASSWORD if encrypt else None)
    assert proved['payload_sha256'] == result['payload_sha256'] and proved['members'] == result['members']
    with tarfile.open(result['path'], 'r:') as tar:
        names = tar.getnames()
        meta = json.loads(tar.extractfile('metadata.json').read().decode('utf-8'))
    assert names == ['metadata.json', 'data.tar.gz.gpg' if encrypt else 'data.tar.gz']
    assert (meta['box'], meta['encrypted'], meta['image']) == ('dev', encrypt, 'tx9-box:0.1.0')


def test_metadata_written_in_place_is_indented_json_padded_with_spaces_to_its_room(tmp_path, box_tar):
    result, _dest = back_up(tmp_path, False)

    with tarfile.open(result['path'], 'r:') as tar:
        raw = tar.extractfile('metadata.json').read()
    assert len(raw) == writing.METADATA_ROOM and raw.endswith(b' \n')
    assert raw.decode('utf-8').startswith('{\n  "format": "tx9-archive",')
    assert raw.rstrip() == raw.rstrip()[:raw.index(b'}') + 1]


def test_the_plain_tar_and_gpg_tools_read_an_archive_written_in_place(tmp_path, box_tar):
    result, _dest = back_up(tmp_path, True)
    out = tmp_path / 'out'
    out.mkdir()
    (tmp_path / 'gnupg').mkdir(mode=0o700)
    script = ('set -e -o pipefail; tar -xOf "$1" data.tar.gz.gpg | gpg --homedir "$2" --batch --pinentry-mode loopback '
              '--passphrase "$3" --decrypt 2>/dev/null | tar -xz -C "$4"')
    subprocess.run(['bash', '-c', script, 'sh', result['path'], str(tmp_path / 'gnupg'), PASSWORD, str(out)], check=True)
    assert (out / 'home' / 'agent' / 'notes' / 'todo.md').read_text() == 'remember the milk\n' * 500


def test_metadata_that_does_not_fit_its_room_gets_a_new_archive_with_the_payload_copied_into_it(
        tmp_path, box_tar, monkeypatch):
    monkeypatch.setattr(writing, 'METADATA_ROOM', 64)

    result, dest = back_up(tmp_path, True)

    assert sorted(os.listdir(str(dest))) == [os.path.basename(result['path'])]
    assert (result['sha256'], result['size']) == (sha256_of(result['path']), os.path.getsize(result['path']))
    assert verify_archive(result['path'], PASSWORD)['payload_sha256'] == result['payload_sha256']
    with tarfile.open(result['path'], 'r:') as tar:
        raw = tar.extractfile('metadata.json').read()
    assert not raw.endswith(b' \n') and json.loads(raw.decode('utf-8'))['box'] == 'dev'


@pytest.mark.parametrize('part, encrypt', [('prefix', False), ('payload', False), ('payload', True)],
                         ids=['prefix', 'plain-payload', 'encrypted-payload'])
def test_an_archive_that_reads_back_other_than_written_is_refused_and_nothing_is_published(
        tmp_path, box_tar, monkeypatch, part, encrypt):
    sealed = writing.InPlaceArchive.seal

    def seal_then_damage(archive, metadata):
        done = sealed(archive, metadata)
        offset = 600 if part == 'prefix' else archive.payload_offset + archive.payload_size // 2
        archive.handle.flush()
        with open(archive.path, 'rb') as handle:
            handle.seek(offset)
            byte = handle.read(1)
        os.pwrite(archive.handle.fileno(), bytes([byte[0] ^ 0xff]), offset)
        return done

    monkeypatch.setattr(writing.InPlaceArchive, 'seal', seal_then_damage)

    with pytest.raises(Tx9Error) as info:
        back_up(tmp_path, encrypt)

    assert info.value.cause == 'ARCHIVE_CORRUPT'
    assert os.listdir(str(tmp_path / 'backups')) == []


def test_an_archive_sealed_in_place_has_the_payload_where_the_reader_finds_it(tmp_path):
    path = str(tmp_path / 'dev.tx9')
    payload = b'\x1f\x8b' + os.urandom(4998)  # sniffs as gzip
    with writing.InPlaceArchive(path, 1764470834) as archive:
        archive.write(payload[:1000])
        archive.write(payload[1000:])
        metadata = dict(format='tx9-archive', format_version=1, box='dev', created_at='2026-11-30T02:47:14Z',
                        tx9_version='0.1.0', image='tx9-box:0.1.0', encrypted=False, payload='data.tar.gz',
                        payload_sha256=hashlib.sha256(payload).hexdigest(), payload_size=len(payload))
        assert archive.seal(metadata) is True

    read = read_archive(path)

    assert (read.payload_offset, read.payload_size) == (archive.payload_offset, len(payload))
    with open(path, 'rb') as handle:
        handle.seek(read.payload_offset)
        assert handle.read(len(payload)) == payload


def test_nothing_named_tx9_exists_under_the_destination_until_the_archive_is_published(tmp_path, box_tar, monkeypatch):
    sealed = writing.InPlaceArchive.seal
    seen = []

    def seal_and_look(archive, metadata):
        seen.extend(name for _top, _dirs, files in os.walk(str(tmp_path / 'backups')) for name in files)
        return sealed(archive, metadata)

    monkeypatch.setattr(writing.InPlaceArchive, 'seal', seal_and_look)

    back_up(tmp_path, False)

    assert len(seen) == 1 and seen[0].startswith('.dev-') and '.staging-' in seen[0] and not seen[0].endswith('.tx9')
