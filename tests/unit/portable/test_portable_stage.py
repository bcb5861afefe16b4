# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The new host's hands on a staged tree: removals that never go through a link, and a promotion by renames."""

import os

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._portable.stage import remove_below
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.stage_promote import move_tree


@pytest.fixture
def staged(tmp_path):
    root = tmp_path / 'staged'
    (root / 'home' / 'agent' / 'gone' / 'deep').mkdir(parents=True)
    (root / 'home' / 'agent' / 'gone' / 'deep' / 'f').write_text('f')
    (root / 'home' / 'agent' / 'file').write_text('file')
    outside = tmp_path / 'outside'
    (outside / 'agent').mkdir(parents=True)
    (outside / 'agent' / 'file').write_text('not the stage')
    (root / 'link').symlink_to(outside)
    return root, outside


def test_a_removal_takes_a_directory_with_everything_below_it(staged):
    root, unused = staged

    remove_below(str(root), 'home/agent/gone')

    assert not (root / 'home' / 'agent' / 'gone').exists() and (root / 'home' / 'agent' / 'file').exists()


def test_a_removal_of_a_link_removes_the_link_and_not_what_it_points_at(staged):
    root, outside = staged

    remove_below(str(root), 'link')

    assert not os.path.lexists(str(root / 'link')) and (outside / 'agent' / 'file').exists()


def test_a_removal_never_goes_through_a_link_on_its_way(staged):
    root, outside = staged

    with pytest.raises(OSError):
        remove_below(str(root), 'link/agent/file')

    assert (outside / 'agent' / 'file').read_text() == 'not the stage'


def test_a_removal_of_a_path_already_gone_does_nothing(staged):
    root, unused = staged

    remove_below(str(root), 'home/agent/never')

    assert (root / 'home' / 'agent' / 'file').exists()


def test_the_promotion_moves_every_entry_into_the_new_volume_and_gives_it_the_stage_root_mode(staged, tmp_path):
    root, unused = staged
    os.chmod(str(root), 0o755)
    dest = tmp_path / 'agent-data'
    dest.mkdir(mode=0o700)

    move_tree(str(root), str(dest))

    assert sorted(os.listdir(str(dest))) == ['home', 'link'] and os.listdir(str(root)) == []
    assert (dest / 'home' / 'agent' / 'gone' / 'deep' / 'f').read_text() == 'f'
    assert os.stat(str(dest)).st_mode & 0o777 == 0o755


def test_an_import_marker_names_the_archive_it_was_written_for_and_nothing_when_unreadable(tmp_path):
    from types import SimpleNamespace

    from ansible_collections.col_agents.tx9.plugins.module_utils._portable.import_marker import ImportMarker

    marker = ImportMarker(SimpleNamespace(path=str(tmp_path)), 'dev')
    assert marker.archive() is None
    marker.write(SimpleNamespace(path='/home/tx9/stages/dev/record.json', payload_sha256='ab' * 32))
    assert marker.archive() == '/home/tx9/stages/dev/record.json'
    with open(marker.path, 'w') as handle:
        handle.write('{"archive": 7}')
    assert marker.archive() is None
    with open(marker.path, 'w') as handle:
        handle.write('{"archive": "' + 'x' * 70000 + '"}')
    assert marker.archive() is None


def test_the_tree_moves_back_into_the_stage_whole_after_a_promotion_moved_it(staged, tmp_path):
    root, unused = staged
    volume = tmp_path / 'agent-data'
    volume.mkdir()
    before = sorted(str(path.relative_to(root)) for path in root.rglob('*'))

    move_tree(str(root), str(volume))
    move_tree(str(volume), str(root))

    assert sorted(str(path.relative_to(root)) for path in root.rglob('*')) == before
    assert list(volume.iterdir()) == []
