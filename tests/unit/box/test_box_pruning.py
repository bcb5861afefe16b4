# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""State and lock files of boxes that no longer exist: what tx9_prune removes, and what it keeps."""

from __future__ import annotations

import os
import pathlib
from collections.abc import Iterable
from typing import Any, NoReturn

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._ops import prune
from ansible_collections.col_agents.tx9.plugins.module_utils import _lock
from ansible_collections.col_agents.tx9.plugins.module_utils._lock import BoxLock
from ansible_collections.col_agents.tx9.plugins.module_utils._box.drill_record import record_path, write_drill
from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome


class FakeApi:
    """The label queries of the Docker API, over a list of labelled volumes."""

    def __init__(self, boxes: Iterable[str]) -> None:
        self.boxes = set(boxes)

    def _matching(self, filters: dict[str, str]) -> list[str]:
        wanted = filters['label']
        if '=' not in wanted:
            return sorted(self.boxes)
        return [box for box in self.boxes if wanted == f'tx9.box={box}']

    def containers(self, all: bool = False, filters: dict[str, str] | None = None) -> list[dict[str, Any]]:
        return []

    def networks(self, filters: dict[str, str] | None = None) -> list[dict[str, Any]]:
        return []

    def volumes(self, filters: dict[str, str]) -> dict[str, Any]:
        return dict(Volumes=[dict(Name=f'tx9-{box}-agent', Labels={'tx9.box': box})
                             for box in self._matching(filters)])


class FakeClient:
    def __init__(self, *boxes: str) -> None:
        self.api = FakeApi(boxes)


@pytest.fixture
def home(tmp_path: pathlib.Path) -> StateHome:
    home = StateHome(str(tmp_path / 'home'))
    home.ensure()
    return home


def touch_lock(home: StateHome, box: str) -> str:
    path: str = home.lock_file(box)
    with open(path, 'w'):
        pass
    return path


def test_prune_removes_lock_files_of_boxes_that_do_not_exist_and_keeps_those_of_existing_boxes(home: StateHome) -> None:
    gone = touch_lock(home, 'gone')
    live = touch_lock(home, 'live')
    home.write_box('live', dict(TOKEN='x'))

    states, locks, _drills = prune.prune_box_files(FakeClient('live'), home, check_mode=False)

    assert (states, locks) == ([], ['gone'])
    assert not os.path.exists(gone)
    assert os.path.exists(live)


def test_prune_in_check_mode_lists_lock_files_and_removes_none(home: StateHome) -> None:
    gone = touch_lock(home, 'gone')
    home.write_box('orphan', dict(TOKEN='x'))

    states, locks, _drills = prune.prune_box_files(FakeClient(), home, check_mode=True)

    assert (states, locks) == (['orphan'], ['gone'])
    assert os.path.exists(gone)
    assert os.path.exists(home.box_file('orphan'))
    # Taking the lock of a box that had no lock file made none.
    assert not os.path.exists(home.lock_file('orphan'))


def test_prune_removes_a_state_file_with_its_lock_file(home: StateHome) -> None:
    lock = touch_lock(home, 'orphan')
    home.write_box('orphan', dict(TOKEN='x'))

    assert prune.prune_box_files(FakeClient(), home, check_mode=False) == (['orphan'], ['orphan'], [])
    assert not os.path.exists(lock)
    assert not os.path.exists(home.box_file('orphan'))


def test_prune_skips_the_lock_file_of_a_box_whose_lock_is_held(home: StateHome) -> None:
    held = BoxLock(home, 'busy').acquire()
    try:
        assert prune.prune_box_files(FakeClient(), home, check_mode=False) == ([], [], [])
        assert os.path.exists(held.path)
    finally:
        held.release()


def test_prune_ignores_files_in_the_locks_folder_that_are_not_box_locks(home: StateHome) -> None:
    stranger = os.path.join(home.locks_dir, 'Not A Box.lock')
    with open(stranger, 'w'):
        pass

    assert prune.prune_box_files(FakeClient(), home, check_mode=False) == ([], [], [])
    assert os.path.exists(stranger)


def test_a_failed_run_under_the_box_lock_leaves_no_lock_file_of_a_box_that_does_not_exist(home: StateHome) -> None:
    with pytest.raises(RuntimeError):
        with _lock.box_lock(FakeClient(), home, 'never'):
            raise RuntimeError('refused')

    assert not os.path.exists(home.lock_file('never'))


def test_a_failed_run_keeps_the_lock_file_of_a_box_that_exists(home: StateHome) -> None:
    with pytest.raises(RuntimeError):
        with _lock.box_lock(FakeClient('live'), home, 'live'):
            raise RuntimeError('refused')

    assert os.path.exists(home.lock_file('live'))


def test_a_successful_run_keeps_its_lock_file_unless_asked_to_discard_it_after(home: StateHome) -> None:
    with _lock.box_lock(FakeClient(), home, 'kept'):
        pass
    with _lock.box_lock(FakeClient(), home, 'removed', discard_after=True):
        pass

    assert os.path.exists(home.lock_file('kept'))
    assert not os.path.exists(home.lock_file('removed'))


def test_when_the_engine_cannot_be_asked_the_lock_file_stays_and_the_original_error_is_raised(home: StateHome) -> None:
    class Broken:
        class api:
            @staticmethod
            def containers(**_kwargs: Any) -> NoReturn:
                raise IOError('no engine')

    with pytest.raises(RuntimeError, match='refused'):
        with _lock.box_lock(Broken(), home, 'unknown'):
            raise RuntimeError('refused')

    assert os.path.exists(home.lock_file('unknown'))


def test_prune_removes_the_drill_record_of_a_box_that_no_longer_exists_and_keeps_a_live_boxs(home: StateHome) -> None:
    write_drill(home, 'gone', dict(box='gone', passed=True))
    write_drill(home, 'live', dict(box='live', passed=True))

    assert prune.prune_box_files(FakeClient('live'), home, check_mode=True) == ([], [], ['gone'])
    assert os.path.exists(record_path(home, 'gone'))
    assert prune.prune_box_files(FakeClient('live'), home, check_mode=False) == ([], [], ['gone'])
    assert not os.path.exists(record_path(home, 'gone')) and os.path.exists(record_path(home, 'live'))
