# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/upgrade.yml over real SSH on the bed: boxes on an older image move to the collection's
image host by host with their files and token, each backed up first; a target whose Executor never
becomes ready rolls the first host's box back, stops the rollout before the next host, and the rerun
with the good image finishes it.

One rollout is shared by both tests (the module fixture runs it once): boxes made on an older image,
upgrade.yml with the broken image, then with the good one, then once more."""


import os
import re
import uuid

import pytest

from conftest import REPO_ROOT, recaps

UPGRADE = os.path.join(REPO_ROOT, 'playbooks', 'upgrade.yml')
CURRENT = 'tx9-box:0.1.0'
PAYLOAD = '/data/home/agent/workspace/payload'
FILL = 'set -e; mkdir -p "$1"; head -c 1048576 /dev/urandom > "$1/file"; chown -R 1001:1001 "$1"'
# Images derived from the loaded one in each bed host's engine: a label, and a label plus an
# Executor entrypoint that exits at once (Executor never answers, so the readiness gate fails).
OLD_DOCKERFILE = 'FROM %s\nLABEL tx9.version=0.0.8\n' % CURRENT
BROKEN_DOCKERFILE = ('FROM %s\nRUN printf "#!/bin/sh\\nexit 1\\n" > /opt/tx9/bin/tx9-executor-entrypoint\n'
                     'LABEL tx9.version=0.1.1\n' % CURRENT)
GATE = 'Recreate the box on the new image and run the readiness gate'
PASSPHRASE = uuid.uuid4().hex
# The broken image never becomes ready: its gate gives up after this many seconds at the latest
# (it stops sooner, once Executor has exited three times).
BROKEN_WAIT = 45


def build(fleet, host, tag, dockerfile):
    """A tiny image build (a label, one small file) from the loaded image, in host's engine."""
    code, output = fleet.ssh(host, ['sh', '-c', 'printf "%s" "$1" | docker build -q -t "$2" -', 'sh', dockerfile, tag],
                             timeout=300)
    assert code == 0, output
    return image_id(fleet, host, tag)


def image_id(fleet, host, ref):
    code, output = fleet.ssh(host, ['docker', 'image', 'inspect', '--format', '{{.Id}}', ref])
    assert code == 0, output
    return output.strip()


# Per box on a host, in one SSH session: its containers' IDs, the SHA-256 of its payload file read
# from its volume (the box may be stopped) and its token in the state home (compared, never printed).
LOOK = ('for n in "$@"; do '
        'echo "$n ids $(docker ps -aq --no-trunc --filter label=tx9.box=$n | sort | tr "\\n" ,)"; '
        'volume=$(docker volume inspect -f "{{.Mountpoint}}" tx9-$n-agent-data); '
        'echo "$n digest $(sha256sum "$volume%s/file" | cut -d" " -f1)"; '
        'echo "$n token $(sed -n "s/^EXECUTOR_MCP_TOKEN=//p" /root/.tx9/boxes/$n.env)"; '
        'done') % PAYLOAD.replace('/data', '', 1)


def look(fleet, host, names):
    """{(box, 'ids' | 'digest' | 'token'): value} for the named boxes on host."""
    code, output = fleet.ssh(host, ['sh', '-c', LOOK, 'sh'] + names)
    assert code == 0, output
    return dict(((name, key), value) for name, key, value in (line.split(' ', 2) for line in output.splitlines()))


def snapshot(fleet, boxes):
    """Per box: its containers' IDs, the image IDs they run, its version, state, payload digest and token."""
    listed = fleet.module('tx9_info', 'fleet', {})
    found = {}
    for host in fleet.hosts:
        assert not listed[host.name].get('failed'), listed[host.name]
        names = [name for box_host, name in boxes if box_host is host]
        looks = look(fleet, host, names)
        for box in listed[host.name]['boxes']:
            name = box['name']
            if name in names:
                found[name] = dict(ids=looks[name, 'ids'], version=box['version'], state=box['state'],
                                   image_ids=set(c['image_id'] for c in box['containers'].values()),
                                   digest=looks[name, 'digest'], token=looks[name, 'token'])
                assert len(found[name]['digest']) == 64, 'box %s has no payload' % name
                assert found[name]['token'], 'box %s has no token' % name
    assert sorted(found) == sorted(name for _host, name in boxes), found
    return found


