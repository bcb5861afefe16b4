# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The old host's walk of a pre-copied move: what it lists, what it leaves out, what it sends again."""

import fnmatch
import os
import time

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._portable import precopy
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.backup import DEFAULT_EXCLUDES
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error


@pytest.mark.parametrize('path, left_out', [
    ('home/agent/project/node_modules', True),
    ('home/agent/.config/hermes-box/quiesced', True),
    ('home/agent/tool.pyc', True),
    ('home/agent/project/node_modules_notes', False),
    ('home/agent/.config/hermes-box/manifest.json', False),
    ('home/agent/quiesced', False),
])
def test_the_walk_leaves_out_what_the_backup_exclusions_leave_out_and_nothing_else(path, left_out):
    assert precopy.excluded(path, DEFAULT_EXCLUDES) is left_out


def test_the_compiled_exclusions_leave_out_exactly_what_each_pattern_matched_alone():
    names = ['home', 'agent', 'node_modules', '.cache', 'a.pyc', 'x.db-wal', '.hermes', 'tmp', '[odd]', 'q?', '*']
    patterns = list(DEFAULT_EXCLUDES) + ['[o]dd*', 'q?', '*/[!h]*/tmp']
    paths = ['/'.join(names[(i + j) % len(names)] for j in range(depth))
             for i in range(len(names)) for depth in range(1, 6)]
    for path in paths + ['home/agent/.hermes/x.db-wal', 'home/agent/.codex/tmp']:
        parts = ('./' + path).split('/')
        one_by_one = any(fnmatch.fnmatchcase('/'.join(parts[index:]), pattern)
                         for pattern in patterns for index in range(len(parts)))
        assert precopy.excluded(path, patterns) is one_by_one, path
    assert precopy.excluded('anything', []) is False


@pytest.fixture
def volume(tmp_path):
    root = tmp_path / 'volume'
    (root / 'home' / 'agent' / 'project' / 'node_modules' / 'pkg').mkdir(parents=True)
    (root / 'home' / 'agent' / 'project' / 'node_modules' / 'pkg' / 'index.js').write_text('x')
    (root / 'home' / 'agent' / 'notes.txt').write_text('notes')
    outside = tmp_path / 'outside'
    outside.mkdir()
    (outside / 'secret').write_text('host file')
    (root / 'home' / 'agent' / 'escape').symlink_to(outside)
    os.mkfifo(str(root / 'home' / 'agent' / 'pipe'))
    return root


def test_the_walk_lists_a_link_to_a_directory_but_never_what_it_points_at(volume):
    listed = [path for path, unused in precopy.walk(str(volume), DEFAULT_EXCLUDES)]

    assert 'home/agent/escape' in listed
    assert not [path for path in listed if path.startswith('home/agent/escape/')]


def test_the_walk_skips_excluded_trees_and_files_an_archive_cannot_hold(volume):
    listed = [path for path, unused in precopy.walk(str(volume), DEFAULT_EXCLUDES)]

    assert listed[0] == '' and 'home/agent/notes.txt' in listed and 'home/agent/project' in listed
    assert not [path for path in listed if 'node_modules' in path]
    assert 'home/agent/pipe' not in listed


def test_a_pass_sends_again_only_what_changed_since_the_last_one_and_what_is_new(volume, monkeypatch):
    first = precopy.Pass(str(volume), DEFAULT_EXCLUDES, None)
    # Later passes start well after every file's change time, so nothing is racy any more.
    later = time.time_ns() + 10 * 1000 ** 3
    monkeypatch.setattr(precopy.time, 'time_ns', lambda: later)
    settled = precopy.Pass(str(volume), DEFAULT_EXCLUDES, first.manifest)
    (volume / 'home' / 'agent' / 'notes.txt').write_text('changed notes')
    (volume / 'home' / 'agent' / 'new.txt').write_text('new')

    second = precopy.Pass(str(volume), DEFAULT_EXCLUDES, settled.manifest)

    assert set(first.changed) == set(b'./' + path if path else b'.' for path in first.paths)
    assert sorted(second.changed) == [b'./home/agent', b'./home/agent/new.txt', b'./home/agent/notes.txt']
    assert b'home/agent/new.txt' in second.paths and b'home/agent/escape' in second.paths


def test_a_path_changed_close_to_its_pass_start_is_never_trusted_to_be_unchanged(volume):
    first = precopy.Pass(str(volume), DEFAULT_EXCLUDES, None)

    again = precopy.Pass(str(volume), DEFAULT_EXCLUDES, first.manifest)

    assert set(again.changed) == set(first.changed)
    assert set(first.manifest.entries.values()) == {0}


def test_the_manifest_reads_back_as_it_was_written_and_keeps_its_key(volume, tmp_path):
    walked = precopy.Pass(str(volume), DEFAULT_EXCLUDES, None)
    path = str(tmp_path / 'manifest')

    walked.manifest.save(path)
    again = precopy.Manifest.load(path)

    assert again.key == walked.manifest.key and again.entries == walked.manifest.entries
    assert os.stat(path).st_mode & 0o777 == 0o600


def test_a_volume_with_more_paths_than_an_archive_may_hold_is_refused_before_the_walk_goes_on(tmp_path, monkeypatch):
    root = tmp_path / 'volume'
    root.mkdir()
    for index in range(10):
        (root / ('file%d' % index)).write_text('x')
    monkeypatch.setattr(precopy, 'MAX_MEMBERS', 5)
    with pytest.raises(Tx9Error) as info:
        precopy.Pass(str(root), DEFAULT_EXCLUDES, None)
    assert info.value.cause == 'ARCHIVE_UNSAFE' and 'more than the 5 paths' in info.value.reason
