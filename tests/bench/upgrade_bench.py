# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""`make bench`, fifth part: a fleet upgrade. A new release of the collection reaches the boxes of
both bed hosts through image distribution and upgrade.yml, against building the image on each
host and recreating each box with tx9_box by hand, in the same run.

It brings up a fleet bed (tests/fleet/bed.py) of two hosts in slot TX9_FLEET_SLOT (default 9),
prepares both with the host role and loads the box image (the previous release, IMAGE), and
makes one box on each host on it. A new release is a copy of this collection whose guest runtime
carries one more file (a fresh marker each time, so no side ever finds the other's build in
Docker's cache); it is built as NEW. Alternating (which side goes first alternates too, and the
machine settles before each: `sync`, then a wait until the disk is quiet), --runs times each:

* ours: with the release's collection, `playbooks/build-image.yml -e tx9_hosts=fleet
  -e tx9_image_build_host=localhost`: the controller builds NEW (its Docker cache holds the
  previous release's slow layers, as the one machine that builds every release does) and ships
  it to both hosts, which hold the previous release's layers, so the archive leaves those out;
  then `playbooks/upgrade.yml -e tx9_hosts=fleet`: per box a verified backup, the recreate on NEW,
  the readiness gate and tx9_doctor, one host after the other. Its time is the two commands'.
* baseline: per host, the build that host would run itself: the very build tx9_image runs (its
  context, labels and build arguments) through the Docker SDK with Docker's cache off, as on a
  host that never built the image (the bed's hosts have no route to the package registries, so
  the build runs on this machine's engine, whose cores the bed hosts share; the base image is
  there already, which spares the baseline debootstrap's 25 s), then an ansible-playbook of one
  tx9_box task recreating that host's box on NEW, readiness gate included. Its time is the sum
  of those four commands; moving each build into its host's engine (docker save | docker load,
  which a build on the host itself would not need) is left out of it.

After each run, outside the timing, each box must run its host's NEW image ID, and NEW must
carry that run's marker; then every box goes back to IMAGE and NEW is removed everywhere.

It prints a table, writes .cache/bench/upgrade-report.json, keeps every command's output (and
the controller's image build log of each run of ours) under .cache/bench/upgrade-logs/ and exits
non-zero when something failed to run or the target was missed. The bed is torn down (and its host data purged) on exit, also on failure and on SIGTERM.
Needs root (the bed).
"""

import argparse
import datetime
import io
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import time

import docker

os.environ.setdefault('TX9_FLEET_SLOT', '9')

from benchkit import (  # noqa: E402 (it puts the collection on sys.path first)
    BENCH_DIR, PLAY_DIR, REPO_ROOT, TX9_BIN, BenchError, ansible_env, begin, build_image, conduct, fmt,
    free_bytes, median_ratio, print_check, print_closing, print_target, rounded, run_logged, settle, timed, write_file)
from migrate_bench import Hosts, cleanup as bed_cleanup  # noqa: E402 (the bed's hosts over SSH, its teardown)
import bed as bedlib  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.col_agents.tx9.plugins.module_utils._image.build import ImageBuilder

LOG_DIR = os.path.join(BENCH_DIR, 'upgrade-logs')
REPORT_PATH = os.path.join(BENCH_DIR, 'upgrade-report.json')

PREFIX = 'bench-upg-'
IMAGE = bedlib.IMAGE
NEW = 'tx9-box:0.1.1'
MARKER_FILE = 'RELEASE'
PASSWORD = 'tx9-bench-upgrade-passphrase'
BACKUPS = '/tmp/tx9-bench-upgrade-backups'
CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt'
# Two host engines with the image, the controller's builds, and the exported archives.
NEEDED_FREE = 16 * 1024 ** 3
TARGET_RATIO = 0.5
# What a copy of the collection leaves out of this checkout.
NOT_COPIED = shutil.ignore_patterns('.git', '.venv', '.cache', '.pytest_cache', 'tests', '__pycache__', '*.pyc')

BOX_PLAY = '''---
- name: One tx9_box on the new image
  hosts: "{{ bench_host }}"
  gather_facts: false
  tasks:
    - name: Recreate the box on the new image
      col_agents.tx9.tx9_box:
        name: "{{ bench_box }}"
        image: "{{ bench_image }}"
'''


def release(work, marker):
    """A copy of this collection whose guest runtime carries one more file; its collections path."""
    root = os.path.join(work, 'release-%s' % marker)
    tree = os.path.join(root, 'ansible_collections', 'col_agents', 'tx9')
    shutil.copytree(REPO_ROOT, tree, ignore=NOT_COPIED, symlinks=True)
    write_file(os.path.join(tree, 'assets', 'guest', MARKER_FILE), marker + '\n')
    return root, tree


class Sides(object):
    def __init__(self, hosts, work, boxes):
        self.hosts = hosts
        self.work = work
        self.boxes = boxes
        os.makedirs(PLAY_DIR, exist_ok=True)
        self.box_play = write_file(os.path.join(PLAY_DIR, 'upgrade-bench-box.yml'), BOX_PLAY)

    def ours(self, label):
        marker = secrets.token_hex(6)
        root, tree = release(self.work, marker)
        env = ansible_env(self.hosts.state_home, dict(ANSIBLE_COLLECTIONS_PATH=root))
        inventory = ['-i', self.hosts.bed.inventory]
        steps = [
            self.step(label + '-build-image', [os.path.join(TX9_BIN, 'ansible-playbook')] + inventory + [
                os.path.join(tree, 'playbooks', 'build-image.yml'), '-e', 'tx9_hosts=fleet',
                '-e', 'tx9_image_build_host=localhost', '-e', 'tx9_box_image=%s' % NEW,
                '-e', 'tx9_box_image_stage_dir=%s' % os.path.join(self.work, 'stage')], env),
            self.step(label + '-upgrade', [os.path.join(TX9_BIN, 'ansible-playbook')] + inventory + [
                os.path.join(tree, 'playbooks', 'upgrade.yml'), '-e', 'tx9_hosts=fleet',
                '-e', 'tx9_upgrade_image=%s' % NEW, '-e', 'tx9_upgrade_backup_dest=%s' % BACKUPS,
                '-e', 'tx9_upgrade_backup_password=%s' % PASSWORD], env)]
        shutil.rmtree(root, ignore_errors=True)
        self.keep_build_logs(label)
        return self.finish(label, marker, steps)

    def keep_build_logs(self, label):
        """The controller's image build log of this run (it names each step and whether Docker's cache held it),
        moved from the state home into the bench's logs."""
        logs = os.path.join(self.hosts.state_home, 'logs')
        for name in sorted(os.listdir(logs)) if os.path.isdir(logs) else ():
            if name.startswith('image-build-'):
                shutil.move(os.path.join(logs, name), os.path.join(LOG_DIR, '%s-%s' % (label, name)))

    def baseline(self, label):
        marker = secrets.token_hex(6)
        root, tree = release(self.work, marker)
        steps = []
        for host in self.hosts.hosts:
            steps.append(self.build_without_cache(label + '-build-' + host.name, tree))
            self.ship(label + '-ship-' + host.name, host)
            steps.append(self.step(label + '-tx9-box-' + host.name, [
                os.path.join(TX9_BIN, 'ansible-playbook'), '-i', self.hosts.bed.inventory, self.box_play, '-e',
                'bench_host=%s bench_box=%s bench_image=%s' % (host.name, self.boxes[host.name], NEW)],
                ansible_env(self.hosts.state_home)))
        shutil.rmtree(root, ignore_errors=True)
        return self.finish(label, marker, steps)

    def build_without_cache(self, label, tree):
        """The build tx9_image runs for the release, with Docker's cache off: a host's first build; its seconds."""
        started = time.perf_counter()
        client = docker.from_env(version='auto', timeout=3600)
        builder = ImageBuilder(client, os.path.join(tree, 'assets'), tag=NEW, ca_bundle=CA_BUNDLE)
        lines, error = [], None
        for chunk in client.api.build(fileobj=io.BytesIO(builder.context), custom_context=True, tag=NEW,
                                      labels=builder.labels(), buildargs={'BASE_IMAGE': builder.base_image},
                                      rm=True, forcerm=True, pull=False, nocache=True, decode=True, timeout=3600):
            lines.append(chunk.get('stream') or chunk.get('error') or '')
            error = chunk.get('error') or error
        write_file(os.path.join(LOG_DIR, label + '.log'), ''.join(lines))
        if error:
            raise BenchError('%s failed: %s' % (label, error.strip()))
        return time.perf_counter() - started

    def ship(self, label, host):
        """docker save | docker load of NEW into host's engine (not timed: a build on the host needs none)."""
        save = subprocess.Popen(['docker', 'save', NEW], stdout=subprocess.PIPE)
        load = subprocess.run(host.in_ns(['docker', 'load', '-q']), stdin=save.stdout, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True, timeout=1800, check=False)
        save.stdout.close()
        if save.wait() != 0 or load.returncode != 0:
            raise BenchError('%s failed: %s' % (label, load.stdout.strip()[-300:]))

    def step(self, label, argv, env):
        seconds, code, output = run_logged(label, argv, env, None, 3600)
        if code != 0:
            raise BenchError('%s failed (rc %d): %s' % (label, code, output.strip()[-600:]))
        return seconds

    def finish(self, label, marker, steps):
        """The run's record once every box runs its host's NEW, which carries marker; then everything is put back."""
        run = dict(seconds=rounded(sum(steps)), steps=[rounded(s) for s in steps], complete=True)
        for host in self.hosts.hosts:
            box = self.boxes[host.name]
            wanted = self.hosts.run(label + '-new-id-' + host.name, host, 'docker image inspect -f "{{.Id}}" "$1"', NEW)[1]
            running = self.hosts.run(label + '-box-ids-' + host.name, host,
                                     'docker ps --filter "label=tx9.box=$1" --format "{{.Image}}" | sort -u | '
                                     'xargs docker image inspect -f "{{.Id}}"', box)[1]
            carried = self.hosts.run(label + '-marker-' + host.name, host,
                                     'docker run --rm --entrypoint cat "$1" /opt/tx9/guest/%s' % MARKER_FILE, NEW)[1]
            run['complete'] = run['complete'] and running.split() == [wanted.strip()] and carried.strip() == marker
        self.reset(label)
        return run

    def reset(self, label):
        """Every box back on IMAGE, NEW gone from every engine, the backups removed (not timed)."""
        for host in self.hosts.hosts:
            self.hosts.module(label + '-back-' + host.name, host.name, 'col_agents.tx9.tx9_box',
                              'name=%s image=%s' % (self.boxes[host.name], IMAGE))
            self.hosts.run(label + '-clean-' + host.name, host,
                           'docker image rm "$1" >/dev/null; docker image prune -f >/dev/null; rm -rf "$2"', NEW, BACKUPS)
        remove_new()


def bench(report, args, state_home, work):
    phases = report['phases']
    if os.geteuid() != 0:
        raise BenchError('the upgrade bench brings up the fleet bed, which needs root')
    probe = subprocess.run(['docker', 'image', 'inspect', IMAGE], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           check=False)
    if probe.returncode != 0:
        timed(phases, 'build_image', build_image, state_home)
    subprocess.run('docker image rm %s >/dev/null 2>&1' % NEW, shell=True, check=False)
    bed = bedlib.Bed(count=2)
    free = free_bytes([bed.state_dir if os.path.isdir(bed.state_dir) else REPO_ROOT, work])
    report['free_bytes_at_start'] = free
    if free is not None and free < NEEDED_FREE:
        raise BenchError('only %.1f GiB free for the bed; the bench needs about %.0f GiB'
                         % (free / 1024 ** 3, NEEDED_FREE / 1024 ** 3))
    hosts = Hosts(bed, state_home)
    report['bed'] = dict(slot=bedlib.SLOT, hosts=[h.name for h in bed.hosts])
    hosts.bed_up(phases)
    boxes = dict((host.name, '%s%s' % (PREFIX, host.name)) for host in bed.hosts)
    for host in bed.hosts:
        timed(phases, 'create_box_%s' % host.name, hosts.module, 'create-box-' + host.name, host.name,
              'col_agents.tx9.tx9_box', 'name=%s image=%s' % (boxes[host.name], IMAGE))
    sides = Sides(hosts, work, boxes)
    for index in range(args.runs):
        order = (('ours', sides.ours), ('baseline', sides.baseline))
        for side, call in order if index % 2 == 0 else order[::-1]:
            settle(phases, 'settle_%s_%d' % (side, index + 1))
            report['runs'][side].append(timed(phases, '%s_%d' % (side, index + 1), call, '%s-%d' % (side, index + 1)))


def remove_new():
    subprocess.run('docker image rm %s >/dev/null 2>&1; docker image prune -f >/dev/null' % NEW, shell=True, check=False)


def cleanup(state_home, work, phases):
    """Tear the bed down with its hosts' data, remove NEW from this engine, and the temporary files."""
    return bed_cleanup(state_home, work, phases, also=remove_new)


def targets(report):
    complete = [run['complete'] for side in ('ours', 'baseline') for run in report['runs'][side]]
    return dict(median_ratio(report, TARGET_RATIO),
                complete=dict(value=all(complete) if complete else None, met=all(complete) if complete else None))


def missed(report):
    found = report['targets']
    return any(found[key]['met'] is not True for key in ('ratio', 'complete'))


def print_table(report):
    found = report['targets']
    print('\ntx9 upgrade bench: one box on each of two bed hosts (slot %s) moved to a new release; %d run(s) each, '
          'alternating\n' % (report.get('bed', {}).get('slot', '-'), report['args']['runs']))
    print('%-52s %9s  %s' % ('wall seconds', 'median', 'runs'))
    rows = (('baseline: a build on each host, tx9_box on each host', 'baseline'),
            ('ours: build-image.yml (one build, shipped), upgrade.yml', 'ours'))
    for row, side in rows:
        values = [run['seconds'] for run in report['runs'][side]]
        print('%-52s %9s  %s' % (row, fmt(statistics.median(values) if values else None), ' '.join(fmt(v) for v in values)))
    for side in ('baseline', 'ours'):
        for run in report['runs'][side]:
            print('  %s steps (s): %s' % (side, ', '.join(fmt(s) for s in run['steps'])))
    print()
    print_target('ratio ours / baseline (medians)', fmt(found['ratio']['value'], digits=3), '<= %.2f' % TARGET_RATIO,
                 found['ratio']['met'])
    print_check('every box on its host\'s new image (each run)', found['complete'])
    print_closing(report, REPORT_PATH)


def parse_args():
    parser = argparse.ArgumentParser(description='Time a fleet upgrade with image distribution and upgrade.yml against '
                                                 'a build on each host and tx9_box by hand, on two bed hosts.')
    parser.add_argument('--runs', type=int, default=2, help='timed runs of each side (default 2)')
    return parser.parse_args()


def main():
    args = parse_args()
    _lock = begin(LOG_DIR)  # held until the process exits
    report = dict(started=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'), image=IMAGE,
                  new=NEW, args=dict(runs=args.runs), host=dict(cpus=os.cpu_count()), runs=dict(ours=[], baseline=[]),
                  phases={}, problems=[])
    return conduct(report, args, 'tx9-bench-upgrade-', bench, cleanup, targets, print_table, REPORT_PATH, missed)


if __name__ == '__main__':
    sys.exit(main())