def archives(fleet, host, dest, name):
    code, output = fleet.ssh(host, ['sh', '-c', 'cd "$1" 2>/dev/null && ls -1 -- "$2"-*.tx9 2>/dev/null; true',
                                    'sh', dest, name])
    assert code == 0, output
    return output.split()


def upgrade(fleet, image, dest, *extra, **kwargs):
    # The passphrase shares nothing with the paths: Ansible masks every output string it appears in.
    return fleet.playbook(UPGRADE, '-e', 'tx9_hosts=fleet', '-e', 'tx9_upgrade_image=%s' % image,
                          '-e', 'tx9_upgrade_backup_dest=%s' % dest,
                          '-e', 'tx9_upgrade_backup_password=%s' % PASSPHRASE, *extra, **kwargs)


def make_boxes(fleet, boxes, images):
    """Every box on its image (by host) with a payload; the one named stopped is stopped."""
    for host, name, state in boxes:
        made = fleet.module('tx9_box', host.name, dict(name=name, image=images[host.name], agent_memory='1g'))
        made = made[host.name]
        assert not made.get('failed'), made
        code, output = fleet.ssh(host, ['docker', 'exec', 'tx9-%s-agent' % name, 'sh', '-c', FILL, 'sh', PAYLOAD])
        assert code == 0, output
        if state == 'stopped':
            stopped = fleet.module('tx9_box', host.name, dict(name=name, state='stopped'))[host.name]
            assert not stopped.get('failed'), stopped


@pytest.fixture(scope='module')
def rollout(fleet, controller_image):
    """Three boxes on an older image (fleet1: one running, one stopped; fleet2: one running) and, on
    fleet2, one whose owner chose the older image under a tag of their own; then the broken upgrade,
    the good one and a rerun. Boxes, images and archives are removed at the end."""
    fleet.prepare()
    first, second = fleet.hosts
    tag = uuid.uuid4().hex[:6]
    old, broken = 'tx9-box:0.0.8-up%s' % tag, 'tx9-box:0.1.1-broken%s' % tag
    dest = '/tmp/tx9-upgrade-%s' % tag
    mine = 'tx9-box:mine-%s' % tag
    boxes = [(first, 'ua%s' % tag, 'running'), (first, 'ub%s' % tag, 'stopped'), (second, 'uc%s' % tag, 'running')]
    pinned = (second, 'ud%s' % tag)
    run = dict(boxes=boxes, pinned=pinned, mine=mine, old=old, broken=broken, dest=dest, first=first, second=second)
    try:
        run['old_ids'] = dict((host.name, build(fleet, host, old, OLD_DOCKERFILE)) for host in fleet.hosts)
        for host in fleet.hosts:
            build(fleet, host, broken, BROKEN_DOCKERFILE)
        run['current_ids'] = dict((host.name, image_id(fleet, host, CURRENT)) for host in fleet.hosts)
        code, output = fleet.ssh(second, ['docker', 'tag', old, mine])
        assert code == 0, output
        make_boxes(fleet, boxes, dict((host.name, old) for host in fleet.hosts))
        make_boxes(fleet, [pinned + ('running',)], {second.name: mine})
        pairs = [(host, name) for host, name, _state in boxes] + [pinned]
        run['before'] = snapshot(fleet, pairs)
        run['broken_output'] = upgrade(fleet, broken, dest, '-e', 'tx9_upgrade_wait_timeout=%d' % BROKEN_WAIT,
                                       check=False)
        run['after_broken'] = snapshot(fleet, pairs)
        run['doctor_after_rollback'] = fleet.module('tx9_doctor', first.name, dict(name=boxes[0][1], version='0.0.8'))
        run['good_output'] = upgrade(fleet, CURRENT, dest)
        run['after_good'] = snapshot(fleet, pairs)
        run['rerun_output'] = upgrade(fleet, CURRENT, dest)
        yield run
    finally:
        for host, name in [(host, name) for host, name, _state in boxes] + [pinned]:
            fleet.module('tx9_box', host.name, dict(name=name, state='absent'))
        for host in fleet.hosts:
            fleet.ssh(host, ['docker', 'image', 'rm', old, broken] + ([mine] if host is second else []), timeout=300)
            fleet.ssh(host, ['rm', '-rf', dest])


