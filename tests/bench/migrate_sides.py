# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The two sides of the migration bench (migrate_bench.py), on the bed's two hosts: ours
(playbooks/migrate.yml) and the manual route, each direct (host to host) or relayed (through the
controller), and the sampling of every process's peak memory while a side runs."""

import json
import os
import re
import secrets
import shlex
import threading

from benchkit import (  # noqa: E402 (it puts the collection on sys.path first)
    BENCH_SUBDIR, MB, PLAY_DIR, REPO_ROOT, TX9_BIN, BenchError, ansible_env, checked, last_error, rounded, run_logged,
    write_file)
import bed as bedlib  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.col_agents.tx9.plugins.module_utils._names import ROLE_AGENT, box_labels, object_names

MIGRATE = os.path.join(REPO_ROOT, 'playbooks', 'migrate.yml')
HOST_PLAY = os.path.join(REPO_ROOT, 'tests', 'fleet', 'plays', 'host.yml')

PREFIX = 'bench-mig-'
BOX = PREFIX + 'box'
PASSWORD = 'tx9-bench-passphrase'
# Where the manual route keeps its archive and gpg homes on the hosts (their private /tmp).
HOST_WORK = '/tmp/tx9-bench-manual'
ARCHIVE = HOST_WORK + '/box.tar.gz.gpg'
SAMPLE_INTERVAL = 0.2
# The two yardsticks: the archive from host to host, or through the controller.
ROUTES = ('direct', 'relayed')

# One digest over the sorted SHA-256 list of every file under the generated directory.
DIGEST = "cd %s && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1" % BENCH_SUBDIR

# The line finish.yml prints for every move.
DOWNTIME = re.compile(r'Box %s moved from (\S+) to (\S+): downtime ([0-9]+(?:\.[0-9]+)?) s' % re.escape(BOX))

TAR_OUT = (r'set -o pipefail; mkdir -p -m 0700 "$1" && docker run --rm --network none -u root --entrypoint tar '
           r'-v "$2:/data:ro" "$3" -cf - -C /data . | gzip | gpg --homedir "$4" --batch --quiet --pinentry-mode loopback '
           r'--passphrase-file "$5" --compress-algo none --symmetric -o "$1/box.tar.gz.gpg"')
TAR_IN = (r'set -o pipefail; gpg --homedir "$4" --batch --quiet --pinentry-mode loopback --passphrase-file "$5" '
          r'--decrypt "$1/box.tar.gz.gpg" | docker run --rm -i --network none -u root --entrypoint tar '
          r'-v "$2:/data" "$3" -xz -C /data')
SCP = (r'scp -q -i "$1" -o BatchMode=yes -o UserKnownHostsFile="$2" -o StrictHostKeyChecking=yes '
       r'"$3" "root@$4:$3"')

BOX_PLAY = '''---
- name: One tx9_box on the volume the manual route filled
  hosts: "{{ bench_host }}"
  gather_facts: false
  tasks:
    - name: Create the box on the restored volume
      col_agents.tx9.tx9_box:
        name: "{{ bench_box }}"
        image: "{{ bench_image }}"
'''


def parse_downtime(output):
    """The downtime in seconds that migrate.yml printed for the box (None when the line is missing)."""
    found = DOWNTIME.findall(output)
    return float(found[-1][2]) if found else None


def carried(output):
    """How migrate.yml carried the box's archives ('direct', 'relay' or '-', from its task names)."""
    if re.search(r'Carry the archive from the old host straight[^\n]*\n+changed:', output):
        return 'direct'
    if re.search(r'Stream the archive from the old host through the controller[^\n]*\n+(?:changed|ok):', output):
        return 'relay'
    return '-'


# ---- the bed and its hosts ----------------------------------------------------------------


