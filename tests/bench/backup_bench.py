# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""`make bench`, second part: what a tx9_backup costs, against the plain pipeline.

On one box (bench-bk) whose agent /data holds 1 GiB of generated files (half
incompressible: a few big files from /dev/urandom; half text: tens of
thousands of 1-20 KiB source-like files, written inside the container as the
agent user, so they are real files on the volume), it measures in one run:

* the plain pipeline `tar -C /data -c . | gzip -6 | gpg --symmetric
  --cipher-algo AES256` (gpg's defaults otherwise, so gpg compresses again),
  run as root inside the agent container on the same data, timed inside;
* col_agents.tx9.tx9_backup (encrypted, passphrase as a module argument)
  through ansible-playbook: the wall time of its task (validation and
  read-back included), the module's own `duration`, and its peak RSS;
* the archive: two members, a payload that gpg decrypts and `tar -tz` lists;
* after adding 3 GiB more of the same mix (4 GiB), one more tx9_backup: its
  time and peak RSS, to show that memory does not grow with /data. This part
  needs about 12 GiB free; without them it is NOT MEASURED (which is no pass).

The pipeline and the backup alternate (--runs each, default 3; which side goes
first alternates too), each after the machine settled (benchkit.settle: `sync`,
then a wait until the disk is quiet); the ratio is of their medians, and each
row shows its spread (slowest less fastest run). The target is 0.18.

How peak memory is measured: the backup task runs under an interpreter
wrapper (ansible_python_interpreter of that task only) that starts the real
Python on the AnsiballZ module and waits for it with wait4(). The kernel's
ru_maxrss from wait4 is the exact peak RSS of the module process (or, were one
larger, of a child it waited for: gpg), including the last moments of the
run, which sampling would miss. While it runs, the wrapper also samples every
0.1 s the VmHWM (/proc/<pid>/status, itself a high-water mark) of the module
process and of its gpg children, so the report shows each on its own. The
peak RSS reported is the larger of ru_maxrss and the module's sampled VmHWM
(the kernel syncs its RSS counters lazily, so they can differ by a fraction
of a MB), in MB of 10^6 bytes. Nothing of the module is changed; the wrapper
costs one Python start-up.

It prints a table, writes .cache/bench/backup-report.json, keeps every
command's output under .cache/bench/backup-logs/ and exits non-zero only when
something failed to run; a missed target is printed as MISSED. The box and
every temporary file are removed on exit, also on failure and on SIGTERM.
"""


import argparse
import datetime
import json
import os
import shutil
import statistics
import sys
import time

from benchkit import (  # noqa: E402 (it puts the collection on sys.path first)
    BENCH_DIR, GIB, MB, begin, BenchError, build_and_check_room, checked, conduct, create_box, data_size,
    docker_remove_box, docker_root, fmt, free_bytes, generate, last_error, measure_module, print_closing,
    print_check, print_target, rounded, run_logged, settle, spread, timed, tx9_box_absent, write_file, write_timed_play,
    write_wrapper)

from ansible_collections.col_agents.tx9.plugins.module_utils._names import object_names

LOG_DIR = os.path.join(BENCH_DIR, 'backup-logs')
REPORT_PATH = os.path.join(BENCH_DIR, 'backup-report.json')

BOX = 'bench-bk'
NAMES = object_names(BOX)
AGENT = NAMES['agent']
PASSWORD = 'tx9-bench-passphrase'
PAYLOAD = 'data.tar.gz.gpg'

BASE_SIZE = 1 * GIB
GROWN_SIZE = 4 * GIB
# Free space the runs need on the disks of Docker and of the archives: the data,
# plus the payload and the archive the module writes side by side, with margin.
BASE_FREE = 4 * GIB
GROWN_FREE = 12 * GIB

TARGET_RATIO = 0.18
TARGET_RSS_MB = 200.0
# RSS "does not grow" from 1 GiB to 4 GiB when it grows by at most this much (noise).
RSS_NOISE_MB = 10.0
RSS_NOISE_FRACTION = 0.10

# The plain pipeline, as root in the agent container, timed inside (no docker exec start-up).
# gpg gets a fresh home of its own, as a first-time user's would be; its output goes away after.
PIPELINE = r'''
set -o pipefail
export GNUPGHOME=$(mktemp -d)
started=$(date +%s.%N)
tar -C /data -c . | gzip -6 | gpg --batch --pinentry-mode loopback --passphrase "$1" --symmetric --cipher-algo AES256 -o /tmp/x.gpg
rc=$?
ended=$(date +%s.%N)
size=$(stat -c %s /tmp/x.gpg 2>/dev/null || echo 0)
rm -rf /tmp/x.gpg "$GNUPGHOME"
echo "PIPELINE $started $ended $size"
exit $rc
'''

# The archive, read as a person would: its payload, decrypted by gpg, listed by tar -tz.
VERIFY = r'''
set -o pipefail
tar -xOf "$1" data.tar.gz.gpg | gpg --homedir "$2" --batch --quiet --pinentry-mode loopback --passphrase-file "$3" --decrypt \
    | tar -tz | wc -l
'''


# ---- the measurements ---------------------------------------------------------------------


def time_pipeline(label):
    load = os.getloadavg()[0]
    seconds, output = checked(label, ['docker', 'exec', '-u', 'root', AGENT, 'bash', '-c', PIPELINE, 'pipeline', PASSWORD])
    words = [line for line in output.splitlines() if line.startswith('PIPELINE ')][-1].split()
    return dict(load_before=rounded(load, 2), seconds=float(words[2]) - float(words[1]), exec_seconds=rounded(seconds),
                output_size=int(words[3]))


class BackupRunner:
    """tx9_backup through ansible-playbook, under the measuring interpreter wrapper."""

    def __init__(self, state_home, work):
        self.state_home = state_home
        self.work = work
        self.dest = os.path.join(work, 'dest')
        os.makedirs(self.dest)
        self.play = write_timed_play('backup-bench.yml', 'One timed tx9_backup of the bench box', 'Back up the bench box',
                                     'col_agents.tx9.tx9_backup',
                                     (('name', 'bench_box'), ('dest', 'bench_dest'), ('password', 'bench_password')))
        self.wrapper = write_wrapper(work)
        self.gnupg_home = os.path.join(work, 'gnupg')
        os.makedirs(self.gnupg_home, 0o700)
        self.passfile = write_file(os.path.join(work, 'passphrase'), PASSWORD + '\n', 0o600)

    def run(self, label):
        measured = measure_module(label, self.play, dict(bench_box=BOX, bench_dest=self.dest, bench_password=PASSWORD),
                                  self.state_home, self.work, self.wrapper)
        result = measured['result']
        if result.get('failed') or not result.get('path'):
            raise BenchError('%s: tx9_backup returned no archive: %s' % (label, last_error(measured['output'])))
        run = dict(load_before=measured['load_before'], task_seconds=result['task_seconds'], play_seconds=measured['play_seconds'],
                   duration=result.get('duration'), module_process_seconds=measured['module_process_seconds'],
                   archive_size=result.get('size'), members=result.get('members'))
        run.update((key, measured[key]) for key in ('rss_mb', 'maxrss_mb', 'module_hwm_mb', 'gpg_hwm_mb', 'gpg_processes',
                                                    'others_hwm_kb'))
        try:
            run['verify'] = self.verify(label, result['path'], result.get('members'))
        finally:
            os.unlink(result['path'])
        return run

    def verify(self, label, path, members):
        """Two members, metadata that says encrypted, a payload gpg decrypts and tar -tz lists in full."""
        problems = []
        listing = run_logged(label + '-members', ['tar', '-tf', path])[2].split()
        if listing != ['metadata.json', PAYLOAD]:
            problems.append('the archive holds %s, not metadata.json and %s' % (' '.join(listing)[:200], PAYLOAD))
        try:
            metadata = json.loads(run_logged(label + '-metadata', ['tar', '-xOf', path, 'metadata.json'])[2])
        except ValueError:
            metadata = {}
        if not isinstance(metadata, dict) or not metadata.get('encrypted') or metadata.get('payload') != PAYLOAD:
            problems.append('metadata.json does not describe an encrypted payload')
        seconds, rc, output = run_logged(label + '-verify', ['bash', '-c', VERIFY, 'verify', path, self.gnupg_home, self.passfile])
        listed = int(output.split()[-1]) if rc == 0 and output.split() and output.split()[-1].isdigit() else None
        if rc != 0 or listed is None:
            problems.append('gpg --decrypt | tar -tz failed (rc %d): %s' % (rc, last_error(output)))
        elif members is not None and listed != members:
            problems.append('tar -tz lists %d members, the module reported %d' % (listed, members))
        return dict(readable=not problems, listed=listed, seconds=rounded(seconds), problems=problems)


# ---- the bench ----------------------------------------------------------------------------


def summarize(runs):
    if not runs:
        return None
    keys = ('task_seconds', 'play_seconds', 'duration', 'module_process_seconds')
    summary = dict((key, rounded(statistics.median(run[key] for run in runs))) for key in keys)
    summary.update(rss_mb=rounded(max(run['rss_mb'] for run in runs), 1),
                   module_hwm_mb=rounded(max(run['module_hwm_mb'] or 0 for run in runs), 1),
                   gpg_hwm_mb=rounded(max(run['gpg_hwm_mb'] or 0 for run in runs), 1),
                   readable=all(run['verify']['readable'] for run in runs),
                   archive_size=runs[-1]['archive_size'], members=runs[-1]['members'])
    return summary


def bench(report, args, state_home, work):
    phases = report['phases']
    build_and_check_room(report, state_home, work, BASE_FREE)
    # Start from nothing: a killed earlier run may have left the box behind.
    tx9_box_absent(state_home, BOX, 'preclean')
    docker_remove_box(NAMES)
    timed(phases, 'create_box', create_box, state_home, BOX, 'backup-bench-box.yml', "The backup bench's box")
    seconds, blobs, files = generate(AGENT, 'generate-1g', 1, BASE_SIZE)
    phases['generate_1g'] = rounded(seconds)
    size, entries = data_size(AGENT)
    report['data'] = dict(base=dict(bytes=size, entries=entries, blobs=blobs, text_files=files))
    runner = BackupRunner(state_home, work)
    started = time.perf_counter()
    sides = [('pipeline', lambda name: report['pipeline_runs'].append(time_pipeline(name))),
             ('backup', lambda name: report['backup_runs'].append(runner.run(name)))]
    for index in range(args.runs):
        # Alternate, and which side goes first too, so that drift on the host hits both alike; each side
        # starts on a quiet disk, so that neither pays for the other's writes.
        for side, run in sides if index % 2 == 0 else sides[::-1]:
            settle(phases, 'settle_1g_%s_%d' % (side, index + 1))
            run('%s-1g-%d' % (side, index + 1))
    phases['measure_1g'] = rounded(time.perf_counter() - started)
    grown(report, args, runner)


def grown(report, args, runner):
    """The 4 GiB part: 3 GiB more of the same mix, then one more backup."""
    if args.skip_4g:
        report['grown_skipped'] = 'skipped on request (--skip-4g)'
        return
    free = free_bytes([docker_root(), runner.work])
    if free is not None and free < GROWN_FREE:
        report['grown_skipped'] = ('only %.1f GiB free on the disks of Docker and %s; growing /data to 4 GiB needs about %.0f GiB'
                                   % (free / GIB, runner.work, GROWN_FREE / GIB))
        return
    seconds, blobs, files = generate(AGENT, 'generate-4g', 2, GROWN_SIZE - BASE_SIZE)
    report['phases']['generate_4g'] = rounded(seconds)
    size, entries = data_size(AGENT)
    report['data']['grown'] = dict(bytes=size, entries=entries, blobs=blobs, text_files=files)
    started = time.perf_counter()
    report['grown_runs'].append(runner.run('backup-4g-1'))
    report['phases']['measure_4g'] = rounded(time.perf_counter() - started)


def targets(report):
    base = summarize(report['backup_runs'])
    grown_run = summarize(report['grown_runs'])
    pipeline = statistics.median(run['seconds'] for run in report['pipeline_runs']) if report['pipeline_runs'] else None
    ratio = base['task_seconds'] / pipeline if base and pipeline else None
    rss_1g = base['rss_mb'] if base else None
    rss_4g = grown_run['rss_mb'] if grown_run else None
    growth = rss_4g - rss_1g if None not in (rss_1g, rss_4g) else None
    grows = None if growth is None else growth > max(RSS_NOISE_MB, RSS_NOISE_FRACTION * rss_1g)
    data = report.get('data', {})
    added = data['grown']['entries'] - data['base']['entries'] if 'grown' in data and 'base' in data else None
    per_member = growth * MB / added if growth is not None and added else None
    duration_ratio = base['duration'] / pipeline if base and pipeline and base['duration'] else None
    readable = None if base is None else base['readable'] and (grown_run is None or grown_run['readable'])
    return dict(
        pipeline_seconds=rounded(pipeline), backup=base, backup_4g=grown_run,
        ratio=dict(value=rounded(ratio), target=TARGET_RATIO, met=None if ratio is None else ratio <= TARGET_RATIO,
                   duration_ratio=rounded(duration_ratio)),
        rss_1g=dict(value=rss_1g, target=TARGET_RSS_MB, met=None if rss_1g is None else rss_1g < TARGET_RSS_MB),
        rss_4g=dict(value=rss_4g, target=TARGET_RSS_MB, met=None if rss_4g is None else rss_4g < TARGET_RSS_MB),
        rss_growth=dict(value=rounded(growth, 1), tolerance='the larger of %.0f MB and %.0f %%' % (RSS_NOISE_MB, 100 * RSS_NOISE_FRACTION),
                        met=None if grows is None else not grows, added_entries=added, bytes_per_added_entry=rounded(per_member, 0)),
        readable=dict(value=readable, met=readable))


def cleanup(state_home, work, phases):
    """Remove the box (the tx9 way, then by name whatever is left) and the temporary files."""
    problems = []
    started = time.perf_counter()
    try:
        tx9_box_absent(state_home, BOX, 'cleanup')
    except BenchError as exc:
        problems.append(str(exc))
    docker_remove_box(NAMES)
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(state_home, ignore_errors=True)
    phases['cleanup'] = rounded(time.perf_counter() - started)
    return problems


# ---- output -------------------------------------------------------------------------------


def print_table(report):
    found = report['targets']
    base, grown_run = found['backup'] or {}, found['backup_4g'] or {}
    data = report.get('data', {})
    print('\ntx9 backup bench: /data of box %s, half incompressible, half text; %d run(s) each, alternating\n'
          % (BOX, len(report['pipeline_runs'])))
    for key, title in (('base', '1 GiB'), ('grown', '4 GiB')):
        if key in data:
            print('  data %s: %.2f GiB in %d entries (%d 128 MiB blobs, %d text files)' % (
                title, data[key]['bytes'] / GIB, data[key]['entries'], data[key]['blobs'], data[key]['text_files']))
    print('\n%-46s %9s %7s  %s' % ('wall seconds (1 GiB)', 'median', 'spread', 'runs'))
    rows = (('plain pipeline tar | gzip -6 | gpg', 'seconds', report['pipeline_runs']),
            ('tx9_backup task', 'task_seconds', report['backup_runs']),
            ('  its duration (module return)', 'duration', report['backup_runs']),
            ('  its ansible-playbook run', 'play_seconds', report['backup_runs']))
    for title, key, runs in rows:
        values = [run[key] for run in runs]
        print('%-46s %9s %7s  %s' % (title, fmt(statistics.median(values) if values else None), spread(values),
                                     ' '.join(fmt(value) for value in values)))
    if report['pipeline_runs'] and base:
        print('%-46s %9s  tx9 archive %s' % ('output bytes: pipeline', report['pipeline_runs'][-1]['output_size'], base['archive_size']))
    if grown_run:
        print('%-46s %9s  duration %s' % ('tx9_backup task (4 GiB)', fmt(grown_run['task_seconds']), fmt(grown_run['duration'])))
    print()
    print_target('ratio tx9_backup / pipeline (medians)', fmt(found['ratio']['value'], digits=3), '<= %.2f' % TARGET_RATIO, found['ratio']['met'])
    print_target('peak RSS of the module, 1 GiB', fmt(found['rss_1g']['value'], ' MB', 1), '< %.0f MB' % TARGET_RSS_MB,
                 found['rss_1g']['met'])
    print_target('peak RSS of the module, 4 GiB', fmt(found['rss_4g']['value'], ' MB', 1), '< %.0f MB' % TARGET_RSS_MB,
                 found['rss_4g']['met'])
    print_target('RSS growth 1 GiB -> 4 GiB', fmt(found['rss_growth']['value'], ' MB', 1), 'no growth', found['rss_growth']['met'])
    print_check('archive readable (gpg -d | tar -tz)', found['readable'])
    print('(for reading: the module\'s own duration against the pipeline %s; RSS growth per entry added to /data %s B)'
          % (fmt(found['ratio']['duration_ratio'], digits=3), fmt(found['rss_growth']['bytes_per_added_entry'], '', 0)))
    for title, summary in (('1 GiB', base), ('4 GiB', grown_run)):
        if summary:
            print('(%s: module process VmHWM %s MB sampled, gpg VmHWM %s MB sampled; peak RSS: the larger of that VmHWM and wait4 ru_maxrss)'
                  % (title, fmt(summary['module_hwm_mb'], '', 1), fmt(summary['gpg_hwm_mb'], '', 1)))
    if report.get('grown_skipped'):
        print('\nNOT MEASURED the 4 GiB part: %s' % report['grown_skipped'])
    for run in report['backup_runs'] + report['grown_runs']:
        for problem in run['verify']['problems']:
            print('\nMISSED readable archive: %s' % problem)
    print_closing(report, REPORT_PATH)


def parse_args():
    parser = argparse.ArgumentParser(description='Time tx9_backup against tar | gzip -6 | gpg and measure its peak memory.')
    parser.add_argument('--runs', type=int, default=3, help='timed runs of the pipeline and of tx9_backup on 1 GiB (default 3)')
    parser.add_argument('--skip-4g', action='store_true', help='leave out the 4 GiB part (reported as NOT MEASURED)')
    return parser.parse_args()


def main():
    args = parse_args()
    _lock = begin(LOG_DIR)  # held until the process exits
    report = dict(started=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'), box=BOX, runs=args.runs,
                  host=dict(cpus=os.cpu_count()), pipeline_runs=[], backup_runs=[], grown_runs=[], phases={}, problems=[])
    return conduct(report, args, 'tx9-bench-backup-', bench, cleanup, targets, print_table, REPORT_PATH)


if __name__ == '__main__':
    sys.exit(main())
