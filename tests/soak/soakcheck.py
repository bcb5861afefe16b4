# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The soak's growth figures (soak.py): the first cycles against the last ones.

Two kinds of peak RSS are judged differently, as they are measured differently:

- an exact peak (wait4's ru_maxrss of a controller command, its row named "(wait4)") and the wall time are
  compared by the median of each window: the typical cycle at the start against the typical cycle at the end;
- a sampled peak (VmHWM read from /proc every 0.2 s while the processes run, the largest over the processes of a
  command name) is compared by the maximum of each window. A sample is a lower bound of the true peak: the last
  growth before a process ends and a short-lived process can be missed, so one cycle reads 8.5 MB and the next
  15.3 MB of the same flat figure. The largest sample of a window is the closest it comes to the true peak; a
  figure that really grows lifts it in every cycle, so the last window's maximum still rises above the first's.
"""

from __future__ import annotations

import statistics
import sys

# Cycles compared at each end, and how much the last ones may exceed the first ones.
WINDOW = 5
LIMIT = 1.10
# A sampled peak of a small process moves by a fraction of a MB from one cycle to the next: less than this
# much growth passes whatever the ratio.
FLOOR_MB = 1.0
# How a row sums up each window.
SUMMARIES = dict(median=statistics.median, max=max)


def figure(name, values, floor=None, by='median'):
    """One growth row: the first and last WINDOW values summed up by `by` (median or max), their ratio, met
    when within LIMIT (or, with a floor, when the last exceeds the first by less than floor)."""
    first, last = values[:WINDOW], values[-WINDOW:]
    if not first:
        return dict(name=name, by=by, first=None, last=None, ratio=None, met=None)
    head, tail = SUMMARIES[by](first), SUMMARIES[by](last)
    ratio = tail / head if head else None
    return dict(
        name=name,
        by=by,
        first=round(head, 2),
        last=round(tail, 2),
        ratio=None if ratio is None else round(ratio, 3),
        met=None if ratio is None else ratio <= LIMIT or (floor is not None and tail - head < floor),
    )


def growth(cycles):
    """Rows for the wall time and for each command's peak RSS seen in every cycle: the exact (wait4) peaks by
    their median, the sampled ones by their maximum."""
    rows = [figure('wall time (s)', [c['seconds'] for c in cycles])]
    exact = set().union(*(c['maxrss_mb'] for c in cycles))
    peaks = [dict(c['rss_mb'], **c['maxrss_mb']) for c in cycles]
    names = sorted(set.intersection(*(set(p) for p in peaks))) if peaks else []
    for name in names:
        by = 'median' if name in exact else 'max'
        rows.append(figure(f'peak RSS {name} (MB)', [p[name] for p in peaks], FLOOR_MB, by))
    return rows


def print_growth(rows):
    percent = round((LIMIT - 1) * 100)
    print(f'\ngrowth: the first {WINDOW} cycles against the last {WINDOW}; a figure passes within {percent} %,')
    print(f'or with less than {FLOOR_MB:.0f} MB more peak RSS. "by": wall time and exact (wait4) peaks by the median')
    print('of each window; sampled peaks by the maximum of each window (a sample can miss part of a peak, never')
    print('add to it: the largest sample comes closest to the true peak, and real growth lifts it too)')
    print(f'{"figure":<44} {"by":>6} {"first":>10} {"last":>10} {"ratio":>8}  verdict')
    for row in rows:
        verdict = {None: 'NOT MEASURED', True: 'pass', False: 'GREW'}[row['met']]
        first, last, ratio = fmt(row['first']), fmt(row['last']), fmt(row['ratio'])
        print(f'{row["name"][:44]:<44} {row["by"]:>6} {first:>10} {last:>10} {ratio:>8}  {verdict}')


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
