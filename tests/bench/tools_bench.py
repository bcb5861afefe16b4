# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""`make bench`, seventh part: a new Codex on two boxes, pinned per box with tx9_tools against a new
box image carrying it, on this machine's engine.

It makes two boxes (bench-tools-a, bench-tools-b) on the box image (IMAGE) and asks npm, inside the
first box, for the released versions of Codex: stable x.y.z below the image's own, the newest first.
Each run takes two of them, one per side, so no side ever installs or builds a version that npm or
Docker has seen in this run. Alternating (which side goes first alternates too, and the machine
settles before each: `sync`, then a wait until the disk is quiet), --runs times each:

* ours: `playbooks/tools.yml -e tx9_hosts=localhost -e '{"tx9_tools": {"codex": NEW},
  "tx9_tools_boxes": [both boxes]}'`: tx9_tools installs the pinned Codex from npm onto each box's
  volume, staged, verified and swapped, the boxes of the host at once.
* yardstick, the image route: a copy of the collection whose assets/box.env says
  CODEX_VERSION=NEW; its `playbooks/build-image.yml -e tx9_hosts=localhost -e tx9_host_ready=true
  -e tx9_box_image=TAG` builds TAG (box.env is copied early in the Dockerfile, so every step after
  it runs again, as it would for a real pin change), then `playbooks/upgrade.yml -e tx9_hosts=localhost
  -e tx9_upgrade_image=TAG` with both boxes: per box a verified backup, the recreate on TAG, the
  readiness gate and tx9_doctor. Its time is the build's and the upgrade's.

After each run, outside the timing, `codex --version` as agent in each box must report NEW: from
the box install for ours, from the image's copy (and both containers on TAG) for the yardstick.
Then every box goes back: no box install, IMAGE again, the image's Codex answering; TAG and the
backups are removed.

It prints a table, writes .cache/bench/tools-report.json, keeps every command's output (and the
image build log of each yardstick run) under .cache/bench/tools-logs/ and exits non-zero when
something failed to run or a target was missed. The boxes, the built images and the temporary
files are removed on exit, also on failure and on SIGTERM.
"""

import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

from benchkit import (  # noqa: E402 (it puts the collection on sys.path first)
    BENCH_DIR, GIB, IMAGE_TIMEOUT, PLAY_DIR, REPO_ROOT, TX9_BIN, BenchError, ansible_env, begin, bench_image,
    build_image, checked, conduct, create_box, docker_root, fmt, free_bytes, median_ratio, print_closing,
    print_check, print_target, rounded, settle, timed, tx9_box_absent, write_file)

from ansible_collections.col_agents.tx9.plugins.module_utils._names import object_names
from ansible_collections.col_agents.tx9.plugins.module_utils._version import IMAGE_REPOSITORY

LOG_DIR = os.path.join(BENCH_DIR, 'tools-logs')
REPORT_PATH = os.path.join(BENCH_DIR, 'tools-report.json')

PREFIX = 'bench-tools-'
BOXES = (PREFIX + 'a', PREFIX + 'b')
NAMES = dict((box, object_names(box)) for box in BOXES)
# The yardstick's image of each run; every tag of this repository starting so is the bench's.
TAG_PREFIX = '%s:bench-tools-codex-' % IMAGE_REPOSITORY
TOOLS_PLAYBOOK = os.path.join(REPO_ROOT, 'playbooks', 'tools.yml')
TOOLS_ROOT = '/data/home/agent/.local/share/tx9/tools/'
PASSWORD = 'tx9-bench-tools-passphrase'
STABLE = re.compile(r'^\d+\.\d+\.\d+$')
TARGET_RATIO = 0.25
# One more box image (about 2.6 GB), its build's containers, the backups.
NEEDED_FREE = 10 * GIB
# What a copy of the collection leaves out of this checkout.
NOT_COPIED = shutil.ignore_patterns('.git', '.venv', '.venv-*', '.cache', 'tests', '__pycache__', '*.pyc')

RESET_PLAY = '''---
- name: Put the bench's boxes back
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Remove the box install of Codex
      col_agents.tx9.tx9_tools:
        name: "{{ item }}"
        tools:
          codex:
        state: absent
      loop: "{{ bench_boxes }}"

    - name: Run each box on the bench's image again
      col_agents.tx9.tx9_box:
        name: "{{ item }}"
        image: "{{ bench_image }}"
      loop: "{{ bench_boxes }}"
'''

# Asks npm with a cache of its own, removed after, so the agent's npm cache holds nothing of Codex.
VERSIONS = 'npm view @openai/codex versions --json --cache "$1"; rc=$?; rm -rf "$1"; exit $rc'


def version_key(version):
    return tuple(int(part) for part in version.split('.'))


def codex_seen(box, label):
    """Where `codex` is on the agent's PATH in box, and the version it reports, as agent."""
    output = checked(label, ['docker', 'exec', '-u', 'agent', NAMES[box]['agent'], 'sh', '-c',
                             'command -v codex && codex --version'])[1]
    lines = output.strip().splitlines()
    if len(lines) < 2:
        raise BenchError('%s: no codex answered in %s: %s' % (label, box, output.strip()[-300:]))
    return dict(path=lines[0].strip(), version=lines[-1].split()[-1])


