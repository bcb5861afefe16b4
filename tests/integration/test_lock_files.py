# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lock files of boxes that do not exist do not pile up in the state home.

A run that removes a box, or an import that is refused, leaves no lock file of
a box that does not exist; tx9_prune removes the ones a killed run left,
skips one whose lock is held, and keeps those of existing boxes. Everything
runs in a state home of the test's own (own_playbooks), and tx9_prune is
always called with images: false, so it touches nothing else on the engine.
"""


import fcntl
import os
import shutil

import pytest

from conftest import succeeded
from portable_kit import make_home_tree, plain_tool_tx9

PASSWORD = 'lock files go \u2603'
PRUNE = dict(images=False)


def lock_files(state_home):
    return sorted(entry for entry in os.listdir(os.path.join(state_home, 'locks')) if entry.endswith('.lock'))


@pytest.fixture(scope='module')
def archive(built_image, tmp_path_factory):
    """A small encrypted .tx9 made with tar and gpg."""
    work = str(tmp_path_factory.mktemp('locks'))
    root = os.path.join(work, 'root')
    make_home_tree(root)
    path = os.path.join(work, 'small.tx9')
    plain_tool_tx9(path, root, PASSWORD, 'small', work)
    shutil.rmtree(root)
    return path


def hold_lock(path):
    """An open descriptor holding the flock of path, as a running operation would."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def test_after_state_absent_and_a_refused_import_tx9_prune_leaves_no_lock_file_of_a_box_that_does_not_exist(
        built_image, own_playbooks, archive, box_prefix):
    home = own_playbooks.state_home
    kept, removed, refused = box_prefix + '-kept', box_prefix + '-gone', box_prefix + '-refused'
    image = built_image['tag']
    try:
        for name in (kept, removed):
            own_playbooks.module_ok('tx9_box', dict(name=name, image=image, state='stopped'))
        assert lock_files(home) == sorted(['%s.lock' % kept, '%s.lock' % removed])

        gone = own_playbooks.module_ok('tx9_box', dict(name=removed, state='absent'))
        # Its actions name the containers it removed by name.
        assert 'remove container tx9-%s-agent' % removed in gone['actions'], gone['actions']
        assert 'remove container tx9-%s-executor' % removed in gone['actions'], gone['actions']
        wrong = own_playbooks.module('tx9_import', dict(path=archive, name=refused, image=image, password='not it'))
        assert wrong.get('failed') is True and wrong['cause'] == 'BAD_PASSWORD', wrong
        taken = own_playbooks.module('tx9_import', dict(path=archive, name=kept, image=image, password=PASSWORD))
        assert taken.get('failed') is True and taken['cause'] == 'NAME_EXISTS', taken
        assert lock_files(home) == ['%s.lock' % kept], 'absent or a refused import left a lock file'

        # What a killed run leaves, and a lock some operation holds right now.
        stale = os.path.join(home, 'locks', '%s-killed.lock' % box_prefix)
        open(stale, 'w').close()
        held_path = os.path.join(home, 'locks', '%s-busy.lock' % box_prefix)
        held = hold_lock(held_path)
        try:
            preview = own_playbooks.module_ok('tx9_prune', PRUNE, '--check')
            assert preview['changed'] is True
            assert preview['lock_files'] == [box_prefix + '-killed'], preview
            assert os.path.exists(stale), 'check mode removed a lock file'

            pruned = own_playbooks.module_ok('tx9_prune', PRUNE)
            assert pruned['changed'] is True and pruned['lock_files'] == [box_prefix + '-killed'], pruned
            assert pruned['images'] == [], 'images: false pruned images'
            assert lock_files(home) == sorted(['%s.lock' % kept, '%s-busy.lock' % box_prefix])
        finally:
            os.close(held)

        # Once nobody holds it, the lock of the box that does not exist goes too; the existing box keeps its.
        succeeded(own_playbooks.module('tx9_prune', PRUNE), 'tx9_prune')
        assert lock_files(home) == ['%s.lock' % kept]
        assert own_playbooks.module_ok('tx9_prune', PRUNE, '--check')['changed'] is False
    finally:
        own_playbooks.module('tx9_box', dict(name=kept, state='absent'))
