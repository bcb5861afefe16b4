# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the move tests read of a box on the bed's hosts (its engine objects, files, lease and the SHA-256 of
its payload), and how they start migrate.yml runs they do not wait for."""


import json
import os
import subprocess
import tempfile
import time
import uuid

from ansible_collections.col_agents.tx9.tests.processes import alive, kill_tree
from conftest import BIN, REPO_ROOT

MIGRATE = os.path.join(REPO_ROOT, 'playbooks', 'migrate.yml')
PAYLOAD = '/data/home/agent/workspace/payload'
# 1 MiB in four files of random bytes: small, so the moves are quick.
FILL = ('set -e; mkdir -p "$1"; for i in 1 2 3 4; do head -c 262144 /dev/urandom > "$1/file$i"; done; '
        'chown -R 1001:1001 "$1"')
FILES = 4
ROLE_TASK = 'TASK [col_agents.tx9.tx9_migrate : %s'
# A hook of the migration role (after-transfer, after-arrival) for the tests: it says the move reached it,
# then waits for the test's word, so that the test acts while the move is held there.
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


def make_box(fleet, prefix):
    """A random-suffixed box on the first host with 1 MiB of files; its name."""
    name = '%s%s' % (prefix, uuid.uuid4().hex[:6])
    source = fleet.hosts[0]
    made = fleet.module('tx9_box', source.name, dict(name=name))[source.name]
    assert not made.get('failed'), made
    code, output = fleet.ssh(source, ['docker', 'exec', 'tx9-%s-agent' % name, 'sh', '-c', FILL, 'sh', PAYLOAD])
    assert code == 0, output
    return name


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
    """What host holds of the box: its containers with their states and labels, volumes (in staged, the stage's
    and what a promotion set aside), its state file, migration work files and lease, read from the engine and
    the disk."""
    code, output = fleet.ssh(host, ['docker', 'ps', '-a', '--filter', 'label=tx9.box=%s' % name,
                                    '--format', '{{.Names}}\t{{.State}}\t{{.Label "tx9.superseded-by"}}'])
    assert code == 0, output
    containers = dict((line.split('\t')[0], line.split('\t')[1:]) for line in output.splitlines() if line)
    code, output = fleet.ssh(host, ['docker', 'volume', 'ls', '-q', '--filter', 'label=tx9.box=%s' % name])
    assert code == 0, output
    volumes = sorted(output.split())
    staged = []
    # The stage, and the data of a superseded copy a promotion set aside.
    for label in ('tx9.stage', 'tx9.set-aside'):
        code, output = fleet.ssh(host, ['docker', 'volume', 'ls', '-q', '--filter', 'label=%s=%s' % (label, name)])
        assert code == 0, output
        staged += output.split()
    staged.sort()
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


def placing(scratch, host, name, tag):
    """One controller's inventory: the box placed on host (the bed's own inventory comes first)."""
    path = os.path.join(scratch, 'inventory-%s.yml' % tag)
    with open(path, 'w') as handle:
        json.dump({'all': {'hosts': {host.name: {'tx9_boxes': [dict(name=name)]}}}}, handle)
    return path


def start(fleet, playbook, *args):
    """ansible-playbook started (not waited for) in a session of its own, its output in a file of its own."""
    out = tempfile.TemporaryFile('w+')
    argv = [os.path.join(BIN, 'ansible-playbook'), '-i', fleet.inventory, playbook] + list(args)
    proc = subprocess.Popen(argv, cwd=REPO_ROOT, env=fleet.env(), stdout=out, stderr=subprocess.STDOUT,
                            universal_newlines=True, start_new_session=True)
    return proc, out


def kill(run):
    """SIGKILL a started run, every process of it: ansible-playbook's task workers call setsid, so killing the
    playbook's group would leave the task a worker runs (a held move's wait among them) running on."""
    tree = kill_tree(run[0].pid)
    deadline = time.time() + 30
    while any(alive(pid) for pid in tree) and time.time() < deadline:
        time.sleep(0.1)


def finish(run, timeout=1200):
    """(exit code, output) of a started run."""
    proc, out = run
    proc.wait(timeout=timeout)
    out.seek(0)
    text = out.read()
    out.close()
    return proc.returncode, text


def held(fleet, scratch, hook, *args, then=''):
    """migrate.yml started with HOLD as its hook (the role variable hook names), then the tasks then, and waited
    for until the move reached it; (the run, the file whose creation lets it go on)."""
    path, reached, go = (os.path.join(scratch, name) for name in ('hold.yml', 'reached', 'go'))
    with open(path, 'w') as handle:
        handle.write(HOLD + then)
    run = start(fleet, MIGRATE, *args, '-e', '%s=%s' % (hook, path), '-e', 'tx9_fleet_reached=%s' % reached,
                '-e', 'tx9_fleet_go=%s' % go)
    while not os.path.exists(reached):
        assert run[0].poll() is None, finish(run)[1][-6000:]
        time.sleep(0.5)
    return run, go
