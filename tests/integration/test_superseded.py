# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A copy a move left behind, on the real engine: marked on its labels and state file, never started
unforced, shown by tx9_info, replaced by an import only when asked, and made the box again by force.

One box serves every test, in order: it is backed up, marked superseded (stopped), refused a start,
replaced by the import of its own archive, then marked again and forced back to being the box.
"""


import os
import shutil
import tempfile

import pytest

from conftest import box_token
from portable_kit import in_box_ok

MARK_LABELS = ('tx9.superseded-by', 'tx9.superseded-at', 'tx9.superseded-move')
MARK = dict(by='h2', move='h1 -> h2')


def container_ids(client, box):
    return {role: client.containers.get('tx9-%s-%s' % (box, role)).id for role in ('agent', 'executor')}


def labels_of(client, box, role):
    return client.containers.get('tx9-%s-%s' % (box, role)).labels


def state_file(state_home, box):
    with open(os.path.join(state_home, 'boxes', '%s.env' % box)) as handle:
        return handle.read()


@pytest.fixture(scope='module')
def left_behind(built_image, playbooks, client, module_prefix):
    """A box with a file written before its backup and one after, its archive, then marked superseded."""
    work = tempfile.mkdtemp(prefix='tx9-it-superseded-')
    name = module_prefix + '-old'
    playbooks.module_ok('tx9_box', dict(name=name))
    in_box_ok(client, name, ['sh', '-c', 'echo current > ~/workspace-before.txt'])
    backup = playbooks.module_ok('tx9_backup', dict(name=name, dest=work, encrypt=False))
    in_box_ok(client, name, ['sh', '-c', 'echo stale > ~/written-after-the-backup.txt'])
    running_ids = container_ids(client, name)
    # Marked as a move with tx9_migrate_source=keep leaves it (running), then stopped.
    checked = playbooks.module_ok('tx9_box', dict(name=name, superseded=MARK), '--check', '--diff')
    marked = playbooks.module_ok('tx9_box', dict(name=name, superseded=MARK))
    gateway = playbooks.module('tx9_gateway', dict(name=name, state='enabled', confirm_single_writer=True))
    stopped = playbooks.module_ok('tx9_box', dict(name=name, state='stopped'))
    yield dict(name=name, archive=backup['path'], running_ids=running_ids, checked=checked, marked=marked,
               gateway=gateway, stopped=stopped)
    shutil.rmtree(work, ignore_errors=True)


def test_marking_recreates_both_containers_with_the_mark_on_their_labels_and_in_the_state_file(
        left_behind, client, state_home):
    name, marked = left_behind['name'], left_behind['marked']
    assert marked['changed'] and marked['actions'][0].startswith('mark the copy superseded by its copy on h2')
    assert marked['box']['state'] == 'running'
    assert marked['box']['superseded']['by'] == 'h2' and marked['box']['superseded']['move'] == 'h1 -> h2'
    assert container_ids(client, name) != left_behind['running_ids'], 'the mark needs new containers'
    for role in ('agent', 'executor'):
        labels = labels_of(client, name, role)
        assert [labels.get(key) for key in MARK_LABELS] == ['h2', marked['box']['superseded']['at'], 'h1 -> h2']
    assert 'TX9_SUPERSEDED_BY=h2\n' in state_file(state_home, name)
    checked = left_behind['checked']
    assert checked['changed'] and checked['actions'][0].startswith('mark the copy')
    assert checked['diff']['after']['superseded']['by'] == 'h2' and 'superseded' not in checked['diff']['before']


def test_the_gateway_of_a_running_superseded_copy_is_not_enabled_and_stopping_it_keeps_the_mark(left_behind):
    gateway = left_behind['gateway']
    assert gateway.get('failed') and gateway['cause'] == 'BOX_SUPERSEDED', gateway
    assert 'its gateway is not enabled' in gateway['msg']
    stopped = left_behind['stopped']
    assert stopped['box']['state'] == 'stopped' and stopped['box']['superseded'] == left_behind['marked']['box']['superseded']


def test_marking_again_by_the_same_move_changes_nothing_and_keeps_the_time(left_behind, playbooks):
    again = playbooks.module_ok('tx9_box', dict(name=left_behind['name'], state='stopped', superseded=MARK))
    assert again['changed'] is False and again['actions'] == []
    assert again['box']['superseded'] == left_behind['marked']['box']['superseded']


def test_starting_the_superseded_copy_is_refused_naming_where_the_box_runs_and_touches_nothing(
        left_behind, playbooks, client):
    name = left_behind['name']
    before = container_ids(client, name)
    refused = playbooks.module('tx9_box', dict(name=name))
    assert refused.get('failed') and refused['cause'] == 'BOX_SUPERSEDED'
    assert 'superseded by its copy on h2 (move h1 -> h2' in refused['msg'] and 'force: true' in refused['fix']
    assert container_ids(client, name) == before
    assert all(client.containers.get(c).status != 'running' for c in before.values())


def test_tx9_info_shows_the_mark_from_the_state_file_or_from_the_labels_alone(left_behind, playbooks, own_playbooks):
    name = left_behind['name']
    [box] = playbooks.module_ok('tx9_info', dict(name=name))['boxes']
    assert box['superseded'] == left_behind['marked']['box']['superseded'] and box['state'] == 'stopped'
    [bare] = own_playbooks.module_ok('tx9_info', dict(name=name))['boxes']
    assert bare['superseded'] == box['superseded'], 'a state home without the box still sees the labels'


def test_an_import_over_the_copy_needs_replace_superseded_and_the_preflight_says_the_same(left_behind, playbooks):
    name, archive = left_behind['name'], left_behind['archive']
    refused = playbooks.module('tx9_import', dict(path=archive, name=name))
    assert refused['cause'] == 'NAME_EXISTS' and 'a copy a move left behind' in refused['msg']
    assert 'replace_superseded' in refused['fix']
    taken = playbooks.module('tx9_preflight', dict(name=name, fail_on_error=False))
    assert [c['ok'] for c in taken['checks'] if c['name'] == 'name'] == [False]
    free = playbooks.module_ok('tx9_preflight', dict(name=name, replace_superseded=True))
    assert [c['detail'] for c in free['checks'] if c['name'] == 'name'][0].endswith('the import replaces it')


def test_an_import_with_replace_superseded_replaces_the_copy_with_the_archives_data_and_no_mark(
        left_behind, playbooks, client, state_home):
    name = left_behind['name']
    old_token = box_token(state_home, name)
    checked = playbooks.module_ok('tx9_import', dict(path=left_behind['archive'], name=name, replace_superseded=True),
                                  '--check')
    assert checked['actions'][1].startswith('remove the copy of %s here, superseded by its copy on h2' % name)
    assert labels_of(client, name, 'agent').get('tx9.superseded-by') == 'h2', 'check mode removes nothing'
    imported = playbooks.module_ok('tx9_import', dict(path=left_behind['archive'], name=name, replace_superseded=True))
    assert imported['box']['state'] == 'running' and imported['box']['superseded'] is None
    assert box_token(state_home, name) != old_token
    assert 'SUPERSEDED' not in state_file(state_home, name)
    assert not any(key in labels_of(client, name, 'agent') for key in MARK_LABELS)
    assert in_box_ok(client, name, ['sh', '-c', 'cat ~/workspace-before.txt']).strip() == 'current'
    assert in_box_ok(client, name, ['sh', '-c', 'ls ~/written-after-the-backup.txt || true']).find('No such') >= 0


def test_force_makes_a_superseded_copy_the_box_again_and_says_so(left_behind, playbooks, client, state_home):
    name = left_behind['name']
    playbooks.module_ok('tx9_box', dict(name=name, state='stopped', superseded=dict(by='h3')))
    forced = playbooks.module_ok('tx9_box', dict(name=name, force=True))
    assert forced['actions'][0] == 'clear the superseded mark: this copy is the box again'
    assert forced['box']['state'] == 'running' and forced['box']['superseded'] is None
    assert 'SUPERSEDED' not in state_file(state_home, name)
    assert 'tx9.superseded-by' not in labels_of(client, name, 'executor')
    both = playbooks.module('tx9_box', dict(name=name, force=True, superseded=dict(by='h3')))
    assert both.get('failed') and 'mutually exclusive' in both['msg']
    playbooks.module_ok('tx9_box', dict(name=name, state='absent'))
