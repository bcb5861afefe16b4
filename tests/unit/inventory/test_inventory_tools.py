# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tool pins from the inventory: a box's pins, the boxes that get them, and the boxes whose tools drift."""


import pytest

from ansible_collections.col_agents.tx9.plugins.plugin_utils._inventory import boxes
from ansible_collections.col_agents.tx9.plugins.plugin_utils._plans import tools

NOW = 1796009558


def seen(installed, source='box', pinned=None, package='@openai/codex'):
    return dict(installed=installed, source=source, pinned=pinned, package=package)


def record(name='dev', state='running', codex=None, claude=None, superseded=None):
    found = None
    if codex or claude:
        found = dict(codex=codex or seen('0.171.0', 'image'), claude=claude or seen('2.1.332', 'image'))
    return dict(name=name, state=state, tools=found, superseded=superseded, last_backup=None)


def test_a_boxs_entry_pins_it_tool_by_tool_over_its_hosts_pins():
    declared = ['web', dict(name='dev', image='tx9-box:0.1.0', tools=dict(codex='0.170.0', claude=None))]
    host = dict(codex='0.169.0', claude='latest')
    assert tools.box_pins(host, declared, 'dev', 'h1') == dict(codex='0.170.0')
    assert tools.box_pins(host, declared, 'web', 'h1') == dict(claude='latest', codex='0.169.0')
    assert tools.box_pins(None, None, 'dev', 'h1') == {}


@pytest.mark.parametrize('host_pins, declared, words', [
    ('codex=0.169.0', [], 'h1: tx9_tools must be a mapping'),
    (dict(codx='1.0.0'), [], "names the tool 'codx'"),
    (dict(codex='v1'), [], "pins codex to 'v1'"),
    ({}, 'dev', 'tx9_boxes must be a list'),
    ({}, [dict(name='dev', tools=['codex'])], 'the tools of the tx9_boxes entry of dev must be a mapping'),
])
def test_pins_of_the_wrong_shape_are_refused_naming_the_variable(host_pins, declared, words):
    with pytest.raises(tools.PinError, match=words):
        tools.box_pins(host_pins, declared, 'dev', 'h1')


def test_only_running_boxes_with_pins_get_them_and_every_other_selected_box_is_said():
    listed = [record('dev'), record('old', state='stopped'), record('gone', superseded=dict(by='h2')), record('bare')]
    declared = [dict(name='dev', tools=dict(codex='0.169.0')), dict(name='old', tools=dict(codex='0.169.0')),
                dict(name='gone', tools=dict(codex='0.169.0'))]
    plan = tools.tools_plan(listed, None, declared, ['dev', 'old', 'gone', 'bare'], 'h1')
    assert plan['installs'] == [dict(box='dev', tools=dict(codex='0.169.0'))]
    reasons = dict((item['box'], item['reason']) for item in plan['skipped'])
    assert sorted(reasons) == ['bare', 'gone', 'old']
    assert reasons['old'].startswith('stopped: a pin is installed in the running box')
    assert 'a move left behind' in reasons['gone'] and reasons['bare'].startswith('no pins')


def test_a_tool_drifts_until_the_boxs_install_answers_with_the_pinned_version():
    assert tools.drifted(record(codex=seen('0.171.0', 'image')), dict(codex='0.169.0')) == ['codex']
    assert tools.drifted(record(codex=seen('0.168.0', pinned='0.168.0')), dict(codex='0.169.0')) == ['codex']
    assert tools.drifted(record(codex=seen('0.169.0', pinned='0.169.0')), dict(codex='0.169.0')) == []


def test_latest_is_answered_by_any_install_made_for_latest():
    assert tools.drifted(record(codex=seen('0.175.0', pinned='latest')), dict(codex='latest')) == []
    assert tools.drifted(record(codex=seen('0.175.0', pinned='0.175.0')), dict(codex='latest')) == ['codex']


def test_without_pins_from_the_inventory_a_pin_whose_files_are_gone_drifts():
    imported = record(codex=seen('0.171.0', 'image', pinned='0.169.0'))
    assert tools.drifted(imported, {}) == ['codex']
    assert tools.drifted(record(codex=seen('0.169.0', pinned='0.169.0')), {}) == []
    assert tools.drifted(record(codex=seen('0.171.0', 'image')), {}) == []


def test_a_box_whose_tools_are_unknown_or_a_copy_left_behind_never_drifts():
    assert tools.drifted(record(state='stopped'), dict(codex='0.169.0')) == []
    left = record(codex=seen('0.171.0', 'image'), superseded=dict(by='h2'))
    assert tools.drifted(left, dict(codex='0.169.0')) == []


def test_the_inventory_groups_boxes_whose_tools_drift_and_gives_each_its_pins():
    listings = dict(h1=[record('dev', codex=seen('0.171.0', 'image')), record('web', codex=seen('0.169.0', pinned='0.169.0'))],
                    h2=[record('dev', codex=seen('0.171.0', 'image'), superseded=dict(by='h1'))])
    pins = dict(h1=(dict(codex='0.169.0'), [dict(name='dev', tools=dict(claude='2.1.300'))]),
                h2=(dict(codex='0.169.0'), []))
    plan = dict((name, (groups, variables)) for name, groups, variables in
                boxes.populate_plan(listings, 86400, NOW, pins))
    assert 'tx9_tools_drift' in plan['dev@h1'][0]
    assert plan['dev@h1'][1]['tx9_tools'] == dict(claude='2.1.300', codex='0.169.0')
    assert plan['dev@h1'][1]['tx9_tools_drift'] == ['claude', 'codex']
    assert 'tx9_tools_drift' not in plan['web@h1'][0] and plan['web@h1'][1]['tx9_tools_drift'] == []
    assert 'tx9_tools_drift' not in plan['dev@h2'][0]


def test_pins_of_the_wrong_shape_stop_the_inventory_with_the_variable_named():
    with pytest.raises(ValueError, match='h1: tx9_tools must be a mapping'):
        boxes.populate_plan(dict(h1=[record('dev')]), 86400, NOW, dict(h1=('codex', None)))
