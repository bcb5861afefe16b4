# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A pre-copied move on one engine: the base of a running box staged under a second name, its last
changes (files written, removed, re-moded, re-linked after the base) applied, and the stage made the box.

One source box serves every test; its stage is taken under another name, which the engine keeps
apart from the source's objects, so the whole path runs on this host as it runs between two.
"""


import os
import shutil
import socket
import tempfile
import time

import pytest

from portable_kit import in_box_ok, listing

RACY_SECONDS = 2.5

BEFORE = r'''
set -e
cd ~
mkdir -p work/keep work/gone work/node_modules/pkg
echo stays > work/keep/a.txt
echo changes > work/keep/b.txt
echo goes > work/gone/c.txt
echo excluded > work/node_modules/pkg/index.js
ln -s keep/a.txt work/link
head -c 3000000 /dev/urandom > work/big.bin
'''

AFTER = r'''
set -e
cd ~
echo changed-after-the-base > work/keep/b.txt
rm -rf work/gone
echo new > work/keep/new.txt
chmod 0700 work/keep
ln -sfn keep/new.txt work/link
rm work/keep/a.txt && mkdir work/keep/a.txt && echo inside > work/keep/a.txt/f
'''


@pytest.fixture(scope='module')
def moved(built_image, playbooks, client, module_prefix):
    work = tempfile.mkdtemp(prefix='tx9-it-precopy-')
    source, target = module_prefix + '-src', module_prefix + '-dst'
    try:
        playbooks.module_ok('tx9_box', dict(name=source))
        in_box_ok(client, source, ['sh', '-c', BEFORE])
        # A path changed within two seconds of a pass's start is sent again by the next; these are older.
        time.sleep(RACY_SECONDS)
        base = playbooks.module_ok('tx9_precopy', dict(name=source, dest=work, which='base'))
        staged = playbooks.module_ok('tx9_stage', dict(name=target, base=base['path'], sha256=base['sha256']))
        again = playbooks.module_ok('tx9_stage', dict(name=target, base=base['path'], sha256=base['sha256']))
        in_box_ok(client, source, ['sh', '-c', AFTER])
        changes = playbooks.module_ok(
            'tx9_precopy', dict(name=source, dest=work, which='changes', final=True, leave_quiesced=True))
        applied = playbooks.module_ok('tx9_stage', dict(name=target, changes=changes['path'], sha256=changes['sha256']))
        staged_tree = stage_listing(client, built_image['tag'], target)
        failed, after_failure = failed_promotion(playbooks, client, built_image['tag'], target)
        promoted = playbooks.module_ok('tx9_stage', dict(name=target, state='promoted', doctor=True))
        yield dict(source=source, target=target, base=base, staged=staged, again=again, changes=changes,
                   applied=applied, promoted=promoted, work=work, staged_tree=staged_tree, failed=failed,
                   after_failure=after_failure)
    finally:
        # A stage is no box's object, so the prefix's cleanup would not see one a failed run left.
        playbooks.module('tx9_stage', dict(name=target, state='absent'))
        shutil.rmtree(work, ignore_errors=True)


def stage_listing(client, image, target):
    """{path: (type, mode, size)} of every entry of the staged volume, read by a throwaway container."""
    script = 'cd /stage && find . -printf "%p %y %m %s\\n" | sort'
    output = client.containers.run(image, ['sh', '-c', script], user='root', remove=True,
                                   entrypoint=[], volumes={'tx9-%s-staged' % target: {'bind': '/stage', 'mode': 'ro'}})
    return output.decode()


def failed_promotion(playbooks, client, image, target):
    """A promotion that fails after its renames (Executor's port is taken): its result and the stage after it."""
    with socket.socket() as taken:
        taken.bind(('127.0.0.1', 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        asked = dict(name=target, state='promoted', executor_publish='127.0.0.1:%d' % port)
        failed = playbooks.module('tx9_stage', asked)
    return failed, stage_listing(client, image, target)


def test_a_promotion_that_fails_after_its_renames_gives_the_stage_its_whole_tree_back_and_leaves_no_box(moved, client):
    assert moved['failed'].get('failed'), moved['failed']
    assert moved['after_failure'] == moved['staged_tree']
    assert any(line.startswith('./home/agent/work/keep/new.txt f ') for line in moved['staged_tree'].splitlines())
    names = [volume.name for volume in client.volumes.list()]
    # The promotion that came after it made the box of that stage (the tests below read it).
    assert 'tx9-%s-agent-data' % moved['target'] in names


def test_the_moved_tree_is_the_source_tree_at_its_quiesce_file_for_file(moved, client):
    skip = 'home/agent/.config/hermes-box'
    source = listing(client, moved['source'], '/data/home/agent/work')
    target = listing(client, moved['target'], '/data/home/agent/work')
    assert target == {path: attrs for path, attrs in source.items() if 'node_modules' not in path}, skip
    assert 'keep/new.txt' in target and 'gone' not in target and 'gone/c.txt' not in target


def test_the_change_set_carries_only_what_changed_after_the_base(moved):
    changes, base = moved['changes'], moved['base']
    assert changes['base'] == base['sha256']
    assert changes['size'] < base['size'] / 2, (changes['size'], base['size'])
    assert moved['applied']['removed'] >= 1


def test_staging_the_same_base_again_changes_nothing(moved):
    assert moved['staged']['changed'] and not moved['again']['changed']


def test_the_promoted_box_runs_quiesced_passed_the_doctor_and_its_stage_is_gone(moved, client):
    promoted = moved['promoted']
    assert promoted['box']['state'] == 'running' and promoted['box']['quiesced']
    assert promoted['doctor']['ok'] is True and promoted['doctor']['failed_checks'] == []
    assert any(check['name'].startswith('hb ') for check in promoted['doctor']['checks'])
    names = [volume.name for volume in client.volumes.list()]
    assert 'tx9-%s-staged' % moved['target'] not in names
    assert 'tx9-%s-agent-data' % moved['target'] in names
    assert not os.path.exists(os.path.join(moved['work'], 'never'))


@pytest.fixture(scope='module')
def replaced(moved, playbooks, client, built_image):
    """The promoted box marked superseded (a file of its own written first), then replaced by a promotion of a
    fresh stage of the source: what each step left."""
    work = tempfile.mkdtemp(prefix='tx9-it-precopy-again-')
    source, target = moved['source'], moved['target']
    try:
        in_box_ok(client, target, ['sh', '-c', 'echo only-in-the-superseded-copy > ~/superseded-marker'])
        mark = dict(by='elsewhere', move='here -> elsewhere')
        playbooks.module_ok('tx9_box', dict(name=target, state='stopped', superseded=mark))
        base = playbooks.module_ok('tx9_precopy', dict(name=source, dest=work, which='base'))
        playbooks.module_ok('tx9_stage', dict(name=target, base=base['path'], sha256=base['sha256']))
        promoted = playbooks.module_ok('tx9_stage', dict(name=target, state='promoted', replace_superseded=True))
        set_aside = client.containers.run(
            built_image['tag'], ['sh', '-c', 'cat /aside/home/agent/superseded-marker'], user='root', remove=True,
            entrypoint=[], volumes={'tx9-%s-set-aside' % target: {'bind': '/aside', 'mode': 'ro'}}).decode()
        removed = playbooks.module_ok('tx9_stage', dict(name=target, state='absent'))
        again = playbooks.module_ok('tx9_stage', dict(name=target, state='absent'))
        yield dict(promoted=promoted, set_aside=set_aside, removed=removed, again=again,
                   volumes=[volume.name for volume in client.volumes.list()])
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_a_promotion_that_replaces_a_superseded_copy_sets_its_data_aside_until_the_stage_is_removed(
        replaced, moved, client):
    target = moved['target']
    assert replaced['promoted']['changed'] and 'set aside' in ' '.join(replaced['promoted']['actions'])
    assert replaced['set_aside'].strip() == 'only-in-the-superseded-copy'
    new_tree = listing(client, target, '/data/home/agent')
    assert 'superseded-marker' not in new_tree and 'work/keep/new.txt' in new_tree
    assert replaced['removed']['changed'] and not replaced['again']['changed']
    assert 'tx9-%s-set-aside' % target not in replaced['volumes']
    assert 'tx9-%s-agent-data' % target in replaced['volumes']


def kill_after_setting_aside(client, state_home, target, copy_removed=False):
    """What a promotion killed right after it set the superseded copy's data aside (and, with copy_removed, after it
    removed that copy) leaves: its first steps, run here."""
    from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
    from ansible_collections.col_agents.tx9.plugins.module_utils._portable.stage import Stage
    stage = Stage(client, StateHome(state_home), target, dict(name=target))
    stage.set_aside(target)
    if copy_removed:
        stage.discard(target)


def copy_tree(client, image, volume):
    """The names at the top of the agent's home in a volume, read by a throwaway container."""
    output = client.containers.run(image, ['sh', '-c', 'ls -A /v/home/agent 2>/dev/null; true'], user='root',
                                   remove=True, entrypoint=[], volumes={volume: {'bind': '/v', 'mode': 'ro'}})
    return output.decode().split()


@pytest.fixture(scope='module')
def killed_while_replacing(replaced, moved, playbooks, client, built_image, state_home):
    """The promoted box marked superseded again, a fresh stage, its promotion killed after setting the copy's data
    aside: what a revert then gives back; then the same again, finished by running the promotion once more."""
    work = tempfile.mkdtemp(prefix='tx9-it-precopy-killed-')
    source, target, image = moved['source'], moved['target'], built_image['tag']
    agent_volume, aside_volume = 'tx9-%s-agent-data' % target, 'tx9-%s-set-aside' % target

    def stage_and_kill(copy_removed=False):
        base = playbooks.module_ok('tx9_precopy', dict(name=source, dest=work, which='base'))
        playbooks.module_ok('tx9_stage', dict(name=target, base=base['path'], sha256=base['sha256']))
        kill_after_setting_aside(client, state_home, target, copy_removed)
        aside = copy_tree(client, image, aside_volume)
        return dict(aside=aside) if copy_removed else dict(copy=copy_tree(client, image, agent_volume), aside=aside)

    try:
        in_box_ok(client, target, ['sh', '-c', 'echo second > ~/second-marker'])
        playbooks.module_ok('tx9_box', dict(name=target, state='stopped', superseded=dict(by='elsewhere', move='x')))
        first_kill = stage_and_kill()
        reverted = playbooks.module_ok('tx9_stage', dict(name=target, state='absent'))
        after_revert = dict(copy=copy_tree(client, image, agent_volume),
                            volumes=[volume.name for volume in client.volumes.list()])
        second_kill = stage_and_kill()
        promoted = playbooks.module_ok('tx9_stage', dict(name=target, state='promoted', replace_superseded=True))
        after_rerun = dict(box=copy_tree(client, image, agent_volume), aside=copy_tree(client, image, aside_volume))
        playbooks.module_ok('tx9_stage', dict(name=target, state='absent'))
        # Killed once the copy was gone: the promotion run again makes the box, and the stage's removal after it
        # leaves that box's data alone.
        in_box_ok(client, target, ['sh', '-c', 'echo third > ~/third-marker'])
        playbooks.module_ok('tx9_box', dict(name=target, state='stopped', superseded=dict(by='elsewhere', move='y')))
        third_kill = stage_and_kill(copy_removed=True)
        playbooks.module_ok('tx9_stage', dict(name=target, state='promoted', replace_superseded=True))
        playbooks.module_ok('tx9_stage', dict(name=target, state='absent'))
        after_third = dict(box=copy_tree(client, image, agent_volume),
                           volumes=[volume.name for volume in client.volumes.list()])
        yield dict(first_kill=first_kill, reverted=reverted, after_revert=after_revert, second_kill=second_kill,
                   promoted=promoted, after_rerun=after_rerun, third_kill=third_kill, after_third=after_third)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_a_promotion_killed_after_setting_data_aside_gives_it_back_on_revert_and_keeps_it_when_run_again(
        killed_while_replacing, moved):
    seen = killed_while_replacing
    assert seen['first_kill']['copy'] == [] and 'second-marker' in seen['first_kill']['aside']
    assert seen['reverted']['changed']
    assert 'second-marker' in seen['after_revert']['copy']
    assert 'tx9-%s-set-aside' % moved['target'] not in seen['after_revert']['volumes']
    assert seen['second_kill']['copy'] == [] and 'second-marker' in seen['second_kill']['aside']
    assert seen['promoted']['changed']
    assert 'second-marker' not in seen['after_rerun']['box'] and 'work' in seen['after_rerun']['box']
    assert 'second-marker' in seen['after_rerun']['aside']
    assert 'third-marker' in seen['third_kill']['aside']
    assert 'work' in seen['after_third']['box'] and 'third-marker' not in seen['after_third']['box']
    assert 'tx9-%s-set-aside' % moved['target'] not in seen['after_third']['volumes']