def pick_versions(image_version, count):
    """count released versions of Codex below image_version, the newest first, as npm lists them."""
    output = checked('npm-versions', ['docker', 'exec', '-u', 'agent', NAMES[BOXES[0]]['agent'], 'sh', '-c', VERSIONS,
                                      'versions', '/tmp/tx9-bench-npm-view'])[1]
    try:
        listed = json.loads(output[output.index('['):])
    except ValueError as exc:
        raise BenchError('npm listed no versions of Codex: %s' % output.strip()[-300:]) from exc
    below = sorted((v for v in listed if STABLE.match(v) and version_key(v) < version_key(image_version)),
                   key=version_key, reverse=True)
    if len(below) < count:
        raise BenchError('npm lists %d released versions of Codex below %s; %d runs need %d'
                         % (len(below), image_version, count // 2, count))
    return below[:count]


def release(work, version):
    """A copy of this collection whose box.env pins Codex at version; its collections path and tree."""
    root = os.path.join(work, 'release-%s' % version)
    tree = os.path.join(root, 'ansible_collections', 'col_agents', 'tx9')
    shutil.copytree(REPO_ROOT, tree, ignore=NOT_COPIED, symlinks=True)
    env_path = os.path.join(tree, 'assets', 'box.env')
    with open(env_path) as handle:
        text = handle.read()
    pinned, found = re.subn(r'(?m)^CODEX_VERSION=.*$', 'CODEX_VERSION=%s' % version, text)
    if found != 1:
        raise BenchError('assets/box.env has no CODEX_VERSION line to change')
    write_file(env_path, pinned)
    return root, tree


def quiet(argv):
    return subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False).returncode


def image_id(reference):
    proc = subprocess.run(['docker', 'image', 'inspect', '-f', '{{.Id}}', reference], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, universal_newlines=True, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else None


def container_image(container):
    proc = subprocess.run(['docker', 'container', 'inspect', '-f', '{{.Image}}', container], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, universal_newlines=True, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else None


def bench_tags():
    """Every tag a run of this bench built that the engine still has."""
    proc = subprocess.run(['docker', 'images', '--format', '{{.Repository}}:{{.Tag}}', IMAGE_REPOSITORY],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True, check=False)
    return [tag for tag in proc.stdout.split() if tag.startswith(TAG_PREFIX)]


class Sides(object):
    def __init__(self, state_home, work, image, image_codex):
        self.state_home = state_home
        self.work = work
        self.image = image
        self.image_codex = image_codex
        self.backups = os.path.join(work, 'backups')
        os.makedirs(PLAY_DIR, exist_ok=True)
        self.reset_play = write_file(os.path.join(PLAY_DIR, 'tools-bench-reset.yml'), RESET_PLAY)

    def ansible_playbook(self, label, argv, env=None, timeout=IMAGE_TIMEOUT):
        return checked(label, [os.path.join(TX9_BIN, 'ansible-playbook')] + argv, env or ansible_env(self.state_home),
                       None, timeout)[0]

    def ours(self, label, version):
        pins = json.dumps(dict(tx9_tools=dict(codex=version), tx9_tools_boxes=list(BOXES)))
        seconds = self.ansible_playbook(label + '-tools', [TOOLS_PLAYBOOK, '-e', 'tx9_hosts=localhost', '-e', pins])
        run = dict(version=version, seconds=rounded(seconds), steps=dict(tools=rounded(seconds)), seen={}, complete=True)
        for box in BOXES:
            seen = run['seen'][box] = codex_seen(box, '%s-codex-%s' % (label, box))
            run['complete'] = run['complete'] and seen['version'] == version and seen['path'].startswith(TOOLS_ROOT)
        self.reset(label)
        return run

    def baseline(self, label, version):
        tag = TAG_PREFIX + version
        root, tree = release(self.work, version)
        build = self.ansible_playbook(label + '-build-image', [
            os.path.join(tree, 'playbooks', 'build-image.yml'), '-e', 'tx9_hosts=localhost', '-e', 'tx9_host_ready=true',
            '-e', 'tx9_box_image=%s' % tag], ansible_env(self.state_home, dict(ANSIBLE_COLLECTIONS_PATH=root)))
        shutil.rmtree(root, ignore_errors=True)
        upgrade = self.ansible_playbook(label + '-upgrade', [
            os.path.join(REPO_ROOT, 'playbooks', 'upgrade.yml'), '-e', 'tx9_hosts=localhost',
            '-e', 'tx9_upgrade_image=%s' % tag, '-e', json.dumps(dict(tx9_upgrade_boxes=list(BOXES))),
            '-e', 'tx9_upgrade_backup_dest=%s' % self.backups, '-e', 'tx9_upgrade_backup_password=%s' % PASSWORD])
        run = dict(version=version, seconds=rounded(build + upgrade), steps=dict(build=rounded(build), upgrade=rounded(upgrade)),
                   cached_steps=self.keep_build_log(label), seen={}, complete=True)
        wanted = image_id(tag)
        for box in BOXES:
            seen = run['seen'][box] = codex_seen(box, '%s-codex-%s' % (label, box))
            running = set(container_image(NAMES[box][role]) for role in ('agent', 'executor'))
            seen['on_tag'] = wanted is not None and running == set([wanted])
            run['complete'] = (run['complete'] and seen['on_tag'] and seen['version'] == version
                               and not seen['path'].startswith(TOOLS_ROOT))
        self.reset(label, tag)
        return run

    def keep_build_log(self, label):
        """Move the run's image build log into the bench's logs; the build steps Docker's cache held."""
        logs = os.path.join(self.state_home, 'logs')
        cached = 0
        for name in sorted(os.listdir(logs)) if os.path.isdir(logs) else ():
            if name.startswith('image-build-'):
                kept = os.path.join(LOG_DIR, '%s-%s' % (label, name))
                shutil.move(os.path.join(logs, name), kept)
                with open(kept, errors='replace') as handle:
                    cached += handle.read().count('Using cache')
        return cached

    def reset(self, label, tag=None):
        """No box install, every box on the bench's image, the image's Codex answering; tag and backups gone."""
        self.ansible_playbook(label + '-reset', [self.reset_play, '-e', json.dumps(dict(
            bench_boxes=list(BOXES), bench_image=self.image))])
        if tag is not None:
            quiet(['docker', 'image', 'rm', tag])
            if image_id(tag) is not None:
                raise BenchError('%s: the image %s could not be removed' % (label, tag))
        shutil.rmtree(self.backups, ignore_errors=True)
        for box in BOXES:
            seen = codex_seen(box, '%s-reset-codex-%s' % (label, box))
            if seen['version'] != self.image_codex or seen['path'].startswith(TOOLS_ROOT):
                raise BenchError('%s: after the reset %s runs codex %s from %s, not the image\'s %s'
                                 % (label, box, seen['version'], seen['path'], self.image_codex))


def prepare(report, state_home, work):
    """The bench image, room on the disks, nothing left of an earlier run, both boxes; the image's Codex."""
    phases = report['phases']
    image = bench_image()
    if image_id(image) is None:
        timed(phases, 'build_image', build_image, state_home)
    free = free_bytes([docker_root(), work])
    report['free_bytes_at_start'] = free
    if free is not None and free < NEEDED_FREE:
        raise BenchError('only %.1f GiB free on the disks of Docker and %s; the bench needs about %.0f GiB'
                         % (free / GIB, work, NEEDED_FREE / GIB))
    remove_leftovers()
    for box in BOXES:
        timed(phases, 'create_%s' % box, create_box, state_home, box, 'tools-bench-box.yml',
              'The tools bench box %s' % box, 'create-%s' % box)
    seen = codex_seen(BOXES[0], 'image-codex')
    if seen['path'].startswith(TOOLS_ROOT):
        raise BenchError('the new box %s has a box install of Codex already' % BOXES[0])
    return image, seen['version']


def bench(report, args, state_home, work):
    phases = report['phases']
    image, image_codex = prepare(report, state_home, work)
    versions = pick_versions(image_codex, 2 * args.runs)
    report.update(image=image, image_codex=image_codex, versions=versions)
    sides = Sides(state_home, work, image, image_codex)
    for index in range(args.runs):
        wanted = dict(ours=versions[2 * index], baseline=versions[2 * index + 1])
        order = (('ours', sides.ours), ('baseline', sides.baseline))
        for side, call in order if index % 2 == 0 else order[::-1]:
            settle(phases, 'settle_%s_%d' % (side, index + 1))
            label = '%s-%d' % (side, index + 1)
            report['runs'][side].append(timed(phases, '%s_%d' % (side, index + 1), call, label, wanted[side]))


def remove_leftovers():
    """The bench's boxes and images by name, whatever state a run left them in."""
    for box in BOXES:
        names = NAMES[box]
        quiet(['docker', 'rm', '-f', names['agent'], names['executor'], names['egress']])
        quiet(['docker', 'volume', 'rm', '-f', names['agent_volume'], names['executor_volume']])
        quiet(['docker', 'network', 'rm', names['network'], names['egress_network']])
    for tag in bench_tags():
        quiet(['docker', 'image', 'rm', tag])


def cleanup(state_home, work, phases):
    """Both boxes the tx9 way, then by name whatever is left, the built images, the temporary files."""
    problems = []
    started = time.perf_counter()
    for box in BOXES:
        try:
            tx9_box_absent(state_home, box, 'cleanup-%s' % box)
        except BenchError as exc:
            problems.append(str(exc))
    remove_leftovers()
    left = bench_tags()
    if left:
        problems.append('could not remove the images %s' % ', '.join(left))
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(state_home, ignore_errors=True)
    phases['cleanup'] = rounded(time.perf_counter() - started)
    return problems


def spread(report, side):
    values = [run['seconds'] for run in report['runs'][side]]
    return rounded(max(values) - min(values)) if values else None


def targets(report):
    complete = [run['complete'] for side in ('ours', 'baseline') for run in report['runs'][side]]
    return dict(median_ratio(report, TARGET_RATIO), spread=dict(ours=spread(report, 'ours'), baseline=spread(report, 'baseline')),
                complete=dict(value=all(complete) if complete else None, met=all(complete) if complete else None))


def missed(report):
    found = report['targets']
    return any(found[key]['met'] is not True for key in ('ratio', 'complete'))


def print_table(report):
    found = report['targets']
    print('\ntx9 tools bench: a new Codex on boxes %s (image %s, its Codex %s); %d run(s) each, alternating\n'
          % (', '.join(BOXES), report.get('image', '-'), report.get('image_codex', '-'), report['args']['runs']))
    print('%-52s %9s %7s  %s' % ('wall seconds', 'median', 'spread', 'runs'))
    rows = (('yardstick: build-image.yml (new pin), upgrade.yml', 'baseline'),
            ('ours: tools.yml (tx9_tools, both boxes at once)', 'ours'))
    for row, side in rows:
        values = [run['seconds'] for run in report['runs'][side]]
        print('%-52s %9s %7s  %s' % (row, fmt(statistics.median(values) if values else None), fmt(found['spread'][side]),
                                     ' '.join(fmt(v) for v in values)))
    for side in ('baseline', 'ours'):
        for run in report['runs'][side]:
            steps = ', '.join('%s %s' % (name, fmt(value)) for name, value in run['steps'].items())
            cached = '; build steps from cache: %d' % run['cached_steps'] if 'cached_steps' in run else ''
            print('  %s codex %s: %s%s' % ('yardstick' if side == 'baseline' else side, run['version'], steps, cached))
    print()
    print_target('ratio ours / yardstick (medians)', fmt(found['ratio']['value'], digits=3), '<= %.2f' % TARGET_RATIO,
                 found['ratio']['met'])
    print_check('every box reports the new Codex (each run)', found['complete'])
    print_closing(report, REPORT_PATH)


def parse_args():
    parser = argparse.ArgumentParser(description='Time a new Codex on two boxes pinned with tx9_tools against a new box '
                                                 'image built with it and upgrade.yml.')
    parser.add_argument('--runs', type=int, default=3, help='timed runs of each side (default 3)')
    return parser.parse_args()


def main():
    args = parse_args()
    _lock = begin(LOG_DIR)  # held until the process exits
    report = dict(started=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'), boxes=list(BOXES),
                  args=dict(runs=args.runs), host=dict(cpus=os.cpu_count()), runs=dict(ours=[], baseline=[]),
                  phases={}, problems=[])
    return conduct(report, args, 'tx9-bench-tools-', bench, cleanup, targets, print_table, REPORT_PATH, missed)


if __name__ == '__main__':
    sys.exit(main())
