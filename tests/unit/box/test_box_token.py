# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The token: delivered to the agent as a private file, the link file never overwritten, quiesce steps."""

import io
import os
import stat
import tarfile

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._box import authlink, quiesce, token
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error


def test_the_delivered_token_is_a_0600_file_in_a_0700_directory_owned_by_the_agent():
    data = token.token_archive('t' * 64, 1001, 1002)
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        directory, member = archive.getmembers()
        assert (directory.name, directory.isdir(), directory.mode, directory.uid, directory.gid) == \
            ('tx9', True, 0o700, 1001, 1002)
        assert (member.name, member.mode, member.uid, member.gid) == ('tx9/executor-token', 0o600, 1001, 1002)
        assert archive.extractfile(member).read() == b't' * 64 + b'\n'


def test_minted_tokens_are_256_bits_of_hex_and_differ():
    tokens = set(token.mint_token() for _index in range(10))
    assert len(tokens) == 10 and all(len(t) == 64 and int(t, 16) >= 0 for t in tokens)


def test_the_auth_url_file_is_created_0600_and_never_overwritten(tmp_path):
    path = str(tmp_path / 'link')
    assert authlink.write_auth_url_file(path, 'http://tx9:secret@h:1/') == path
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with open(path) as handle:
        assert handle.read() == 'http://tx9:secret@h:1/\n'
    with pytest.raises(Tx9Error) as refused:
        authlink.write_auth_url_file(path, 'http://other/')
    assert refused.value.cause == 'OUTPUT_EXISTS'
    with open(path) as handle:
        assert 'secret' in handle.read()


def test_the_auth_url_file_is_not_written_through_a_symlink(tmp_path):
    target = tmp_path / 'elsewhere'
    (tmp_path / 'link').symlink_to(target)
    with pytest.raises(Tx9Error):
        authlink.write_auth_url_file(str(tmp_path / 'link'), 'http://x/')
    assert not target.exists()


@pytest.mark.parametrize('write', [authlink.refuse_existing, lambda path: authlink.write_auth_url_file(path, 'http://x/')],
                         ids=['check-mode', 'run'])
def test_an_auth_url_file_below_an_existing_file_is_refused_as_not_a_directory(tmp_path, write):
    blocker = tmp_path / 'links'
    blocker.write_bytes(b'')
    with pytest.raises(Tx9Error) as refused:
        write(str(blocker / 'dev.url'))
    assert refused.value.cause == 'ARCHIVE_WRITE_FAILED'
    assert refused.value.reason == "The link file's directory %s (auth_url_file) is not a directory: it is a file." % blocker
    assert str(blocker) in refused.value.fix


@pytest.mark.parametrize('current, wanted, step', [
    (False, True, 'down'), (True, False, 'up'), (True, True, None), (False, False, None),
    (True, None, None), (None, True, None),
])
def test_quiesced_is_reached_by_hb_down_or_hb_up_and_left_alone_when_it_already_holds(current, wanted, step):
    assert quiesce.quiesce_step(current, wanted) == step


def test_the_guest_view_takes_quiesced_and_the_gateway_from_hb_status():
    status = {'quiesced': True, 'quiesced_by': 'import', 'gateway': {'enabled': False, 'state': 'disabled', 'pid': None}}
    assert quiesce.guest_view(status) == dict(quiesced=True, quiesced_by='import',
                                              gateway=dict(enabled=False, state='disabled'))
    assert quiesce.guest_view({'healthy': False, 'detail': 'hb status exited -1'})['quiesced'] is None


def test_check_mode_refuses_an_existing_auth_url_file_as_the_real_run_would(tmp_path):
    (tmp_path / 'taken').write_text('x')
    with pytest.raises(Tx9Error) as refused:
        authlink.refuse_existing(str(tmp_path / 'taken'))
    assert refused.value.cause == 'OUTPUT_EXISTS'
    assert authlink.refuse_existing(str(tmp_path / 'free')) == str(tmp_path / 'free')


def test_converging_quiesced_reads_no_status_again_when_the_run_just_read_it(monkeypatch):
    def never(_client, _agent):
        raise AssertionError('hb status was run again')

    monkeypatch.setattr(quiesce, 'guest_status', never)
    known = {'quiesced': False, 'quiesced_by': None, 'gateway': {'enabled': False, 'state': 'disabled', 'pid': None}}

    words, view = quiesce.converge_quiesced(None, 'agent', None, False, known)

    assert words is None and view == quiesce.guest_view(known)
