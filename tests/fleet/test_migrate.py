# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/migrate.yml over real SSH on the bed: a box placed on another host in the inventory
moves there with every file, and every way a move can fail or be cut short leaves the box whole
on at least one host, its gateway never enabled on two, and a rerun that finishes the move."""


import json
import os
import shutil
import signal
import subprocess
import tempfile
import uuid

import pytest

from conftest import BIN, PLAYS, REPO_ROOT, leftovers, recaps, token_of

MIGRATE = os.path.join(REPO_ROOT, 'playbooks', 'migrate.yml')
DAMAGE = os.path.join(PLAYS, 'tasks', 'damage_archive.yml')
PAYLOAD = '/data/home/agent/workspace/payload'
# 20 MB of files in a few directories: random bytes, so gzip cannot shrink them.
FILL = ('set -e; for d in a b c d; do mkdir -p "$1/$d"; for i in 1 2 3 4 5; do '
        'head -c 1048576 /dev/urandom > "$1/$d/file$i"; done; done; chown -R 1001:1001 "$1"')
# The start of a task's banner (its name may go on).
ROLE_TASK = 'TASK [col_agents.tx9.tx9_migrate : %s'


@pytest.fixture(scope='module')
def bed(fleet, controller_image):
    """Every host prepared by the host role, the box image loaded, no box left from an earlier run."""
    fleet.prepare()
    return fleet


@pytest.fixture
def scratch():
    path = tempfile.mkdtemp(prefix='tx9-fleet-migrate-')
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def box(bed):
    """A random-suffixed box on the first host with 20 MB of files; removed from every host afterwards."""
    name = 'dev%s' % uuid.uuid4().hex[:6]
    source = bed.hosts[0]
    made = bed.module('tx9_box', source.name, dict(name=name, agent_memory='1g'))[source.name]
    assert not made.get('failed'), made
    code, output = bed.ssh(source, ['docker', 'exec', 'tx9-%s-agent' % name, 'sh', '-c', FILL, 'sh', PAYLOAD])
    assert code == 0, output
    yield name
    bed.module('tx9_box', 'fleet', dict(name=name, state='absent'))


def digests(fleet, host, name):
    """{relative path: SHA-256} of every file under the payload directory of the box on host."""
    code, output = fleet.ssh(host, ['docker', 'exec', 'tx9-%s-agent' % name, 'sh', '-c',
                                    'cd "$1" && find . -type f -exec sha256sum {} +', 'sh', PAYLOAD])
    assert code == 0, output
    found = dict((path, digest) for digest, path in (line.split(None, 1) for line in output.splitlines()))
    assert len(found) == 20, found
    return found


def info(fleet, host, name):
    """tx9_info's view of the box on host, or None when it has none."""
    result = fleet.module('tx9_info', host.name, dict(name=name))[host.name]
    assert not result.get('failed'), result
    return result['boxes'][0] if result['boxes'] else None


def placing(scratch, host, name, **options):
    """An inventory that adds the box to host's tx9_boxes (the bed's own inventory comes first)."""
    path = os.path.join(scratch, 'placement-%s.yml' % uuid.uuid4().hex[:6])
    with open(path, 'w') as handle:
        json.dump({'all': {'hosts': {host.name: {'tx9_boxes': [dict(name=name, **options)]}}}}, handle)
    return path


def migrate(fleet, inventory, *args, **kwargs):
    return fleet.playbook(MIGRATE, '-i', inventory, *args, **kwargs)


def test_a_box_placed_on_another_host_moves_with_every_file_a_new_token_its_limits_and_a_disabled_gateway(bed, box, scratch):
    source, dest = bed.hosts
    before = digests(bed, source, box)
    old_token = token_of(bed, source, box)
    inventory = placing(scratch, dest, box, executor_memory='768m')

    output = migrate(bed, inventory)

    assert digests(bed, dest, box) == before
    new_token = token_of(bed, dest, box)
    assert new_token and len(new_token) == len(old_token) and new_token != old_token
    arrived = info(bed, dest, box)
    assert arrived['state'] == 'running' and arrived['gateway']['enabled'] is False
    assert arrived['quiesced'] is False, 'the source ran resumed, so the box runs resumed on its new host'
    # The limit set on the old host travelled; the inventory entry's own value won.
    assert arrived['limits']['agent_memory'] == 1024 ** 3
    assert arrived['limits']['executor_memory'] == 768 * 1024 ** 2
    assert info(bed, source, box)['state'] == 'stopped'
    assert not [f for f in leftovers(bed, source, box) + leftovers(bed, dest, box) if f.startswith('/root/.tx9/migrate')]
    assert recaps(output)[dest.name]['failed'] == 0

    again = recaps(migrate(bed, inventory))
    assert all(counters['changed'] == 0 and counters['failed'] == 0 for counters in again.values()), again


def test_with_source_delete_the_old_copy_is_removed_only_after_the_new_host_passed(bed, box, scratch):
    source, dest = bed.hosts
    before = digests(bed, source, box)

    output = migrate(bed, placing(scratch, dest, box), '-e', 'tx9_migrate_source=delete')

    doctor = output.index(ROLE_TASK % 'Run the doctor checks')
    deleted = output.index(ROLE_TASK % 'Delete the old copy, now that this host passed')
    assert doctor < output.index('ok: [%s]' % dest.name, doctor) < deleted
    assert 'changed: [%s -> %s' % (dest.name, source.name) in output[deleted:deleted + 300]
    assert leftovers(bed, source, box) == []
    assert digests(bed, dest, box) == before


