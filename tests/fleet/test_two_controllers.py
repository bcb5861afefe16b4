# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Two runs of one box at once, each from its own inventory, as two controllers would start them: one
migrate.yml moves the box and the other stops at BOX_BUSY (or finds it moved) without touching it; two
upgrade.yml runs over one host upgrade the box once. What is proved is read from both hosts' engines,
their files and the box's data (SHA-256), not from the modules' reports."""


import json
import os
import re
import uuid

from conftest import REPO_ROOT, recaps, token_of
from movecheck import (FILL, MIGRATE, PAYLOAD, ROLE_TASK, assert_moved_once, digests, engine, finish, held,
                       placing, start)

UPGRADE = os.path.join(REPO_ROOT, 'playbooks', 'upgrade.yml')
OLD_DOCKERFILE = 'FROM tx9-box:0.1.0\nLABEL tx9.version=0.0.8\n'
CURRENT = 'tx9-box:0.1.0'


def controller(scratch, tag):
    """One controller's own inventory (on top of the bed's): a variable of its own, nothing placed."""
    path = os.path.join(scratch, 'controller-%s.yml' % tag)
    with open(path, 'w') as handle:
        json.dump({'all': {'vars': {'tx9_fleet_controller': tag}}}, handle)
    return path


def test_a_run_started_while_another_moves_the_box_stops_at_box_busy_and_touches_nothing(bed, box, scratch):
    source, dest = bed.hosts
    before = digests(bed, source, box)
    first, go = held(bed, scratch, 'tx9_migrate_after_transfer_tasks', '-i', placing(scratch, dest, box, 'a'),
                     '-e', 'tx9_migrate_strategy=full')
    try:
        mid = engine(bed, dest, box)

        # The second controller's plan reads the first move's journal (a move to resume) and its lease refuses it.
        code, output = finish(start(bed, MIGRATE, '-i', placing(scratch, dest, box, 'b')))
        assert code != 0
        refusal = [line for line in output.splitlines() if line.startswith('fatal: [')]
        assert len(refusal) == 1 and 'BOX_BUSY' in refusal[0], output[-4000:]
        assert re.search(r'Box %s is held by another run since \S+: move %s -> %s, by ansible-playbook pid %d'
                         % (box, source.name, dest.name, first[0].pid), output), output[-4000:]
        for step in ('Remove the copy an interrupted move left', 'Revert', 'Resume the old copy',
                     'Remove the archives here', 'Check that this host can receive the box'):
            assert ROLE_TASK % step not in output, step
        # Nothing of the first move was touched: its archive, journal and the quiesced old copy are as they were.
        assert engine(bed, dest, box) == mid
        code, journal = bed.ssh(source, ['cat', '/root/.tx9/migrate/%s/journal.json' % box])
        assert code == 0 and json.loads(journal)['step'] == 'started', journal
    finally:
        open(go, 'w').close()
        code, output = finish(first)
    assert code == 0, output[-6000:]
    assert 'Box %s moved from %s to %s' % (box, source.name, dest.name) in output
    assert_moved_once(bed, box, before)

    # The second controller, run again, finds the box moved.
    again = recaps(finish(start(bed, MIGRATE, '-i', placing(scratch, dest, box, 'b')))[1])
    assert all(counters['changed'] == 0 and counters['failed'] == 0 for counters in again.values()), again
    assert_moved_once(bed, box, before)


def test_two_moves_started_together_move_the_box_once_and_the_other_stops_or_finds_it_moved(bed, box, scratch):
    source, dest = bed.hosts
    before = digests(bed, source, box)
    token = token_of(bed, source, box)
    runs = [start(bed, MIGRATE, '-i', placing(scratch, dest, box, tag)) for tag in ('a', 'b')]
    ended = [finish(run) for run in runs]

    moved = [output for _code, output in ended if 'Box %s moved from %s to %s' % (box, source.name, dest.name) in output]
    assert len(moved) == 1, [output[-3000:] for _code, output in ended]
    (winner_code, _winner), (loser_code, loser) = sorted(ended, key=lambda run: run[1] not in moved)
    assert winner_code == 0
    if loser_code != 0:
        assert 'BOX_BUSY' in loser and ROLE_TASK % 'Revert' not in loser, loser[-4000:]
    else:
        assert recaps(loser)[dest.name]['failed'] == 0
    assert_moved_once(bed, box, before)
    assert token_of(bed, dest, box) not in ('', token)


def image_ids(fleet, host, name):
    code, output = fleet.ssh(host, ['sh', '-c', 'docker inspect -f "{{.Image}}" $(docker ps -aq --filter label=tx9.box=$1)',
                                    'sh', name])
    assert code == 0, output
    return sorted(output.split())


def test_two_upgrades_of_one_host_started_together_upgrade_the_box_once_and_the_other_rolls_nothing_back(bed, scratch):
    host = bed.hosts[0]
    tag = uuid.uuid4().hex[:6]
    old, name, dest = 'tx9-box:0.0.8-two%s' % tag, 'up%s' % tag, '/tmp/tx9-two-%s' % tag
    code, output = bed.ssh(host, ['sh', '-c', 'printf "%s" "$1" | docker build -q -t "$2" -', 'sh', OLD_DOCKERFILE, old],
                           timeout=300)
    assert code == 0, output
    try:
        made = bed.module('tx9_box', host.name, dict(name=name, image=old))[host.name]
        assert not made.get('failed'), made
        code, output = bed.ssh(host, ['docker', 'exec', 'tx9-%s-agent' % name, 'sh', '-c', FILL, 'sh', PAYLOAD])
        assert code == 0, output
        before, token = digests(bed, host, name), token_of(bed, host, name)
        code, current = bed.ssh(host, ['docker', 'image', 'inspect', '-f', '{{.Id}}', CURRENT])
        assert code == 0, current
        args = ['-e', 'tx9_hosts=%s' % host.name, '-e', 'tx9_upgrade_image=%s' % CURRENT,
                '-e', json.dumps(dict(tx9_upgrade_boxes=[name])),
                '-e', 'tx9_upgrade_backup_dest=%s' % dest, '-e', 'tx9_upgrade_backup_password=%s' % uuid.uuid4().hex,
                '-e', 'tx9_upgrade_keep_backup=true']
        runs = [start(bed, UPGRADE, '-i', controller(scratch, run), *args) for run in 'ab']
        ended = [finish(run) for run in runs]

        passed = [output for code, output in ended if code == 0]
        assert passed, [output[-3000:] for _code, output in ended]
        for code, output in ended:
            assert 'Recreate the box on its previous image' not in output, output[-4000:]
            if code != 0:
                assert 'BOX_BUSY' in output and 'upgrade to %s on %s' % (CURRENT, host.name) in output, output[-4000:]
        assert image_ids(bed, host, name) == [current.strip()] * 2
        assert digests(bed, host, name) == before and token_of(bed, host, name) == token
        found = engine(bed, host, name)
        assert sorted(state for state, _by in found['containers'].values()) == ['running', 'running'], found
        assert found['files'] == ['boxes/%s.env' % name], 'the lease is released'
    finally:
        bed.module('tx9_box', host.name, dict(name=name, state='absent'))
        bed.ssh(host, ['sh', '-c', 'docker image rm "$1"; rm -rf "$2"', 'sh', old, dest], timeout=300)
