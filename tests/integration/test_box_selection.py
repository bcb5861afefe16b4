# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Choosing boxes by pattern or several names, on a real engine: backup.yml and delete-box.yml."""


import glob
import os
import shutil
import tempfile
import uuid

import pytest

from conftest import recap, remove_boxes


@pytest.fixture(scope='module')
def select_prefix(client, state_home):
    """select-<random>: the prefix of this module's boxes; their objects and state files go afterwards."""
    prefix = 'select-%s' % uuid.uuid4().hex[:6]
    yield prefix
    remove_boxes(client, prefix)
    for path in glob.glob(os.path.join(state_home, 'boxes', prefix + '*')):
        os.remove(path)


@pytest.fixture(scope='module')
def boxes(built_image, playbooks, select_prefix):
    """Three running boxes: <prefix>-a1 and <prefix>-a2 (which select-...-a* matches) and <prefix>-b1."""
    names = ['%s-%s' % (select_prefix, suffix) for suffix in ('a1', 'a2', 'b1')]
    for name in names:
        playbooks.module_ok('tx9_box', dict(name=name, image=built_image['tag']))
    return names


@pytest.fixture
def dest():
    path = tempfile.mkdtemp(prefix='tx9-it-select-')
    yield path
    shutil.rmtree(path, ignore_errors=True)


def box_containers(client, name):
    return client.containers.list(all=True, filters={'label': 'tx9.box=%s' % name})


def back_up(playbooks, dest, boxes_value, check=True):
    return playbooks.run('playbooks/backup.yml', '-e', 'tx9_backup_password=select-pass', '-e', 'tx9_backup_dest=%s' % dest,
                         '-e', 'tx9_backup_verify=false', '-e', 'tx9_backup_boxes=%s' % boxes_value, check=check)


def archived(dest):
    return sorted(os.path.basename(path).rsplit('-', 2)[0] for path in glob.glob(os.path.join(dest, '*.tx9')))


def test_backup_with_a_pattern_archives_exactly_the_boxes_it_matches(boxes, playbooks, select_prefix, dest):
    proc = back_up(playbooks, dest, '%s-a*' % select_prefix)
    assert archived(dest) == boxes[:2], proc.stdout[-3000:]
    assert recap(proc.stdout)['failed'] == 0 and boxes[2] not in proc.stdout


def test_backup_with_a_pattern_that_matches_nothing_fails_with_no_matching_box_and_archives_nothing(
        boxes, playbooks, select_prefix, dest):
    proc = back_up(playbooks, dest, '%s-zz*' % select_prefix, check=False)
    assert proc.returncode != 0 and 'NO_MATCHING_BOX' in proc.stdout, proc.stdout[-3000:]
    assert '%s-zz*: skipped, no box on this host matches it' % select_prefix in proc.stdout
    assert archived(dest) == []


def test_delete_box_with_two_names_refuses_a_wrong_confirmation_then_removes_both_on_the_right_one(
        boxes, playbooks, client, select_prefix):
    a2, b1 = boxes[1], boxes[2]
    given = ['-e', 'box_name=%s,%s' % (b1, a2)]
    for wrong in ([], ['-e', 'tx9_confirm_delete=%s' % b1], ['-e', 'tx9_confirm_delete=%s,%s' % (b1, a2)],
                  ['-e', 'tx9_confirm_delete=%s-*' % select_prefix]):
        proc = playbooks.run('playbooks/delete-box.yml', *(given + wrong), check=False)
        assert proc.returncode != 0 and 'CONFIRMATION_REQUIRED' in proc.stdout, proc.stdout[-3000:]
        assert "must repeat exactly '%s,%s'" % (a2, b1) in proc.stdout and 'Nothing was changed' in proc.stdout
        assert recap(proc.stdout)['changed'] == 0
        assert all(len(box_containers(client, name)) == 2 for name in boxes)
    done = playbooks.run('playbooks/delete-box.yml', *(given + ['-e', 'tx9_confirm_delete=%s,%s' % (a2, b1)]))
    assert 'Box %s is deleted.' % a2 in done.stdout and 'Box %s is deleted.' % b1 in done.stdout
    assert box_containers(client, a2) == [] and box_containers(client, b1) == []
    assert len(box_containers(client, boxes[0])) == 2


def test_delete_box_with_a_pattern_is_confirmed_by_the_names_it_found_never_by_the_pattern(
        boxes, playbooks, client, select_prefix):
    pattern = '%s-*' % select_prefix
    left = [name for name in boxes if box_containers(client, name)]
    assert left, 'the boxes of this module are gone already'
    refused = playbooks.run('playbooks/delete-box.yml', '-e', 'box_name=%s' % pattern,
                            '-e', 'tx9_confirm_delete=%s' % pattern, check=False)
    assert refused.returncode != 0 and 'CONFIRMATION_REQUIRED' in refused.stdout, refused.stdout[-3000:]
    assert "must repeat exactly '%s'" % ','.join(left) in refused.stdout and recap(refused.stdout)['changed'] == 0
    assert all(box_containers(client, name) for name in left)
    done = playbooks.run('playbooks/delete-box.yml', '-e', 'box_name=%s' % pattern,
                         '-e', 'tx9_confirm_delete=%s' % ','.join(left))
    assert recap(done.stdout)['changed'] == 1 and all(box_containers(client, name) == [] for name in boxes)


def test_delete_box_with_a_pattern_that_matches_nothing_fails_with_no_matching_box_touching_nothing(
        boxes, playbooks, client, select_prefix):
    pattern = '%s-zz*' % select_prefix
    proc = playbooks.run('playbooks/delete-box.yml', '-e', 'box_name=%s' % pattern,
                         '-e', 'tx9_confirm_delete=%s' % pattern, check=False)
    assert proc.returncode != 0 and 'NO_MATCHING_BOX' in proc.stdout, proc.stdout[-3000:]
    assert 'box_name asked for %s' % pattern in proc.stdout and 'Nothing was changed' in proc.stdout
    assert recap(proc.stdout)['changed'] == 0
