# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The named pipe between this process and a helper container: a real FIFO, with a thread of
this process (or nobody) at the container's end."""


import os
import stat
import threading
import time

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._portable import pipes
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.pipes import (
    NamedPipe, PipeNotOpened, engine_on_this_host)


class Client:
    def __init__(self, base_url):
        self.api = type('Api', (), {'base_url': base_url})()


@pytest.fixture(autouse=True)
def quick_polls(monkeypatch):
    monkeypatch.setattr(pipes, 'POLL_SECONDS', 0.05)


def later(action, delay=0.1):
    thread = threading.Thread(target=lambda: (time.sleep(delay), action()))
    thread.start()
    return thread


def write_all(path, data, chunk=70000):
    with open(path, 'wb') as handle:
        for start in range(0, len(data), chunk):
            handle.write(data[start:start + chunk])


def read_all(path, into):
    with open(path, 'rb') as handle:
        into.append(handle.read())


@pytest.mark.parametrize('url, local', [
    ('http+docker://localhost', True), ('http://127.0.0.1:2375', False), ('https://engine:2376', False)])
def test_only_an_engine_behind_a_unix_socket_counts_as_on_this_host(url, local):
    assert engine_on_this_host(Client(url)) is local


def test_no_client_is_not_an_engine_on_this_host():
    assert engine_on_this_host(None) is False


def test_the_pipe_lives_alone_in_a_private_directory_that_close_removes(tmp_path):
    pipe = NamedPipe(str(tmp_path))

    assert stat.S_ISFIFO(os.stat(pipe.path).st_mode)
    assert stat.S_IMODE(os.stat(pipe.directory).st_mode) == 0o700
    assert os.listdir(pipe.directory) == ['pipe']
    pipe.close()
    assert os.listdir(str(tmp_path)) == []


def test_the_pipe_directories_of_processes_that_are_gone_are_removed_and_a_live_ones_kept(tmp_path):
    gone = 2 ** 22 + 7  # above the kernel's largest process ID
    (tmp_path / ('.tx9-pipe-%d-abc' % gone)).mkdir()
    os.mkfifo(str(tmp_path / ('.tx9-pipe-%d-abc' % gone) / 'pipe'))
    (tmp_path / 'dev.json').write_text('{}')
    with NamedPipe(str(tmp_path)) as pipe:
        pipes.remove_stale_pipes(str(tmp_path))
        assert sorted(os.listdir(str(tmp_path))) == sorted(['dev.json', os.path.basename(pipe.directory)])
    assert os.path.basename(pipe.directory).startswith('.tx9-pipe-%d-' % os.getpid())


def test_a_parent_whose_filesystem_holds_no_pipe_is_refused_and_left_as_it_was(tmp_path, monkeypatch):
    def refuse(path, mode=0o666):
        raise PermissionError(1, 'Operation not permitted', path)
    monkeypatch.setattr(os, 'mkfifo', refuse)

    with pytest.raises(OSError):
        NamedPipe(str(tmp_path))
    assert os.listdir(str(tmp_path)) == []


def test_chunks_are_every_byte_the_writer_wrote_until_it_closed_its_end(tmp_path):
    data = os.urandom(3 * 1024 * 1024 + 17)
    with NamedPipe(str(tmp_path)) as pipe:
        writer = later(lambda: write_all(pipe.path, data))
        pipe.open_for_reading(lambda: True, 30)
        got = b''.join(pipe.chunks())
        writer.join()
    assert got == data


def test_a_writer_that_wrote_everything_and_left_before_the_reader_looked_is_read_whole(tmp_path):
    data = os.urandom(20000)
    with NamedPipe(str(tmp_path)) as pipe:
        writer = later(lambda: write_all(pipe.path, data), 0)
        # Gone by the time it is asked: what it wrote is still in the pipe.
        pipe.open_for_reading(lambda: writer.join() or False, 30)
        assert b''.join(pipe.chunks()) == data


@pytest.mark.parametrize('opening', ['open_for_reading', 'open_for_writing'])
def test_a_container_that_exits_without_opening_the_pipe_is_told_apart_before_any_byte(tmp_path, opening):
    with NamedPipe(str(tmp_path)) as pipe:
        with pytest.raises(PipeNotOpened):
            getattr(pipe, opening)(lambda: False, 30)


def test_a_writer_that_never_opens_the_pipe_is_given_up_after_the_timeout(tmp_path):
    with NamedPipe(str(tmp_path)) as pipe:
        with pytest.raises(Tx9Error) as raised:
            pipe.open_for_reading(lambda: True, 0.2)
    assert raised.value.cause == 'DOCKER_ERROR' and 'stopped writing' in raised.value.reason


def test_a_writer_that_goes_silent_is_given_up_after_the_timeout(tmp_path):
    release = threading.Event()
    with NamedPipe(str(tmp_path)) as pipe:
        def write_then_hold():
            with open(pipe.path, 'wb') as handle:
                handle.write(b'x' * 100)
                handle.flush()
                release.wait(5)
        writer = later(write_then_hold, 0)
        pipe.open_for_reading(lambda: True, 0.3)
        chunks = pipe.chunks()
        assert next(chunks) == b'x' * 100
        with pytest.raises(Tx9Error) as raised:
            next(chunks)
        release.set()
        writer.join()
    assert 'stopped writing' in raised.value.reason


def test_writing_waits_for_the_reader_and_it_reads_every_byte_and_the_end(tmp_path):
    data = os.urandom(2 * 1024 * 1024 + 5)
    got = []
    with NamedPipe(str(tmp_path)) as pipe:
        reader = later(lambda: read_all(pipe.path, got))
        pipe.open_for_writing(lambda: True, 30)
        for start in range(0, len(data), 300000):
            pipe.write(data[start:start + 300000])
        pipe.close_write()
        reader.join()
    assert got == [data]


def test_writing_to_a_reader_that_went_away_is_a_broken_pipe(tmp_path):
    with NamedPipe(str(tmp_path)) as pipe:
        handle = []
        opener = later(lambda: handle.append(open(pipe.path, 'rb')), 0)
        pipe.open_for_writing(lambda: True, 30)
        opener.join()
        handle[0].close()
        with pytest.raises(BrokenPipeError):
            pipe.write(b'x' * (4 * 1024 * 1024))
