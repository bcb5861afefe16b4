# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The order of the restore's steps against the engine: what the container is given, and when its input ends.

The engine is a recording stand-in here (the real one is in
tests/integration/test_import_hardening.py); what is checked is the order of
the calls, which decides whether a refused or cut stream can be promoted.
"""

import io
import os
import socket
import tarfile
import threading

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._archive.envelope import read_archive
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._portable import importer
from ansible_collections.col_agents.tx9.tests.unit.archive.tx9_archive_kit import payload, regular, write_tx9


class Socket:
    def __init__(self, calls, fail_after=None):
        self.calls = calls
        self.sent = []
        self.fail_after = fail_after

    def settimeout(self, value):
        self.calls.append(('settimeout', value))

    def sendall(self, data):
        if self.fail_after is not None and len(self.sent) >= self.fail_after:
            raise BrokenPipeError(32, 'Broken pipe')
        self.sent.append(bytes(data))

    def shutdown(self, how):
        self.calls.append(('shutdown', how))

    def close(self):
        self.calls.append(('close',))


class Api:
    """Records every call; the container exits with code."""

    def __init__(self, code=0, fail_after=None, logs=b''):
        self.calls = []
        self.code = code
        self.socket = Socket(self.calls, fail_after)
        self.log_text = logs
        self.created = None

    def create_host_config(self, **kwargs):
        return kwargs

    def create_container(self, image, **kwargs):
        self.created = dict(kwargs, image=image)
        self.calls.append(('create',))
        return {'Id': 'helper-id'}

    def attach_socket(self, container, params=None):
        self.calls.append(('attach', container, params))
        return self.socket

    def start(self, container):
        self.calls.append(('start', container))

    def kill(self, container):
        self.calls.append(('kill', container))

    def wait(self, container, timeout=None):
        self.calls.append(('wait', container))
        return {'StatusCode': self.code}

    def logs(self, container):
        return self.log_text

    def remove_container(self, container, force=False):
        self.calls.append(('remove', container))

    def inspect_volume(self, name):
        return {'Name': name, 'Mountpoint': '/var/lib/docker/volumes/%s/_data' % name}


class Client:
    def __init__(self, api):
        self.api = api


def names(calls):
    return [call[0] for call in calls if call[0] != 'settimeout']


def archive_at(tmp_path, text=b'note'):
    path = tmp_path / 'dev.tx9'
    write_tx9(path, payload(regular('./home/agent/note.txt', text)))
    return path, read_archive(str(path))


def restore(api, archive):
    importer.Import(Client(api), None, archive.path, {}).restore('dev', 'tx9-box:test', archive, None)


def test_the_restore_container_is_hardened_and_its_entrypoint_is_the_fixed_script_with_a_random_end_mark(tmp_path):
    api = Api()
    _path, archive = archive_at(tmp_path)

    restore(api, archive)

    created = api.created
    entrypoint = created['entrypoint']
    assert entrypoint[:5] == ['/bin/sh', '-c', importer.RESTORE_SCRIPT, 'tx9-restore', importer.STAGE]
    assert entrypoint[5].startswith('.tx9-stream-end-') and len(entrypoint[5]) == len('.tx9-stream-end-') + 32
    assert entrypoint[6] == '-'
    assert created['stdin_open'] is True and created['user'] == 'root'
    host = created['host_config']
    assert host['read_only'] is True and host['network_mode'] == 'none'
    assert host['cap_drop'] == ['ALL'] and host['cap_add'] == ['CHOWN', 'DAC_OVERRIDE', 'FOWNER']
    assert host['security_opt'] == ['no-new-privileges']


def test_the_script_promotes_only_after_tar_found_the_end_mark():
    script = importer.RESTORE_SCRIPT.splitlines()

    assert script[0] == 'set -eu' and script[1] == '[ "$3" = - ] || exec <"$3"'
    assert script[2] == 'mkdir -m 0700 -- "$1"'
    tar = next(index for index, line in enumerate(script) if line.startswith('tar --extract --file=- --read-full-records --directory="$1"'))
    mark = next(index for index, line in enumerate(script) if line.startswith('[ -f "$1/$2" ] ||'))
    promote = next(index for index, line in enumerate(script) if 'hb restore-promote' in line)
    assert tar < mark < promote
    assert '--same-permissions' in script[tar] and '--no-xattrs' in script[tar] and '--numeric-owner' in script[tar]


def test_a_complete_stream_ends_with_the_end_mark_and_its_input_is_closed_before_the_wait(tmp_path):
    api = Api()
    _path, archive = archive_at(tmp_path)

    restore(api, archive)

    mark = api.created['entrypoint'][5]
    with tarfile.open(fileobj=io.BytesIO(b''.join(api.socket.sent)), mode='r:') as tar:
        assert tar.getnames()[-1] == mark
    assert names(api.calls) == ['create', 'attach', 'start', 'shutdown', 'close', 'wait', 'remove']
    assert ('shutdown', socket.SHUT_WR) in api.calls


def test_a_payload_refused_while_streaming_kills_the_container_before_its_input_ends(tmp_path):
    api = Api()
    path, archive = archive_at(tmp_path, b'first')
    write_tx9(path, payload(regular('./home/agent/note.txt', b'other')))  # changed after it was checked

    with pytest.raises(Tx9Error) as caught:
        restore(api, archive)

    assert caught.value.cause == 'ARCHIVE_CORRUPT'
    calls = names(api.calls)
    assert 'shutdown' not in calls and 'wait' not in calls
    assert calls.index('kill') < calls.index('close') < calls.index('remove')
    assert api.created['entrypoint'][5].encode() not in b''.join(api.socket.sent)


def test_a_container_that_stops_reading_is_reported_with_its_own_words(tmp_path):
    api = Api(code=2, fail_after=0, logs=b'tar: home/agent/note.txt: Cannot open: Permission denied\n')
    _path, archive = archive_at(tmp_path)

    with pytest.raises(Tx9Error) as caught:
        restore(api, archive)

    assert caught.value.cause == 'DOCKER_ERROR'
    assert 'exit 2' in caught.value.reason and 'Permission denied' in caught.value.reason
    assert 'shutdown' not in names(api.calls) and names(api.calls)[-2:] == ['wait', 'remove']


def test_a_volume_that_fills_while_tar_extracts_is_no_space_naming_the_volume_and_where_it_lies(tmp_path):
    api = Api(code=2, fail_after=0, logs=b'tar: home/agent/note.txt: Cannot write: No space left on device\n')
    _path, archive = archive_at(tmp_path)

    with pytest.raises(Tx9Error) as caught:
        restore(api, archive)

    error = caught.value
    assert error.cause == 'NO_SPACE'
    assert 'tx9-dev-agent-data (/var/lib/docker/volumes/tx9-dev-agent-data/_data) filled' in error.reason
    assert 'No space left on device' in error.reason
    assert error.details['volume'] == 'tx9-dev-agent-data'
    assert names(api.calls)[-2:] == ['wait', 'remove']


def test_a_volume_the_engine_fills_with_the_images_data_as_the_container_starts_is_no_space(tmp_path):
    api = Api()
    _path, archive = archive_at(tmp_path)

    def start(container):
        raise importer.docker_error('start the restore container', OSError('copy file: write: no space left on device'))

    api.start = start
    with pytest.raises(Tx9Error) as caught:
        restore(api, archive)

    assert caught.value.cause == 'NO_SPACE' and 'tx9-dev-agent-data' in caught.value.reason
    assert names(api.calls)[-1] == 'remove'


class PipeApi(Api):
    """An engine on this host: start() runs a reader of the pipe bound into the container, as tar would;
    refuse_pipe makes it refuse a container that binds one."""

    base_url = 'http+docker://localhost'

    def __init__(self, refuse_pipe=False, cannot_open=False, **kwargs):
        super().__init__(**kwargs)
        self.refuse_pipe = refuse_pipe
        self.cannot_open = cannot_open
        self.read = []
        self.reader = None

    def create_container(self, image, **kwargs):
        mounts = kwargs['host_config'].get('mounts')
        if mounts and self.refuse_pipe:
            self.calls.append(('refused',))
            raise importer.docker_error('create the restore container', OSError('bind source path does not exist'))
        return super().create_container(image, **kwargs)

    def start(self, container):
        super().start(container)
        mounts = self.created['host_config'].get('mounts')
        if mounts and self.cannot_open:
            self.calls.append(('exited without opening',))
        elif mounts:
            def read():
                with open(mounts[0]['Source'], 'rb') as pipe:
                    self.read.append(pipe.read())
            self.reader = threading.Thread(target=read)
            self.reader.start()

    def inspect_container(self, container):
        return {'State': {'Running': self.reader is not None and self.reader.is_alive()}}

    def wait(self, container, timeout=None):
        if self.reader is not None:
            self.reader.join()
        return super().wait(container, timeout)


class Home:
    def __init__(self, path):
        self.path = str(path)
        os.makedirs(os.path.join(self.path, 'imports'), 0o700)


def test_on_an_engine_of_this_host_the_stream_goes_through_a_pipe_bound_into_the_container(tmp_path):
    api = PipeApi()

    home = restore_on_this_host(api, tmp_path)

    created = api.created
    mount = created['host_config']['mounts'][0]
    assert mount['Type'] == 'bind' and mount['Target'] == importer.PIPE_PATH
    assert os.path.dirname(os.path.dirname(mount['Source'])) == os.path.join(home.path, 'imports')
    assert created['entrypoint'][6] == importer.PIPE_PATH and created['stdin_open'] is False
    with tarfile.open(fileobj=io.BytesIO(api.read[0]), mode='r:') as tar:
        assert tar.getnames()[-1] == created['entrypoint'][5]
    assert names(api.calls) == ['create', 'start', 'wait', 'remove']
    assert os.listdir(os.path.join(home.path, 'imports')) == []


def restore_on_this_host(api, tmp_path):
    """Run the restore of a small archive with a state home under tmp_path; that home."""
    _path, archive = archive_at(tmp_path)
    home = Home(tmp_path / 'home')
    importer.Import(Client(api), home, archive.path, {}).restore('dev', 'tx9-box:test', archive, None)
    return home


def assert_fed_on_standard_input_to_its_end_mark(api, home):
    assert api.created['entrypoint'][6] == '-' and api.created['stdin_open'] is True
    with tarfile.open(fileobj=io.BytesIO(b''.join(api.socket.sent)), mode='r:') as tar:
        assert tar.getnames()[-1] == api.created['entrypoint'][5]
    assert os.listdir(os.path.join(home.path, 'imports')) == []


def test_an_engine_that_will_not_bind_the_pipe_gets_the_stream_on_standard_input(tmp_path):
    api = PipeApi(refuse_pipe=True)

    home = restore_on_this_host(api, tmp_path)

    assert names(api.calls) == ['refused', 'create', 'attach', 'start', 'shutdown', 'close', 'wait', 'remove']
    assert_fed_on_standard_input_to_its_end_mark(api, home)


def test_a_container_that_cannot_open_the_pipe_is_replaced_by_one_fed_on_standard_input(tmp_path):
    api = PipeApi(cannot_open=True)

    home = restore_on_this_host(api, tmp_path)

    assert names(api.calls) == ['create', 'start', 'exited without opening', 'remove',
                                'create', 'attach', 'start', 'shutdown', 'close', 'wait', 'remove']
    assert_fed_on_standard_input_to_its_end_mark(api, home)
