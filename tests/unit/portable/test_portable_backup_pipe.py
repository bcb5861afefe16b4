# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a backup reads the tar of /data from: a helper container writing into a named pipe when the
engine runs on this host, the agent container's exec stream otherwise.

The engine is a recording stand-in (the real one is in the integration
suites); its "container" is a thread of this process writing into the real pipe.
"""


import os
import threading

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._portable import backup_payload
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.backup import DEFAULT_EXCLUDES
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.pipes import PIPE_PATH

AGENT = {'Id': 'agent-id', 'Image': 'sha256:abc', 'Config': {'Image': 'tx9-box:0.1.0'}}
TAR = os.urandom(512 * 1024) + b'\0' * 1024


class Api:
    base_url = 'http+docker://localhost'

    def __init__(self, refuse=False, code=0, stale=(), cannot_open=False):
        self.refuse = refuse
        self.cannot_open = cannot_open
        self.code = code
        self.stale = list(stale)
        self.calls = []
        self.created = None
        self.writer = None

    def containers(self, all=False, filters=None):  # pylint: disable=redefined-builtin
        self.calls.append(('containers', filters))
        return [{'Id': name} for name in self.stale]

    def create_host_config(self, **kwargs):
        return kwargs

    def create_container(self, image, **kwargs):
        self.calls.append(('create', image))
        if self.refuse:
            raise OSError('invalid mount config for type "bind": bind source path does not exist')
        self.created = dict(kwargs, image=image)
        return {'Id': 'helper-id'}

    def start(self, container):
        self.calls.append(('start', container))
        self.writer = threading.Thread(target=lambda: None)
        if self.cannot_open:
            return
        source = self.created['host_config']['mounts'][0]['Source']

        def write():
            with open(source, 'wb') as pipe:
                pipe.write(TAR)
        self.writer = threading.Thread(target=write)
        self.writer.start()

    def inspect_container(self, container):
        return {'State': {'Running': self.writer.is_alive() and not self.cannot_open}}

    def wait(self, container, timeout=None):
        self.writer.join()
        return {'StatusCode': self.code}

    def logs(self, container, stdout=True, stderr=True):
        return b'tar: ./home: Cannot open: Permission denied'

    def remove_container(self, container, force=False):
        self.calls.append(('remove', container))

    def exec_create(self, container, argv, **kwargs):
        self.calls.append(('exec_create', container, argv))
        return {'Id': 'exec-id'}


class Client:
    def __init__(self, api):
        self.api = api


def test_on_an_engine_of_this_host_a_hardened_helper_writes_the_tar_of_the_volume_into_a_pipe(tmp_path):
    api = Api(stale=['left-by-a-killed-run'])
    stream = backup_payload.tar_of_data(Client(api), 'dev', AGENT, DEFAULT_EXCLUDES, str(tmp_path))
    try:
        assert b''.join(stream.chunks()) == TAR
        stream.check()
    finally:
        stream.close()

    created = api.created
    host = created['host_config']
    assert created['image'] == 'sha256:abc' and created['user'] == 'root'
    assert created['entrypoint'] == backup_payload.tar_command(DEFAULT_EXCLUDES, PIPE_PATH)
    assert created['labels']['tx9.role'] == 'backup' and created['labels']['tx9.box'] == 'dev'
    assert host['binds'] == {'tx9-dev-agent-data': {'bind': '/data', 'mode': 'ro'}}
    assert host['mounts'][0]['Target'] == PIPE_PATH and host['mounts'][0]['Type'] == 'bind'
    assert host['read_only'] is True and host['network_mode'] == 'none'
    assert host['cap_drop'] == ['ALL'] and host['cap_add'] == ['DAC_READ_SEARCH']
    assert host['security_opt'] == ['no-new-privileges']
    assert ('remove', 'left-by-a-killed-run') in api.calls and api.calls[-1] == ('remove', 'helper-id')
    assert os.listdir(str(tmp_path)) == []


def test_a_helper_whose_tar_failed_is_a_docker_error_with_tars_words(tmp_path):
    api = Api(code=2)
    stream = backup_payload.tar_of_data(Client(api), 'dev', AGENT, DEFAULT_EXCLUDES, str(tmp_path))
    try:
        b''.join(stream.chunks())
        with pytest.raises(Tx9Error) as raised:
            stream.check()
    finally:
        stream.close()
    assert raised.value.cause == 'DOCKER_ERROR'
    assert 'exited 2' in raised.value.reason and 'Permission denied' in raised.value.reason


def test_an_engine_that_will_not_bind_the_pipe_is_read_through_the_agents_exec_stream(tmp_path):
    api = Api(refuse=True)
    stream = backup_payload.tar_of_data(Client(api), 'dev', AGENT, DEFAULT_EXCLUDES, str(tmp_path))

    assert isinstance(stream, backup_payload.TarStream)
    assert api.calls[-1] == ('exec_create', 'agent-id', backup_payload.tar_command(DEFAULT_EXCLUDES))
    assert os.listdir(str(tmp_path)) == []


def test_an_engine_elsewhere_is_read_through_the_agents_exec_stream_without_a_helper(tmp_path):
    api = Api()
    api.base_url = 'https://engine.example:2376'
    stream = backup_payload.tar_of_data(Client(api), 'dev', AGENT, DEFAULT_EXCLUDES, str(tmp_path))

    assert isinstance(stream, backup_payload.TarStream)
    assert [call[0] for call in api.calls] == ['exec_create']


def test_a_helper_that_cannot_open_the_pipe_is_removed_and_the_agents_exec_stream_is_read(tmp_path):
    api = Api(cannot_open=True)
    stream = backup_payload.tar_of_data(Client(api), 'dev', AGENT, DEFAULT_EXCLUDES, str(tmp_path))

    assert isinstance(stream, backup_payload.TarStream)
    assert [call[0] for call in api.calls] == ['containers', 'create', 'start', 'remove', 'exec_create']
    assert os.listdir(str(tmp_path)) == []


def test_a_helper_a_lost_run_left_running_is_removed_too_not_only_exited_ones(tmp_path):
    api = Api(stale=['blocked-in-open-for-ever'])
    stream = backup_payload.tar_of_data(Client(api), 'dev', AGENT, DEFAULT_EXCLUDES, str(tmp_path))
    try:
        assert b''.join(stream.chunks()) == TAR
    finally:
        stream.close()
    (selector,) = [call[1] for call in api.calls if call[0] == 'containers']
    assert 'status' not in selector and {'tx9=1', 'tx9.box=dev', 'tx9.role=backup'} <= set(selector['label'])
    assert ('remove', 'blocked-in-open-for-ever') in api.calls
