# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/migrate.yml over real SSH on the bed: a box placed on another host in the inventory
moves there with every file, and every way a move can fail or be cut short leaves the box whole
on at least one host, its gateway never enabled on two, and a rerun that finishes the move."""


import json
import re
import os
import signal
import subprocess
import tempfile
import uuid

import pytest

from conftest import BIN, PLAYS, REPO_ROOT, graph_groups, inventory, leftovers, recaps, token_of

MIGRATE = os.path.join(REPO_ROOT, 'playbooks', 'migrate.yml')
DAMAGE = os.path.join(PLAYS, 'tasks', 'damage_archive.yml')
PAYLOAD = '/data/home/agent/workspace/payload'
# 20 MB of files in a few directories: random bytes, so gzip cannot shrink them.
FILL = ('set -e; for d in a b c d; do mkdir -p "$1/$d"; for i in 1 2 3 4 5; do '
        'head -c 1048576 /dev/urandom > "$1/$d/file$i"; done; done; chown -R 1001:1001 "$1"')
# The start of a task's banner (its name may go on).
ROLE_TASK = 'TASK [col_agents.tx9.tx9_migrate : %s'


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


def digests(fleet, host, name, count=20):
    """{relative path: SHA-256} of every file under the payload directory of the box on host (count files)."""
    code, output = fleet.ssh(host, ['docker', 'exec', 'tx9-%s-agent' % name, 'sh', '-c',
                                    'cd "$1" && find . -type f -exec sha256sum {} +', 'sh', PAYLOAD])
    assert code == 0, output
    found = dict((path, digest) for digest, path in (line.split(None, 1) for line in output.splitlines()))
    assert len(found) == count, found
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
    # Every move says its downtime: from the old copy's quiesce to the new one ready, running as it ran.
    said = re.search(r'Box %s moved from %s to %s: downtime (\d+\.\d) s' % (box, source.name, dest.name), output)
    assert said and 0 < float(said.group(1)) < 600, output[-3000:]

    again = recaps(migrate(bed, inventory))
    assert all(counters['changed'] == 0 and counters['failed'] == 0 for counters in again.values()), again


def test_the_full_strategy_moves_a_box_in_one_archive_quiesced_throughout(bed, box, scratch):
    source, dest = bed.hosts
    before = digests(bed, source, box)

    output = migrate(bed, placing(scratch, dest, box), '-e', 'tx9_migrate_strategy=full')

    assert recaps(output)[dest.name]['failed'] == 0
    assert ROLE_TASK % 'Back up the old copy' in output and ROLE_TASK % 'Import the box' in output
    assert ROLE_TASK % 'Copy the box on the old host' not in output
    assert digests(bed, dest, box) == before
    assert info(bed, source, box)['state'] == 'stopped' and info(bed, dest, box)['state'] == 'running'


def box_groups(fleet, scratch, name):
    """{inventory host of the box: its state or superseded group}, from the inventory plugin over the bed."""
    config = os.path.join(scratch, 'tx9.boxes.yml')
    with open(config, 'w') as handle:
        handle.write('plugin: col_agents.tx9.boxes\nhost_group: fleet\n')
    groups = graph_groups(inventory(fleet, config, '--graph')[0])
    kinds = ('tx9_running', 'tx9_stopped', 'tx9_superseded')
    return dict((host, kind) for kind in kinds for host in groups.get(kind, []) if host.startswith(name + '@'))


def test_a_box_moved_back_replaces_the_copy_its_first_move_left_behind_which_is_marked_refused_and_grouped_apart(
        bed, box, scratch):
    first, second = bed.hosts
    migrate(bed, placing(scratch, second, box))
    left = info(bed, first, box)
    assert left['state'] == 'stopped' and left['superseded']['by'] == second.name
    assert left['superseded']['move'] == '%s -> %s' % (first.name, second.name)
    refused = bed.module('tx9_box', first.name, dict(name=box))[first.name]
    assert refused.get('cause') == 'BOX_SUPERSEDED' and second.name in refused['msg'], refused
    assert box_groups(bed, scratch, box) == {'%s@%s' % (box, first.name): 'tx9_superseded',
                                             '%s@%s' % (box, second.name): 'tx9_running'}
    # The box works on at its new host: one file rewritten, one grown.
    code, output = bed.ssh(second, ['docker', 'exec', 'tx9-%s-agent' % box, 'sh', '-c',
                                    'head -c 65536 /dev/urandom > "$1/a/file1"; echo more >> "$1/b/file2"',
                                    'sh', PAYLOAD])
    assert code == 0, output
    current = digests(bed, second, box)

    output_back = migrate(bed, placing(scratch, first, box))

    assert 'it was left alone' not in output_back
    assert digests(bed, first, box) == current, 'the first host runs the current data, not what it kept'
    back = info(bed, first, box)
    assert back['state'] == 'running' and back['superseded'] is None
    assert info(bed, second, box)['superseded']['by'] == first.name
    # The promotion set the replaced copy's data aside while the box was down; it went once the move was done.
    code, output = bed.ssh(first, ['docker', 'volume', 'ls', '-q', '--filter', 'label=tx9.set-aside=%s' % box])
    assert code == 0 and output.split() == [], output
    removal = output_back.split('Remove the data of the superseded copy this move replaced here', 1)[1]
    assert 'changed: [' in removal.split('TASK [', 1)[0], removal[:400]
    assert box_groups(bed, scratch, box) == {'%s@%s' % (box, first.name): 'tx9_running',
                                             '%s@%s' % (box, second.name): 'tx9_superseded'}
    again = recaps(migrate(bed, placing(scratch, first, box)))
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
    assert ROLE_TASK % 'Back up the old copy' not in output and ROLE_TASK % 'Copy the box on the old host' not in output
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
    # The stage (the default strategy) became the box here, which then failed its gate.
    assert 'failed at Make the box of the stage' in failure and 'NOT_READY' in failure
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
    # The change set (the last archive to arrive) was refused in its first read, before anything was applied.
    assert 'failed at Apply the changes to the stage' in failure and 'SHA-256' in failure and 'ARCHIVE_CORRUPT' in failure
    now = info(bed, source, box)
    assert (now['state'], now['quiesced']) == ('running', False)
    assert digests(bed, source, box) == before
    assert leftovers(bed, dest, box) == []

    migrate(bed, inventory)
    assert digests(bed, dest, box) == before
    assert info(bed, source, box)['state'] == 'stopped'


def controller_home(scratch):
    """Environment for ansible-playbook whose home and temporary directories are a fresh directory of scratch,
    so whatever the controller writes (Ansible's own files included) lands there."""
    home = tempfile.mkdtemp(prefix='controller-', dir=scratch)
    os.makedirs(os.path.join(home, 'tmp'))
    return home, dict(HOME=home, TMPDIR=os.path.join(home, 'tmp'), ANSIBLE_LOCAL_TEMP=os.path.join(home, 'tmp'))


def large_files(root, size):
    """Files under root of at least size bytes."""
    return [os.path.join(d, f) for d, dirs, files in os.walk(root) for f in files
            if os.path.getsize(os.path.join(d, f)) >= size]


def killed_at(fleet, inventory, banner, *args):
    """ansible-playbook of the migration (with args), SIGKILLed (with its workers) when banner is printed."""
    argv = [os.path.join(BIN, 'ansible-playbook'), '-i', fleet.inventory, MIGRATE, '-i', inventory] + list(args)
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


@pytest.mark.parametrize('banner, transfer', [
    (ROLE_TASK % 'Carry the archive from the old host straight to this host', 'direct'),
    (ROLE_TASK % 'Stream the archive from the old host through the controller', 'relay'),
    (ROLE_TASK % 'Run the doctor checks', 'auto'),
], ids=['after-the-backup', 'during-the-relayed-transfer', 'after-the-import'])
def test_a_migration_killed_midway_leaves_the_box_whole_and_a_rerun_finishes_the_move(bed, box, scratch, banner, transfer):
    source, dest = bed.hosts
    before = digests(bed, source, box)
    inventory = placing(scratch, dest, box)
    relay_dir = os.path.join(scratch, 'relay')

    killed_at(bed, inventory, banner, '-e', 'tx9_migrate_transfer=%s' % transfer, '-e', 'tx9_migrate_controller_dir=%s' % relay_dir)

    # tx9_migrate_encryption auto: encrypted where it passes through the controller, plain between the two hosts.
    # A relayed archive is streamed: the controller's directory holds nothing of it.
    if transfer in ('relay', 'direct'):
        code, output = bed.ssh(source, ['sh', '-c', 'tar -tf /root/.tx9/migrate/"$1"/archive/*.tx9', 'sh', box])
        assert code == 0 and output.split() == ['metadata.json', 'data.tar.gz' + ('.gpg' if transfer == 'relay' else '')], output
    assert large_files(relay_dir, 1) == []

    # The old host still holds the whole box, and no host runs its gateway.
    assert digests(bed, source, box) == before
    for host in bed.hosts:
        view = info(bed, host, box)
        assert view is None or not (view['gateway'] or {}).get('enabled'), (host.name, view)

    # The rerun takes the same way; a relayed one streams the whole 20 MB archive through a controller whose
    # home and temporary directories are scratch's: no file of 1 MB or more appears there, nor in the relay directory.
    home, env = controller_home(scratch)
    output = migrate(bed, inventory, '-e', 'tx9_migrate_transfer=%s' % transfer, '-e', 'tx9_migrate_controller_dir=%s' % relay_dir,
                     env=env)
    assert recaps(output)[dest.name]['failed'] == 0
    assert digests(bed, dest, box) == before
    assert info(bed, source, box)['state'] == 'stopped'
    assert not [f for f in leftovers(bed, source, box) + leftovers(bed, dest, box) if f.startswith('/root/.tx9/migrate')]
    if transfer == 'relay':
        assert 'Stream the archive from the old host through the controller' in output
        assert large_files(home, 1024 * 1024) == [] and large_files(relay_dir, 1) == []


# A few small files: enough to compare every byte, little to move.
TINY = ('set -e; mkdir -p "$1/sub"; for i in 1 2 3; do head -c 65536 /dev/urandom > "$1/sub/file$i"; done; '
        'echo "$2" > "$1/name"; chown -R 1001:1001 "$1"')
TINY_FILES = 4


def tiny_box(fleet, host, prefix):
    """A random-suffixed box on host with a few small files under the payload directory."""
    name = '%s%s' % (prefix, uuid.uuid4().hex[:6])
    made = fleet.module('tx9_box', host.name, dict(name=name, agent_memory='1g'))[host.name]
    assert not made.get('failed'), made
    code, output = fleet.ssh(host, ['docker', 'exec', 'tx9-%s-agent' % name, 'sh', '-c', TINY, 'sh', PAYLOAD, name])
    assert code == 0, output
    return name


@pytest.fixture
def two_boxes(bed):
    names = [tiny_box(bed, bed.hosts[0], 'duo'), tiny_box(bed, bed.hosts[0], 'duo')]
    yield names
    for name in names:
        bed.module('tx9_box', 'fleet', dict(name=name, state='absent'))


def test_one_run_moves_every_box_the_inventory_places_on_another_host_and_a_rerun_changes_nothing(bed, two_boxes, scratch):
    source, dest = bed.hosts
    before = dict((name, digests(bed, source, name, count=TINY_FILES)) for name in two_boxes)
    inventory = os.path.join(scratch, 'two.yml')
    with open(inventory, 'w') as handle:
        json.dump({'all': {'hosts': {dest.name: {'tx9_boxes': two_boxes}}}}, handle)

    output = migrate(bed, inventory, '-e', 'tx9_migrate_transfer_throttle=1')

    assert recaps(output)[dest.name]['failed'] == 0
    # Each box's copy travelled on a transfer of its own, one at a time; its last changes in the task that made the box.
    assert output.count(ROLE_TASK % 'Carry the archive from the old host straight to this host') == 2
    assert output.count(ROLE_TASK % 'Make the box of the stage, quiesced') == 2
    for name in two_boxes:
        assert digests(bed, dest, name, count=TINY_FILES) == before[name], name
        assert info(bed, dest, name)['state'] == 'running'
        assert info(bed, source, name)['state'] == 'stopped'
        assert not [f for f in leftovers(bed, source, name) + leftovers(bed, dest, name) if f.startswith('/root/.tx9/migrate')]

    again = recaps(migrate(bed, inventory))
    assert all(counters['changed'] == 0 and counters['failed'] == 0 for counters in again.values()), again


def image_id(fleet, host, image):
    code, output = fleet.ssh(host, ['docker', 'image', 'inspect', '--format', '{{.Id}}', image])
    return output.strip() if code == 0 else None


@pytest.fixture
def lone_box(bed):
    name = tiny_box(bed, bed.hosts[0], 'img')
    yield name
    bed.module('tx9_box', 'fleet', dict(name=name, state='absent'))


def test_a_box_moves_to_a_host_whose_engine_lacks_its_image_which_is_shipped_first(bed, lone_box, scratch):
    source, dest = bed.hosts
    image = info(bed, source, lone_box)['image']
    wanted = image_id(bed, source, image)
    before = digests(bed, source, lone_box, count=TINY_FILES)
    inventory = placing(scratch, dest, lone_box)
    # No box of another test is left on the destination, so the image can go for this test.
    code, output = bed.ssh(dest, ['docker', 'image', 'rm', image])
    assert code == 0, output
    try:
        refused = migrate(bed, inventory, '-e', 'tx9_migrate_ship_image=false', check=False)
        assert recaps(refused)[dest.name]['failed'] == 1
        failure = [line for line in refused.splitlines() if line.startswith('fatal: [%s]' % dest.name)][-1]
        assert 'failed at Check that this host can receive the box' in failure and 'IMAGE_MISSING' in failure
        assert 'The box on %s was not touched' % source.name in failure
        assert image_id(bed, dest, image) is None

        output = migrate(bed, inventory)

        assert 'TASK [col_agents.tx9.tx9_box : Export the image on the source host' in output
        assert image_id(bed, dest, image) == wanted
        assert digests(bed, dest, lone_box, count=TINY_FILES) == before
        assert info(bed, dest, lone_box)['state'] == 'running'
        code, found = bed.ssh(dest, ['sh', '-c', 'ls -A /root/.tx9/migrate; true'])
        assert found.strip() == '', found
        code, found = bed.ssh(source, ['sh', '-c', 'ls -A /root/.tx9/migrate; true'])
        assert found.strip() == '', found
    finally:
        # Later tests find the image on every host.
        bed.bed.load_image()


CARRY = os.path.join(PLAYS, 'carry.yml')
CARRY_DIR = '/root/.tx9/carry-test'
CARRIED = 100000


@pytest.mark.parametrize('route', ['direct', 'relay'])
def test_a_carry_takes_exactly_the_bytes_written_and_refuses_an_archive_longer_than_written_keeping_nothing(
        bed, scratch, route):
    source, dest = bed.hosts
    src = CARRY_DIR + '/out/archive.tx9'
    code, output = bed.ssh(source, ['sh', '-c', 'mkdir -p "${1%/*}" && head -c "$2" /dev/urandom > "$1" && sha256sum "$1"',
                                    'sh', src, str(CARRIED)])
    assert code == 0, output
    written = output.split()[0]
    relay = os.path.join(scratch, 'relay')

    # The controller's home and temporary directories are scratch's, where no file of the carried size may appear.
    home, env = controller_home(scratch)

    def carry(size, **more):
        return bed.playbook(CARRY, '-e', json.dumps(dict(
            carry_from=source.name, carry_to=dest.name, carry_route=route, carry_src=src, carry_size=size,
            carry_dir=CARRY_DIR + '/in', carry_relay_dir=relay, **more)), check=False, env=env)

    try:
        output = carry(CARRIED, carry_sha256=written)
        assert recaps(output)[dest.name]['failed'] == 0, output[-3000:]
        code, arrived = bed.ssh(dest, ['sha256sum', CARRY_DIR + '/in/archive.tx9'])
        assert code == 0 and arrived.split()[0] == written
        assert bed.ssh(dest, ['rm', '-f', CARRY_DIR + '/in/archive.tx9'])[0] == 0
        assert large_files(home, CARRIED) == []

        # The old host's file holds one byte more than the size its writer reported.
        output = carry(CARRIED - 1)

        assert recaps(output)[dest.name]['failed'] == 1
        assert 'sends more than the %d bytes' % (CARRIED - 1) in output
        if route == 'relay':
            assert 'RELAY_FAILED' in output
        code, kept = bed.ssh(dest, ['find', CARRY_DIR + '/in', '-type', 'f'])
        assert code == 0 and kept.strip() == ''
        assert not os.path.exists(relay) or os.listdir(relay) == []
        assert large_files(home, CARRIED) == []

        if route == 'relay':
            # Whole and the right size, but not the SHA-256 it was written with: refused on arrival, nothing kept.
            output = carry(CARRIED, carry_sha256='0' * 64)
            assert recaps(output)[dest.name]['failed'] == 1
            assert 'not the %s it was written with' % ('0' * 64) in output
            code, kept = bed.ssh(dest, ['find', CARRY_DIR + '/in', '-type', 'f'])
            assert code == 0 and kept.strip() == ''
    finally:
        for host in bed.hosts:
            bed.ssh(host, ['rm', '-rf', CARRY_DIR])
