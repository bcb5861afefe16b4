# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The migration plan: boxes found on one host and placed on another move; journals finish interrupted moves."""


import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._box_option_spec import BOX_OPTIONS
from ansible_collections.col_agents.tx9.plugins.plugin_utils._plans.migration import BOX_OPTION_KEYS, plan

MIB = 1024 ** 2


def box(name, quiesced=False, gateway=False, desired=None, used=20 * MIB, mounts=(), superseded_by=None):
    mark = dict(by=superseded_by, at='2026-12-03T15:00:00Z', move=f'x -> {superseded_by}') if superseded_by else None
    return dict(name=name, state='stopped' if mark else 'running', quiesced=quiesced,
                gateway=dict(enabled=gateway, state='disabled'),
                desired=desired or dict(image='tx9-box:0.1.0', agent_cpus=1.0, executor_memory=str(512 * MIB),
                                        executor_web_base_url=None),
                volumes=dict(agent=dict(used_bytes=used)), mounts=list(mounts), superseded=mark)


def test_the_inventory_entries_take_exactly_the_box_options():
    assert sorted(BOX_OPTION_KEYS) == sorted(BOX_OPTIONS)


def test_a_box_found_on_one_host_and_placed_on_another_moves_with_its_desired_state_and_entry_options():
    mount = dict(source='/srv/nas', target='/mnt/nas', read_only=True)
    hosts = dict(a=dict(declared=[], boxes=[box('dev', gateway=True, mounts=[mount])], journals=[]),
                 b=dict(declared=[dict(name='dev', executor_memory='1g')], boxes=[], journals=[]))
    result = plan(hosts)
    assert result['errors'] == [] and len(result['moves']) == 1
    move = result['moves'][0]
    assert (move['box'], move['source'], move['dest'], move['phase'], move['resume']) == ('dev', 'a', 'b', 'move', False)
    assert move['options'] == dict(image='tx9-box:0.1.0', agent_cpus=1.0, executor_memory='1g')
    assert move['before'] == dict(state='running', quiesced=False, gateway_enabled=True)
    assert move['payload_bytes'] == 20 * MIB and move['mounts_left_behind'] == ['/srv/nas -> /mnt/nas']


def test_a_box_already_on_its_host_does_not_move_and_the_copy_a_move_left_behind_is_named_and_left_alone():
    hosts = dict(a=dict(declared=[], boxes=[box('dev', superseded_by='b')], journals=[]),
                 b=dict(declared=['dev'], boxes=[box('dev')], journals=[]))
    result = plan(hosts)
    assert result['moves'] == [] and result['errors'] == []
    assert result['notes'] == [
        'box dev on a is a copy superseded by its copy on b (move x -> b, 2026-12-03T15:00:00Z); it was left alone']


def test_a_box_placed_back_where_a_move_left_a_superseded_copy_moves_back_and_replaces_that_copy():
    hosts = dict(a=dict(declared=['dev'], boxes=[box('dev', superseded_by='b')], journals=[]),
                 b=dict(declared=[], boxes=[box('dev')], journals=[]))
    result = plan(hosts)
    assert result['errors'] == [] and result['notes'] == []
    [move] = result['moves']
    assert (move['source'], move['dest'], move['phase'], move['replace_superseded']) == ('b', 'a', 'move', True)
    assert move['before']['state'] == 'running', 'the move starts from the current copy, not the superseded one'


def test_a_move_to_a_host_without_a_copy_replaces_nothing():
    hosts = dict(a=dict(declared=[], boxes=[box('dev')]), b=dict(declared=['dev'], boxes=[]))
    assert plan(hosts)['moves'][0]['replace_superseded'] is False


def test_two_unmarked_copies_stop_the_plan_naming_both_hosts_and_how_to_choose_even_when_one_is_in_place():
    hosts = dict(a=dict(declared=[], boxes=[box('dev')]), b=dict(declared=['dev'], boxes=[box('dev')]))
    result = plan(hosts)
    assert result['moves'] == [] and result['notes'] == []
    [error] = result['errors']
    assert 'box dev has copies on a and b and none is marked superseded' in error
    assert 'state=absent' in error and 'superseded: {by: <the host you keep>}' in error


