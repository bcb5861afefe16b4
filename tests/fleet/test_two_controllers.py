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
import subprocess
import tempfile
import time
import uuid

import pytest

from conftest import BIN, REPO_ROOT, recaps, token_of

MIGRATE = os.path.join(REPO_ROOT, 'playbooks', 'migrate.yml')
UPGRADE = os.path.join(REPO_ROOT, 'playbooks', 'upgrade.yml')
PAYLOAD = '/data/home/agent/workspace/payload'
# 1 MiB in four files of random bytes: small, so the moves are quick.
FILL = ('set -e; mkdir -p "$1"; for i in 1 2 3 4; do head -c 262144 /dev/urandom > "$1/file$i"; done; '
        'chown -R 1001:1001 "$1"')
FILES = 4
ROLE_TASK = 'TASK [col_agents.tx9.tx9_migrate : %s'
# Run by the first move once its archive arrived (the full strategy's after-transfer hook): it says so,
# then waits for the test's word, so that the second run starts while the first is in the middle of its move.
HOLD = """---
- name: Say that the move reached its archive's arrival
  ansible.builtin.copy:
    content: reached
    dest: "{{ tx9_fleet_reached }}"
    mode: "0600"
  delegate_to: localhost

- name: Wait for the test's word
  ansible.builtin.wait_for:
    path: "{{ tx9_fleet_go }}"
    timeout: 900
  delegate_to: localhost
"""
OLD_DOCKERFILE = 'FROM tx9-box:0.1.0\nLABEL tx9.version=0.0.8\n'
CURRENT = 'tx9-box:0.1.0'


@pytest.fixture
def box(bed):
    """A random-suffixed box on the first host with 1 MiB of files; removed from every host afterwards."""
    name = 'two%s' % uuid.uuid4().hex[:6]
    source = bed.hosts[0]
    made = bed.module('tx9_box', source.name, dict(name=name))[source.name]
    assert not made.get('failed'), made
    code, output = bed.ssh(source, ['docker', 'exec', 'tx9-%s-agent' % name, 'sh', '-c', FILL, 'sh', PAYLOAD])
    assert code == 0, output
    yield name
    bed.module('tx9_box', 'fleet', dict(name=name, state='absent'))


def digests(fleet, host, name):
    """{relative path: SHA-256} of the files under the payload directory of the box's volume on host (it may be stopped)."""
    script = ('volume=$(docker volume inspect -f "{{.Mountpoint}}" "tx9-$1-agent-data") && cd "$volume$2" && '
              'find . -type f -exec sha256sum {} +')
    code, output = fleet.ssh(host, ['sh', '-c', script, 'sh', name, PAYLOAD.replace('/data', '', 1)])
    assert code == 0, output
    found = dict((path, digest) for digest, path in (line.split(None, 1) for line in output.splitlines()))
    assert len(found) == FILES, found
    return found


def engine(fleet, host, name):
    """What host holds of the box: its containers with their states and labels, volumes (the stage's too),
    its state file, migration work files and lease, read from the engine and the disk."""
    code, output = fleet.ssh(host, ['docker', 'ps', '-a', '--filter', 'label=tx9.box=%s' % name,
                                    '--format', '{{.Names}}\t{{.State}}\t{{.Label "tx9.superseded-by"}}'])
    assert code == 0, output
    containers = dict((line.split('\t')[0], line.split('\t')[1:]) for line in output.splitlines() if line)
    code, output = fleet.ssh(host, ['docker', 'volume', 'ls', '-q', '--filter', 'label=tx9.box=%s' % name])
    assert code == 0, output
    volumes = sorted(output.split())
    code, output = fleet.ssh(host, ['docker', 'volume', 'ls', '-q', '--filter', 'label=tx9.stage=%s' % name])
    assert code == 0, output
    staged = sorted(output.split())
    code, output = fleet.ssh(host, ['sh', '-c', 'cd /root/.tx9 2>/dev/null && ls -d boxes/"$1".env leases/"$1".json '
                                    'migrate/"$1" migrate/"$1"-image 2>/dev/null; true', 'sh', name])
    files = sorted(output.split())
    return dict(containers=containers, volumes=volumes, staged=staged, files=files)


def assert_moved_once(fleet, name, before):
    """The box runs on the second host with its data, its old copy stopped and marked superseded on the
    first, and nothing else of it anywhere: no stage, no work files, no lease."""
    source, dest = fleet.hosts
    there, here = engine(fleet, source, name), engine(fleet, dest, name)
    assert sorted(state for state, _by in here['containers'].values()) == ['running', 'running'], here
    # Stopped: recreated with its mark (created), or exited.
    assert len(there['containers']) == 2 and all(state in ('created', 'exited') for state, _by in
                                                 there['containers'].values()), there
    assert set(by for _state, by in there['containers'].values()) == set([dest.name]), there
    assert here['staged'] == [] and there['staged'] == []
    assert here['files'] == ['boxes/%s.env' % name] and there['files'] == ['boxes/%s.env' % name], (here, there)
    assert digests(fleet, dest, name) == before
    assert digests(fleet, source, name) == before, 'the old copy is kept, as it was'
    assert here['volumes'] and len(here['volumes']) == len(there['volumes']), (here, there)


def controller(scratch, tag):
    """One controller's own inventory (on top of the bed's): a variable of its own, nothing placed."""
    path = os.path.join(scratch, 'controller-%s.yml' % tag)
    with open(path, 'w') as handle:
        json.dump({'all': {'vars': {'tx9_fleet_controller': tag}}}, handle)
    return path


def placing(scratch, host, name, tag):
    """One controller's inventory: the box placed on host (the bed's own inventory comes first)."""
    path = os.path.join(scratch, 'inventory-%s.yml' % tag)
    with open(path, 'w') as handle:
        json.dump({'all': {'hosts': {host.name: {'tx9_boxes': [dict(name=name)]}}}}, handle)
    return path


def start(fleet, playbook, *args):
    """ansible-playbook started (not waited for), its output in a file of its own."""
    out = tempfile.TemporaryFile('w+')
    argv = [os.path.join(BIN, 'ansible-playbook'), '-i', fleet.inventory, playbook] + list(args)
    proc = subprocess.Popen(argv, cwd=REPO_ROOT, env=fleet.env(), stdout=out, stderr=subprocess.STDOUT,
                            universal_newlines=True)
    return proc, out


def finish(run, timeout=1200):
    """(exit code, output) of a started run."""
    proc, out = run
    proc.wait(timeout=timeout)
    out.seek(0)
    text = out.read()
    out.close()
    return proc.returncode, text


def test_a_run_started_while_another_moves_the_box_stops_at_box_busy_and_touches_nothing(bed, box, scratch):
    source, dest = bed.hosts
    before = digests(bed, source, box)
    hold = os.path.join(scratch, 'hold.yml')
    with open(hold, 'w') as handle:
        handle.write(HOLD)
    reached, go = os.path.join(scratch, 'reached'), os.path.join(scratch, 'go')
    first = start(bed, MIGRATE, '-i', placing(scratch, dest, box, 'a'), '-e', 'tx9_migrate_strategy=full',
                  '-e', 'tx9_migrate_after_transfer_tasks=%s' % hold, '-e', 'tx9_fleet_reached=%s' % reached,
                  '-e', 'tx9_fleet_go=%s' % go)
    try:
        while not os.path.exists(reached):
            assert first[0].poll() is None, finish(first)[1][-6000:]
            time.sleep(0.5)
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
