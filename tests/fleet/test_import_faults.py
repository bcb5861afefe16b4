# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An import the machine fails during its extraction, on a bed host with an engine of its own.

The engine dies: dockerd and its containerd are killed (SIGKILL) as soon as the restore container made its
staging directory, and the host's restart loop starts dockerd again. Afterwards the box is as before (nothing
of it) or as asked (one agent container, every byte), and the same task run again completes.

The volume filesystem fills: the host's volume store is a small filesystem, and as soon as the import created
the box's agent volume (the up-front estimate passed) the test takes all but a few MiB of it. The import fails
with NO_SPACE naming the volume and the bytes it needed, nothing of it is left in the engine or the state home,
the box beside it keeps every byte, and the import completes once the space is free again.

Each outcome is read from the engine's objects (by label), the host's files and the SHA-256 of the box's data.
"""


import hashlib
import os
import signal
import threading
import time
import uuid

import pytest

from conftest import bedlib, leftovers

PASSWORD = 'fleet pass phrase'
BALLAST = '/data/home/agent/ballast'
BALLAST_MB = 48
MIB = 1024 * 1024
# Where the archive lies on the host (its own /tmp), and where its engine keeps its volumes.
ARCHIVES = '/tmp/tx9-import-faults'
VOLUMES = '/var/lib/docker/volumes'
# The host's volume store while the volume fills: room for one box and the up-front estimate of a second.
SMALL_VOLUMES = '256m'
# What the test leaves free once the import made its volume: less than the payload needs.
LEFT_FREE = 8 * MIB
FILL = 'set -e; head -c %d /dev/urandom > "$1"; chown 1001:1001 "$1"' % (BALLAST_MB * MIB)


def digest(fleet, host, box):
    code, output = fleet.ssh(host, ['docker', 'exec', 'tx9-%s-agent' % box, 'sha256sum', BALLAST])
    assert code == 0, output
    return output.split()[0]


def agents(fleet, host, box):
    """The box's agent containers (name and state), as the engine lists them by label."""
    code, output = fleet.ssh(host, ['docker', 'ps', '-a', '--filter', 'label=tx9.box=%s' % box, '--filter',
                                    'label=tx9.role=agent', '--format', '{{.Names}} {{.State}}'])
    assert code == 0, output
    return sorted(output.splitlines())


def unfinished(fleet, host, box):
    """The import's marker and pipes in the host's state home (what an unfinished import leaves)."""
    code, output = fleet.ssh(host, ['sh', '-c', 'ls -A /root/.tx9/imports 2>/dev/null; true'])
    assert code == 0, output
    return [entry for entry in output.split() if entry.startswith(box) or entry.startswith('.tx9-pipe-')]


def in_background(fleet, host, args):
    """tx9_import with args on host, run in a thread; (thread, {host: result} once it ends)."""
    results = {}

    def call():
        results.update(fleet.module('tx9_import', host.name, args, timeout=900))

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    return worker, results


def wait_for_path(path, worker, what, timeout=600):
    """Look for path every millisecond while the import runs; fails when it ended first."""
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(path):
            return
        assert worker.is_alive(), 'the import ended before %s' % what
        time.sleep(0.001)
    raise AssertionError('the import never reached %s' % what)


def children_named(parent, name):
    found = []
    for entry in os.listdir('/proc'):
        try:
            with open('/proc/%s/stat' % entry) as handle:
                fields = handle.read().rsplit(')', 1)[1].split()
            with open('/proc/%s/comm' % entry) as handle:
                comm = handle.read().strip()
        except (OSError, IndexError):
            continue
        if fields[1] == str(parent) and comm == name:
            found.append(int(entry))
    return found


def kill_engine(host):
    """SIGKILL the host's dockerd and its containerd at once (the restart loop around dockerd is left running)."""
    dockerd = bedlib.read_pid(host.ns_file('/run/docker.pid'))
    assert bedlib.pid_alive(dockerd), '%s: no dockerd runs' % host.name
    containerd = children_named(dockerd, 'containerd') or [
        bedlib.read_pid(host.ns_file('/run/docker/containerd/containerd.pid'))]
    assert all(bedlib.pid_alive(pid) for pid in containerd), '%s: no containerd of dockerd runs' % host.name
    for pid in containerd + [dockerd]:
        os.kill(pid, signal.SIGKILL)
    return dockerd


def remove_box(fleet, host, box):
    result = fleet.module('tx9_box', host.name, dict(name=box, state='absent'))[host.name]
    assert not result.get('failed'), result


