# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/delete-box.yml: the box name typed a second time, or nothing happens."""


import os

from conftest import recap


def box_objects(client, name):
    """The names of the box's containers, networks and volumes, found by their tx9.box label."""
    label = {'label': 'tx9.box=%s' % name}
    return sorted([c.name for c in client.containers.list(all=True, filters=label)] +
                  [n.name for n in client.networks.list(filters=label)] +
                  [v.name for v in client.volumes.list(filters=label)])


def make_box(playbooks, built_image, client, name):
    playbooks.module_ok('tx9_box', dict(name=name, image=built_image['tag']))
    made = box_objects(client, name)
    assert len(made) == 5, made  # two containers, a network, two volumes
    return made


def test_delete_box_refuses_a_missing_or_wrong_confirmation_and_leaves_the_box_running(
        built_image, playbooks, client, box_prefix, state_home):
    name = box_prefix + '-keep'
    made = make_box(playbooks, built_image, client, name)
    for confirmation in ([], ['-e', 'tx9_confirm_delete='], ['-e', 'tx9_confirm_delete=%s-other' % name],
                         ['-e', 'tx9_confirm_delete=%s' % name.upper()]):
        proc = playbooks.run('playbooks/delete-box.yml', '-e', 'box_name=%s' % name, *confirmation, check=False)
        assert proc.returncode != 0, proc.stdout[-3000:]
        assert 'CONFIRMATION_REQUIRED' in proc.stdout and 'Nothing was changed' in proc.stdout
        assert recap(proc.stdout)['changed'] == 0
        assert box_objects(client, name) == made
    assert all(c.status == 'running' for c in client.containers.list(all=True, filters={'label': 'tx9.box=%s' % name}))
    assert os.path.exists(os.path.join(state_home, 'boxes', '%s.env' % name))


def test_delete_box_with_the_name_typed_again_removes_the_box_and_a_second_run_changes_nothing(
        built_image, playbooks, client, box_prefix, state_home):
    name = box_prefix + '-gone'
    make_box(playbooks, built_image, client, name)
    args = ['-e', 'box_name=%s' % name, '-e', 'tx9_confirm_delete=%s' % name]
    first = playbooks.run('playbooks/delete-box.yml', *args)
    assert recap(first.stdout)['changed'] == 1 and 'Box %s is deleted.' % name in first.stdout
    assert box_objects(client, name) == []
    assert not os.path.exists(os.path.join(state_home, 'boxes', '%s.env' % name))
    second = playbooks.run('playbooks/delete-box.yml', *args)
    assert recap(second.stdout)['changed'] == 0 and 'There was no box %s' % name in second.stdout
