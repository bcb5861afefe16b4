# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engine dies mid-operation: the host's dockerd and containerd are killed (SIGKILL) during a backup, a
tx9_box recreate and a tx9_mount recreate, and its restart loop starts them again. Once the engine answers,
the box is as before or as asked, with exactly one agent and one Executor container, its volume and every
byte of its data; the task, run again, completes.

The moment is chosen from the engine's own events (the backup's helper container starting, the old agent
container destroyed), and the module's process is frozen (SIGSTOP) from that event until the engine is
dead, so it cannot run ahead of the kill.
"""


import os
import signal
import subprocess
import threading
import uuid

import pytest

PAYLOAD = '/data/home/agent/workspace/payload'
# 48 MiB of random bytes: enough for a backup to stream for a moment, little enough to stay quick.
FILL = ('set -e; mkdir -p "$1"; for i in 1 2 3; do head -c 16777216 /dev/urandom > "$1/file$i"; done; '
        'chown -R 1001:1001 "$1"')
SHARE = '/srv/tx9-engine-death-share'
ENGINE_RETURNED = 'the engine stopped answering mid-run and answered again: carry on from what it has'


def payload_digests(fleet, host, name):
    code, output = fleet.ssh(host, ['docker', 'exec', 'tx9-%s-agent' % name, 'sh', '-c',
                                    'cd "$1" && sha256sum file1 file2 file3', 'sh', PAYLOAD], timeout=300)
    assert code == 0, output
    return output.split()


def labelled(fleet, host, name):
    """{container name: (role, state)} of every container labelled for the box, and its volumes."""
    code, output = fleet.ssh(host, ['docker', 'ps', '-a', '--filter', 'label=tx9.box=%s' % name, '--format',
                                    '{{.Names}} {{.Label "tx9.role"}} {{.State}}'])
    assert code == 0, output
    containers = dict((line.split()[0], tuple(line.split()[1:])) for line in output.splitlines() if line.strip())
    code, output = fleet.ssh(host, ['docker', 'volume', 'ls', '-q', '--filter', 'label=tx9.box=%s' % name])
    assert code == 0, output
    return containers, sorted(output.split())


def whole(fleet, host, name, digests):
    """The box runs with exactly its agent and its Executor, both volumes, and every byte of its data."""
    containers, volumes = labelled(fleet, host, name)
    assert containers == {'tx9-%s-agent' % name: ('agent', 'running'),
                          'tx9-%s-executor' % name: ('executor', 'running')}, containers
    assert volumes == ['tx9-%s-agent-data' % name, 'tx9-%s-exec-data' % name], volumes
    assert payload_digests(fleet, host, name) == digests


def view(fleet, host, name):
    result = fleet.module('tx9_info', host.name, dict(name=name))[host.name]
    assert not result.get('failed'), result
    (box,) = result['boxes']
    return box


def module_pids(host, module):
    """The pids of the module's own process on host (its network namespace tells hosts apart)."""
    mine = os.stat('/proc/%d/ns/net' % host.anchor).st_ino
    found = []
    for pid in (int(p) for p in os.listdir('/proc') if p.isdigit()):
        try:
            with open('/proc/%d/cmdline' % pid, 'rb') as handle:
                argv = handle.read().split(b'\0')
            if any(word.endswith(b'AnsiballZ_%s.py' % module.encode()) for word in argv) and \
                    os.stat('/proc/%d/ns/net' % pid).st_ino == mine:
                found.append(pid)
        except OSError:
            continue
    return found


