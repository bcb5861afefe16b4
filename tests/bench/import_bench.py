# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""`make bench`, third part: what a tx9_import costs, against decrypting and untarring by hand.

A source box (bench-imp-src) gets 1 GiB of generated /data, the same mix as
the backup bench's (benchkit's generator: half incompressible, half text), and
the real tx9_backup module makes one encrypted archive of it (passphrase as a
module argument). The source box is removed before anything is timed. Then, in
one run, on the same engine, alternating (which side goes first alternates
too), --runs times each:

* ours: col_agents.tx9.tx9_import through ansible-playbook, importing that
  archive as a new box with a fresh random name. Its time is the wall time of
  its task: validation, the payload's way into the volume, the promotion, the
  box's creation and the readiness gate. Its peak RSS is measured as the
  backup bench measures tx9_backup's (benchkit.measure_module).
* baseline: `docker volume create` of the new box's agent volume (with the
  box's labels), then `gpg --batch --pinentry-mode loopback --passphrase-fd 0
  --decrypt PAYLOAD | docker run --rm -i ... IMAGE tar -xz -C /data` (gpg on
  the host with a fresh home, the box image's tar as root into the volume),
  then a tx9_box task creating the box on that volume (state=present, a new
  box, readiness gate included). Its time is the wall time of the volume and
  the pipeline plus the wall time of the tx9_box task. The payload is taken
  out of the archive with `tar -xOf` before, outside the timing.

Both tasks run under the same measuring interpreter wrapper, so each pays the
same one extra Python start-up. Before each run, outside the timing, the
machine settles (benchkit.settle: `sync`, then a wait until the disk is quiet),
so neither side pays for the other's data. After each run, outside the timing, the new
box's /data/home/agent/bench is counted (entries, files, bytes of the files)
and compared with the source box's; then the box is removed (tx9_box
state=absent, then whatever is left by its labels).

With 3 GiB more of the same mix (4 GiB; leave it out with --skip-4g), one
more archive is made and the same alternating runs repeat, to show that the
import's memory does not grow with the data. That part needs about 16 GiB
free; without them it is NOT MEASURED (which is no pass).

It prints a table (with the numbers the import returns: members, and any
dropped mode bits or timings the result carries), writes
.cache/bench/import-report.json, keeps every command's output under
.cache/bench/import-logs/ and exits non-zero when something failed to run or
a target was missed (NOT MEASURED counts as missed unless asked for with
--skip-4g). Every box and temporary file is removed on exit, also on failure
and on SIGTERM.
"""

import argparse
import datetime
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchkit import (  # noqa: E402 (it puts the collection on sys.path first)
    BENCH_DIR, BENCH_SUBDIR, GIB, MB, begin, bench_image, BenchError, build_and_check_room, checked,
    conduct, create_box, data_size, docker_remove_box, docker_root, fmt, free_bytes, generate, last_error,
    measure_module, print_closing, print_check, print_target, rounded, settle, spread, timed, tx9_box_absent, write_timed_play, write_wrapper)

from ansible_collections.col_agents.tx9.plugins.module_utils._names import (
    LABEL_BOX, ROLE_AGENT, box_labels, object_names)

LOG_DIR = os.path.join(BENCH_DIR, 'import-logs')
REPORT_PATH = os.path.join(BENCH_DIR, 'import-report.json')

# Every box this bench makes starts with PREFIX, so a killed run's leftovers are found by name.
PREFIX = 'bench-imp-'
SOURCE = PREFIX + 'src'
SOURCE_NAMES = object_names(SOURCE)
PASSWORD = 'tx9-bench-passphrase'

SIZES = (('1g', 1 * GIB), ('4g', 4 * GIB))
# Free space the parts need on the disks of Docker and of the archives: the source
# data, the archives, a backup's staging copy, the payload taken out for the
# baseline and one imported box, with margin.
BASE_FREE = 6 * GIB
GROWN_FREE = 16 * GIB

TARGET_RATIO = 1.0
TARGET_RSS_MB = 200.0
# RSS "does not grow" from 1 GiB to 4 GiB when it grows by at most this much (noise).
RSS_NOISE_MB = 10.0
RSS_NOISE_FRACTION = 0.10

# Counted in the new box as in the source: entries, regular files, bytes of the files.
COUNT = ("find %s -printf '%%y %%s\\n' | awk '{n++} $1 == \"f\" {f++; s += $2} END {printf \"%%d %%d %%.0f\\n\", n, f, s}'"
         % BENCH_SUBDIR)

# The baseline's pipeline: gpg on the host, the box image's tar as root into the volume.
PIPELINE = r'''
set -o pipefail
gpg --homedir "$1" --batch --quiet --pinentry-mode loopback --passphrase-fd 0 --decrypt "$2" \
    | docker run --rm -i --network none --security-opt no-new-privileges -u root --entrypoint tar \
        -v "$3:/data" "$4" -xz -C /data
'''


# ---- boxes ------------------------------------------------------------------------------------


def new_name():
    return PREFIX + secrets.token_hex(4)


def docker_lines(argv):
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True, check=False)
    return [line.strip() for line in proc.stdout.splitlines() if line.strip()]


def docker_remove_labelled(box):
    """Every container (the restore helper too), volume and network labelled as box's, and the named ones."""
    label = 'label=%s=%s' % (LABEL_BOX, box)
    containers = docker_lines(['docker', 'ps', '-aq', '--filter', label])
    if containers:
        subprocess.run(['docker', 'rm', '-f'] + containers, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    docker_remove_box(object_names(box))
    for kind in ('volume', 'network'):
        names = docker_lines(['docker', kind, 'ls', '-q', '--filter', label])
        if names:
            subprocess.run(['docker', kind, 'rm'] + names, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def leftover_boxes():
    """Boxes of this bench that a killed earlier run left behind (by their labels)."""
    found = set()
    template = '{{.Label "%s"}}' % LABEL_BOX
    for argv in (['docker', 'ps', '-a', '--filter', 'label=' + LABEL_BOX, '--format', template],
                 ['docker', 'volume', 'ls', '--filter', 'label=' + LABEL_BOX, '--format', template],
                 ['docker', 'network', 'ls', '--filter', 'label=' + LABEL_BOX, '--format', template]):
        found.update(name for name in docker_lines(argv) if name.startswith(PREFIX))
    return sorted(found)


def remove_box(state_home, box, label):
    """The tx9 way, then by labels whatever is left; a problem is returned, never raised."""
    problem = None
    try:
        tx9_box_absent(state_home, box, label)
    except BenchError as exc:
        problem = str(exc)
    docker_remove_labelled(box)
    return problem


def count_data(box, label):
    """(entries, files, bytes of the files) under the bench's directory in box's /data."""
    output = checked(label, ['docker', 'exec', '-u', 'root', object_names(box)['agent'], 'sh', '-c', COUNT])[1]
    return [int(word) for word in output.split()[-3:]]


# ---- the archives -------------------------------------------------------------------------


class Archives(object):
    """The source box, its data, and the archives tx9_backup makes of it."""

    def __init__(self, state_home, work, wrapper):
        self.state_home = state_home
        self.work = work
        self.wrapper = wrapper
        self.play = write_timed_play('import-bench-backup.yml', 'One tx9_backup of the import bench source box',
                                     'Back up the source box', 'col_agents.tx9.tx9_backup',
                                     (('name', 'bench_box'), ('dest', 'bench_dest'), ('password', 'bench_password')))

    def make(self, key, size, set_number):
        """Add size bytes of the mix to the source's /data, then back it up; the archive's facts."""
        seconds, blobs, files = generate(SOURCE_NAMES['agent'], 'generate-%s' % key, set_number, size)
        data = dict(generate_seconds=rounded(seconds), blobs=blobs, text_files=files)
        data['bytes'], data['entries'] = data_size(SOURCE_NAMES['agent'], label='data-size-%s' % key)
        data['expected'] = count_data(SOURCE, 'count-source-%s' % key)
        dest = os.path.join(self.work, 'archive-%s' % key)
        os.makedirs(dest)
        measured = measure_module('backup-%s' % key, self.play, dict(bench_box=SOURCE, bench_dest=dest, bench_password=PASSWORD),
                                  self.state_home, self.work, self.wrapper)
        result = measured['result']
        if result.get('failed') or not result.get('path'):
            raise BenchError('backup-%s: tx9_backup returned no archive: %s' % (key, last_error(measured['output'])))
        data.update(archive=result['path'], archive_size=os.path.getsize(result['path']), backup_members=result.get('members'),
                    backup_seconds=rounded(result['task_seconds']), payload=self.payload_name(key, result['path']))
        return data

    @staticmethod
    def payload_name(key, path):
        try:
            metadata = json.loads(checked('metadata-%s' % key, ['tar', '-xOf', path, 'metadata.json'])[1])
            return metadata['payload']
        except (ValueError, KeyError, TypeError) as exc:
            raise BenchError('the archive %s has no readable metadata.json naming its payload' % path) from exc


# ---- the two sides ------------------------------------------------------------------------


class Sides(object):
    """One import (ours) and one by-hand restore (baseline) of one archive, each as one new box."""

    def __init__(self, state_home, work, wrapper, problems):
        self.state_home = state_home
        self.work = work
        self.wrapper = wrapper
        self.problems = problems
        self.made = set()
        self.import_play = write_timed_play('import-bench-import.yml', 'One timed tx9_import of the bench archive',
                                            'Import the archive as a new box', 'col_agents.tx9.tx9_import',
                                            (('path', 'bench_path'), ('name', 'bench_box'), ('password', 'bench_password'),
                                             ('image', 'bench_image')))
        self.box_play = write_timed_play('import-bench-box.yml', "One timed tx9_box create on the baseline's volume",
                                         'Create the box on the restored volume', 'col_agents.tx9.tx9_box',
                                         (('name', 'bench_box'), ('image', 'bench_image')))

    def ours(self, label, data):
        box = new_name()
        self.made.add(box)
        try:
            options = dict(bench_path=data['archive'], bench_box=box, bench_password=PASSWORD, bench_image=bench_image())
            measured = measure_module(label, self.import_play, options, self.state_home, self.work, self.wrapper)
            result = measured['result']
            run = dict(box=box, seconds=result['task_seconds'], play_seconds=measured['play_seconds'], load_before=measured['load_before'],
                       module_process_seconds=measured['module_process_seconds'], members=result.get('members'),
                       noted=noted(result), actions=result.get('actions'))
            run.update((key, measured[key]) for key in ('rss_mb', 'maxrss_mb', 'module_hwm_mb', 'gpg_hwm_mb', 'gpg_processes'))
            run['restored'] = self.compare(box, label, data)
            return run
        finally:
            self.remove(box, label)

    def baseline(self, label, data):
        box = new_name()
        self.made.add(box)
        names = object_names(box)
        home = tempfile.mkdtemp(prefix='gnupg-', dir=self.work)
        labels = []
        for key, value in sorted(box_labels(box, ROLE_AGENT).items()):
            labels += ['--label', '%s=%s' % (key, value)]
        try:
            load = os.getloadavg()[0]
            started = time.perf_counter()
            checked(label + '-volume', ['docker', 'volume', 'create'] + labels + [names['agent_volume']])
            checked(label + '-pipeline', ['bash', '-c', PIPELINE, 'pipeline', home, data['payload_file'], names['agent_volume'],
                                          bench_image()], stdin_text=PASSWORD + '\n')
            pipeline = time.perf_counter() - started
            measured = measure_module(label + '-box', self.box_play, dict(bench_box=box, bench_image=bench_image()), self.state_home, self.work, self.wrapper)
            task = measured['result']['task_seconds']
            run = dict(box=box, seconds=pipeline + task, pipeline_seconds=pipeline, box_task_seconds=task, load_before=rounded(load, 2),
                       box_rss_mb=measured['rss_mb'])
            run['restored'] = self.compare(box, label, data)
            return run
        finally:
            subprocess.run(['gpgconf', '--homedir', home, '--kill', 'gpg-agent'], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=False)
            shutil.rmtree(home, ignore_errors=True)
            self.remove(box, label)

    @staticmethod
    def compare(box, label, data):
        found = count_data(box, label + '-count')
        return dict(complete=found == data['expected'], found=found)

    def remove(self, box, label):
        problem = remove_box(self.state_home, box, label + '-remove')
        if problem:
            self.problems.append(problem)
        else:
            self.made.discard(box)


def noted(result):
    """What the import's result says beyond the box: members, dropped mode bits, timings (whatever it carries)."""
    found = {}

    def walk(value, path):
        if isinstance(value, dict):
            for key, item in value.items():
                lowered = key.lower()
                where = path + [key]
                if key != 'task_seconds' and any(word in lowered for word in ('dropped', 'mode_bits', 'duration', 'timing',
                                                                              'seconds', 'phases')):
                    found['.'.join(where)] = item
                elif where[0] not in ('box', 'invocation', 'diff'):
                    walk(item, where)

    walk(result, [])
    if 'members' in result:
        found['members'] = result['members']
    return found


# ---- the bench ----------------------------------------------------------------------------


def bench(report, args, state_home, work):
    phases = report['phases']
    build_and_check_room(report, state_home, work, BASE_FREE)
    # Start from nothing: a killed earlier run may have left boxes behind.
    for box in leftover_boxes():
        docker_remove_labelled(box)
    wrapper = write_wrapper(work)
    archives = Archives(state_home, work, wrapper)
    timed(phases, 'create_source', create_box, state_home, SOURCE, 'import-bench-source.yml', "The import bench's source box")
    report['data']['1g'] = timed(phases, 'archive_1g', archives.make, '1g', SIZES[0][1], 1)
    free = free_bytes([docker_root(), work])
    if args.skip_4g:
        report['grown_skipped'] = 'skipped on request (--skip-4g)'
    elif free is not None and free < GROWN_FREE:
        report['grown_skipped'] = ('only %.1f GiB free on the disks of Docker and %s; the 4 GiB part needs about %.0f GiB'
                                   % (free / GIB, work, GROWN_FREE / GIB))
    else:
        # 3 GiB more of the same mix: the 4 GiB archive holds the 1 GiB part too.
        report['data']['4g'] = timed(phases, 'archive_4g', archives.make, '4g', SIZES[1][1] - SIZES[0][1], 2)
    # Nothing but the timed sides runs while they are timed.
    problem = remove_box(state_home, SOURCE, 'remove-source')
    if problem:
        raise BenchError(problem)
    sides = Sides(state_home, work, wrapper, report['problems'])
    try:
        for key in report['data']:
            timed(phases, 'measure_%s' % key, measure, report, args, sides, key)
    finally:
        for box in sorted(sides.made):
            remove_box(state_home, box, 'cleanup-%s' % box)


def measure(report, args, sides, key):
    data = report['data'][key]
    data['payload_file'] = os.path.join(sides.work, 'payload-%s' % key)
    checked('payload-%s' % key, ['bash', '-c', 'tar -xOf "$1" "$2" > "$3"', 'payload', data['archive'], data['payload'], data['payload_file']])
    data['payload_size'] = os.path.getsize(data['payload_file'])
    try:
        for index in range(args.runs):
            # Alternate the order too, so that drift on the host hits both sides alike.
            order = (('ours', sides.ours), ('baseline', sides.baseline))
            for side, call in order if index % 2 == 0 else order[::-1]:
                # Neither side pays for writing back the data of the run before it.
                settle(report['phases'], 'settle_%s_%s_%d' % (key, side, index + 1))
                report['runs'][key][side].append(call('%s-%s-%d' % (side, key, index + 1), data))
    finally:
        os.unlink(data['payload_file'])
        os.unlink(data['archive'])


def median_of(runs, key):
    values = [run[key] for run in runs if run.get(key) is not None]
    return statistics.median(values) if values else None


def targets(report):
    found = {}
    for key, _size in SIZES:
        runs = report['runs'][key]
        ours, baseline = median_of(runs['ours'], 'seconds'), median_of(runs['baseline'], 'seconds')
        ratio = ours / baseline if ours and baseline else None
        fastest = [min(run['seconds'] for run in runs[side]) if runs[side] else None for side in ('ours', 'baseline')]
        rss = max([run['rss_mb'] for run in runs['ours']] or [None]) if runs['ours'] else None
        found[key] = dict(ours=rounded(ours), baseline=rounded(baseline),
                          ratio=dict(value=rounded(ratio), target=TARGET_RATIO, met=None if ratio is None else ratio <= TARGET_RATIO,
                                     min_ratio=rounded(fastest[0] / fastest[1]) if None not in fastest else None),
                          rss=dict(value=rounded(rss, 1), target=TARGET_RSS_MB, met=None if rss is None else rss < TARGET_RSS_MB))
    rss_1g, rss_4g = found['1g']['rss']['value'], found['4g']['rss']['value']
    growth = rss_4g - rss_1g if None not in (rss_1g, rss_4g) else None
    grows = None if growth is None else growth > max(RSS_NOISE_MB, RSS_NOISE_FRACTION * rss_1g)
    found['rss_growth'] = dict(value=rounded(growth, 1), met=None if grows is None else not grows,
                               tolerance='the larger of %.0f MB and %.0f %%' % (RSS_NOISE_MB, 100 * RSS_NOISE_FRACTION))
    restored = [run['restored']['complete'] for key, _size in SIZES for side in ('ours', 'baseline') for run in report['runs'][key][side]]
    found['restored'] = dict(value=all(restored) if restored else None, met=all(restored) if restored else None)
    return found


def missed(report):
    """True when a target was missed, or not measured without being asked to leave it out."""
    found = report['targets']
    checks = [found['1g']['ratio']['met'], found['1g']['rss']['met'], found['restored']['met']]
    if not report['args']['skip_4g']:
        checks += [found['4g']['ratio']['met'], found['4g']['rss']['met'], found['rss_growth']['met']]
    return any(met is not True for met in checks)


def cleanup(state_home, work, phases):
    """Remove the source box and every box of the bench (the tx9 way, then by labels), and the temporary files."""
    problems = []
    started = time.perf_counter()
    problem = remove_box(state_home, SOURCE, 'cleanup-source')
    if problem:
        problems.append(problem)
    for box in leftover_boxes():
        docker_remove_labelled(box)
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(state_home, ignore_errors=True)
    phases['cleanup'] = rounded(time.perf_counter() - started)
    return problems


# ---- output -------------------------------------------------------------------------------


def print_table(report):
    found = report['targets']
    print('\ntx9 import bench: a tx9_backup archive (encrypted) of generated /data, imported as a new box; '
          '%d run(s) each, alternating\n' % report['args']['runs'])
    for key, title in (('1g', '1 GiB'), ('4g', '4 GiB')):
        data = report['data'].get(key)
        if data:
            print('  data %s: %.2f GiB in %d entries (%d 128 MiB blobs, %d text files); archive %.0f MB (payload %s MB), '
                  'tx9_backup %s s' % (title, data['bytes'] / GIB, data['entries'], data['blobs'], data['text_files'],
                                       data['archive_size'] / MB, fmt(data.get('payload_size', 0) / MB, '', 0),
                                       fmt(data['backup_seconds'])))
    print('\n%-46s %9s %7s  %s' % ('wall seconds', 'median', 'spread', 'runs'))
    for key, title in (('1g', '1 GiB'), ('4g', '4 GiB')):
        runs = report['runs'][key]
        if not runs['ours'] and not runs['baseline']:
            continue
        rows = (('%s baseline: gpg -d | tar -xz, tx9_box' % title, runs['baseline'], 'seconds'),
                ('  its volume + gpg | docker run tar -xz', runs['baseline'], 'pipeline_seconds'),
                ('  its tx9_box task (new box on the volume)', runs['baseline'], 'box_task_seconds'),
                ('%s tx9_import task' % title, runs['ours'], 'seconds'),
                ('  its ansible-playbook run', runs['ours'], 'play_seconds'))
        for row, series, field in rows:
            values = [run[field] for run in series]
            print('%-46s %9s %7s  %s' % (row, fmt(statistics.median(values) if values else None), spread(values),
                                         ' '.join(fmt(v) for v in values)))
    print()
    for key, title in (('1g', '1 GiB'), ('4g', '4 GiB')):
        print_target('ratio tx9_import / baseline, %s (medians)' % title, fmt(found[key]['ratio']['value'], digits=3),
                     '<= %.2f' % TARGET_RATIO, found[key]['ratio']['met'])
    for key, title in (('1g', '1 GiB'), ('4g', '4 GiB')):
        print_target('peak RSS of the import module, %s' % title, fmt(found[key]['rss']['value'], ' MB', 1),
                     '< %.0f MB' % TARGET_RSS_MB, found[key]['rss']['met'])
    print_target('RSS growth 1 GiB -> 4 GiB', fmt(found['rss_growth']['value'], ' MB', 1), 'no growth', found['rss_growth']['met'])
    print_check('restored data complete (both sides, each run)', found['restored'])
    print('(for reading: ratio of the fastest runs %s at 1 GiB, %s at 4 GiB; median seconds per GiB of data, %s)'
          % (fmt(found['1g']['ratio']['min_ratio'], digits=3), fmt(found['4g']['ratio']['min_ratio'], digits=3), per_gib(report)))
    for key, title in (('1g', '1 GiB'), ('4g', '4 GiB')):
        ours = report['runs'][key]['ours']
        if ours:
            last = ours[-1]
            print('(%s: the import returned %s; module process VmHWM %s MB, gpg VmHWM %s MB in %d gpg process(es); '
                  'tx9_box on the baseline side %s MB)'
                  % (title, ', '.join('%s %s' % item for item in sorted(last['noted'].items())) or 'nothing more than the box',
                     fmt(max(run['module_hwm_mb'] or 0 for run in ours), '', 1), fmt(max(run['gpg_hwm_mb'] or 0 for run in ours), '', 1),
                     last['gpg_processes'], fmt(max([run['box_rss_mb'] for run in report['runs'][key]['baseline']] or [None]), '', 1)))
    for key in ('1g', '4g'):
        for side in ('ours', 'baseline'):
            for run in report['runs'][key][side]:
                if not run['restored']['complete']:
                    print('\nMISSED restored data: %s %s box found %s (entries, files, bytes), the source held %s'
                          % (key, side, run['restored']['found'], report['data'][key]['expected']))
    if report.get('grown_skipped'):
        print('\nNOT MEASURED the 4 GiB part: %s' % report['grown_skipped'])
    print_closing(report, REPORT_PATH)


def per_gib(report):
    """The medians per GiB of data, to read how each side grows from 1 to 4 GiB."""
    shown = []
    for key, title in (('1g', '1 GiB'), ('4g', '4 GiB')):
        data, found = report['data'].get(key), report['targets'][key]
        if data and found['ours'] and found['baseline']:
            gib = data['bytes'] / GIB
            shown.append('%s: ours %s, baseline %s' % (title, fmt(found['ours'] / gib), fmt(found['baseline'] / gib)))
    return ', '.join(shown) or '-'


def parse_args():
    parser = argparse.ArgumentParser(description='Time tx9_import against gpg -d | tar -xz plus tx9_box, and measure its peak memory.')
    parser.add_argument('--runs', type=int, default=3, help='timed runs of each side at each size (default 3)')
    parser.add_argument('--skip-4g', action='store_true', help='leave out the 4 GiB part (reported as NOT MEASURED)')
    return parser.parse_args()


def main():
    args = parse_args()
    _lock = begin(LOG_DIR)  # held until the process exits
    report = dict(started=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'), source=SOURCE,
                  image=bench_image(), args=dict(runs=args.runs, skip_4g=args.skip_4g), host=dict(cpus=os.cpu_count()),
                  data={}, runs=dict((key, dict(ours=[], baseline=[])) for key, _size in SIZES), phases={}, problems=[])
    return conduct(report, args, 'tx9-bench-import-', bench, cleanup, targets, print_table, REPORT_PATH, missed)


if __name__ == '__main__':
    sys.exit(main())
