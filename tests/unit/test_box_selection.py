# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Choosing boxes: names, shell-style patterns or a list mixing them; an entry that finds nothing is said."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.col_agents.tx9.plugins.filter.select_boxes import select_boxes
from ansible_collections.col_agents.tx9.plugins.filter.selection_verdict import selection_verdict
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import CAUSES
from ansible_collections.col_agents.tx9.plugins.plugin_utils import _selection

HOST = [dict(name='nu-alpha', state='running'), dict(name='nu-beta', state='stopped'), dict(name='dev', state='running'),
        dict(name='dev2', state='running')]


def test_an_entry_with_star_question_mark_or_bracket_is_a_pattern_and_any_other_a_name():
    assert [_selection.is_pattern(entry) for entry in ('nu-*', 'dev?', 'dev[12]', 'dev', 'nu-alpha')] == [
        True, True, True, False, False]


def test_a_pattern_chooses_the_boxes_whose_whole_names_it_matches_sorted():
    assert select_boxes(HOST, 'nu-*') == ['nu-alpha', 'nu-beta']
    assert select_boxes(HOST, 'dev?') == ['dev2']
    assert select_boxes(HOST, 'dev[0-9]') == ['dev2']
    assert select_boxes(HOST, 'nu') == [] and select_boxes(HOST, 'NU-*') == []


def test_a_name_chooses_only_that_box_never_one_that_starts_with_it():
    assert select_boxes(HOST, 'dev') == ['dev']
    assert select_boxes(HOST, ['dev']) == ['dev']


def test_names_and_patterns_mix_in_a_list_or_a_comma_string_and_each_box_is_chosen_once():
    assert select_boxes(HOST, 'dev, nu-*,nu-alpha') == ['dev', 'nu-alpha', 'nu-beta']
    assert select_boxes(HOST, ['nu-b*', 'dev2']) == ['dev2', 'nu-beta']


def test_no_entries_choose_every_box_of_the_host():
    assert select_boxes(HOST, []) == ['dev', 'dev2', 'nu-alpha', 'nu-beta']
    assert select_boxes(HOST, '') == select_boxes(HOST, None) == select_boxes(HOST, [])


def test_a_box_host_of_the_inventory_plugin_chooses_only_its_own_box_and_entries_narrow_it():
    assert select_boxes(HOST, [], only='nu-beta') == ['nu-beta']
    assert select_boxes(HOST, 'nu-*', only='nu-beta') == ['nu-beta']
    assert select_boxes(HOST, 'dev', only='nu-beta') == []
    assert select_boxes(HOST, [], only='gone') == []


def test_box_names_may_be_given_instead_of_tx9_info_records():
    assert select_boxes(['b', 'a', 'c'], 'a,c') == ['a', 'c']


def test_as_given_keeps_a_name_the_host_lacks_but_a_pattern_never_invents_one():
    assert select_boxes(HOST, 'gone,nu-a*', as_given=True) == ['gone', 'nu-alpha']
    assert select_boxes(HOST, 'try-*', as_given=True) == []


def test_a_wrong_shape_is_refused_naming_the_variable():
    with pytest.raises(AnsibleFilterError) as caught:
        select_boxes(HOST, {'name': 'dev'}, variable='tx9_backup_boxes')
    assert 'tx9_backup_boxes is dict' in str(caught.value) and 'INVALID_ARGUMENT' in str(caught.value)


def test_an_entry_found_on_some_host_of_the_play_is_enough():
    verdict = selection_verdict([['nu-alpha'], [], None, ['dev']], 'nu-*,dev', variable='tx9_backup_boxes')
    assert verdict['ok'] and verdict['unmatched'] == [] and verdict['msg'] == '' and verdict['cause'] == ''
    assert verdict['names'] == ['dev', 'nu-alpha']


def test_a_pattern_that_found_no_box_on_any_host_is_no_matching_box_naming_it():
    verdict = selection_verdict([[], None, []], 'select-zz*', variable='tx9_backup_boxes')
    assert not verdict['ok'] and verdict['cause'] == 'NO_MATCHING_BOX' and verdict['unmatched'] == ['select-zz*']
    assert verdict['msg'].startswith('NO_MATCHING_BOX: tx9_backup_boxes asked for select-zz*')
    assert 'Fix:' in verdict['msg'] and 'NO_MATCHING_BOX' in CAUSES


def test_a_typo_beside_a_name_that_matched_still_fails_naming_only_the_typo():
    verdict = selection_verdict([['dev']], ['dev', 'nu-alhpa'], variable='tx9_upgrade_boxes')
    assert not verdict['ok'] and verdict['unmatched'] == ['nu-alhpa']
    assert 'asked for nu-alhpa,' in verdict['msg'] and '(the boxes chosen: dev)' in verdict['msg']


def test_no_entries_are_never_a_no_match_even_on_hosts_without_boxes():
    assert selection_verdict([[], []], [])['ok']


def test_the_notes_of_one_host_say_which_names_and_patterns_found_nothing_there():
    here = selection_verdict([select_boxes(HOST, 'gone,zz-*,dev')], 'gone,zz-*,dev', where='this host')
    assert here['notes'] == ['gone: skipped, not on this host', 'zz-*: skipped, no box on this host matches it']


def test_the_confirmation_is_the_chosen_names_sorted_and_joined_by_commas():
    assert _selection.confirmation(['nu-beta', 'dev', 'nu-beta']) == 'dev,nu-beta'
    verdict = selection_verdict([select_boxes(HOST, 'nu-*', as_given=True), ['dev']], 'nu-*,dev')
    assert verdict['confirmation'] == 'dev,nu-alpha,nu-beta'


def test_a_pattern_is_confirmed_by_the_names_it_found_never_by_the_pattern():
    verdict = selection_verdict([select_boxes(HOST, 'nu-*', as_given=True)], 'nu-*', variable='box_name')
    assert verdict['confirmation'] == 'nu-alpha,nu-beta' and verdict['confirmation'] != 'nu-*'


def test_a_delete_of_names_already_gone_stays_repeatable_but_a_pattern_that_found_nothing_fails():
    assert selection_verdict([select_boxes(HOST, 'gone', as_given=True)], 'gone', variable='box_name')['ok']
    verdict = selection_verdict([select_boxes(HOST, 'gone,try-*', as_given=True)], 'gone,try-*', variable='box_name')
    assert not verdict['ok'] and verdict['unmatched'] == ['try-*'] and verdict['confirmation'] == 'gone'