def test_a_destination_without_room_is_refused_before_the_source_is_quiesced(bed, box, scratch):
    source, dest = bed.hosts
    small = '/tmp/tx9-small'
    host = dest
    mount = ['nsenter', '-t', str(host.anchor), '--mount', '--']
    subprocess.run(mount + ['mkdir', '-p', small], check=True)
    subprocess.run(mount + ['mount', '-t', 'tmpfs', '-o', 'size=1m', 'tx9-small', small], check=True)
    try:
        output = migrate(bed, placing(scratch, dest, box), '-e', 'tx9_migrate_work_dir=%s/migrate' % small, check=False)
    finally:
        subprocess.run(mount + ['umount', small], check=True)
    assert recaps(output)[dest.name]['failed'] == 1
    refusal = [line for line in output.splitlines() if line.startswith('fatal: [%s]' % dest.name)][-1]
    assert 'to %s failed at Check that this host can receive the box' % dest.name in refusal
    assert 'not enough room' in refusal and '%s/migrate/%s/incoming' % (small, box) in refusal
    assert 'bytes needed, ' in refusal and 'The box on %s was not touched' % source.name in refusal
    assert ROLE_TASK % 'Stop the old copy\'s gateway first' not in output
    assert ROLE_TASK % 'Back up the old copy' not in output
    still = info(bed, source, box)
    assert (still['state'], still['quiesced']) == ('running', False)
    assert leftovers(bed, dest, box) == []


def test_a_destination_that_fails_its_readiness_gate_leaves_nothing_there_and_the_source_runs_as_before(bed, box, scratch):
    source, dest = bed.hosts
    before = digests(bed, source, box)
    was = info(bed, source, box)
    # 6 MiB is Docker's minimum and far too little for Executor: it cannot start, so the gate fails.
    inventory = placing(scratch, dest, box, executor_memory='6m', wait_timeout=45)

    output = migrate(bed, inventory, '-e', 'tx9_migrate_source=delete', check=False)

    assert recaps(output)[dest.name]['failed'] == 1
    failure = [line for line in output.splitlines() if line.startswith('fatal: [%s]' % dest.name)][-1]
    assert 'failed at Import the box' in failure and 'NOT_READY' in failure
    assert 'The box on %s runs as it did before the move' % source.name in failure
    assert leftovers(bed, dest, box) == []
    now = info(bed, source, box)
    assert (now['state'], now['quiesced'], now['gateway']['enabled']) == ('running', False, was['gateway']['enabled'])
    assert digests(bed, source, box) == before
    assert not [f for f in leftovers(bed, source, box) if f.startswith('/root/.tx9/migrate')]


def test_an_archive_damaged_in_flight_is_refused_on_arrival_and_the_rerun_completes(bed, box, scratch):
    source, dest = bed.hosts
    before = digests(bed, source, box)
    inventory = placing(scratch, dest, box)

    output = migrate(bed, inventory, '-e', 'tx9_migrate_after_transfer_tasks=%s' % DAMAGE, check=False)

    assert recaps(output)[dest.name]['failed'] == 1
    failure = [line for line in output.splitlines() if line.startswith('fatal: [%s]' % dest.name)][-1]
    assert 'failed at Refuse an archive that changed on the way' in failure and 'SHA-256' in failure
    assert ROLE_TASK % 'Import the box' not in output
    now = info(bed, source, box)
    assert (now['state'], now['quiesced']) == ('running', False)
    assert digests(bed, source, box) == before
    assert leftovers(bed, dest, box) == []

    migrate(bed, inventory)
    assert digests(bed, dest, box) == before
    assert info(bed, source, box)['state'] == 'stopped'


def killed_at(fleet, inventory, banner):
    """ansible-playbook of the migration, SIGKILLed (with its workers) when banner is printed."""
    argv = [os.path.join(BIN, 'ansible-playbook'), '-i', fleet.inventory, MIGRATE, '-i', inventory]
    env = dict(fleet.env(), PYTHONUNBUFFERED='1')
    proc = subprocess.Popen(argv, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            universal_newlines=True, start_new_session=True)
    seen = []
    try:
        for line in proc.stdout:
            seen.append(line)
            if line.startswith(banner):
                os.killpg(proc.pid, signal.SIGKILL)
                break
    finally:
        proc.wait(timeout=600)
    assert proc.returncode == -signal.SIGKILL, 'the play ended before %r:\n%s' % (banner, ''.join(seen)[-4000:])


@pytest.mark.parametrize('banner', [
    ROLE_TASK % 'Fetch the archive to the controller',
    ROLE_TASK % 'Copy the archive to this host',
    ROLE_TASK % 'Run the readiness gate',
], ids=['after-the-backup', 'during-the-transfer', 'after-the-import'])
def test_a_migration_killed_midway_leaves_the_box_whole_and_a_rerun_finishes_the_move(bed, box, scratch, banner):
    source, dest = bed.hosts
    before = digests(bed, source, box)
    inventory = placing(scratch, dest, box)

    killed_at(bed, inventory, banner)

    # The old host still holds the whole box, and no host runs its gateway.
    assert digests(bed, source, box) == before
    for host in bed.hosts:
        view = info(bed, host, box)
        assert view is None or not (view['gateway'] or {}).get('enabled'), (host.name, view)

    output = migrate(bed, inventory)
    assert recaps(output)[dest.name]['failed'] == 0
    assert digests(bed, dest, box) == before
    assert info(bed, source, box)['state'] == 'stopped'
    assert not [f for f in leftovers(bed, source, box) + leftovers(bed, dest, box) if f.startswith('/root/.tx9/migrate')]
