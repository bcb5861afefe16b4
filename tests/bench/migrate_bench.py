# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""`make bench`, fourth part: moving a box with 1 GiB of /data between two hosts with
playbooks/migrate.yml, against the plain manual route, in the same run.

It brings up a fleet bed (tests/fleet/bed.py) of two hosts in slot TX9_FLEET_SLOT (default 9,
so a bench leaves the fleet tests' slot 0 alone), prepares both with the host role and loads
the box image, creates one box (bench-mig-box) on the first host and fills its /data with
1 GiB of benchkit's generated mix (half incompressible, half source-like text). Then,
alternating (which side goes first alternates too), --runs times each:

* ours: `ansible-playbook -i <bed inventory> playbooks/migrate.yml -i <placement>` with the
  inventory placing the box on the other host, every variable at its default (the transfer is
  `auto`, which is direct on the bed). Its time is the wall time of that one command: the whole
  move (plan, preflight, quiesced backup, transfer with the SHA-256 check, import, readiness
  gate, doctor, the old copy stopped). The stopped old copy is removed afterwards, outside the
  timing; the box then lives on the other host, and the next run moves it back.
* baseline: the manual route, each step one command as a person would type it, on the
  hosts over SSH: on the host that has the box, `docker run --rm -u root -v VOLUME:/data:ro
  IMAGE tar -cf - -C /data . | gzip | gpg --symmetric` (gpg with --compress-algo none, as
  tx9's own encryption, so gpg does not compress gzip output a second time); `scp` of the
  file to the other host (the hosts reach each other with the bed's key, as migrate.yml's
  direct transfer does); there `docker volume create` (the new box's agent volume, with
  tx9's labels) and `gpg -d | docker run --rm -i -u root -v VOLUME:/data IMAGE tar -xz -C
  /data`; then `ansible-playbook` of one tx9_box task creating the box (a new name) on that
  volume, readiness gate included. Its time is the sum of the four commands' wall times.
  The baseline's box is removed afterwards, outside the timing.

After each run, outside the timing, the SHA-256 of every file under the generated directory
is compared (one digest over the sorted list) with the source's. Before each run the machine settles
(benchkit.settle: `sync`, then a wait until the disk is quiet).

Peak memory: while each side runs, every process started for it is sampled every 0.2 s:
the ansible-playbook process and everything below it on the controller, and everything
below each bed host's sshd (the modules, gpg, tar, ssh, docker CLI on the hosts). Each
process's VmHWM (a high-water mark kept by the kernel) is read, so a peak between two
samples is still seen as long as the process lives at one sample. Not counted: the Docker
engines and the containers' processes (the box itself, and the short-lived helper containers
both sides use to read or write a volume).

It prints a table, writes .cache/bench/migrate-report.json, keeps every command's output
under .cache/bench/migrate-logs/ and exits non-zero when something failed to run or a target
was missed. The bed is torn down (and its host data purged) on exit, also on failure and on
SIGTERM. Needs root (the bed).
"""

import argparse
import datetime
import json
import os
import re
import secrets
import shlex
import shutil
import statistics
import subprocess
import sys
import threading
import time

os.environ.setdefault('TX9_FLEET_SLOT', '9')
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'fleet'))

from benchkit import (  # noqa: E402 (it puts the collection on sys.path first)
    BENCH_DIR, BENCH_SUBDIR, GENERATOR, GIB, MB, PLAY_DIR, REPO_ROOT, TX9_BIN, BenchError, ansible_env, begin,
    build_image, checked, conduct, fmt, free_bytes, median_ratio, print_closing, print_target, rounded, run_logged,
    settle, timed, write_file)
import bed as bedlib  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.col_agents.tx9.plugins.module_utils._names import ROLE_AGENT, box_labels, object_names

LOG_DIR = os.path.join(BENCH_DIR, 'migrate-logs')
REPORT_PATH = os.path.join(BENCH_DIR, 'migrate-report.json')
MIGRATE = os.path.join(REPO_ROOT, 'playbooks', 'migrate.yml')
HOST_PLAY = os.path.join(REPO_ROOT, 'tests', 'fleet', 'plays', 'host.yml')

PREFIX = 'bench-mig-'
BOX = PREFIX + 'box'
SIZE = 1 * GIB
# Two host engines with the image, the box's data, its archive and a second copy on the other host.
NEEDED_FREE = 12 * GIB
PASSWORD = 'tx9-bench-passphrase'
# Where the manual route keeps its archive and gpg homes on the hosts (their private /tmp).
HOST_WORK = '/tmp/tx9-bench-manual'

TARGET_RATIO = 0.5
TARGET_RSS_MB = 200.0
SAMPLE_INTERVAL = 0.2

# One digest over the sorted SHA-256 list of every file under the generated directory.
DIGEST = "cd %s && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1" % BENCH_SUBDIR

TAR_OUT = (r'set -o pipefail; mkdir -p -m 0700 "$1" && docker run --rm --network none -u root --entrypoint tar '
           r'-v "$2:/data:ro" "$3" -cf - -C /data . | gzip | gpg --homedir "$4" --batch --quiet --pinentry-mode loopback '
           r'--passphrase-file "$5" --compress-algo none --symmetric -o "$1/box.tar.gz.gpg"')
TAR_IN = (r'set -o pipefail; gpg --homedir "$4" --batch --quiet --pinentry-mode loopback --passphrase-file "$5" '
          r'--decrypt "$1/box.tar.gz.gpg" | docker run --rm -i --network none -u root --entrypoint tar '
          r'-v "$2:/data" "$3" -xz -C /data')

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

    def bed_up(self, phases):
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
    def __init__(self, hosts, work, expected, problems):
        self.hosts = hosts
        self.work = work
        self.expected = expected
        self.problems = problems
        self.where = 0
        self.made = set()
        os.makedirs(PLAY_DIR, exist_ok=True)
        self.box_play = write_file(os.path.join(PLAY_DIR, 'migrate-bench-box.yml'), BOX_PLAY)

    def peaks(self, own):
        """Peaks of the side's own processes (own: the pids of its commands) and of every SSH session on the hosts."""
        return Peaks(lambda: own + ssh_daemons(self.hosts.hosts), lambda: ssh_daemons(self.hosts.hosts))

    def placement(self, dest):
        path = os.path.join(self.work, 'placement-%s.yml' % dest.name)
        write_file(path, json.dumps({'all': {'hosts': {dest.name: {'tx9_boxes': [BOX]}}}}))
        return path

    def ours(self, label):
        source, dest = self.hosts.hosts[self.where], self.hosts.hosts[1 - self.where]
        argv = [os.path.join(TX9_BIN, 'ansible-playbook'), '-i', self.hosts.bed.inventory, MIGRATE, '-i', self.placement(dest)]
        load = os.getloadavg()[0]
        own = []
        with self.peaks(own) as peaks:
            seconds, code, output = run_logged(label, argv, ansible_env(self.hosts.state_home), None, 1800, pids=own)
        if code != 0:
            raise BenchError('%s: migrate.yml failed' % label)
        self.where = 1 - self.where
        transfer = 'direct' if re.search(r'Carry the archive from the old host straight[^\n]*\n+changed:', output) else 'relay'
        run = dict(seconds=rounded(seconds), direction='%s -> %s' % (source.name, dest.name), load_before=rounded(load, 2),
                   transfer=transfer, tasks=output.count('\nTASK ['))
        run['rss_mb'], run['processes'] = peaks.by_command()
        run['complete'] = self.hosts.digest(label + '-digest', dest, BOX) == self.expected
        # The old copy was stopped (tx9_migrate_source's default); it goes before the box moves back.
        self.remove(label + '-old', source, BOX)
        return run

    def baseline(self, label):
        source, dest = self.hosts.hosts[self.where], self.hosts.hosts[1 - self.where]
        box = PREFIX + secrets.token_hex(3)
        self.made.add((dest.name, box))
        volume = object_names(box)['agent_volume']
        labels = ' '.join('--label %s' % shlex.quote('%s=%s' % item) for item in sorted(box_labels(box, ROLE_AGENT).items()))
        gnupg, secret = HOST_WORK + '/gnupg', HOST_WORK + '/passphrase'
        for host in (source, dest):
            self.hosts.run(label + '-setup-' + host.name, host, 'rm -rf "$1" && mkdir -m 0700 -p "$1/gnupg" && '
                           'printf %s "$2" > "$1/passphrase"', HOST_WORK, PASSWORD)
        steps = []
        load = os.getloadavg()[0]
        own = []
        with self.peaks(own) as peaks:
            steps.append(self.step(label + '-tar-gzip-gpg', own, self.hosts.ssh_argv(
                source, TAR_OUT, HOST_WORK, object_names(BOX)['agent_volume'], bedlib.IMAGE, gnupg, secret)))
            steps.append(self.step(label + '-scp', own, self.hosts.ssh_argv(
                source, 'scp -q -i "$1" -o BatchMode=yes -o UserKnownHostsFile="$2" -o StrictHostKeyChecking=yes '
                '"$3/box.tar.gz.gpg" "root@$4:$3/box.tar.gz.gpg"', self.hosts.bed.key, self.hosts.bed.known_hosts,
                HOST_WORK, dest.address)))
            steps.append(self.step(label + '-volume', own, self.hosts.ssh_argv(dest, 'docker volume create %s "$1"' % labels, volume)))
            steps.append(self.step(label + '-gpg-tar-x', own, self.hosts.ssh_argv(
                dest, TAR_IN, HOST_WORK, volume, bedlib.IMAGE, gnupg, secret)))
            steps.append(self.step(label + '-tx9-box', own, [
                os.path.join(TX9_BIN, 'ansible-playbook'), '-i', self.hosts.bed.inventory, self.box_play, '-e',
                'bench_host=%s bench_box=%s bench_image=%s' % (dest.name, box, bedlib.IMAGE)]))
        run = dict(seconds=rounded(sum(steps)), steps=[rounded(s) for s in steps], load_before=rounded(load, 2),
                   direction='%s -> %s' % (source.name, dest.name))
        run['rss_mb'], run['processes'] = peaks.by_command()
        run['complete'] = self.hosts.digest(label + '-digest', dest, box) == self.expected
        self.remove(label, dest, box)
        for host in (source, dest):
            self.hosts.run(label + '-clean-' + host.name, host, 'gpgconf --homedir "$1/gnupg" --kill gpg-agent; rm -rf "$1"', HOST_WORK)
        return run

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


# ---- the bench ----------------------------------------------------------------------------


def bench(report, args, state_home, work):
    phases = report['phases']
    if os.geteuid() != 0:
        raise BenchError('the migration bench brings up the fleet bed, which needs root')
    probe = subprocess.run(['docker', 'image', 'inspect', bedlib.IMAGE], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    if probe.returncode != 0:
        timed(phases, 'build_image', build_image, state_home)
    bed = bedlib.Bed(count=2)
    free = free_bytes([bed.state_dir if os.path.isdir(bed.state_dir) else REPO_ROOT, work])
    report['free_bytes_at_start'] = free
    if free is not None and free < NEEDED_FREE:
        raise BenchError('only %.1f GiB free for the bed; the bench needs about %.0f GiB' % (free / GIB, NEEDED_FREE / GIB))
    hosts = Hosts(bed, state_home)
    report['bed'] = dict(slot=bedlib.SLOT, hosts=[h.name for h in bed.hosts])
    hosts.bed_up(phases)
    first = bed.hosts[0]
    timed(phases, 'create_box', hosts.module, 'create-box', first.name, 'col_agents.tx9.tx9_box',
          'name=%s image=%s' % (BOX, bedlib.IMAGE))
    half = SIZE // 2

    def generate():
        return hosts.run('generate', first, 'docker exec -i -u agent "$1" python3 - "$2" 1 "$3" "$4"',
                         object_names(BOX)['agent'], BENCH_SUBDIR, half, SIZE - half, stdin_text=GENERATOR)
    timed(phases, 'generate', generate)
    size = hosts.run('data-size', first, 'docker exec -u root "$1" du -sb /data | cut -f1', object_names(BOX)['agent'])[1]
    report['data'] = dict(bytes=int(size.split()[-1]), digest=hosts.digest('digest-source', first, BOX))
    sides = Sides(hosts, work, report['data']['digest'], report['problems'])
    for index in range(args.runs):
        order = (('ours', sides.ours), ('baseline', sides.baseline))
        for side, call in order if index % 2 == 0 else order[::-1]:
            settle(phases, 'settle_%s_%d' % (side, index + 1))
            report['runs'][side].append(timed(phases, '%s_%d' % (side, index + 1), call, '%s-%d' % (side, index + 1)))


def cleanup(state_home, work, phases, also=None):
    """Tear the bed down with its hosts' data (the boxes and archives go with it), run also(), and remove
    the temporary files."""
    started = time.perf_counter()
    problems = []
    try:
        bedlib.Bed(count=2).down(purge=True)
    except (bedlib.BedError, OSError) as exc:
        problems.append('tearing the bed down: %s' % exc)
    if also is not None:
        also()
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(state_home, ignore_errors=True)
    phases['cleanup'] = rounded(time.perf_counter() - started)
    return problems


def targets(report):
    found = median_ratio(report, TARGET_RATIO)
    peaks = [max(run['rss_mb'].values() or [0]) for run in report['runs']['ours']]
    rss = max(peaks) if peaks else None
    complete = [run['complete'] for side in ('ours', 'baseline') for run in report['runs'][side]]
    return dict(found, rss=dict(value=rss, target=TARGET_RSS_MB, met=None if rss is None else rss < TARGET_RSS_MB),
                complete=dict(value=all(complete) if complete else None, met=all(complete) if complete else None))


def missed(report):
    found = report['targets']
    return any(found[key]['met'] is not True for key in ('ratio', 'rss', 'complete'))


def print_table(report):
    found = report['targets']
    print('\ntx9 migrate bench: a box with %s of /data moved between two bed hosts (slot %s); %d run(s) each, alternating\n'
          % (fmt(report.get('data', {}).get('bytes', 0) / GIB, ' GiB'), report.get('bed', {}).get('slot', '-'), report['args']['runs']))
    print('%-46s %9s  %s' % ('wall seconds', 'median', 'runs'))
    rows = (('baseline: tar|gzip|gpg, scp, gpg -d|tar -x, tx9_box', 'baseline'),
            ('ours: ansible-playbook migrate.yml', 'ours'))
    for row, side in rows:
        values = [run['seconds'] for run in report['runs'][side]]
        print('%-46s %9s  %s' % (row, fmt(statistics.median(values) if values else None), ' '.join(fmt(v) for v in values)))
    for run in report['runs']['baseline']:
        print('  baseline %s steps (s): %s' % (run['direction'], ', '.join(fmt(s) for s in run['steps'])))
    for run in report['runs']['ours']:
        print('  ours %s: %s transfer, %d tasks' % (run['direction'], run['transfer'], run['tasks']))
    print()
    print_target('ratio migrate.yml / manual route (medians)', fmt(found['ratio']['value'], digits=3), '<= %.2f' % TARGET_RATIO,
                 found['ratio']['met'])
    print_target('peak RSS of any process of migrate.yml', fmt(found['rss']['value'], ' MB', 1), '< %.0f MB' % TARGET_RSS_MB,
                 found['rss']['met'])
    print_target('moved data identical (SHA-256, each run)', {None: '-', True: 'yes', False: 'no'}[found['complete']['value']],
                 'yes', found['complete']['met'])
    for side in ('ours', 'baseline'):
        merged = {}
        for run in report['runs'][side]:
            for comm, value in run['rss_mb'].items():
                merged[comm] = max(merged.get(comm, 0), value)
        top = sorted(merged.items(), key=lambda item: -item[1])[:8]
        print('(%s: peak RSS per command, MB: %s)' % (side, ', '.join('%s %.1f' % item for item in top) or '-'))
    print_closing(report, REPORT_PATH)


def parse_args():
    parser = argparse.ArgumentParser(description='Time migrate.yml against the manual tar|gzip|gpg, scp, gpg -d|tar -x, tx9_box '
                                                 'route between two bed hosts, and measure peak memory.')
    parser.add_argument('--runs', type=int, default=3, help='timed runs of each side (default 3)')
    return parser.parse_args()


def main():
    args = parse_args()
    _lock = begin(LOG_DIR)  # held until the process exits
    report = dict(started=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'), box=BOX, image=bedlib.IMAGE,
                  args=dict(runs=args.runs), host=dict(cpus=os.cpu_count()), runs=dict(ours=[], baseline=[]), phases={},
                  problems=[])
    return conduct(report, args, 'tx9-bench-migrate-', bench, cleanup, targets, print_table, REPORT_PATH, missed)


if __name__ == '__main__':
    sys.exit(main())