@pytest.fixture(scope='module')
def archive(bed):
    """A backup of a box holding BALLAST_MB MiB of random bytes, on the first host; (path, its SHA-256)."""
    host = bed.hosts[0]
    box = 'ifs%s' % uuid.uuid4().hex[:6]
    made = bed.module('tx9_box', host.name, dict(name=box))[host.name]
    assert not made.get('failed'), made
    try:
        code, output = bed.ssh(host, ['docker', 'exec', 'tx9-%s-agent' % box, 'sh', '-c', FILL, 'sh', BALLAST])
        assert code == 0, output
        sha = digest(bed, host, box)
        backup = bed.module('tx9_backup', host.name, dict(name=box, dest=ARCHIVES, password=PASSWORD))[host.name]
        assert not backup.get('failed'), backup
    finally:
        remove_box(bed, host, box)
    yield dict(path=backup['path'], sha=sha)
    bed.ssh(host, ['rm', '-rf', ARCHIVES])


@pytest.fixture
def small_volumes(bed):
    """The first host's volume store on a SMALL_VOLUMES filesystem of its own (its engine stopped around the
    change), put back afterwards; the path of that store as this machine reaches it."""
    host = bed.hosts[0]
    host.stop_engine()
    bedlib.run(host.in_ns(['mount', '-t', 'tmpfs', '-o', 'size=%s,mode=0701' % SMALL_VOLUMES, 'tmpfs', VOLUMES]))
    try:
        host.start_engine()
        yield host.ns_file(VOLUMES)
    finally:
        host.stop_engine()
        bedlib.run(host.in_ns(['umount', VOLUMES]))
        host.start_engine()


def test_an_engine_killed_during_the_extraction_leaves_the_box_as_before_or_as_asked_and_the_rerun_completes(
        bed, archive):
    host = bed.hosts[0]
    box = 'ied%s' % uuid.uuid4().hex[:6]
    args = dict(path=archive['path'], name=box, password=PASSWORD)
    stage = host.ns_file('%s/tx9-%s-agent-data/_data/.tx9-restore-stage' % (VOLUMES, box))
    try:
        worker, results = in_background(bed, host, args)
        wait_for_path(stage, worker, 'its extraction')
        killed = kill_engine(host)
        assert os.path.exists(stage), 'the engine was killed after the extraction, not during it'
        worker.join(900)
        assert not worker.is_alive()
        # The host's restart loop starts dockerd again, as a service manager would.
        bedlib.wait_for('%s: the engine did not answer again' % host.name, host.engine_answers, 120)
        assert bedlib.read_pid(host.ns_file('/run/docker.pid')) != killed
        first = results[host.name]
        bedlib.log('the import whose engine was killed: %s' % (first.get('cause') or 'completed'))

        running = agents(bed, host, box)
        if first.get('failed'):
            # As before: nothing of the box in the engine or the state home, no marker of the import.
            assert first['cause'] == 'DOCKER_UNAVAILABLE', first
            assert leftovers(bed, host, box) == [] and unfinished(bed, host, box) == []
            again = bed.module('tx9_import', host.name, args)[host.name]
            assert not again.get('failed'), again
        else:
            # As asked: the box, its one agent container running, every byte.
            assert running == ['tx9-%s-agent running' % box], running
        assert agents(bed, host, box) == ['tx9-%s-agent running' % box]
        assert digest(bed, host, box) == archive['sha']
        assert unfinished(bed, host, box) == []
    finally:
        if not host.engine_answers():
            bedlib.wait_for('%s: the engine did not answer again' % host.name, host.engine_answers, 120)
        remove_box(bed, host, box)


def fill_when(path, worker, what, volumes):
    """Take all but LEFT_FREE of the volume store as soon as path appears (the up-front estimate passed); the
    filler's path."""
    wait_for_path(path, worker, what)
    found = os.statvfs(volumes)
    filler = os.path.join(volumes, '.tx9-test-filler')
    with open(filler, 'wb') as handle:
        os.posix_fallocate(handle.fileno(), 0, found.f_bavail * found.f_frsize - LEFT_FREE)
    worker.join(900)
    assert not worker.is_alive()
    return filler


def import_stages(fleet, host):
    code, output = fleet.ssh(host, ['docker', 'volume', 'ls', '-q', '--filter', 'label=tx9.import-stage'])
    assert code == 0, output
    return output.split()


