# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the benchmarks share: paths, the one-bench-at-a-time lock, timing and the report table."""


import fcntl
import json
import os
import shutil
import signal
import sys
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS_PATH = os.path.join(REPO_ROOT, '.cache', 'collections')
if COLLECTIONS_PATH not in sys.path:
    sys.path.insert(0, COLLECTIONS_PATH)

TX9_BIN = os.path.dirname(sys.executable)
BENCH_DIR = os.path.join(REPO_ROOT, '.cache', 'bench')
PLAY_DIR = os.path.join(BENCH_DIR, 'plays')


def hold_bench_lock():
    """Fail fast when another bench runs: both would converge, time and remove the same objects."""
    os.makedirs(BENCH_DIR, exist_ok=True)
    handle = open(os.path.join(BENCH_DIR, 'lock'), 'w')  # pylint: disable=consider-using-with
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        sys.exit('bench: another make bench is running on this checkout; wait for it to finish.')
    return handle


def stop_on_term(signum, _frame):
    # SIGTERM (make interrupted, CI stopping) unwinds like Ctrl-C, so the cleanup still runs.
    raise SystemExit(128 + signum)


def begin(log_dir):
    """Start a bench: hold the lock (keep what this returns until exit), unwind on SIGTERM, empty log_dir."""
    lock = hold_bench_lock()
    signal.signal(signal.SIGTERM, stop_on_term)
    # Logs of an earlier run would read as this run's.
    shutil.rmtree(log_dir, ignore_errors=True)
    os.makedirs(log_dir)
    return lock


def last_error(output):
    """The most telling line of a failed run, for the table and the report."""
    lines = output.strip().splitlines() or ['no output']
    telling = [line for line in lines if '"msg"' in line or line.startswith(('fatal:', '[ERROR]'))]
    return (telling or lines)[-1].strip()[:400]


def rounded(value, digits=3):
    return None if value is None else round(value, digits)


def timed(phases, name, call, *args):
    started = time.perf_counter()
    try:
        return call(*args)
    finally:
        phases[name] = rounded(time.perf_counter() - started)


def fmt(value, unit='', digits=2):
    return '-' if value is None else '%.*f%s' % (digits, value, unit)


def verdict(met):
    return 'NOT MEASURED' if met is None else 'met' if met else 'MISSED'


def print_target(what, value, target, met):
    print('%-46s %9s   target %-10s %s' % (what, value, target, verdict(met)))


def write_report(report, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as handle:
        json.dump(report, handle, indent=2)
        handle.write('\n')
