# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The suite leaves alone what it did not make: a box named t1 and an unused tx9-box:0.0.9.

The session fixture `bystanders` (conftest.py) plants both before the first
test when the engine has none, and fails the run at its very end when either
changed, whatever order the tests ran in. These tests say that the planted
objects are what a person's would be, and check on the way.
"""


def test_tx9_sees_the_box_t1_it_did_not_make_as_a_box_so_removing_t1_would_remove_it(bystanders, playbooks):
    result = playbooks.module_ok('tx9_info', dict(name=bystanders.box))
    assert [box['name'] for box in result['boxes']] == [bystanders.box]


def test_tx9_prune_would_count_the_image_tx9_box_0_0_9_it_did_not_make_as_unused_when_no_container_uses_it(
        bystanders, playbooks, client):
    # The planted image is unused; an engine's own may be in use, and then prune must not count it.
    image = client.api.inspect_image(bystanders.image)
    in_use = any(container['ImageID'] == image['Id'] for container in client.api.containers(all=True))
    assert not (bystanders.planted_image and in_use), 'nothing runs on the planted image'
    preview = playbooks.module_ok('tx9_prune', dict(state_files=False), '--check')
    counted = bool(set(preview['images']) & (set(image['RepoTags'] or []) | {image['Id']}))
    assert counted is not in_use, (in_use, preview['images'])


def test_the_box_t1_and_the_image_tx9_box_0_0_9_are_unchanged_so_far(bystanders):
    assert bystanders.changes() == []
