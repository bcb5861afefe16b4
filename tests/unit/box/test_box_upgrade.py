# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which boxes of a host the upgrade role moves to the target image, and which it leaves alone."""


import pytest

from ansible_collections.col_agents.tx9.plugins.plugin_utils._plans import upgrade
from ansible_collections.col_agents.tx9.plugins.plugin_utils._plans.migration import PlanError
from ansible_collections.col_agents.tx9.plugins.filter.upgrade_plan import upgrade_plan

TARGET = 'tx9-box:0.1.0'
NEW = 'sha256:' + 'a' * 64
OLD = 'sha256:' + 'b' * 64


def box(name, state='running', ids=(OLD, OLD), desired='tx9-box:0.0.9', version='0.0.9'):
    containers = dict(agent=dict(image_id=ids[0]), executor=dict(image_id=ids[1]))
    return dict(name=name, state=state, image=desired, version=version, containers=containers,
                desired=dict(image=desired) if desired else {})


def names(found):
    return [item['box'] for item in found]


def test_a_box_on_an_older_release_is_upgraded_and_remembers_what_it_ran():
    result = upgrade.plan([box('dev')], TARGET, NEW)
    assert result['skipped'] == []
    assert result['upgrades'] == [dict(box='dev', state='running', target=TARGET, target_id=NEW,
                                       from_image='tx9-box:0.0.9', from_image_id=OLD, from_version='0.0.9',
                                       pinned=None)]


def test_a_box_whose_containers_all_run_the_target_id_is_current_and_skipped():
    result = upgrade.plan([box('dev', ids=(NEW, NEW), desired=TARGET)], TARGET, NEW)
    assert result['upgrades'] == []
    assert result['skipped'] == [dict(box='dev', reason='already on %s' % TARGET, current=True)]


def test_a_box_half_on_the_target_is_upgraded_again():
    assert names(upgrade.plan([box('dev', ids=(OLD, NEW))], TARGET, NEW)['upgrades']) == ['dev']


def test_a_box_on_the_same_tag_rebuilt_is_upgraded():
    assert names(upgrade.plan([box('dev', desired=TARGET, version='0.1.0')], TARGET, NEW)['upgrades']) == ['dev']


def test_a_stopped_box_is_upgraded_and_a_crashed_or_partial_one_is_left_alone():
    result = upgrade.plan([box('a', state='stopped'), box('b', state='crashed'), box('c', state='partial')],
                          TARGET, NEW)
    assert [(u['box'], u['state']) for u in result['upgrades']] == [('a', 'stopped')]
    assert names(result['skipped']) == ['b', 'c']
    assert 'it is crashed; repair it first' in result['skipped'][0]['reason']


def test_a_desired_image_of_the_owners_own_is_left_alone_unless_forced():
    boxes = [box('dev', desired='registry.example/mine:2')]
    left = upgrade.plan(boxes, TARGET, NEW)
    assert left['upgrades'] == []
    assert 'its owner chose the image registry.example/mine:2' in left['skipped'][0]['reason']
    assert left['skipped'][0]['current'] is False
    forced = upgrade.plan(boxes, TARGET, NEW, force=True)['upgrades']
    assert names(forced) == ['dev'] and forced[0]['pinned'] == 'registry.example/mine:2'


def test_an_inventory_entry_naming_another_image_pins_its_box_and_one_naming_the_target_does_not():
    boxes = [box('a'), box('b')]
    declared = [dict(name='a', image='tx9-box:0.0.9'), dict(name='b', image=TARGET), 'c']
    result = upgrade.plan(boxes, TARGET, NEW, declared=declared)
    assert names(result['upgrades']) == ['b'] and names(result['skipped']) == ['a']


@pytest.mark.parametrize('image, follows', [
    ('tx9-box:0.0.9', True), ('tx9-box:1.2.3-rc1', True), ('sha256:' + 'c' * 64, True),
    ('tx9-box:latest', False), ('tx9-box:mine', False), ('other/tx9-box:0.1.0', False), ('', False),
])
def test_release_tags_and_image_ids_follow_the_collection(image, follows):
    assert upgrade.follows_collection(image) is follows


def test_only_the_wanted_boxes_are_considered_and_a_missing_one_is_said():
    result = upgrade.plan([box('a'), box('b')], TARGET, NEW, wanted=['b', 'z'])
    assert names(result['upgrades']) == ['b']
    assert result['skipped'] == [dict(box='z', reason='skipped: not on this host', current=False)]


def test_upgrades_go_in_name_order():
    assert names(upgrade.plan([box('zed'), box('alpha')], TARGET, NEW)['upgrades']) == ['alpha', 'zed']


def test_a_plan_without_the_target_id_is_refused():
    with pytest.raises(PlanError):
        upgrade.plan([box('a')], TARGET, '')


def test_the_filter_passes_its_keywords_through_and_names_the_host():
    result = upgrade_plan([box('a')], TARGET, NEW, wanted=['a', 'z'], host='fleet1')
    assert names(result['upgrades']) == ['a']
    assert result['skipped'] == [dict(box='z', reason='skipped: not on fleet1', current=False)]
