# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A move whose link drops: the SSH connection carrying a direct transfer is killed on the new host while the
archive streams. The move fails naming the step, the old copy runs as before with every byte, nothing of the
box is left on the new host, and the rerun finishes the move."""


import os
import signal
import subprocess
import threading
import time
import uuid

import pytest

from conftest import BIN, REPO_ROOT, recaps
from test_migrate import MIGRATE, ROLE_TASK, info, migrate, placing

PAYLOAD = '/data/home/agent/workspace/payload'
# 400 MiB of random bytes in four files: gzip cannot shrink them, so the transfer lasts long enough to cut.
FILL = ('set -e; mkdir -p "$1"; for i in 1 2 3 4; do head -c 104857600 /dev/urandom > "$1/file$i"; done; '
        'chown -R 1001:1001 "$1"')
CARRY = ROLE_TASK % 'Carry the archive from the old host straight to this host'


def payload_digests(fleet, host, name):
    code, output = fleet.ssh(host, ['docker', 'exec', 'tx9-%s-agent' % name, 'sh', '-c',
                                    'cd "$1" && sha256sum file1 file2 file3 file4', 'sh', PAYLOAD], timeout=300)
    assert code == 0, output
    return output.split()


@pytest.fixture
def big_box(bed):
    name = 'lnk%s' % uuid.uuid4().hex[:6]
    source = bed.hosts[0]
    made = bed.module('tx9_box', source.name, dict(name=name, agent_memory='1g'))[source.name]
    assert not made.get('failed'), made
    code, output = bed.ssh(source, ['docker', 'exec', 'tx9-%s-agent' % name, 'sh', '-c', FILL, 'sh', PAYLOAD],
                           timeout=600)
    assert code == 0, output
    yield name
    bed.module('tx9_box', 'fleet', dict(name=name, state='absent'))


def cut_the_link(fleet, host, name, proc, deadline=300):
    """SIGKILL the ssh that streams the box's archive to host, as soon as it runs; True when one was killed."""
    pattern = "[c]at -- '/root/.tx9/migrate/%s/" % name
    end = time.time() + deadline
    while time.time() < end and proc.poll() is None:
        code, output = fleet.ssh(host, ['sh', '-c', 'pids=$(pgrep -f "$1") && kill -KILL $pids && echo killed',
                                        'cut', pattern])
        if code == 0 and 'killed' in output:
            return True
        time.sleep(0.1)
    return False


def test_a_move_whose_link_drops_mid_transfer_fails_naming_the_step_and_the_rerun_finishes(bed, big_box, scratch):
    source, dest = bed.hosts
    before = payload_digests(bed, source, big_box)
    inventory = placing(scratch, dest, big_box)
    argv = [os.path.join(BIN, 'ansible-playbook'), '-i', bed.inventory, MIGRATE, '-i', inventory,
            '-e', 'tx9_migrate_strategy=full', '-e', 'tx9_migrate_transfer=direct']
    proc = subprocess.Popen(argv, cwd=REPO_ROOT, env=dict(bed.env(), PYTHONUNBUFFERED='1'), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, universal_newlines=True, start_new_session=True)
    seen = []
    carrying = threading.Event()

    def read():
        for line in proc.stdout:
            seen.append(line)
            if line.startswith(CARRY):
                carrying.set()

    reader = threading.Thread(target=read)
    reader.start()
    try:
        assert carrying.wait(900), ''.join(seen)[-4000:]
        assert cut_the_link(bed, dest, big_box, proc), 'no transfer to cut:\n' + ''.join(seen)[-4000:]
        proc.wait(timeout=900)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        reader.join(timeout=60)
    output = ''.join(seen)
    assert proc.returncode != 0, output[-4000:]
    assert 'broke off' in output and CARRY in output, output[-4000:]
    assert recaps(output)[dest.name]['failed'] == 1

    # The old copy runs as before, every byte there, its gateway as it was; the new host holds nothing of it.
    view = info(bed, source, big_box)
    assert (view['state'], view['quiesced'], view['superseded']) == ('running', False, None), view
    assert payload_digests(bed, source, big_box) == before
    assert info(bed, dest, big_box) is None
    code, output = bed.ssh(dest, ['sh', '-c', 'ls -A /root/.tx9/migrate 2>/dev/null; docker volume ls -q'])
    assert big_box not in output, output

    output = migrate(bed, inventory, '-e', 'tx9_migrate_strategy=full', '-e', 'tx9_migrate_transfer=direct',
                     timeout=1800)
    assert recaps(output)[dest.name]['failed'] == 0
    assert payload_digests(bed, dest, big_box) == before
    assert info(bed, source, big_box)['state'] == 'stopped'