def test_a_box_whose_every_copy_is_superseded_stops_the_plan_until_one_is_made_the_box_again():
    hosts = dict(a=dict(declared=['dev'], boxes=[box('dev', superseded_by='b')]), b=dict(declared=[], boxes=[]))
    result = plan(hosts)
    assert result['moves'] == [] and 'every copy is one a move left behind' in result['errors'][0]
    assert 'force: true' in result['errors'][0]


def test_an_interrupted_move_back_keeps_the_superseded_copy_for_its_import_to_replace():
    journal = dict(box='dev', source='b', dest='a', step='started',
                   before=dict(state='running', quiesced=False, gateway_enabled=False))
    hosts = dict(a=dict(declared=['dev'], boxes=[box('dev', superseded_by='b')], journals=[]),
                 b=dict(declared=[], boxes=[box('dev', quiesced=True)], journals=[journal]))
    [move] = plan(hosts)['moves']
    assert (move['source'], move['dest'], move['resume']) == ('b', 'a', True)
    assert move['leftover'] is None and move['replace_superseded'] is True


def test_one_box_placed_on_two_hosts_or_an_unknown_option_is_refused_before_anything_moves():
    twice = plan(dict(a=dict(declared=['dev'], boxes=[]), b=dict(declared=['dev'], boxes=[])))
    assert twice['moves'] == [] and 'placed on two hosts, a and b' in twice['errors'][0]
    typo = plan(dict(a=dict(declared=[dict(name='dev', agent_cpu=2)], boxes=[])))
    assert 'agent_cpu' in typo['errors'][0]


def test_an_explicit_move_overrides_the_inventory_and_must_name_a_host_of_the_play():
    hosts = dict(a=dict(declared=['dev'], boxes=[box('dev')]), b=dict(declared=[], boxes=[]))
    moves = plan(hosts, 'dev', 'b')['moves']
    assert [(m['box'], m['source'], m['dest']) for m in moves] == [('dev', 'a', 'b')]
    assert 'not a host of this play' in plan(hosts, 'dev', 'c')['errors'][0]
    assert 'go together' in plan(hosts, 'dev', None)['errors'][0]


def test_an_interrupted_move_is_redone_with_the_journals_before_state_and_its_leftover_on_the_destination():
    journal = dict(box='dev', dest='b', step='backed up', before=dict(state='running', quiesced=False, gateway_enabled=True))
    hosts = dict(a=dict(declared=[], boxes=[box('dev', quiesced=True)], journals=[journal]),
                 b=dict(declared=['dev'], boxes=[box('dev', quiesced=True)], journals=[]))
    move = plan(hosts)['moves'][0]
    assert (move['phase'], move['resume'], move['source'], move['leftover']) == ('move', True, 'a', 'b')
    assert move['before'] == journal['before']


def test_an_interrupted_move_redone_towards_another_host_names_the_host_whose_stage_it_left():
    journal = dict(box='dev', dest='b', step='started', before=dict(state='running', quiesced=False, gateway_enabled=False))
    hosts = dict(a=dict(declared=[], boxes=[box('dev', quiesced=True)], journals=[journal]),
                 b=dict(declared=[], boxes=[], journals=[]),
                 c=dict(declared=['dev'], boxes=[], journals=[]))
    move = plan(hosts)['moves'][0]
    assert (move['dest'], move['resume'], move['stage_left'], move['leftover']) == ('c', True, 'b', None)
    hosts['c']['declared'], hosts['b']['declared'] = [], ['dev']
    assert plan(hosts)['moves'][0]['stage_left'] is None


def test_a_move_whose_destination_passed_is_only_finished():
    journal = dict(box='dev', dest='b', step='passed', before=dict(state='running', quiesced=False, gateway_enabled=False))
    hosts = dict(a=dict(declared=[], boxes=[box('dev', quiesced=True)], journals=[journal]),
                 b=dict(declared=['dev'], boxes=[box('dev')], journals=[]))
    move = plan(hosts)['moves'][0]
    assert (move['phase'], move['source'], move['dest']) == ('finish', 'a', 'b')


