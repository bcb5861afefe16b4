# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


import os
import subprocess

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._portable.backup import (
    DEFAULT_EXCLUDES, Backup, check_dest, prepare_dest, remove_stale_workdirs)
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.backup_payload import WORKDIR_PREFIX, ArchiveWriter, tar_command
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.writing import InPlaceArchive
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._io import HashingWriter


def test_the_tar_command_is_an_argv_with_every_exclude_and_no_shell():
    argv = tar_command(list(DEFAULT_EXCLUDES) + ['./home/agent/big dir'])
    assert argv[0] == 'tar' and argv[-1] == '.'
    assert '--directory=/data' in argv
    assert '--exclude=./home/agent/big dir' in argv
    assert '--exclude=./home/agent/.hermes/*.db-wal' in argv
    assert not any(';' in arg or '|' in arg for arg in argv)


def test_the_default_excludes_leave_out_caches_hermes_sidecars_and_the_quiesce_marker_but_not_user_files(tmp_path):
    root = tmp_path / 'data'
    keep = ['home/agent/notes.txt', 'home/agent/.hermes/state.db', 'home/agent/project/src/app.py',
            'home/agent/project/app.db-wal', 'home/agent/project/processes.json']
    drop = ['home/agent/.config/hermes-box/quiesced', 'home/agent/.hermes/state.db-wal', 'home/agent/.hermes/state.db-shm',
            'home/agent/project/node_modules/x/index.js', 'home/agent/project/.venv/bin/python',
            'home/agent/.cache/pip/x', 'home/agent/project/src/__pycache__/app.cpython-311.pyc',
            'home/agent/.codex/tmp/scratch', 'home/agent/.hermes/gateway.pid']
    for name in keep + drop:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('x')
    argv = tar_command(DEFAULT_EXCLUDES)
    argv[argv.index('--directory=/data')] = '--directory=%s' % root
    listing = subprocess.run(argv, stdout=subprocess.PIPE, check=True).stdout
    names = subprocess.run(['tar', '-t'], input=listing, stdout=subprocess.PIPE, check=True).stdout.decode().split()
    for name in keep:
        assert './' + name in names
    for name in drop:
        assert './' + name not in names


def test_members_carry_no_extended_header_and_keep_long_and_non_ascii_names_and_any_time_to_the_second(tmp_path):
    import io
    import tarfile
    root = tmp_path / 'data'
    long_name = 'home/agent/' + 'deep/' * 30 + 'file.txt'
    times = {'home/agent/plain.txt': 1764470834.75, 'home/agent/Übung – 日本語.txt': 1764470834.0,
             long_name: 1764470834.0, 'home/agent/1960.txt': -315619200.0, 'home/agent/2300.txt': 10413792000.0}
    for name, moment in times.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('x')
        os.utime(str(path), (moment, moment))
    argv = tar_command(DEFAULT_EXCLUDES)
    argv[argv.index('--directory=/data')] = '--directory=%s' % root
    stream = subprocess.run(argv, stdout=subprocess.PIPE, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(stream), mode='r:', encoding='utf-8') as tar:
        members = dict((member.name, member) for member in tar.getmembers())
    assert all(member.pax_headers == {} for member in members.values())
    assert dict((name, members['./' + name].mtime) for name in times) == dict(
        (name, int(moment)) for name, moment in times.items())


class TarChunks:
    """The stand-in for the box's tar stream: the chunks of a tar made here by GNU tar."""

    def __init__(self, data):
        self.data = data

    def chunks(self):
        for start in range(0, len(self.data), 65536):
            yield self.data[start:start + 65536]


def test_a_full_disk_under_an_unencrypted_payload_is_no_space_naming_the_file_and_the_bytes_written(
        tmp_path, full_disk):
    root = tmp_path / 'data'
    (root / 'home' / 'agent').mkdir(parents=True)
    (root / 'home' / 'agent' / 'noise.bin').write_bytes(os.urandom(4 * 1024 * 1024))
    argv = tar_command(DEFAULT_EXCLUDES)
    argv[argv.index('--directory=/data')] = '--directory=%s' % root
    stream = TarChunks(subprocess.run(argv, stdout=subprocess.PIPE, check=True).stdout)
    path = str(full_disk / 'dev.tx9')

    with pytest.raises(Tx9Error) as info:
        with InPlaceArchive(path, 0) as archive:
            ArchiveWriter(None, 'dev', [], False, None, None).compress(stream.chunks(), HashingWriter(archive))
            archive.flush()

    assert info.value.cause == 'NO_SPACE' and path in info.value.reason and 'is full after' in info.value.reason
    assert info.value.details['written'] > 0 and 'bytes free there now' in info.value.reason


