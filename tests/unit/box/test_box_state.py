# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The state home: where it is, its modes, atomic writes and the env format."""


import os
import stat

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._box import state
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error


def mode_of(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def home(tmp_path):
    return state.StateHome(str(tmp_path / 'home'))


def test_tx9_home_overrides_the_default_home(monkeypatch, tmp_path):
    monkeypatch.setenv('TX9_HOME', str(tmp_path / 'elsewhere'))

    assert state.default_home() == str(tmp_path / 'elsewhere')
    assert state.StateHome().path == str(tmp_path / 'elsewhere')


def test_without_tx9_home_the_home_is_dot_tx9_in_the_user_home(monkeypatch, tmp_path):
    monkeypatch.delenv('TX9_HOME', raising=False)
    monkeypatch.setenv('HOME', str(tmp_path))

    assert state.StateHome().path == str(tmp_path / '.tx9')


def test_an_empty_tx9_home_falls_back_to_the_default(monkeypatch, tmp_path):
    monkeypatch.setenv('TX9_HOME', '')
    monkeypatch.setenv('HOME', str(tmp_path))

    assert state.default_home() == str(tmp_path / '.tx9')


def test_an_explicit_path_wins_and_is_made_absolute(monkeypatch, tmp_path):
    monkeypatch.setenv('TX9_HOME', str(tmp_path / 'env'))
    monkeypatch.chdir(tmp_path)

    assert state.StateHome('rel').path == str(tmp_path / 'rel')


def test_ensure_creates_the_home_and_its_folders_as_0700(home):
    old_umask = os.umask(0o022)
    try:
        home.ensure()
    finally:
        os.umask(old_umask)

    for path in (home.path, home.boxes_dir, home.locks_dir, home.logs_dir):
        assert os.path.isdir(path)
        assert mode_of(path) == 0o700


def test_ensure_tightens_a_home_that_is_too_open(home):
    os.makedirs(home.path)
    os.chmod(home.path, 0o755)

    home.ensure()

    assert mode_of(home.path) == 0o700


def test_a_home_that_is_a_file_is_refused_with_state_home(tmp_path):
    path = tmp_path / 'file'
    path.write_text('x')

    with pytest.raises(Tx9Error) as info:
        state.StateHome(str(path)).ensure()

    assert info.value.cause == 'STATE_HOME'


def test_a_home_that_cannot_be_created_is_refused_with_state_home(tmp_path):
    blocker = tmp_path / 'file'
    blocker.write_text('x')

    with pytest.raises(Tx9Error) as info:
        state.StateHome(str(blocker / 'home')).ensure()

    assert info.value.cause == 'STATE_HOME'
    assert 'TX9_HOME' in info.value.fix


def test_a_box_state_file_is_written_as_0600(home):
    old_umask = os.umask(0o000)
    try:
        home.write_box('b1', dict(TOKEN='secret'))
    finally:
        os.umask(old_umask)

    assert mode_of(home.box_file('b1')) == 0o600


def test_a_box_state_round_trips_through_its_file(home):
    home.write_box('b1', dict(TOKEN='abc', CPUS='2', EXTRA_KEY='kept'))

    assert home.read_box('b1') == dict(TOKEN='abc', CPUS='2', EXTRA_KEY='kept')


def test_a_box_without_a_state_file_reads_as_empty(home):
    assert home.read_box('nothing-here') == {}


def test_the_state_file_of_an_invalid_box_name_is_refused(home):
    with pytest.raises(Tx9Error) as info:
        home.box_file('../escape')

    assert info.value.cause == 'INVALID_NAME'


def test_deleting_a_box_state_says_whether_there_was_one(home):
    home.write_box('b1', dict(TOKEN='t'))

    assert home.delete_box('b1') is True
    assert home.delete_box('b1') is False
    assert home.read_box('b1') == {}


def test_box_names_lists_boxes_with_state_and_skips_stray_files(home):
    home.write_box('beta', dict(A='1'))
    home.write_box('alpha', dict(A='1'))
    for stray in ('.alpha.env.123.tmp', 'Not-Valid.env', 'notes.txt', '.hidden.env'):
        with open(os.path.join(home.boxes_dir, stray), 'w') as handle:
            handle.write('A=1\n')

    assert home.box_names() == ['alpha', 'beta']


def test_box_names_is_empty_when_the_home_does_not_exist(home):
    assert home.box_names() == []


def test_an_atomic_write_replaces_the_file_and_leaves_no_temp_file(tmp_path):
    path = str(tmp_path / 'f.env')
    state.write_atomic(path, 'old\n')

    state.write_atomic(path, u'new ünïcode\n')

    with open(path, 'rb') as handle:
        assert handle.read() == u'new ünïcode\n'.encode('utf-8')
    assert os.listdir(str(tmp_path)) == ['f.env']


def test_an_atomic_write_takes_bytes(tmp_path):
    path = str(tmp_path / 'f.bin')

    state.write_atomic(path, b'\x00\xff')

    with open(path, 'rb') as handle:
        assert handle.read() == b'\x00\xff'


def test_an_atomic_write_replaces_the_file_in_one_rename(tmp_path, monkeypatch):
    path = str(tmp_path / 'f.env')
    state.write_atomic(path, 'old\n')
    renames = []
    real_rename = os.rename

    def spying_rename(src, dst):
        with open(dst) as handle:
            renames.append((os.path.dirname(src), handle.read()))
        real_rename(src, dst)

    monkeypatch.setattr(state.os, 'rename', spying_rename)
    state.write_atomic(path, 'new\n')

    assert renames == [(str(tmp_path), 'old\n')]
    with open(path) as handle:
        assert handle.read() == 'new\n'


def test_a_full_disk_mid_write_is_no_space_and_leaves_the_old_content_and_no_temp_file(tmp_path, monkeypatch):
    path = str(tmp_path / 'f.env')
    state.write_atomic(path, 'old\n')

    def failing_fsync(fd):
        raise OSError(28, 'No space left on device')

    monkeypatch.setattr(state.os, 'fsync', failing_fsync)
    with pytest.raises(Tx9Error) as info:
        state.write_atomic(path, 'new\n')

    assert info.value.cause == 'NO_SPACE' and path in info.value.reason

    with open(path) as handle:
        assert handle.read() == 'old\n'
    assert os.listdir(str(tmp_path)) == ['f.env']


def test_a_failed_rename_leaves_the_old_content_and_no_temp_file(tmp_path, monkeypatch):
    path = str(tmp_path / 'f.env')
    state.write_atomic(path, 'old\n')

    def failing_rename(src, dst):
        raise OSError(18, 'Invalid cross-device link')

    monkeypatch.setattr(state.os, 'rename', failing_rename)
    with pytest.raises(Tx9Error) as info:
        state.write_atomic(path, 'new\n')

    assert info.value.cause == 'ARCHIVE_WRITE_FAILED' and 'Invalid cross-device link' in info.value.reason

    with open(path) as handle:
        assert handle.read() == 'old\n'
    assert os.listdir(str(tmp_path)) == ['f.env']


def test_env_text_parses_into_keys_and_values():
    text = '# a comment\n\nTOKEN=abc\n  # indented comment\nURL=http://h/?a=b=c\nno equals sign\nSPACED = v \n'

    assert state.parse_env(text) == {'TOKEN': 'abc', 'URL': 'http://h/?a=b=c', 'SPACED': ' v '}


def test_env_renders_sorted_lines_with_empty_values_dropped():
    text = state.render_env({'B': '2', 'A': '1', 'EMPTY': '', 'NONE': None})

    assert text == 'A=1\nB=2\n'


def test_an_empty_env_renders_as_empty_text():
    assert state.render_env({}) == ''


def test_env_render_and_parse_round_trip_and_keep_unknown_keys():
    values = {'TOKEN': 's3cr=t', 'CPUS': '2', 'SOME_FUTURE_KEY': 'kept', 'PATHS': '/a:/b'}

    assert state.parse_env(state.render_env(values)) == values


def test_env_parse_then_render_keeps_every_key_it_read():
    text = 'A=1\nUNKNOWN_LATER_KEY=x\n'

    assert state.render_env(state.parse_env(text)) == text