class Hosts(object):
    """The bed's two hosts, reached over SSH with the bed's key."""

    def __init__(self, bed, state_home):
        self.bed = bed
        self.state_home = state_home
        self.hosts = bed.hosts

    def ssh_argv(self, host, script, *args):
        """argv of `sh`-free bash -c script args on host over SSH (each word quoted for the remote shell)."""
        words = ['bash', '-c', script, 'bench'] + [str(a) for a in args]
        return ['ssh', '-i', self.bed.key, '-o', 'BatchMode=yes', '-o', 'UserKnownHostsFile=' + self.bed.known_hosts,
                '-o', 'StrictHostKeyChecking=yes', 'root@' + host.address, '--', ' '.join(shlex.quote(w) for w in words)]

    def run(self, label, host, script, *args, **kwargs):
        return checked(label, self.ssh_argv(host, script, *args), stdin_text=kwargs.get('stdin_text'))

    def playbook(self, label, *args):
        argv = [os.path.join(TX9_BIN, 'ansible-playbook'), '-i', self.bed.inventory] + list(args)
        return checked(label, argv, ansible_env(self.state_home))

    def module(self, label, pattern, module, args):
        argv = [os.path.join(TX9_BIN, 'ansible'), '-i', self.bed.inventory, pattern, '-m', module, '-a', args]
        return checked(label, argv, ansible_env(self.state_home))

    def digest(self, label, host, box):
        return self.run(label, host, 'docker exec -u root "$1" sh -c "$2"', object_names(box)['agent'], DIGEST)[1].strip()

    def data_bytes(self, label, host, box):
        output = self.run(label, host, 'docker exec -u root "$1" du -sb /data | cut -f1', object_names(box)['agent'])[1]
        return int(output.split()[-1])

    def bed_up(self, phases, timed):
        timed(phases, 'bed_down', self.bed.down)
        timed(phases, 'bed_up', self.bed.up)
        timed(phases, 'hosts_prepared', self.playbook, 'host-role', HOST_PLAY)
        timed(phases, 'image_loaded', self.bed.load_image)


# ---- peak memory of every process of a side -----------------------------------------------


def proc_table():
    """{pid: (ppid, comm)} of every process now."""
    table = {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as handle:
                head, tail = handle.read().rsplit(')', 1)
        except OSError:
            continue
        table[int(entry)] = (int(tail.split()[1]), head.split('(', 1)[1])
    return table


def hwm_kb(pid):
    try:
        with open('/proc/%d/status' % pid) as handle:
            for line in handle:
                if line.startswith('VmHWM:'):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


class Peaks(object):
    """Samples the VmHWM of every process below the given roots (pids, read at each sample) in a thread."""

    def __init__(self, roots, skip):
        self.roots = roots
        self.skip = skip
        self.peaks = {}
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.sample)
        self.thread.daemon = True

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()

    def sample(self):
        while not self.done.is_set():
            table = proc_table()
            children = {}
            for pid, (ppid, _comm) in table.items():
                children.setdefault(ppid, []).append(pid)
            todo = [pid for pid in self.roots() if pid]
            seen = set()
            while todo:
                pid = todo.pop()
                if pid in seen:
                    continue
                seen.add(pid)
                todo.extend(children.get(pid, ()))
            for pid in seen - set(self.skip()):
                value = hwm_kb(pid)
                if value is not None and pid in table:
                    key = (pid, table[pid][1])
                    self.peaks[key] = max(value, self.peaks.get(key, 0))
            self.done.wait(SAMPLE_INTERVAL)

    def by_command(self):
        """{command: peak MB over its processes}, and the number of processes seen."""
        found = {}
        for (_pid, comm), kb in self.peaks.items():
            found[comm] = max(found.get(comm, 0), round(kb * 1024 / MB, 1))
        return found, len(self.peaks)


def ssh_daemons(hosts):
    return [bedlib.read_pid(host.sshd_pidfile) for host in hosts]


# ---- the two sides ------------------------------------------------------------------------


