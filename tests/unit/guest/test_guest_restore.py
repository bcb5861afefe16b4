# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""restore-promote: a staged backup replaces the data volume, or nothing changes."""

import collections
import os
import shutil
import stat

import pytest

from guest_helpers import write_tree
from tx9guest import cli, restore, settings


@pytest.fixture
def as_root():
    """restore-promote chowns files, which needs root: these tests fail, never skip, without it."""
    assert os.geteuid() == 0, 'these restore-promote tests chown files and must run as root'


root_only = pytest.mark.usefixtures('as_root')
AGENT = 1001


@pytest.fixture
def staged(data_dir):
    """A data volume with old content and a staged backup beside it."""
    data = data_dir
    write_tree(str(data), {'home/agent/old.txt': 'old', 'logs/old.jsonl': '{}', 'stray-file': 'x'})
    stage = data / '.tx9-restore-stage'
    write_tree(str(stage), {
        'home/agent/notes.md': 'restored',
        'home/agent/.config/hermes-box/services.d/web': '#!/bin/sh\n',
        'home/agent/.config/hermes-box/gateway-policy-initialized': '',
        'logs/agent.jsonl': '{}\n',
    })
    os.symlink('/etc/hostname', str(stage / 'home' / 'agent' / 'link-out'))
    return data, stage


def unchanged(data):
    return (data / 'home' / 'agent' / 'old.txt').exists() and (data / 'stray-file').exists()


@root_only
def test_restore_promote_replaces_data_with_the_stage_and_re_arms_the_markers(staged):
    data, stage = staged
    host_file = os.stat('/etc/hostname')
    lines = restore.promote_restore(str(stage), str(data), AGENT, AGENT)
    assert 'promoted home, logs' in lines
    assert sorted(os.listdir(str(data))) == ['home', 'logs']
    home = data / 'home' / 'agent'
    assert (home / 'notes.md').read_text() == 'restored' and not (home / 'old.txt').exists()
    assert not stage.exists()
    markers = home / '.config' / 'hermes-box'
    assert (markers / 'quiesced').read_text() == 'import\n'
    assert (markers / 'gateway-disabled').exists() and (markers / 'gateway-policy-initialized').exists()
    for path in (home, home / 'notes.md', markers / 'quiesced', data / 'logs', data / 'logs' / 'agent.jsonl'):
        assert os.lstat(str(path)).st_uid == AGENT, path
    assert os.lstat(str(home / 'link-out')).st_uid == AGENT and os.path.islink(str(home / 'link-out'))
    assert os.stat('/etc/hostname').st_uid == host_file.st_uid, 'the symlink target outside /data is untouched'
    assert os.stat(str(data / 'home')).st_uid == 0
    info = os.stat(str(data))
    assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (0, 0o711)


@root_only
def test_restore_promote_makes_a_missing_logs_directory_for_the_agent(staged):
    data, stage = staged
    shutil.rmtree(str(stage / 'logs'))
    restore.promote_restore(str(stage), str(data), AGENT, AGENT)
    assert os.lstat(str(data / 'logs')).st_uid == AGENT


@root_only
@pytest.mark.parametrize('damage, words', [
    (lambda stage: shutil.rmtree(str(stage / 'home' / 'agent')), 'the staged agent home'),
    (lambda stage: (shutil.rmtree(str(stage / 'home' / 'agent')),
                    os.symlink('/etc', str(stage / 'home' / 'agent'))), 'is a symlink'),
    (lambda stage: (shutil.rmtree(str(stage / 'home' / 'agent' / '.config')),
                    os.symlink('/etc', str(stage / 'home' / 'agent' / '.config'))), 'is a symlink'),
    (lambda stage: os.mkfifo(str(stage / 'home' / 'agent' / 'pipe')), 'device, FIFO or socket'),
    (lambda stage: (shutil.rmtree(str(stage / 'logs')), os.symlink('/var/log', str(stage / 'logs'))), 'is a symlink'),
])
def test_restore_promote_refuses_an_unsafe_stage_and_changes_nothing(staged, damage, words):
    data, stage = staged
    damage(stage)
    with pytest.raises(restore.RestoreRefused, match=words):
        restore.promote_restore(str(stage), str(data), AGENT, AGENT)
    assert unchanged(data)


@root_only
def test_restore_promote_refuses_a_stage_that_is_not_a_direct_child_of_data(staged, tmp_path):
    data, _stage = staged
    elsewhere = tmp_path / 'elsewhere'
    write_tree(str(elsewhere), {'home/agent/x': 'y'})
    for stage in (str(elsewhere), str(data / 'home'), str(data / 'home' / 'agent'), str(data) + '/../data/x'):
        with pytest.raises(restore.RestoreRefused):
            restore.promote_restore(stage, str(data), AGENT, AGENT)
    assert unchanged(data)


@root_only
def test_restore_promote_refuses_a_stage_that_is_a_symlink(staged, tmp_path):
    data, stage = staged
    real = tmp_path / 'real-stage'
    shutil.move(str(stage), str(real))
    os.symlink(str(real), str(stage))
    with pytest.raises(restore.RestoreRefused, match='is a symlink'):
        restore.promote_restore(str(stage), str(data), AGENT, AGENT)
    assert unchanged(data)


@root_only
def test_restore_promote_refusal_exits_1_with_a_sentence(staged, monkeypatch, capsys):
    data, stage = staged
    shutil.rmtree(str(stage / 'home'))
    account = collections.namedtuple('Account', 'pw_uid pw_gid')(AGENT, AGENT)
    monkeypatch.setattr(settings, 'agent_account', lambda: account)
    assert cli.main(['restore-promote', str(stage)]) == 1
    err = capsys.readouterr().err
    assert err.startswith('hb restore-promote: refused: the staged home directory') and 'nothing was changed' in err


def test_restore_promote_takes_exactly_one_argument():
    assert cli.main(['restore-promote']) == 2
    assert cli.main(['restore-promote', '/data/a', '/data/b']) == 2


def test_restore_promote_refuses_to_run_as_anyone_but_root(staged, monkeypatch):
    data, stage = staged
    monkeypatch.setattr(os, 'geteuid', lambda: 1001)
    with pytest.raises(restore.RestoreRefused, match='must run as root'):
        restore.promote_restore(str(stage), str(data), AGENT, AGENT)