def the_copy(fleet, host, volumes, box):
    """What proves the copy as it was: its containers, its state file's mark, the SHA-256 of its data's files."""
    data = os.path.join(volumes, 'tx9-%s-agent-data' % box, '_data', 'home', 'agent')
    digests = {}
    for name in ('ballast', 'kept'):
        if os.path.isfile(os.path.join(data, name)):
            with open(os.path.join(data, name), 'rb') as handle:
                digests[name] = hashlib.sha256(handle.read()).hexdigest()
    code, marks = fleet.ssh(host, ['sh', '-c', 'grep -c superseded "$1"; docker ps -a --format "{{.Names}}" '
                                   '--filter "label=tx9.box=$2" --filter label=tx9.superseded-by | sort', 'sh',
                                   '/root/.tx9/boxes/%s.env' % box, box])
    assert code == 0, marks
    return digests, marks.split()


def no_space_naming(result, volume):
    assert result.get('failed') and result['cause'] == 'NO_SPACE', result
    assert volume in result['msg'] and '%s/%s/_data' % (VOLUMES, volume) in result['msg'], result['msg']
    assert result['volume'] == volume and result['needed'] >= BALLAST_MB * MIB, result


def test_a_volume_that_fills_during_the_extraction_fails_with_no_space_and_nothing_half_made_and_the_rerun_completes(
        bed, archive, small_volumes):
    host = bed.hosts[0]
    suffix = uuid.uuid4().hex[:6]
    copy, box = 'ifk%s' % suffix, 'iff%s' % suffix
    args = dict(path=archive['path'], name=box, password=PASSWORD)
    over = dict(args, name=copy, replace_superseded=True)
    try:
        # A copy a move left behind, with a file of its own: what an import over it replaces once whole.
        made = bed.module('tx9_import', host.name, dict(args, name=copy))[host.name]
        assert not made.get('failed'), made
        code, output = bed.ssh(host, ['docker', 'exec', '-u', '1001:1001', 'tx9-%s-agent' % copy, 'sh', '-c',
                                      'echo left behind > /data/home/agent/kept'])
        assert code == 0, output
        marked = bed.module('tx9_box', host.name, dict(name=copy, superseded=dict(by='fleet2')))[host.name]
        assert not marked.get('failed'), marked
        before = the_copy(bed, host, small_volumes, copy)
        assert set(before[0]) == {'ballast', 'kept'} and before[0]['ballast'] == archive['sha'], before

        # A new box: the volume fills while its payload is extracted.
        worker, results = in_background(bed, host, args)
        filler = fill_when(os.path.join(small_volumes, 'tx9-%s-agent-data' % box), worker, 'its agent volume',
                           small_volumes)
        no_space_naming(results[host.name], 'tx9-%s-agent-data' % box)
        # Nothing half-made: no container (the restore container included), volume or network labelled for the
        # box, no directory of its volume in the store, no state file, no marker of the import.
        assert leftovers(bed, host, box) == [] and unfinished(bed, host, box) == []
        assert not [name for name in os.listdir(small_volumes) if box in name]
        assert the_copy(bed, host, small_volumes, copy) == before
        os.unlink(filler)

        # Over the superseded copy: the volume fills while the payload is extracted beside it.
        worker, results = in_background(bed, host, over)
        filler = fill_when(os.path.join(small_volumes, 'tx9-%s-import-stage' % copy), worker, 'its import stage',
                           small_volumes)
        no_space_naming(results[host.name], 'tx9-%s-import-stage' % copy)
        assert the_copy(bed, host, small_volumes, copy) == before, 'the copy an import would replace changed'
        assert import_stages(bed, host) == [] and unfinished(bed, host, copy) == []
        assert agents(bed, host, copy) == ['tx9-%s-agent running' % copy]
        os.unlink(filler)

        # Space free again: both imports complete, with every byte of the archive.
        again = bed.module('tx9_import', host.name, args)[host.name]
        assert not again.get('failed'), again
        assert agents(bed, host, box) == ['tx9-%s-agent running' % box]
        assert digest(bed, host, box) == archive['sha']
        replaced = bed.module('tx9_import', host.name, over)[host.name]
        assert not replaced.get('failed'), replaced
        assert agents(bed, host, copy) == ['tx9-%s-agent running' % copy]
        assert the_copy(bed, host, small_volumes, copy) == ({'ballast': archive['sha']}, ['0'])
        assert import_stages(bed, host) == []
    finally:
        filler = os.path.join(small_volumes, '.tx9-test-filler')
        if os.path.exists(filler):
            os.unlink(filler)
        for name in (box, copy):
            remove_box(bed, host, name)