def test_upgrade_moves_every_box_to_the_current_image_with_its_files_and_token_after_a_backup(rollout, fleet):
    before, after = rollout['before'], rollout['after_good']
    good = recaps(rollout['good_output'])
    assert all(good[host.name]['failed'] == 0 for host in fleet.hosts), good
    for host, name, state in rollout['boxes']:
        assert before[name]['image_ids'] == set([rollout['old_ids'][host.name]]), before[name]
        assert before[name]['version'] == '0.0.8'
        assert after[name]['image_ids'] == set([rollout['current_ids'][host.name]]), (name, after[name])
        assert after[name]['version'] == '0.1.0'
        assert after[name]['state'] == state, 'a stopped box is upgraded and left stopped'
        assert after[name]['digest'] == before[name]['digest']
        assert after[name]['token'] == before[name]['token']
        assert archives(fleet, host, rollout['dest'], name), 'box %s has no backup archive' % name
    # The box the broken run backed up too has both archives: no backup overwrote another.
    first_box = rollout['boxes'][0][1]
    assert len(archives(fleet, rollout['first'], rollout['dest'], first_box)) == 2

    # The box whose owner chose an image is left alone, and the run says why.
    kept = rollout['pinned'][1]
    assert after[kept] == before[kept]
    assert '%s: skipped: its owner chose the image %s (tx9_upgrade_force: true upgrades it)' % (
        kept, rollout['mine']) in rollout['good_output']

    again = recaps(rollout['rerun_output'])
    assert all(counters['changed'] == 0 and counters['failed'] == 0 for counters in again.values()), again
    assert 'already on %s' % CURRENT in rollout['rerun_output']


def test_a_broken_image_rolls_the_first_hosts_box_back_stops_before_the_second_host_and_the_rerun_finishes(
        rollout, fleet):
    first, second = rollout['first'], rollout['second']
    output = rollout['broken_output']
    counters = recaps(output)
    assert counters[first.name]['failed'] == 1
    assert second.name not in counters, 'the play went on to %s after %s failed' % (second.name, first.name)
    failure = [line for line in output.splitlines() if line.startswith('fatal: [%s]' % first.name)][-1]
    failed_box, stopped_box = rollout['boxes'][0][1], rollout['boxes'][1][1]
    other_box = rollout['boxes'][2][1]
    assert 'Upgrading box %s on %s to %s failed at %s' % (failed_box, first.name, rollout['broken'], GATE) in failure
    # Its Executor exits at once: the gate stops after three exits (a fourth may come between two of its
    # looks), not at the end of its wait.
    exits = re.search(r'did not become ready: Executor exited (\d+) times while the gate waited \(last exit code 1\)',
                      failure)
    assert exits and int(exits.group(1)) >= 3, failure
    assert '(NOT_READY)' in failure
    assert 'It was rolled back to its previous image %s with its data and token' % rollout['old'] in failure
    assert 'Its backup: %s/%s-' % (rollout['dest'], failed_box) in failure and 'The rollout stops here' in failure

    before, after = rollout['before'], rollout['after_broken']
    rolled = after[failed_box]
    assert rolled['image_ids'] == set([rollout['old_ids'][first.name]]) and rolled['state'] == 'running'
    assert rolled['ids'] != before[failed_box]['ids'], 'the box was recreated twice, so its containers are new'
    assert (rolled['digest'], rolled['token']) == (before[failed_box]['digest'], before[failed_box]['token'])
    doctor = rollout['doctor_after_rollback'][first.name]
    assert doctor['ok'] is True and doctor['failed_checks'] == [], doctor
    assert dict((c['name'], c['detail']) for c in doctor['checks'])['image version'] == '0.0.8'
    # The next box of that host and the second host's box were never touched.
    assert after[stopped_box] == before[stopped_box]
    assert after[other_box] == before[other_box]
    assert after[rollout['pinned'][1]] == before[rollout['pinned'][1]]

    finished = rollout['after_good']
    assert all(finished[name]['image_ids'] == set([rollout['current_ids'][host.name]])
               for host, name, _state in rollout['boxes']), finished


