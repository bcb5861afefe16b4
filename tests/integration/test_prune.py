# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tx9_prune removes what no box uses, and nothing else.

tx9_prune has no scope: it removes every unused tx9 image on the engine. So
the test plants unused images of its own, keeps every other image the module
would remove in use while it runs (a container made from it and never
started, removed afterwards), and checks that exactly the planted images went
and that every image on the engine before is still there with its tags. (An
image someone makes on the engine between the last check-mode listing and the
prune itself is not covered: the module offers no way to name what it may
remove.)
"""


import contextlib
import json
import os
import random
import time

from bystanders import tiny_image


def images_by_id(client):
    """{image id: sorted tags} of every image on the engine (intermediate layers aside)."""
    return dict((image['Id'], sorted(t for t in image.get('RepoTags') or [] if t != '<none>:<none>'))
                for image in client.api.images())


def free_tag(client):
    """A tx9-box:0.0.N tag no image on the engine has."""
    tags = set(tag for tags in images_by_id(client).values() for tag in tags)
    while True:
        tag = 'tx9-box:0.0.%d' % random.randrange(10 ** 6, 10 ** 7)
        if tag not in tags:
            return tag


@contextlib.contextmanager
def only_planted_unused(client, playbooks, planted, labels, rounds=3):
    """While the block runs, every image tx9_prune would remove besides planted is in use.

    Each image a check-mode prune lists that is not planted gets a container
    (created, never started, removed afterwards), until the listing is planted
    alone: an image made meanwhile by someone else on the engine is kept too.
    """
    made = []
    try:
        for _round in range(rounds):
            others = [ref for ref in playbooks.module_ok('tx9_prune', dict(), '--check')['images'] if ref not in planted]
            if not others:
                break
            for ref in others:
                made.append(client.api.create_container(ref, entrypoint=['/nothing-to-run'], labels=labels)['Id'])
        yield
    finally:
        for container in made:
            client.api.remove_container(container, force=True)


def test_prune_lists_in_check_mode_then_removes_exactly_the_unused_images_and_orphan_state_files_it_finds(
        built_image, own_playbooks, client, box_prefix):
    labels = {'tx9': '1', 'tx9.version': '0.0.1', 'tx9.test': box_prefix}
    before = images_by_id(client)
    tagged = free_tag(client)
    planted = {tiny_image(client, labels, *tagged.split(':')): tagged}
    untagged = tiny_image(client, labels)
    planted[untagged] = untagged
    # What tx9_prune names: the tag of a tagged image, the id of an untagged one.
    reported = sorted(planted.values())
    live = box_prefix + '-live'
    ghost = box_prefix + '-ghost'
    boxes_dir = os.path.join(own_playbooks.state_home, 'boxes')
    try:
        own_playbooks.module_ok('tx9_box', dict(name=live))
        orphan = os.path.join(boxes_dir, '%s.env' % ghost)
        with open(orphan, 'w') as handle:
            handle.write('EXECUTOR_MCP_TOKEN=%s\n' % ('0' * 64))
        # The last drill of a box removed by hand, and leases: one expired (a run killed on another
        # controller), one live (a run under way).
        planted_files = dict(drill=('drills', ghost, dict(box=ghost, passed=True)),
                             expired=('leases', ghost, dict(run='far:1:1', until=time.time() - 1)),
                             live=('leases', live, dict(run='far:2:2', until=time.time() + 600)))
        for folder, name, content in planted_files.values():
            os.makedirs(os.path.join(own_playbooks.state_home, folder), mode=0o700, exist_ok=True)
            with open(os.path.join(own_playbooks.state_home, folder, '%s.json' % name), 'w') as handle:
                json.dump(content, handle)
        path_of = dict((key, os.path.join(own_playbooks.state_home, folder, '%s.json' % name))
                       for key, (folder, name, _content) in planted_files.items())

        with only_planted_unused(client, own_playbooks, reported, {'tx9.test': box_prefix}):
            preview = own_playbooks.module_ok('tx9_prune', dict(), '--check')
            assert preview['changed'] is True
            assert sorted(preview['images']) == reported, 'an image the test did not plant is unused: stopped before pruning it'
            assert preview['state_files'] == [ghost]
            assert (preview['drill_records'], preview['leases']) == ([ghost], [ghost]), preview
            assert set(planted) <= set(images_by_id(client)), 'check mode removed an image'
            assert os.path.exists(orphan) and all(os.path.exists(path) for path in path_of.values())

            result = own_playbooks.module_ok('tx9_prune', dict())
            assert sorted(result['images']) == reported
            assert result['state_files'] == [ghost]
            left = images_by_id(client)
            assert not [image for image in planted if image in left]
            assert not os.path.exists(orphan)
            assert os.path.exists(os.path.join(boxes_dir, '%s.env' % live))
            assert (result['drill_records'], result['leases']) == ([ghost], [ghost]), result
            assert not os.path.exists(path_of['drill']) and not os.path.exists(path_of['expired'])
            assert os.path.exists(path_of['live'])

            # Nothing is left to remove; asked in check mode, so no second prune runs on a shared engine.
            again = own_playbooks.module_ok('tx9_prune', dict(), '--check')
            assert again['changed'] is False, again

        after = images_by_id(client)
        lost = dict((image, sorted(set(tags) - set(after.get(image, [])))) for image, tags in before.items()
                    if image not in after or not set(tags) <= set(after[image]))
        assert not lost, 'images (or tags) the test did not make were removed: %s' % lost
    finally:
        own_playbooks.module('tx9_box', dict(name=live, state='absent'))
        for image in planted:
            if image in images_by_id(client):
                client.api.remove_image(image, force=True)
