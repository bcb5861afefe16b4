# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The mark of a copy a move left behind: kept, read, refused, forced, and recreated onto the containers."""


import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._box import reconcile as lifecycle
from ansible_collections.col_agents.tx9.plugins.module_utils._box import superseded
from ansible_collections.col_agents.tx9.plugins.module_utils._box.objects import BoxSpec
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.plugin_utils._plans import upgrade
from ansible_collections.col_agents.tx9.tests.unit.box.box_kit import existing, make_spec

MARK = dict(by='h2', at='2026-12-03T15:00:00Z', move='h1 -> h2')


def clock():
    return '2026-12-04T09:00:00Z'


def marked_spec(mark):
    spec = make_spec()
    return BoxSpec(spec.box, spec.image_ref, spec.image_id, spec.version, spec.token, spec.executor_values,
                   spec.resources, superseded_labels=superseded.to_labels(mark))


def test_a_mark_round_trips_through_the_state_file_and_the_labels():
    assert superseded.from_state(superseded.to_state(MARK)) == MARK
    assert superseded.from_labels(superseded.to_labels(MARK)) == MARK
    assert superseded.to_labels(None) == {} and superseded.from_state(superseded.to_state(None)) is None


def test_the_state_file_is_read_first_and_the_labels_when_the_state_home_lost_it():
    labelled = dict(agent=None, executor={'Config': {'Labels': superseded.to_labels(MARK)}})
    other = dict(MARK, by='h3')
    assert superseded.read(superseded.to_state(other), labelled) == other
    assert superseded.read({}, labelled) == MARK
    assert superseded.read({}, dict(agent=None, executor={'Config': {'Labels': {}}})) is None


def test_marking_again_by_the_same_move_keeps_its_time_and_another_move_marks_anew():
    asked = dict(by='h2', move='h1 -> h2')
    assert superseded.wanted(asked, MARK, False, clock) == MARK
    assert superseded.wanted(dict(by='h3', move='h1 -> h3'), MARK, False, clock) == dict(
        by='h3', at=clock(), move='h1 -> h3')
    assert superseded.wanted(None, MARK, False, clock) == MARK, 'a run that asks nothing keeps the mark'
    assert superseded.wanted(None, MARK, True, clock) is None, 'force makes the copy the box again'


def test_the_refusal_names_where_the_box_runs_and_how_to_start_this_copy_anyway():
    err = superseded.refusal('dev', MARK)
    assert err.cause == 'BOX_SUPERSEDED'
    assert 'superseded by its copy on h2 (move h1 -> h2, 2026-12-03T15:00:00Z)' in err.reason
    assert 'Use the box on h2' in err.fix and 'force: true' in err.fix and 'state: absent' in err.fix


def test_a_marked_copy_has_another_config_hash_so_marking_or_clearing_recreates_its_containers():
    plain, marked = make_spec(), marked_spec(MARK)
    assert plain.container('agent')[1] != marked.container('agent')[1]
    assert plain.container('executor')[1] != marked.container('executor')[1]
    steps = lifecycle.Reconciler(None, None, dict(state='stopped')).plan(existing(plain, running=False), marked, False)
    assert steps == [('recreate', 'executor'), ('recreate', 'agent')], 'marked stopped, not started'
    unmarked = make_spec()
    assert unmarked.container('agent')[1] == plain.container('agent')[1], 'an unmarked box keeps its hash'


def run_mark(params, persisted, containers=None):
    objects = existing(make_spec(), running=False)
    if containers:
        objects.containers = containers
    return lifecycle.Reconciler(None, None, dict(dict(state='present'), **params)).superseded_mark(objects, persisted)


def test_starting_a_superseded_copy_is_refused_and_stopping_or_marking_it_is_not():
    persisted = superseded.to_state(MARK)
    with pytest.raises(Tx9Error) as refused:
        run_mark({}, persisted)
    assert refused.value.cause == 'BOX_SUPERSEDED'
    assert run_mark(dict(state='stopped'), persisted) == MARK
    assert run_mark(dict(superseded=dict(by='h2', move='h1 -> h2')), persisted) == MARK


def test_a_copy_marked_only_on_its_labels_is_refused_too():
    labels = superseded.to_labels(MARK)
    containers = {role: {'Config': {'Labels': labels}} for role in ('agent', 'executor')}
    with pytest.raises(Tx9Error, match='BOX_SUPERSEDED|superseded by its copy on h2'):
        run_mark({}, {}, containers)


def test_force_starts_the_copy_clearing_its_mark_and_says_so():
    run = lifecycle.Reconciler(None, None, dict(state='present', force=True))
    assert run.superseded_mark(existing(make_spec(), running=False), superseded.to_state(MARK)) is None
    assert run.mark_action == 'clear the superseded mark: this copy is the box again'


def test_superseded_with_state_absent_is_refused_before_anything_is_inspected():
    run = lifecycle.Reconciler(None, None, dict(state='absent', name='dev', superseded=dict(by='h2')))
    with pytest.raises(Tx9Error) as refused:
        run.validate()
    assert refused.value.cause == 'INVALID_ARGUMENT' and 'state=absent' in refused.value.reason


def test_the_upgrade_plan_skips_a_superseded_copy_saying_where_the_box_runs():
    box = dict(name='dev', state='stopped', image='tx9-box:0.0.9', version='0.0.9', superseded=MARK,
               containers=dict(agent=dict(image_id='sha256:' + 'b' * 64)), desired={})
    result = upgrade.plan([box], 'tx9-box:0.1.0', 'sha256:' + 'a' * 64)
    assert result['upgrades'] == []
    assert 'a copy a move left behind, superseded by its copy on h2' in result['skipped'][0]['reason']


@pytest.mark.parametrize('asked', [
    dict(by='h2\nEXECUTOR_MCP_TOKEN=x'), dict(by=''), dict(by='h' * 256), dict(by='h2', move='a\tb')])
def test_a_mark_that_is_not_one_short_printable_line_is_refused_before_it_reaches_a_label_or_the_state_file(asked):
    with pytest.raises(Tx9Error) as refused:
        superseded.wanted(asked, None, False, clock)
    assert refused.value.cause == 'INVALID_ARGUMENT' and 'superseded.' in refused.value.reason