def test_a_box_whose_tag_moved_to_a_broken_build_is_rolled_back_by_image_id_and_the_rerun_finishes(fleet, controller_image):
    # The usual upgrade: the box's tag is rebuilt in place, so only the image ID names the build it ran.
    fleet.prepare()
    first = fleet.hosts[0]
    tag = uuid.uuid4().hex[:6]
    moved, name, dest = 'tx9-box:0.0.9-mv%s' % tag, 'um%s' % tag, '/tmp/tx9-upgrade-mv%s' % tag
    previous = None
    try:
        previous = build(fleet, first, moved, OLD_DOCKERFILE)
        make_boxes(fleet, [(first, name, 'running')], {first.name: moved})
        before = snapshot(fleet, [(first, name)])[name]
        build(fleet, first, moved, BROKEN_DOCKERFILE)

        output = upgrade(fleet, moved, dest, '-e', 'tx9_hosts=%s' % first.name,
                         '-e', 'tx9_upgrade_wait_timeout=%d' % BROKEN_WAIT, check=False)

        assert recaps(output)[first.name]['failed'] == 1
        failure = [line for line in output.splitlines() if line.startswith('fatal: [%s]' % first.name)][-1]
        assert 'It was rolled back to its previous image %s with its data and token' % previous in failure
        after = snapshot(fleet, [(first, name)])[name]
        assert after['image_ids'] == set([previous]) and after['state'] == 'running'
        assert (after['digest'], after['token']) == (before['digest'], before['token'])
        doctor = fleet.module('tx9_doctor', first.name, dict(name=name, version='0.0.8'))[first.name]
        assert doctor['ok'] is True, doctor

        # The tag now names a good build: the rerun moves the box from the image ID it was left on.
        code, output = fleet.ssh(first, ['docker', 'tag', CURRENT, moved])
        assert code == 0, output
        # Asked not to keep its backup, the rerun removes the archive it made once the box passed.
        kept_before = archives(fleet, first, dest, name)
        output = upgrade(fleet, moved, dest, '-e', 'tx9_hosts=%s' % first.name, '-e', 'tx9_upgrade_keep_backup=false')
        finished = snapshot(fleet, [(first, name)])[name]
        assert finished['image_ids'] == set([image_id(fleet, first, CURRENT)]) and finished['version'] == '0.1.0'
        assert (finished['digest'], finished['token']) == (before['digest'], before['token'])
        assert archives(fleet, first, dest, name) == kept_before, 'the rerun left its own archive behind'
    finally:
        fleet.module('tx9_box', first.name, dict(name=name, state='absent'))
        fleet.ssh(first, ['docker', 'image', 'rm', moved] + ([previous] if previous else []), timeout=300)
        fleet.ssh(first, ['sh', '-c', 'docker image prune -f --filter label=tx9.version=0.1.1; rm -rf "$1"', 'sh', dest])
