# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The new host's hands on the old host of a direct move, run for real through a shell: the journal written whole
(0600, renamed into place, a leading ~/ the user's home) and a change set carried whole or not at all, never a byte
beyond the size its writer reported. The old host is a local shell here (the role gives ssh ... -- host)."""

import json
import os
import stat

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.peer import (
    fetch_file,
    journal_command,
    write_journal,
)

# Runs the command it is given as ssh's remote shell would.
LOCAL_PEER = ['sh', '-c', 'eval "$0"']
FAILING_PEER = ['sh', '-c', 'echo "ssh: connect to host old port 22: Connection refused" >&2; exit 255']
RECORD = dict(box='dev', source='h1', dest='h2', step='passed', before=dict(state='running', quiesced=False))


def test_the_journal_is_written_whole_0600_and_replaces_the_one_before(tmp_path):
    journal = tmp_path / "move 'dev'" / 'journal.json'
    journal.parent.mkdir()
    journal.write_text('{"step": "started"}')

    write_journal(LOCAL_PEER, str(journal), RECORD)

    assert json.loads(journal.read_text()) == RECORD
    assert stat.S_IMODE(os.stat(journal).st_mode) == 0o600
    assert os.listdir(journal.parent) == ['journal.json']


def test_a_journal_path_under_the_home_directory_is_written_in_the_old_host_users_home(tmp_path, monkeypatch):
    (tmp_path / '.tx9').mkdir()
    monkeypatch.setenv('HOME', str(tmp_path))

    write_journal(LOCAL_PEER, '~/.tx9/journal.json', RECORD)

    assert json.loads((tmp_path / '.tx9' / 'journal.json').read_text())['step'] == 'passed'


def test_the_journal_command_quotes_every_path_it_names():
    assert journal_command("/w/it's/journal.json") == (
        "umask 077 && cat > '/w/it'\"'\"'s/journal.json.new' && "
        "mv -f -- '/w/it'\"'\"'s/journal.json.new' '/w/it'\"'\"'s/journal.json'"
    )


def test_an_old_host_that_cannot_be_reached_fails_with_peer_failed_saying_what_ssh_said(tmp_path):
    with pytest.raises(Tx9Error) as raised:
        write_journal(FAILING_PEER, str(tmp_path / 'journal.json'), RECORD)

    assert raised.value.cause == 'PEER_FAILED'
    assert 'Connection refused' in raised.value.reason
    assert not (tmp_path / 'journal.json').exists()


def test_a_journal_record_over_the_limit_is_refused_before_anything_runs(tmp_path):
    with pytest.raises(Tx9Error) as raised:
        write_journal(LOCAL_PEER, str(tmp_path / 'journal.json'), dict(RECORD, padding='x' * 70000))

    assert raised.value.cause == 'INVALID_ARGUMENT'
    assert not (tmp_path / 'journal.json').exists()


@pytest.fixture
def written(tmp_path):
    src = tmp_path / 'out' / "dev 'quoted' $HOME.tx9"
    src.parent.mkdir()
    src.write_bytes(os.urandom(3 * 1024 * 1024 + 7))
    return src


def test_a_change_set_arrives_whole_0600_in_a_directory_made_0700(written, tmp_path):
    target = tmp_path / 'in' / 'deeper' / written.name

    fetch_file(LOCAL_PEER, str(written), written.stat().st_size, str(target))

    assert target.read_bytes() == written.read_bytes()
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(target.parent).st_mode) == 0o700
    assert os.listdir(target.parent) == [written.name]


@pytest.mark.parametrize('claimed', [-1, +1], ids=['sends-more-than-it-wrote', 'sends-less-than-it-wrote'])
def test_a_change_set_of_another_size_than_written_leaves_nothing_here(written, tmp_path, claimed):
    target = tmp_path / 'in' / written.name

    with pytest.raises(Tx9Error) as raised:
        fetch_file(LOCAL_PEER, str(written), written.stat().st_size + claimed, str(target))

    assert raised.value.cause == 'PEER_FAILED'
    assert ('sends more than' in raised.value.reason) == (claimed < 0)
    assert os.listdir(target.parent) == []


def test_a_transfer_that_breaks_off_leaves_nothing_here_and_says_what_the_old_host_said(written, tmp_path):
    target = tmp_path / 'in' / written.name
    breaking = ['sh', '-c', 'head -c 1000 "$1"; echo "read error" >&2; exit 1', 'sh', str(written)]

    with pytest.raises(Tx9Error) as raised:
        fetch_file(breaking, str(written), written.stat().st_size, str(target))

    assert raised.value.cause == 'PEER_FAILED'
    assert 'after 1000 of' in raised.value.reason and 'read error' in raised.value.reason
    assert os.listdir(target.parent) == []
