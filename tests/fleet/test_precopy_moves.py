# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pre-copied moves (tx9_migrate_strategy precopy, the default) over real SSH on the bed: the box's data
travels while it runs and keeps being written, and only what changed travels once it is quiesced; a move
killed in either pass or between them is finished by its rerun; change sets a compromised old host crafts
are refused by the new host's validator, which removes the stage, and the old host's box runs as before."""


import os
import re
import sys
import uuid

import pytest

from conftest import PLAYS, leftovers, recaps
from test_migrate import ROLE_TASK, info, killed_at, migrate, placing

CRAFT = os.path.join(PLAYS, 'tasks', 'craft_changes.yml')
CRAFT_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'craft_changes.py')
IMAGE = 'tx9-box:0.1.0'
WORKSPACE = '/data/home/agent/workspace'
# 1 GiB of /data in 16 files: half incompressible, half text.
FILL = ('set -e; mkdir -p "$1/bulk"; for i in 0 1 2 3 4 5 6 7; do head -c 67108864 /dev/urandom > "$1/bulk/r$i"; '
        'yes "line $i of a text file a person keeps in a repository" | head -c 67108864 > "$1/bulk/t$i"; done; '
        'mkdir -p "$1/tree/sub" && echo a > "$1/tree/sub/a" && ln -s sub "$1/tree/link" && chown -R 1001:1001 "$1"')
# Writes until the box is quiesced: appends to a log, creates and removes files, changes a mode and a link;
# "ack" holds the number of the last write that completed.
WRITER = r'''
cd /data/home/agent/workspace && mkdir -p live && cd live
n=0
while [ ! -e /data/home/agent/.config/hermes-box/quiesced ]; do
  n=$((n+1))
  echo "line $n" >> log
  echo "$n" > "f$((n % 40))"
  rm -f "f$(((n + 20) % 40))"
  chmod "$((600 + (n % 2) * 44))" log
  ln -sfn "f$((n % 40))" current
  echo "$n" > ack.tmp && mv ack.tmp ack
  sleep 0.02
done
'''
# A few small files, a directory and a link to it.
SMALL = ('set -e; mkdir -p "$1/tree/sub"; for i in 1 2 3; do head -c 65536 /dev/urandom > "$1/tree/sub/f$i"; done; '
         'ln -s sub "$1/tree/link"; chown -R 1001:1001 "$1"')
SMALL_DIR = '/data/home/agent/workspace-small'
TREE = ("cd \"$1\" && find . -printf '%y %m %p -> %l\\n' | sort && "
        "find . -type f -print0 | sort -z | xargs -0 -r sha256sum")


def volume_tree(fleet, host, name, path=WORKSPACE):
    """Every entry under path in the box's agent volume (kind, mode, link) and the SHA-256 of every file,
    read by a throwaway container, so a stopped box is read as it is."""
    code, output = fleet.ssh(host, ['docker', 'run', '--rm', '-u', 'root', '--network', 'none', '-v',
                                    'tx9-%s-agent-data:/data:ro' % name, '--entrypoint', 'sh', IMAGE, '-c', TREE,
                                    'sh', path])
    assert code == 0, output
    return output


def in_volume(fleet, host, name, command):
    code, output = fleet.ssh(host, ['docker', 'run', '--rm', '-u', 'root', '--network', 'none', '-v',
                                    'tx9-%s-agent-data:/data:ro' % name, '--entrypoint', 'sh', IMAGE, '-c', command])
    assert code == 0, output
    return output


def staged_volumes(fleet, host):
    code, output = fleet.ssh(host, ['docker', 'volume', 'ls', '-q', '--filter', 'label=tx9.stage'])
    assert code == 0, output
    return output.split()


def new_box(fleet, host, prefix, fill, directory):
    name = '%s%s' % (prefix, uuid.uuid4().hex[:6])
    made = fleet.module('tx9_box', host.name, dict(name=name, agent_memory='1g'))[host.name]
    assert not made.get('failed'), made
    code, output = fleet.ssh(host, ['docker', 'exec', 'tx9-%s-agent' % name, 'sh', '-c', fill, 'sh', directory])
    assert code == 0, output
    return name


@pytest.fixture
def big_box(bed):
    name = new_box(bed, bed.hosts[0], 'pre', FILL, WORKSPACE)
    yield name
    bed.module('tx9_box', 'fleet', dict(name=name, state='absent'))


def test_a_box_written_to_while_it_moves_arrives_as_it_was_at_its_quiesce_with_the_last_acknowledged_write(
        bed, big_box, scratch):
    source, dest = bed.hosts
    code, output = bed.ssh(source, ['docker', 'exec', '-d', '-u', 'agent', 'tx9-%s-agent' % big_box, 'sh', '-c', WRITER])
    assert code == 0, output

    # One more pass while the box runs, whatever the copy took: the last pass applies on top of a change set.
    output = migrate(bed, placing(scratch, dest, big_box), '-e', 'tx9_migrate_precopy_repeat_after=0')

    assert recaps(output)[dest.name]['failed'] == 0
    # The old copy is stopped: its volume holds the box as it was when the move quiesced it.
    moved, kept = volume_tree(bed, dest, big_box), volume_tree(bed, source, big_box)
    assert moved == kept
    assert './live/log' in moved and './bulk/r7' in moved and './tree/link -> sub' in moved
    acknowledged = int(in_volume(bed, source, big_box, 'cat %s/live/ack' % WORKSPACE))
    last = in_volume(bed, dest, big_box, 'tail -n 1 %s/live/log' % WORKSPACE).strip()
    assert acknowledged > 10 and last == 'line %d' % acknowledged
    # Only what changed after the copy travelled quiesced, and the move said its downtime.
    assert 'Copy the box on the old host while it runs' in output
    assert output.count(ROLE_TASK % 'Apply the changes to the stage') == 2
    said = re.search(r'Box %s moved from %s to %s: downtime (\d+\.\d) s' % (big_box, source.name, dest.name), output)
    assert said, output[-3000:]
    assert staged_volumes(bed, dest) == [] and staged_volumes(bed, source) == []
    assert not [f for f in leftovers(bed, source, big_box) + leftovers(bed, dest, big_box)
                if f.startswith('/root/.tx9/migrate')]
    assert info(bed, dest, big_box)['state'] == 'running'


@pytest.fixture
def small_box(bed):
    name = new_box(bed, bed.hosts[0], 'pcs', SMALL, SMALL_DIR)
    yield name
    bed.module('tx9_box', 'fleet', dict(name=name, state='absent'))


@pytest.mark.parametrize('banner', [
    ROLE_TASK % 'Stage the copy here',
    ROLE_TASK % "Note when the old copy's downtime starts",
    ROLE_TASK % 'Apply the changes to the stage',
], ids=['during-the-pre-copy', 'between-the-passes', 'during-the-final-pass'])
def test_a_pre_copied_move_killed_in_either_pass_is_finished_by_its_rerun_with_identical_data(
        bed, small_box, scratch, banner):
    source, dest = bed.hosts
    before = volume_tree(bed, source, small_box, SMALL_DIR)
    inventory = placing(scratch, dest, small_box)

    killed_at(bed, inventory, banner)

    assert volume_tree(bed, source, small_box, SMALL_DIR) == before
    output = migrate(bed, inventory)
    assert recaps(output)[dest.name]['failed'] == 0
    assert volume_tree(bed, dest, small_box, SMALL_DIR) == before
    arrived, left = info(bed, dest, small_box), info(bed, source, small_box)
    assert arrived['state'] == 'running' and arrived['quiesced'] is False
    assert left['state'] == 'stopped'
    assert staged_volumes(bed, dest) == []


@pytest.mark.parametrize('kind', ['through-a-symlink', 'hard-link-outside', 'larger-than-announced',
                                  'directory-to-symlink-with-children'])
def test_a_crafted_change_set_is_refused_the_stage_removed_and_the_old_box_runs_as_before(
        bed, small_box, scratch, kind):
    source, dest = bed.hosts
    before = volume_tree(bed, source, small_box, SMALL_DIR)
    inventory = placing(scratch, dest, small_box)

    output = migrate(bed, inventory, '-e', 'tx9_migrate_after_transfer_tasks=%s' % CRAFT,
                     '-e', 'tx9_craft_kind=%s' % kind, '-e', 'tx9_craft_python=%s' % sys.executable,
                     '-e', 'tx9_craft_script=%s' % CRAFT_SCRIPT, '-e', 'tx9_craft_dir=%s' % scratch, check=False)

    assert recaps(output)[dest.name]['failed'] == 1
    failure = [line for line in output.splitlines() if line.startswith('fatal: [%s]' % dest.name)][-1]
    assert 'failed at Apply the changes to the stage' in failure and 'ARCHIVE_UNSAFE' in failure, failure
    assert staged_volumes(bed, dest) == []
    now = info(bed, source, small_box)
    assert (now['state'], now['quiesced']) == ('running', False)
    assert volume_tree(bed, source, small_box, SMALL_DIR) == before
    assert info(bed, dest, small_box) is None