def signal_all(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def during(fleet, host, module, args, event_filters):
    """Run module on host; at the first engine event matching event_filters, kill the engine.

    The module is frozen from the event until the engine is dead. Returns (the module's result, whether the
    engine was killed); the engine answers again when this returns.
    """
    watcher = subprocess.Popen(host.in_ns(['docker', 'events', '--format', '{{.Actor.ID}}'] +
                                          [word for f in event_filters for word in ('--filter', f)]),
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True)
    outcome = {}

    def call_module():
        try:
            outcome.update(result=fleet.module(module, host.name, args)[host.name])
        finally:
            # A run that ended before the event: the watcher ends too, so the loop below does not wait for ever.
            if not killed:
                watcher.terminate()

    call = threading.Thread(target=call_module)
    killed = False
    try:
        call.start()
        for _line in watcher.stdout:
            frozen = module_pids(host, module)
            signal_all(frozen, signal.SIGSTOP)
            try:
                host.kill_engine()
                killed = True
            finally:
                signal_all(frozen, signal.SIGCONT)
            break
        call.join(timeout=900)
    finally:
        if watcher.poll() is None:
            watcher.kill()
        watcher.wait()
    assert not call.is_alive(), 'the module did not return'
    host.wait_engine()
    return outcome['result'], killed


@pytest.fixture
def box(bed):
    name = 'ed%s' % uuid.uuid4().hex[:6]
    host = bed.hosts[0]
    made = bed.module('tx9_box', host.name, dict(name=name, agent_memory='1g'))[host.name]
    assert not made.get('failed'), made
    code, output = bed.ssh(host, ['docker', 'exec', 'tx9-%s-agent' % name, 'sh', '-c', FILL, 'sh', PAYLOAD],
                           timeout=300)
    assert code == 0, output
    yield name
    bed.module('tx9_box', host.name, dict(name=name, state='absent'))


def archives(fleet, host, dest):
    code, output = fleet.ssh(host, ['sh', '-c', 'ls -A "$1" 2>/dev/null; true', 'sh', dest])
    assert code == 0, output
    return sorted(output.split())


def test_an_engine_killed_while_a_backup_streams_leaves_the_box_whole_and_running_and_the_rerun_backs_it_up(bed, box):
    host = bed.hosts[0]
    digests = payload_digests(bed, host, box)
    dest = '/tmp/tx9-engine-death-%s' % box
    args = dict(name=box, dest=dest, encrypt=False, verify=True)
    result, killed = during(bed, host, 'tx9_backup', args,
                            ['event=start', 'label=tx9.box=%s' % box, 'label=tx9.role=backup'])
    assert killed, result
    # The engine came back within the run's wait: the backup started again and wrote one proved archive, and
    # nothing of the lost attempt (no partial file, no helper container) is left.
    assert not result.get('failed'), result
    assert result['verified'] is True and archives(bed, host, dest) == [os.path.basename(result['path'])]
    whole(bed, host, box, digests)
    now = view(bed, host, box)
    assert (now['state'], now['quiesced']) == ('running', False), now

    again = bed.module('tx9_backup', host.name, args)[host.name]
    assert not again.get('failed') and again['verified'] is True, again
    assert os.path.basename(again['path']) in archives(bed, host, dest)
    assert all(name.endswith('.tx9') for name in archives(bed, host, dest))
    whole(bed, host, box, digests)
    assert view(bed, host, box)['quiesced'] is False
    bed.ssh(host, ['rm', '-rf', dest])


def test_an_engine_killed_while_tx9_box_recreates_the_agent_leaves_one_agent_and_the_rerun_completes(bed, box):
    host = bed.hosts[0]
    digests = payload_digests(bed, host, box)
    # recreate forces both containers anew; the new memory limit says the run went as asked.
    args = dict(name=box, agent_memory='1200m', recreate=True)
    result, killed = during(bed, host, 'tx9_box', args,
                            ['event=destroy', 'label=tx9.box=%s' % box, 'label=tx9.role=agent'])
    assert killed, result
    # Frozen right after the old agent went, the run met the dead engine, waited for it and finished as asked.
    assert not result.get('failed') and result['actions'][0] == ENGINE_RETURNED, result
    assert result['box']['resources']['agent_memory'] == 1200 << 20, result
    whole(bed, host, box, digests)

    again = bed.module('tx9_box', host.name, args)[host.name]
    assert not again.get('failed'), again
    assert again['box']['state'] == 'running' and again['box']['resources']['agent_memory'] == 1200 << 20, again
    whole(bed, host, box, digests)
    settled = bed.module('tx9_box', host.name, dict(name=box, agent_memory='1200m'))[host.name]
    assert settled['changed'] is False, settled


def test_an_engine_killed_while_tx9_mount_recreates_the_agent_leaves_one_agent_and_the_rerun_completes(bed, box):
    host = bed.hosts[0]
    digests = payload_digests(bed, host, box)
    code, output = bed.ssh(host, ['sh', '-c', 'mkdir -p "$1" && echo shared > "$1/marker"', 'sh', SHARE])
    assert code == 0, output
    args = dict(name=box, source=SHARE, target='/mnt/share', read_only=True)
    result, killed = during(bed, host, 'tx9_mount', args,
                            ['event=destroy', 'label=tx9.box=%s' % box, 'label=tx9.role=agent'])
    assert killed, result
    assert not result.get('failed') and result['actions'][0] == ENGINE_RETURNED, result
    whole(bed, host, box, digests)

    again = bed.module('tx9_mount', host.name, args)[host.name]
    assert not again.get('failed'), again
    assert [m['target'] for m in again['mounts']] == ['/mnt/share'], again
    whole(bed, host, box, digests)
    code, output = bed.ssh(host, ['docker', 'exec', 'tx9-%s-agent' % box, 'cat', '/mnt/share/marker'])
    assert (code, output.strip()) == (0, 'shared'), output
    assert bed.module('tx9_mount', host.name, args)[host.name]['changed'] is False
    bed.ssh(host, ['rm', '-rf', SHARE])