def test_a_box_on_two_hosts_without_a_journal_or_on_none_is_not_moved():
    hosts = dict(a=dict(declared=[], boxes=[box('dev')]), b=dict(declared=[], boxes=[box('dev')]),
                 c=dict(declared=['dev', 'web'], boxes=[]), d=dict(declared=[], boxes=None))
    result = plan(hosts)
    assert result['moves'] == []
    assert 'box dev has copies on a and b' in result['errors'][0]
    assert result['notes'] == ['box web runs on no host of the play that answered (no answer from d); nothing to move']


def test_an_unfinished_move_whose_source_lost_the_box_stops_for_a_person():
    journal = dict(box='dev', dest='b', step='imported')
    hosts = dict(a=dict(declared=[], boxes=[], journals=[journal]), b=dict(declared=['dev'], boxes=[box('dev')]))
    result = plan(hosts)
    assert result['moves'] == [] and 'no longer runs it' in result['errors'][0]


ARRIVED = dict(box='dev', source='a', dest='b', step='arrived', strategy='precopy',
               before=dict(state='running', quiesced=False, gateway_enabled=True),
               options=dict(image='tx9-box:2', executor_memory='1g'), replace_superseded=True)


def test_a_move_whose_last_archive_arrived_is_finished_from_it_even_when_the_old_engine_does_not_answer():
    hosts = dict(a=dict(declared=[], boxes=None, journals=[ARRIVED]),
                 b=dict(declared=['dev'], boxes=[box('dev', superseded_by='a')], journals=[]))
    result = plan(hosts)
    assert result['errors'] == []
    [move] = result['moves']
    assert (move['phase'], move['source'], move['dest'], move['resume']) == ('arrived', 'a', 'b', True)
    assert move['before'] == ARRIVED['before'] and move['options'] == ARRIVED['options']
    assert move['image'] == 'tx9-box:2' and move['replace_superseded'] is True
    assert move['made'] is False and move['arrival']['strategy'] == 'precopy'


def test_an_arrived_move_whose_box_was_made_on_the_destination_is_only_checked_and_finished():
    hosts = dict(a=dict(declared=[], boxes=[box('dev', quiesced=True)], journals=[ARRIVED]),
                 b=dict(declared=['dev'], boxes=[box('dev', quiesced=True)], journals=[]))
    [move] = plan(hosts)['moves']
    assert move['phase'] == 'arrived' and move['made'] is True


def test_an_arrived_move_whose_box_is_only_partly_made_on_the_destination_is_made_again():
    partial = dict(box('dev', quiesced=True), state='partial')
    hosts = dict(a=dict(declared=[], boxes=None, journals=[ARRIVED]),
                 b=dict(declared=['dev'], boxes=[partial], journals=[]))
    [move] = plan(hosts)['moves']
    assert move['phase'] == 'arrived' and move['made'] is False


def test_an_arrived_move_placed_elsewhere_is_refused_naming_where_its_archive_arrived():
    hosts = dict(a=dict(declared=['dev'], boxes=[box('dev', quiesced=True)], journals=[ARRIVED]),
                 b=dict(declared=[], boxes=[], journals=[]))
    result = plan(hosts)
    assert result['moves'] == []
    assert 'arrived on b' in result['errors'][0] and 'place it on b' in result['errors'][0]


def test_an_unfinished_move_whose_engine_did_not_answer_waits_for_it_rather_than_calling_the_box_lost():
    started = dict(ARRIVED, step='started')
    hosts = dict(a=dict(declared=[], boxes=None, journals=[started]),
                 b=dict(declared=['dev'], boxes=[], journals=[]))
    [error] = plan(hosts)['errors']
    assert 'engine on a did not answer' in error and 'no longer runs it' not in error
    passed = dict(ARRIVED, step='passed')
    hosts = dict(a=dict(declared=[], boxes=[box('dev', quiesced=True)], journals=[passed]),
                 b=dict(declared=['dev'], boxes=None, journals=[]))
    [error] = plan(hosts)['errors']
    assert 'engine on b did not answer' in error and 'remove the journal' not in error


