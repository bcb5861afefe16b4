# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""`make bench`, fourth part: moving a box between two hosts with playbooks/migrate.yml, against
the plain manual route, in the same run, at 1 GiB and 4 GiB of /data; and the box's downtime.

It brings up a fleet bed (tests/fleet/bed.py) of two hosts in slot TX9_FLEET_SLOT (default 9,
so a bench leaves the fleet tests' slot 0 alone), prepares both with the host role and loads
the box image, creates one box (bench-mig-box) on the first host and fills its /data with
1 GiB of benchkit's generated mix (half incompressible, half source-like text). Then,
alternating (which side goes first alternates too), --runs times each (default 2), for each
yardstick (route):

* ours: `ansible-playbook -i <bed inventory> playbooks/migrate.yml -i <placement>` with the
  inventory placing the box on the other host. Direct: every variable at its default (the
  strategy is `precopy`, the transfer `auto`, which is direct on the bed). Relayed: the same with
  `-e tx9_migrate_transfer=relay` (the archives go old host -> controller -> new host). Its time
  is the wall time of that one command: the whole move (plan, preflight, the copy while the box
  runs, the quiesced final pass, transfers with the SHA-256 check, staging, promotion, readiness
  gate, doctor, the old copy stopped). Its downtime is the one migrate.yml prints
  (`Box X moved from A to B: downtime N s, ...`: from the old copy's quiesce to the new copy
  resumed); a run whose output lacks that line fails the bench. A run whose archives went
  another way than its route's is reported as a problem. The stopped old copy is removed
  afterwards, outside the timing; the box then lives on the other host, and the next run moves
  it back.
* baseline: the manual route, each step one command as a person would type it, on the
  hosts over SSH: on the host that has the box, `docker run --rm -u root -v VOLUME:/data:ro
  IMAGE tar -cf - -C /data . | gzip | gpg --symmetric` (gpg with --compress-algo none, as
  tx9's own encryption, so gpg does not compress gzip output a second time); the file to the
  other host: direct, `scp` run on the old host (the hosts reach each other with the bed's key,
  as migrate.yml's direct transfer does); relayed, from the controller `ssh OLD cat FILE | ssh
  NEW 'cat > FILE'`; there `docker volume create` (the new box's agent volume, with tx9's
  labels) and `gpg -d | docker run --rm -i -u root -v VOLUME:/data IMAGE tar -xz -C /data`;
  then `ansible-playbook` of one tx9_box task creating the box (a new name) on that volume,
  readiness gate included. Its time is the sum of the five commands' wall times. The
  baseline's box is removed afterwards, outside the timing.

The relayed yardstick runs with --relayed (it doubles the bench's length); without it, it is
NOT MEASURED, which is no failure. Then, unless --skip-4g, the box gets 3 GiB more of the same
mix (4 GiB) and the same alternating runs repeat. That part needs about 16 GiB free on the
disks of the bed and of the work directory once the 1 GiB part is done; without them it is NOT
MEASURED (which is a failure, as a target not met).

After each run, outside the timing, the SHA-256 of every file under the generated directory
is compared (one digest over the sorted list) with the source's. Before each run the machine
settles (benchkit.settle: `sync`, then a wait until the disk is quiet).

Peak memory: while each side runs, every process started for it is sampled every 0.2 s:
the ansible-playbook process and everything below it on the controller, and everything
below each bed host's sshd (the modules, gpg, tar, ssh, docker CLI on the hosts). Each
process's VmHWM (a high-water mark kept by the kernel) is read, so a peak between two
samples is still seen as long as the process lives at one sample. Not counted: the Docker
engines and the containers' processes (the box itself, and the short-lived helper containers
both sides use to read or write a volume).

Targets (medians, per size): downtime at most 10 s at 1 GiB and 12 s at 4 GiB (each route);
the whole move at most 0.8 times the manual route's direct, and at most 1.0 times its relayed;
peak RSS of any process of ours under 200 MB; the moved data identical after every run. It
prints a table with each figure, its target and met or not, writes
.cache/bench/migrate-report.json, keeps every command's output under .cache/bench/migrate-logs/
and exits non-zero when something failed to run or a target was missed. The bed is torn down
(and its host data purged) on exit, also on failure and on SIGTERM. Needs root (the bed).
"""

import argparse
import datetime
import os
import shutil
import statistics
import subprocess
import sys
import time

os.environ.setdefault('TX9_FLEET_SLOT', '9')
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'fleet'))

from benchkit import (  # noqa: E402 (it puts the collection on sys.path first)
    BENCH_DIR, BENCH_SUBDIR, GENERATOR, GIB, REPO_ROOT, BenchError, begin, build_image, conduct, fmt, free_bytes,
    print_closing, print_check, print_target, rounded, settle, timed)
import bed as bedlib  # noqa: E402  pylint: disable=wrong-import-position
from migrate_sides import BOX, ROUTES, Hosts, Sides  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.col_agents.tx9.plugins.module_utils._names import object_names

LOG_DIR = os.path.join(BENCH_DIR, 'migrate-logs')
REPORT_PATH = os.path.join(BENCH_DIR, 'migrate-report.json')

# The sizes of the box's generated data; the 4 GiB part adds 3 GiB of the same mix to the 1 GiB.
SIZES = (('1g', 1 * GIB), ('4g', 4 * GIB))
TITLES = {'1g': '1 GiB', '4g': '4 GiB'}
# Two host engines with the image, the box's data, its archive and a second copy on the other host.
NEEDED_FREE = 12 * GIB
# Once the 1 GiB part is done: 3 GiB more data, and a 4 GiB move's archives and second copy.
GROWN_FREE = 16 * GIB

TARGET_DOWNTIME = {'1g': 10.0, '4g': 12.0}
TARGET_RATIO = {'direct': 0.8, 'relayed': 1.0}
TARGET_RSS_MB = 200.0


# ---- the bench ----------------------------------------------------------------------------


def bench(report, args, state_home, work):
    phases = report['phases']
    if os.geteuid() != 0:
        raise BenchError('the migration bench brings up the fleet bed, which needs root')
    probe = subprocess.run(['docker', 'image', 'inspect', bedlib.IMAGE], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    if probe.returncode != 0:
        timed(phases, 'build_image', build_image, state_home)
    bed = bedlib.Bed(count=2)
    room = [bed.state_dir if os.path.isdir(bed.state_dir) else REPO_ROOT, work]
    free = free_bytes(room)
    report['free_bytes_at_start'] = free
    if free is not None and free < NEEDED_FREE:
        raise BenchError('only %.1f GiB free for the bed; the bench needs about %.0f GiB' % (free / GIB, NEEDED_FREE / GIB))
    hosts = Hosts(bed, state_home)
    report['bed'] = dict(slot=bedlib.SLOT, hosts=[h.name for h in bed.hosts])
    hosts.bed_up(phases, timed)
    timed(phases, 'create_box', hosts.module, 'create-box', bed.hosts[0].name, 'col_agents.tx9.tx9_box',
          'name=%s image=%s' % (BOX, bedlib.IMAGE))
    sides = Sides(hosts, work, report['problems'])
    timed(phases, 'generate_1g', generate, report, sides, '1g', 1, SIZES[0][1])
    timed(phases, 'measure_1g', measure, report, args, sides, '1g')
    free = free_bytes([bed.state_dir, work])
    if args.skip_4g:
        report['grown_skipped'] = 'skipped on request (--skip-4g)'
    elif free is not None and free < GROWN_FREE:
        report['grown_skipped'] = ('only %.1f GiB free on the disks of the bed and %s; the 4 GiB part needs about %.0f GiB'
                                   % (free / GIB, work, GROWN_FREE / GIB))
    else:
        # 3 GiB more of the same mix, on the host that has the box now.
        timed(phases, 'generate_4g', generate, report, sides, '4g', 2, SIZES[1][1] - SIZES[0][1])
        timed(phases, 'measure_4g', measure, report, args, sides, '4g')


def generate(report, sides, key, set_number, size):
    """size more bytes of the generated mix in the box (one more set), and the data's size and digest for key."""
    hosts, host = sides.hosts, sides.ends()[0]
    half = size // 2
    hosts.run('generate-%s' % key, host, 'docker exec -i -u agent "$1" python3 - "$2" "$3" "$4" "$5"',
              object_names(BOX)['agent'], BENCH_SUBDIR, set_number, half, size - half, stdin_text=GENERATOR)
    report['data'][key] = dict(bytes=hosts.data_bytes('data-size-%s' % key, host, BOX),
                               digest=hosts.digest('digest-source-%s' % key, host, BOX))
    sides.expected = report['data'][key]['digest']


def measure(report, args, sides, key):
    """--runs runs of each side for each route measured, alternating (which side goes first alternates too)."""
    routes = ROUTES if args.relayed else ROUTES[:1]
    for index in range(args.runs):
        for route in routes:
            order = (('ours', sides.ours), ('baseline', sides.baseline))
            for side, call in order if index % 2 == 0 else order[::-1]:
                name = '%s_%s_%s_%d' % (side, key, route, index + 1)
                settle(report['phases'], 'settle_' + name)
                report['runs'][key][route][side].append(
                    timed(report['phases'], name, call, name.replace('_', '-'), route))


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


# ---- the targets --------------------------------------------------------------------------


def median_of(values):
    return statistics.median(values) if values else None


def downtime_target(runs, target):
    """The downtimes of ours: median against target (at most), with their spread."""
    values = [run['downtime'] for run in runs]
    median = median_of(values)
    return dict(value=rounded(median), runs=values, min=min(values) if values else None, max=max(values) if values else None,
                spread=rounded(max(values) - min(values)) if values else None, target=target,
                met=None if median is None else median <= target)


def ratio_target(runs, target):
    """The medians of ours and of the manual route, and their ratio against target (at most)."""
    ours, baseline = median_of([run['seconds'] for run in runs['ours']]), median_of([run['seconds'] for run in runs['baseline']])
    ratio = ours / baseline if ours and baseline else None
    return dict(ours=rounded(ours), baseline=rounded(baseline), value=rounded(ratio), target=target,
                met=None if ratio is None else ratio <= target)


def all_runs(report, side):
    return [run for key, _size in SIZES for route in ROUTES for run in report['runs'][key][route][side]]


def targets(report):
    found = {}
    for key, _size in SIZES:
        runs = report['runs'][key]
        found[key] = dict(downtime=dict((route, downtime_target(runs[route]['ours'], TARGET_DOWNTIME[key])) for route in ROUTES),
                          ratio=dict((route, ratio_target(runs[route], TARGET_RATIO[route])) for route in ROUTES))
    peaks = [max(run['rss_mb'].values() or [0]) for run in all_runs(report, 'ours')]
    rss = max(peaks) if peaks else None
    found['rss'] = dict(value=rss, target=TARGET_RSS_MB, met=None if rss is None else rss < TARGET_RSS_MB)
    complete = [run['complete'] for side in ('ours', 'baseline') for run in all_runs(report, side)]
    found['complete'] = dict(value=all(complete) if complete else None, met=all(complete) if complete else None)
    return found


def asked(report):
    """The (size, route) parts the run was asked to measure."""
    sizes = ['1g'] + ([] if report['args']['skip_4g'] else ['4g'])
    routes = list(ROUTES if report['args']['relayed'] else ROUTES[:1])
    return [(key, route) for key in sizes for route in routes]


def missed(report):
    """True when a target was missed, or not measured without being asked to leave it out."""
    found = report['targets']
    checks = [found['rss']['met'], found['complete']['met']]
    for key, route in asked(report):
        checks += [found[key]['downtime'][route]['met'], found[key]['ratio'][route]['met']]
    return any(met is not True for met in checks)


# ---- output -------------------------------------------------------------------------------

ROWS = {'direct': ('tar|gzip|gpg, scp, gpg -d|tar -x, tx9_box', 'migrate.yml'),
        'relayed': ('tar|gzip|gpg, ssh cat | ssh cat, ...', 'migrate.yml transfer=relay')}


def print_runs(report, key):
    """The wall seconds of each route's sides at one size, the baseline's steps and ours' downtimes."""
    for route in ROUTES:
        runs = report['runs'][key][route]
        if not runs['ours'] and not runs['baseline']:
            continue
        for side, row in zip(('baseline', 'ours'), ROWS[route]):
            values = [run['seconds'] for run in runs[side]]
            print('%-62s %9s  %s' % ('%s %s: %s' % (TITLES[key], side, row), fmt(median_of(values)), ' '.join(fmt(v) for v in values)))
        for run in runs['baseline']:
            print('  baseline %s steps (s): %s' % (run['direction'], ', '.join(fmt(s) for s in run['steps'])))
        for run in runs['ours']:
            print('  ours %s: downtime %s s, %s %s transfer, %d tasks'
                  % (run['direction'], fmt(run['downtime'], digits=1), run['strategy'], run['transfer'], run['tasks']))


def print_targets(report):
    found = report['targets']
    for key, _size in SIZES:
        for route in ROUTES:
            item = found[key]['downtime'][route]
            print_target('downtime %s %s (median; spread %s)' % (TITLES[key], route, fmt(item['spread'], ' s', 1)),
                         fmt(item['value'], ' s', 1), '<= %.0f s' % item['target'], item['met'])
    for key, _size in SIZES:
        for route in ROUTES:
            item = found[key]['ratio'][route]
            print_target('move / manual, %s %s (medians)' % (TITLES[key], route), fmt(item['value'], digits=3),
                         '<= %.2f' % item['target'], item['met'])
    print_target('peak RSS of any process of migrate.yml', fmt(found['rss']['value'], ' MB', 1), '< %.0f MB' % TARGET_RSS_MB,
                 found['rss']['met'])
    print_check('moved data identical (SHA-256, each run)', found['complete'])


def print_table(report):
    print('\ntx9 migrate bench: a box moved between two bed hosts (slot %s) with migrate.yml and by the manual route; '
          '%d run(s) each, alternating\n' % (report.get('bed', {}).get('slot', '-'), report['args']['runs']))
    for key, _size in SIZES:
        if key in report['data']:
            print('  data %s: %s in /data' % (TITLES[key], fmt(report['data'][key]['bytes'] / GIB, ' GiB')))
    print('\n%-62s %9s  %s' % ('wall seconds', 'median', 'runs'))
    for key, _size in SIZES:
        print_runs(report, key)
    print()
    print_targets(report)
    for side in ('ours', 'baseline'):
        merged = {}
        for run in all_runs(report, side):
            for comm, value in run['rss_mb'].items():
                merged[comm] = max(merged.get(comm, 0), value)
        top = sorted(merged.items(), key=lambda item: -item[1])[:8]
        print('(%s: peak RSS per command, MB: %s)' % (side, ', '.join('%s %.1f' % item for item in top) or '-'))
    if not report['args']['relayed']:
        print('\nNOT MEASURED the relayed yardstick: not asked for (--relayed)')
    if report.get('grown_skipped'):
        print('\nNOT MEASURED the 4 GiB part: %s' % report['grown_skipped'])
    print_closing(report, REPORT_PATH)


def parse_args():
    parser = argparse.ArgumentParser(description='Time migrate.yml against the manual tar|gzip|gpg, scp, gpg -d|tar -x, tx9_box '
                                                 'route between two bed hosts at 1 and 4 GiB, with its downtime and peak memory.')
    parser.add_argument('--runs', type=int, default=2, help='timed runs of each side, per route and size (default 2)')
    parser.add_argument('--skip-4g', action='store_true', help='leave out the 4 GiB part (reported as NOT MEASURED)')
    parser.add_argument('--relayed', action='store_true',
                        help='also time the relayed yardstick: transfer=relay against ssh cat | ssh cat through the controller')
    return parser.parse_args()


def main():
    args = parse_args()
    _lock = begin(LOG_DIR)  # held until the process exits
    report = dict(started=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'), box=BOX, image=bedlib.IMAGE,
                  args=dict(runs=args.runs, skip_4g=args.skip_4g, relayed=args.relayed), host=dict(cpus=os.cpu_count()), data={},
                  runs=dict((key, dict((route, dict(ours=[], baseline=[])) for route in ROUTES)) for key, _size in SIZES),
                  phases={}, problems=[])
    return conduct(report, args, 'tx9-bench-migrate-', bench, cleanup, targets, print_table, REPORT_PATH, missed)


if __name__ == '__main__':
    sys.exit(main())