class Sides(object):
    """ours and baseline, each moving the box from the host that has it (where) to the other."""

    def __init__(self, hosts, work, problems):
        self.hosts = hosts
        self.work = work
        self.expected = None  # the digest of the box's generated data, set once it is generated
        self.problems = problems
        self.where = 0
        self.made = set()
        os.makedirs(PLAY_DIR, exist_ok=True)
        self.box_play = write_file(os.path.join(PLAY_DIR, 'migrate-bench-box.yml'), BOX_PLAY)

    def ends(self):
        return self.hosts.hosts[self.where], self.hosts.hosts[1 - self.where]

    def peaks(self, own):
        """Peaks of the side's own processes (own: the pids of its commands) and of every SSH session on the hosts."""
        return Peaks(lambda: own + ssh_daemons(self.hosts.hosts), lambda: ssh_daemons(self.hosts.hosts))

    def placement(self, dest):
        path = os.path.join(self.work, 'placement-%s.yml' % dest.name)
        write_file(path, json.dumps({'all': {'hosts': {dest.name: {'tx9_boxes': [BOX]}}}}))
        return path

    def ours(self, label, route):
        source, dest = self.ends()
        argv = [os.path.join(TX9_BIN, 'ansible-playbook'), '-i', self.hosts.bed.inventory, MIGRATE, '-i', self.placement(dest)]
        if route == 'relayed':
            argv += ['-e', 'tx9_migrate_transfer=relay']
        load = os.getloadavg()[0]
        own = []
        with self.peaks(own) as peaks:
            seconds, code, output = run_logged(label, argv, ansible_env(self.hosts.state_home), None, 1800, pids=own)
        if code != 0:
            raise BenchError('%s: migrate.yml failed (rc %d): %s' % (label, code, last_error(output)))
        self.where = 1 - self.where
        downtime = parse_downtime(output)
        if downtime is None:
            raise BenchError('%s: migrate.yml printed no "Box %s moved from ... downtime N s" line' % (label, BOX))
        run = dict(seconds=rounded(seconds), downtime=downtime, direction='%s -> %s' % (source.name, dest.name),
                   load_before=rounded(load, 2), transfer=carried(output), tasks=output.count('\nTASK ['),
                   strategy='precopy' if 'Copy the box on the old host while it runs]' in output else 'full')
        if run['transfer'] != {'direct': 'direct', 'relayed': 'relay'}[route]:
            self.problems.append('%s: the move carried its archives %s, not %s' % (label, run['transfer'], route))
        run['rss_mb'], run['processes'] = peaks.by_command()
        run['complete'] = self.hosts.digest(label + '-digest', dest, BOX) == self.expected
        # The old copy was stopped (tx9_migrate_source's default); it goes before the box moves back.
        self.remove(label + '-old', source, BOX)
        return run

    def baseline(self, label, route):
        source, dest = self.ends()
        box = PREFIX + secrets.token_hex(3)
        self.made.add((dest.name, box))
        for host in (source, dest):
            self.hosts.run(label + '-setup-' + host.name, host, 'rm -rf "$1" && mkdir -m 0700 -p "$1/gnupg" && '
                           'printf %s "$2" > "$1/passphrase"', HOST_WORK, PASSWORD)
        load = os.getloadavg()[0]
        own = []
        with self.peaks(own) as peaks:
            steps = self.manual_steps(label, route, own, box)
        run = dict(seconds=rounded(sum(steps)), steps=[rounded(s) for s in steps], load_before=rounded(load, 2),
                   direction='%s -> %s' % (source.name, dest.name))
        run['rss_mb'], run['processes'] = peaks.by_command()
        run['complete'] = self.hosts.digest(label + '-digest', dest, box) == self.expected
        self.remove(label, dest, box)
        for host in (source, dest):
            self.hosts.run(label + '-clean-' + host.name, host, 'gpgconf --homedir "$1/gnupg" --kill gpg-agent; rm -rf "$1"', HOST_WORK)
        return run

    def manual_steps(self, label, route, own, box):
        """The manual route's commands, one after the other; their wall seconds."""
        source, dest = self.ends()
        volume = object_names(box)['agent_volume']
        labels = ' '.join('--label %s' % shlex.quote('%s=%s' % item) for item in sorted(box_labels(box, ROLE_AGENT).items()))
        gnupg, secret = HOST_WORK + '/gnupg', HOST_WORK + '/passphrase'
        steps = [self.step(label + '-tar-gzip-gpg', own, self.hosts.ssh_argv(
            source, TAR_OUT, HOST_WORK, object_names(BOX)['agent_volume'], bedlib.IMAGE, gnupg, secret))]
        if route == 'relayed':
            # From the controller: the old host's file read over one SSH session, written over another.
            pipe = 'set -o pipefail; %s | %s' % (shlex.join(self.hosts.ssh_argv(source, 'cat "$1"', ARCHIVE)),
                                                 shlex.join(self.hosts.ssh_argv(dest, 'cat > "$1"', ARCHIVE)))
            steps.append(self.step(label + '-ssh-cat-relay', own, ['bash', '-c', pipe]))
        else:
            steps.append(self.step(label + '-scp', own, self.hosts.ssh_argv(
                source, SCP, self.hosts.bed.key, self.hosts.bed.known_hosts, ARCHIVE, dest.address)))
        steps.append(self.step(label + '-volume', own, self.hosts.ssh_argv(dest, 'docker volume create %s "$1"' % labels, volume)))
        steps.append(self.step(label + '-gpg-tar-x', own, self.hosts.ssh_argv(dest, TAR_IN, HOST_WORK, volume, bedlib.IMAGE, gnupg, secret)))
        steps.append(self.step(label + '-tx9-box', own, [
            os.path.join(TX9_BIN, 'ansible-playbook'), '-i', self.hosts.bed.inventory, self.box_play, '-e',
            'bench_host=%s bench_box=%s bench_image=%s' % (dest.name, box, bedlib.IMAGE)]))
        return steps

    def step(self, label, own, argv):
        seconds, code, output = run_logged(label, argv, ansible_env(self.hosts.state_home), None, 1800, pids=own)
        if code != 0:
            raise BenchError('%s failed (rc %d): %s' % (label, code, output.strip()[-300:]))
        return seconds

    def remove(self, label, host, box):
        try:
            self.hosts.module(label + '-remove', host.name, 'col_agents.tx9.tx9_box', 'name=%s state=absent' % box)
            self.made.discard((host.name, box))
        except BenchError as exc:
            self.problems.append(str(exc))