FULL = dict(ARRIVED, strategy='full', archive='/home/tx9/.tx9/migrate/dev/incoming/dev.tx9', sha256='0123abcd' * 8,
            encrypted=False)


def test_a_full_move_whose_archive_arrived_is_finished_from_the_archive_and_sha256_its_journal_names():
    hosts = dict(a=dict(declared=[], boxes=None, journals=[FULL], work_dir='~/.tx9/migrate'),
                 b=dict(declared=['dev'], boxes=[], journals=[]))
    result = plan(hosts)
    assert result['errors'] == []
    [move] = result['moves']
    assert move['arrival'] == dict(strategy='full', archive=FULL['archive'], sha256=FULL['sha256'], encrypted=False)


@pytest.mark.parametrize('journal, problem', [
    (dict(ARRIVED, strategy='rsync'), "its strategy is 'rsync', not precopy or full"),
    ({k: v for k, v in ARRIVED.items() if k != 'strategy'}, 'its strategy is None'),
    ({k: v for k, v in FULL.items() if k != 'archive'}, 'it names no archive'),
    (dict(FULL, archive=['dev.tx9']), 'it names no archive'),
    ({k: v for k, v in FULL.items() if k != 'sha256'}, "its sha256 is not the archive's SHA-256"),
    (dict(FULL, sha256='0123ABCD' * 8), "its sha256 is not the archive's SHA-256"),
    (dict(FULL, sha256='0123abcd' * 7), "its sha256 is not the archive's SHA-256"),
    (dict(FULL, sha256='0123abcd' * 8 + '\n'), "its sha256 is not the archive's SHA-256"),
])
def test_an_arrived_journal_that_does_not_say_what_arrived_stops_the_plan_naming_box_host_journal_and_what_to_do(
        journal, problem):
    hosts = dict(a=dict(declared=[], boxes=None, journals=[journal], work_dir='~/.tx9/migrate'),
                 b=dict(declared=['dev'], boxes=[], journals=[]))
    result = plan(hosts)
    assert result['moves'] == []
    [error] = result['errors']
    assert error.startswith('box dev: the journal ~/.tx9/migrate/dev/journal.json on a says') and problem in error
    assert 'then remove the journal on a and run again' in error


def test_an_arrived_journal_of_a_host_that_does_not_say_its_work_dir_is_named_by_the_role_variable():
    hosts = dict(a=dict(declared=[], boxes=None, journals=[dict(ARRIVED, strategy=None)]),
                 b=dict(declared=['dev'], boxes=[], journals=[]))
    [error] = plan(hosts)['errors']
    assert 'the journal <tx9_migrate_work_dir>/dev/journal.json on a' in error


def test_a_journal_too_large_to_read_stops_the_plan_naming_its_box_host_path_and_size_even_for_a_box_placed_nowhere():
    big = {'/home/tx9/.tx9/migrate/dev/journal.json': 70000, '/home/tx9/.tx9/migrate/web/journal.json': 65537}
    hosts = dict(a=dict(declared=[], boxes=[box('dev', quiesced=True)], journals=[], oversized_journals=big),
                 b=dict(declared=['dev', 'api'], boxes=[], journals=[]),
                 c=dict(declared=[], boxes=[box('api')], journals=[]))
    result = plan(hosts)
    assert [move['box'] for move in result['moves']] == ['api']
    dev, web = result['errors']
    assert dev.startswith('box dev: the journal /home/tx9/.tx9/migrate/dev/journal.json on a holds 70000 bytes')
    assert 'more than the 64 KiB a journal is read up to' in dev and 'no move was planned from it' in dev
    assert 'remove or replace that journal on a, then run again' in dev
    assert web.startswith('box web: the journal /home/tx9/.tx9/migrate/web/journal.json on a holds 65537 bytes')