@pytest.mark.parametrize('size', [1024 * 1024 - 4, 1024 * 1024, 1024 * 1024 + 4096])
@pytest.mark.parametrize('flush', [True, False], ids=['flushed', 'closed'])
def test_a_disk_that_fills_at_the_last_bytes_is_no_space_from_the_write_the_flush_or_the_close(
        full_disk, size, flush):
    path = str(full_disk / 'dev.tx9')

    with pytest.raises(Tx9Error) as info:
        with InPlaceArchive(path, 0) as archive:
            archive.write(b'x' * size)
            archive.write(b'trailer!')
            if flush:
                archive.flush()

    assert info.value.cause == 'NO_SPACE' and path in info.value.reason


def test_an_existing_file_is_never_overwritten_by_an_archive_written_in_place(tmp_path):
    path = tmp_path / 'dev.tx9'
    path.write_bytes(b'kept')

    with pytest.raises(Tx9Error) as info:
        InPlaceArchive(str(path), 0)

    assert info.value.cause == 'ARCHIVE_WRITE_FAILED' and path.read_bytes() == b'kept'


def test_a_missing_destination_is_created_private(tmp_path):
    dest = prepare_dest(str(tmp_path / 'new' / 'backups'))
    assert os.path.isdir(dest)
    assert os.stat(dest).st_mode & 0o777 == 0o700


@pytest.mark.parametrize('prepare', [prepare_dest, check_dest], ids=['run', 'check-mode'])
def test_a_destination_that_is_an_existing_file_is_refused_as_not_a_directory_and_left_alone(tmp_path, prepare):
    path = tmp_path / 'backups'
    path.write_bytes(b'a file')

    with pytest.raises(Tx9Error) as info:
        prepare(str(path))

    assert info.value.cause == 'ARCHIVE_WRITE_FAILED'
    assert info.value.reason == 'The backup destination %s (dest) is not a directory: it is a file.' % path
    assert 'File exists' not in info.value.reason
    assert info.value.fix == 'Set dest to a directory, or move %s away.' % path
    assert path.read_bytes() == b'a file'


@pytest.mark.parametrize('prepare', [prepare_dest, check_dest], ids=['run', 'check-mode'])
def test_a_destination_below_an_existing_file_names_that_file(tmp_path, prepare):
    blocker = tmp_path / 'file'
    blocker.write_bytes(b'')
    dest = blocker / 'backups'

    with pytest.raises(Tx9Error) as info:
        prepare(str(dest))

    assert info.value.cause == 'ARCHIVE_WRITE_FAILED'
    assert info.value.reason == ('The backup destination %s (dest) cannot be created: %s is a file, not a directory.'
                                 % (dest, blocker))
    assert str(blocker) in info.value.fix


def test_a_destination_that_is_a_dangling_symlink_is_refused_as_not_a_directory(tmp_path):
    link = tmp_path / 'backups'
    link.symlink_to(tmp_path / 'nowhere')

    with pytest.raises(Tx9Error) as info:
        prepare_dest(str(link))

    assert 'is not a directory: it is a symbolic link to nothing' in info.value.reason
    assert not (tmp_path / 'nowhere').exists()


def test_a_destination_that_is_a_symlink_to_a_directory_is_used(tmp_path):
    (tmp_path / 'real').mkdir()
    (tmp_path / 'backups').symlink_to(tmp_path / 'real')

    assert prepare_dest(str(tmp_path / 'backups')) == str(tmp_path / 'backups')
    check_dest(str(tmp_path / 'backups'))


