# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tx9_relay's engine: a file streamed between two local shells through this process, checked on arrival,
with nothing kept on failure; and the ssh commands built from a host's connection variables."""


import hashlib
import os
import sys

import pytest

from ansible_collections.col_agents.tx9.plugins.plugin_utils._relay import (
    RelayError,
    connection_kind,
    reader_command,
    remote_argv,
    ssh_argv,
    stream,
    writer_command,
)

SIZE = 3 * 1024 * 1024 + 17


@pytest.fixture
def source(tmp_path):
    path = tmp_path / 'out' / 'archive.tx9'
    path.parent.mkdir()
    path.write_bytes(os.urandom(SIZE))
    return path


def relay(src, dest_dir, size=SIZE, sha256='', reader=None, idle=30.0):
    reader_argv = reader or remote_argv('local', [], reader_command(str(src)), None)
    writer_argv = remote_argv('local', [], writer_command(sys.executable, str(dest_dir), os.path.basename(str(src)),
                                                          size, sha256), None)
    return stream(reader_argv, writer_argv, 'old', 'new', idle)


def test_a_relayed_file_arrives_whole_with_its_sha256_in_a_private_directory(source, tmp_path):
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    arrived = relay(source, tmp_path / 'in' / 'deep', sha256=digest)
    assert arrived == dict(path=str(tmp_path / 'in' / 'deep' / 'archive.tx9'), size=SIZE, sha256=digest)
    assert (tmp_path / 'in' / 'deep' / 'archive.tx9').read_bytes() == source.read_bytes()
    assert oct((tmp_path / 'in' / 'deep').stat().st_mode & 0o777) == '0o700'
    assert os.listdir(tmp_path / 'in' / 'deep') == ['archive.tx9']


def test_a_file_with_another_sha256_is_refused_at_the_check_and_nothing_is_kept(source, tmp_path):
    with pytest.raises(RelayError) as caught:
        relay(source, tmp_path / 'in', sha256='0' * 64)
    assert caught.value.step == 'check' and 'not the ' + '0' * 64 in caught.value.reason
    assert os.listdir(tmp_path / 'in') == []


def test_a_file_longer_than_its_size_is_refused_and_nothing_is_kept(source, tmp_path):
    with pytest.raises(RelayError) as caught:
        relay(source, tmp_path / 'in', size=SIZE - 1)
    assert caught.value.step == 'check' and 'sends more than the %d bytes' % (SIZE - 1) in caught.value.reason
    assert os.listdir(tmp_path / 'in') == []


def test_a_file_shorter_than_its_size_is_refused_and_nothing_is_kept(source, tmp_path):
    with pytest.raises(RelayError) as caught:
        relay(source, tmp_path / 'in', size=SIZE + 1)
    assert caught.value.step == 'check' and 'broke off after %d of %d bytes' % (SIZE, SIZE + 1) in caught.value.reason
    assert os.listdir(tmp_path / 'in') == []


def test_a_missing_file_fails_at_the_read_naming_the_source_host_and_keeps_nothing(tmp_path):
    with pytest.raises(RelayError) as caught:
        relay(tmp_path / 'nothing.tx9', tmp_path / 'in', size=10)
    assert caught.value.step == 'read' and 'on old failed' in caught.value.reason and 'nothing.tx9' in caught.value.reason
    assert os.listdir(tmp_path / 'in') == []


def test_a_reader_that_stalls_is_stopped_after_the_idle_timeout_and_nothing_is_kept(tmp_path):
    stalled = ['/bin/sh', '-c', 'head -c 1000 /dev/zero; exec sleep 60']
    with pytest.raises(RelayError) as caught:
        relay(tmp_path / 'archive.tx9', tmp_path / 'in', size=2000, reader=stalled, idle=2)
    assert caught.value.step == 'stream' and 'No byte moved for 2 seconds' in caught.value.reason
    assert os.listdir(tmp_path / 'in') == []


def test_a_writer_that_cannot_make_its_directory_fails_at_the_write(source, tmp_path):
    (tmp_path / 'file').write_text('x')
    with pytest.raises(RelayError) as caught:
        relay(source, tmp_path / 'file' / 'in')
    assert caught.value.step == 'write' and 'Writing the file on new failed' in caught.value.reason


def test_the_ssh_command_follows_the_inventorys_connection_variables_in_ansibles_order():
    argv = ssh_argv('hostA', dict(ansible_host='10.0.0.5', ansible_user='root', ansible_port=2222,
                                  ansible_ssh_private_key_file='/keys/id', ansible_ssh_args='-o ControlMaster=auto',
                                  ansible_ssh_common_args='-o StrictHostKeyChecking=yes'), check_host_keys=True)
    assert argv == ['ssh', '-o', 'ControlMaster=auto', '-o', 'BatchMode=yes', '-o', 'PasswordAuthentication=no',
                    '-o', 'KbdInteractiveAuthentication=no', '-o', 'Port=2222', '-o', 'IdentityFile="/keys/id"',
                    '-o', 'User="root"', '-o', 'ConnectTimeout=10', '-o', 'StrictHostKeyChecking=yes', '--', '10.0.0.5']


def test_a_host_without_ansible_host_is_reached_by_its_name_and_host_key_checking_off_is_passed_on():
    argv = ssh_argv('hostB', {}, check_host_keys=False)
    assert argv[-2:] == ['--', 'hostB'] and argv[1:3] == ['-o', 'StrictHostKeyChecking=no']


def test_a_host_reached_with_a_password_is_refused_at_connect():
    with pytest.raises(RelayError) as caught:
        ssh_argv('hostC', dict(ansible_password='secret'), check_host_keys=True)
    assert caught.value.step == 'connect' and 'secret' not in str(caught.value)


@pytest.mark.parametrize('host, hostvars, kind', [
    ('localhost', {}, 'local'),
    ('hostA', {}, 'ssh'),
    ('hostA', dict(ansible_connection='ansible.builtin.local'), 'local'),
    ('localhost', dict(ansible_connection='ssh'), 'ssh'),
])
def test_the_connection_kind_follows_ansible_connection_and_the_implicit_localhost(host, hostvars, kind):
    assert connection_kind(host, hostvars) == kind


def test_a_connection_the_relay_cannot_stream_through_is_refused_naming_it():
    with pytest.raises(RelayError) as caught:
        connection_kind('box', dict(ansible_connection='community.docker.docker'))
    assert caught.value.step == 'connect' and 'community.docker.docker' in caught.value.reason


def test_a_remote_command_is_quoted_for_the_remote_shell_and_becomes_by_sudo():
    argv = remote_argv('ssh', ['ssh', '--', 'h'], reader_command("/a b/it's.tx9"), 'root')
    assert argv == ['ssh', '--', 'h', "sudo -n -u root -- cat -- '/a b/it'\"'\"'s.tx9'"]
