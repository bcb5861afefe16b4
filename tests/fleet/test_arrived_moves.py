# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The old host's engine dies after a move's last change set arrived on the new host, and the run that
moved the box dies with it (both strategies: the stage a pre-copied move
applied its last change set to, the archive of a full move). The journal on the old host says what arrived, so the rerun makes the box on
the new host of it without that engine; once the engine is back, the next run finishes the move (the old
copy marked and stopped), and the one after changes nothing. What is proved is read from both hosts'
engines, their files and the box's data (SHA-256), not from the modules' reports."""


import json

import pytest

from conftest import recaps
from movecheck import MIGRATE, ROLE_TASK, assert_moved_once, digests, engine, finish, held, kill, placing, start

JOURNAL = '/root/.tx9/migrate/%s/journal.json'


def journal_of(fleet, host, name):
    code, output = fleet.ssh(host, ['cat', JOURNAL % name])
    assert code == 0, output
    return json.loads(output)


STEP = dict(precopy='Make the box of the stage that arrived', full='Import the archive that arrived')


def made_without_the_old_engine_then_finished(fleet, box, inventory, before, strategy):
    """With the old host's engine stopped, a rerun makes the box on the new host of what arrived (no copy from the
    old host, no revert): resumed, every byte, no stage left, the journal saying the new host passed; it fails
    only at the old host. With that engine started again, the next run finishes the move, the one after changes
    nothing."""
    source, dest = fleet.hosts
    try:
        code, output = finish(start(fleet, MIGRATE, '-i', inventory))
        assert code != 0
        assert 'The Docker engine on %s did not answer' % source.name in output, output[-6000:]
        assert ROLE_TASK % STEP[strategy] in output, output[-6000:]
        assert ROLE_TASK % 'Revert' not in output and ROLE_TASK % 'Copy the box on the old host' not in output
        here = engine(fleet, dest, box)
        assert sorted(state for state, _by in here['containers'].values()) == ['running', 'running'], here
        assert here['staged'] == [], here
        assert digests(fleet, dest, box) == before
        listed = fleet.module('tx9_info', dest.name, dict(name=box))[dest.name]
        assert listed['boxes'][0]['quiesced'] is False, listed
        assert journal_of(fleet, source, box)['step'] == 'passed'
    finally:
        source.start_engine()

    code, output = finish(start(fleet, MIGRATE, '-i', inventory))
    assert code == 0, output[-6000:]
    assert_moved_once(fleet, box, before)
    again = recaps(finish(start(fleet, MIGRATE, '-i', inventory))[1])
    assert all(counters['changed'] == 0 and counters['failed'] == 0 for counters in again.values()), again
    assert_moved_once(fleet, box, before)


@pytest.mark.parametrize('strategy', ['precopy', 'full'])
def test_the_rerun_of_a_move_whose_last_archive_arrived_makes_the_box_of_it_while_the_old_engine_is_dead(
        bed, box, scratch, strategy):
    source, dest = bed.hosts
    before = digests(bed, source, box)
    inventory = placing(scratch, dest, box, 'a')
    first, _go = held(bed, scratch, 'tx9_migrate_after_arrival_tasks', '-i', inventory,
                      '-e', 'tx9_migrate_strategy=%s' % strategy)
    try:
        journal = journal_of(bed, source, box)
        assert (journal['step'], journal['strategy'], journal['dest']) == ('arrived', strategy, dest.name), journal
        assert engine(bed, dest, box)['staged'] == (['tx9-%s-staged' % box] if strategy == 'precopy' else [])
    finally:
        # The run dies, and so does the old host's engine, its containers with it.
        kill(first)
        finish(first)
    source.stop_engine()
    made_without_the_old_engine_then_finished(bed, box, inventory, before, strategy)


# Run on the new host once the test let the held move go on: the archive that arrived is moved aside, so
# the import fails (the old host's engine stopped meanwhile), and the revert cannot give the old copy back.
ASIDE = """
- name: Move the archive that arrived aside
  ansible.builtin.command:
    argv: [mv, "{{ tx9_migrate_arrived_path }}", "{{ tx9_migrate_arrived_path }}.aside"]
  changed_when: true
"""


def test_a_revert_that_cannot_give_the_old_copy_back_keeps_what_arrived_and_the_rerun_makes_the_box_of_it(
        bed, box, scratch):
    source, dest = bed.hosts
    before = digests(bed, source, box)
    inventory = placing(scratch, dest, box, 'a')
    first, go = held(bed, scratch, 'tx9_migrate_after_arrival_tasks', '-i', inventory, '-e', 'tx9_migrate_strategy=full',
                     then=ASIDE)
    archive = journal_of(bed, source, box)['archive']
    source.stop_engine()
    try:
        open(go, 'w').close()
        code, output = finish(first)
        assert code != 0 and ROLE_TASK % 'Revert' in output, output[-6000:]
        assert 'could not be given back' in output and 'What arrived on %s is kept' % dest.name in output, output[-6000:]
        # Nothing of what arrived was removed, the journal still says it arrived, and no lease is left.
        code, listing = bed.ssh(dest, ['ls', archive + '.aside'])
        assert code == 0, listing
        assert journal_of(bed, source, box)['step'] == 'arrived'
        code, listing = bed.ssh(source, ['test', '!', '-e', '/root/.tx9/leases/%s.json' % box])
        assert code == 0, listing

        code, listing = bed.ssh(dest, ['mv', archive + '.aside', archive])
        assert code == 0, listing
    except BaseException:
        source.start_engine()
        raise
    made_without_the_old_engine_then_finished(bed, box, inventory, before, 'full')
