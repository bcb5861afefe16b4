# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The soak's growth figures (soak.py): the median of the first cycles against the last ones."""

from __future__ import annotations

import statistics
import sys

# Cycles compared at each end, and how much the last ones may exceed the first ones.
WINDOW = 5
LIMIT = 1.10
# A sampled peak of a small process moves by a fraction of a MB from one cycle to the next: less than this
# much growth passes whatever the ratio.
FLOOR_MB = 1.0


def figure(name, values, floor=None):
    """One growth row: the medians of the first and last WINDOW values, their ratio, met when within LIMIT."""
    first, last = values[:WINDOW], values[-WINDOW:]
    if not first:
        return dict(name=name, first=None, last=None, ratio=None, met=None)
    head, tail = statistics.median(first), statistics.median(last)
    ratio = tail / head if head else None
    return dict(
        name=name,
        first=round(head, 2),
        last=round(tail, 2),
        ratio=None if ratio is None else round(ratio, 3),
        met=None if ratio is None else ratio <= LIMIT or (floor is not None and tail - head < floor),
    )


def growth(cycles):
    """Rows for the wall time and for each command's peak RSS seen in every cycle."""
    rows = [figure('wall time (s)', [c['seconds'] for c in cycles])]
    peaks = [dict(c['rss_mb'], **c['maxrss_mb']) for c in cycles]
    names = sorted(set.intersection(*(set(p) for p in peaks))) if peaks else []
    for name in names:
        rows.append(figure(f'peak RSS {name} (MB)', [p[name] for p in peaks], FLOOR_MB))
    return rows


def print_growth(rows):
    percent = round((LIMIT - 1) * 100)
    print(f'\ngrowth: median of the first {WINDOW} cycles against the last {WINDOW}')
    print(f'(pass within {percent} %, or less than {FLOOR_MB:.0f} MB more peak RSS)')
    print(f'{"figure":<44} {"first":>10} {"last":>10} {"ratio":>8}  verdict')
    for row in rows:
        verdict = {None: 'NOT MEASURED', True: 'pass', False: 'GREW'}[row['met']]
        first, last, ratio = fmt(row['first']), fmt(row['last']), fmt(row['ratio'])
        print(f'{row["name"][:44]:<44} {first:>10} {last:>10} {ratio:>8}  {verdict}')


def fmt(value):
    return '-' if value is None else f'{value:.2f}'


def print_cycle(record, total):
    """A cycle's wall time, its steps' and the six largest peaks of its processes."""
    steps = ', '.join(f'{name} {seconds:.1f}' for name, seconds in record['steps'].items())
    peaks = dict(record['rss_mb'], **record['maxrss_mb'])
    top = sorted(peaks.items(), key=lambda item: -item[1])[:6]
    print(f'cycle {record["cycle"]}/{total}: {record["seconds"]:.1f} s ({steps}); load {record["load"]:.2f}')
    print('  peak RSS (MB): ' + ', '.join(f'{name} {mb:.1f}' for name, mb in top))
    sys.stdout.flush()


def print_backups(backups, directory, host, keep_last):
    """What the backup directories hold against what retention says."""
    kept = ' '.join(backups['kept']) or 'empty'
    print(f'\nbackup directory {directory} on {host}: {kept}')
    print(f'  retention (keep_last {keep_last}) says: {" ".join(backups["wanted"]) or "empty"}')
    print(f'  upgrade archives: {len(backups["upgrade"])} (one per upgrade: {len(backups["upgrade_wanted"])})')
    if not backups['ok']:
        print(f'  MISMATCH: upgrade archives {backups["upgrade"]}, on the other host {backups["elsewhere"]}')