def test_work_directories_of_killed_backups_are_removed_and_live_ones_kept(tmp_path):
    dead = tmp_path / ('%s999999999-abc' % WORKDIR_PREFIX)
    live = tmp_path / ('%s%d-def' % (WORKDIR_PREFIX, os.getpid()))
    other = tmp_path / 'box-20261130-010101.tx9'
    dead.mkdir()
    live.mkdir()
    other.write_text('archive')
    remove_stale_workdirs(str(tmp_path))
    assert not dead.exists()
    assert live.exists()
    assert other.read_text() == 'archive'


def test_an_encrypted_backup_without_a_passphrase_is_refused_before_anything_runs():
    backup = Backup(client=None, home=None, box='dev', dest='/nonexistent', password=None, encrypt=True)
    with pytest.raises(Tx9Error) as caught:
        backup.check_inputs()
    assert caught.value.cause == 'PASSWORD_REQUIRED'


def test_gpg_homes_of_killed_operations_are_removed_and_live_ones_kept(tmp_path):
    from ansible_collections.col_agents.tx9.plugins.module_utils._archive.gpgsupport import HOME_PREFIX, remove_stale_homes
    dead = tmp_path / ('%s999999999-x' % HOME_PREFIX)
    live = tmp_path / ('%s%d-y' % (HOME_PREFIX, os.getpid()))
    dead.mkdir()
    live.mkdir()
    remove_stale_homes(str(tmp_path))
    assert not dead.exists()
    assert live.exists()


def test_a_staging_file_in_a_work_directory_never_appears_in_the_destination(tmp_path):
    from ansible_collections.col_agents.tx9.plugins.module_utils._archive.writing import publish
    dest = tmp_path / 'dest'
    work = dest / ('%s%d-z' % (WORKDIR_PREFIX, os.getpid()))
    work.mkdir(parents=True)
    seen = {}

    def write(handle):
        seen['staging'] = os.listdir(str(work))
        seen['dest'] = sorted(os.listdir(str(dest)))
        handle.write(b'archive')

    path = publish(str(dest), 'dev', write, staging_dir=str(work))
    assert len(seen['staging']) == 1 and '.staging-' in seen['staging'][0]
    assert seen['dest'] == [work.name]
    assert sorted(os.listdir(str(dest))) == sorted([work.name, os.path.basename(path)])
    assert os.listdir(str(work)) == []


def test_a_sparse_file_is_archived_as_an_ordinary_file_that_validates(tmp_path):
    from ansible_collections.col_agents.tx9.plugins.module_utils._archive.validator import validate_stream
    home = tmp_path / 'data' / 'home' / 'agent'
    home.mkdir(parents=True)
    with open(str(home / 'disk.img'), 'wb') as handle:
        handle.truncate(8 * 1024 * 1024)
    argv = tar_command(DEFAULT_EXCLUDES)
    argv[argv.index('--directory=/data')] = '--directory=%s' % (tmp_path / 'data')
    stream = subprocess.run(argv, stdout=subprocess.PIPE, check=True).stdout
    import io
    summary = validate_stream(io.BytesIO(stream), compressed=False)
    assert summary.files == 1


def test_a_gnu_sparse_member_is_refused_as_unsafe():
    import io
    import tarfile
    from ansible_collections.col_agents.tx9.plugins.module_utils._archive.validator import validate_stream
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode='w', format=tarfile.GNU_FORMAT) as tar:
        for name in ('.', 'home', 'home/agent'):
            info = tarfile.TarInfo(name)
            info.type = tarfile.DIRTYPE
            tar.addfile(info)
        info = tarfile.TarInfo('home/agent/holes')
        info.type = tarfile.GNUTYPE_SPARSE
        tar.addfile(info)
    with pytest.raises(Tx9Error) as caught:
        validate_stream(io.BytesIO(buffer.getvalue()), compressed=False)
    assert caught.value.cause == 'ARCHIVE_UNSAFE' and 'sparse' in caught.value.reason


@pytest.mark.parametrize('version, recent', [('0.5.7', True), ('0.5.4', True), ('0.4.9', False), ('0.5.3', False), ('1.0', True)])
def test_python_gnupg_older_than_0_5_4_is_not_used(version, recent):
    from ansible_collections.col_agents.tx9.plugins.module_utils._archive.gpgsupport import gnupg_is_recent
    assert gnupg_is_recent(version) is recent
