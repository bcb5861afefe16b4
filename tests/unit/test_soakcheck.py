# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The soak's growth verdicts (tests/soak/soakcheck.py): jitter of a sampled peak passes, real growth does not."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'soak'))

import soakcheck  # noqa: E402

# A sampled peak of ssh over 30 cycles of one soak: flat, but each cycle catches more or less of it.
JITTERY_SSH = [8.5, 15.3, 15.1, 8.5, 8.5, 13.9, 8.5, 8.5, 11.7, 13.8, 9.6, 9.5, 14.3, 14.9, 8.5]
JITTERY_SSH += [8.4, 10.7, 8.5, 8.5, 8.5, 12.8, 13.1, 12.1, 11.0, 8.5, 11.5, 9.2, 10.6, 15.2, 13.1]


def cycles(sampled: list[float], exact: list[float] | None = None) -> list[dict]:
    """Soak cycle records with a sampled peak for ssh and, when given, an exact (wait4) one for ansible."""
    return [
        dict(
            seconds=60.0,
            rss_mb=dict(ssh=mb),
            maxrss_mb={} if exact is None else {'ansible (wait4)': exact[index]},
        )
        for index, mb in enumerate(sampled)
    ]


def row(rows: list[dict], name: str) -> dict:
    return next(r for r in rows if r['name'] == name)


def test_a_jittery_but_flat_sampled_peak_passes_by_its_window_maximum() -> None:
    ssh = row(soakcheck.growth(cycles(JITTERY_SSH)), 'peak RSS ssh (MB)')
    assert ssh['by'] == 'max'
    assert (ssh['first'], ssh['last'], ssh['met']) == (15.3, 15.2, True)


def test_the_same_jitter_would_fail_a_comparison_of_medians() -> None:
    assert soakcheck.figure('ssh', JITTERY_SSH, soakcheck.FLOOR_MB)['met'] is False


def test_a_sampled_peak_that_grows_steadily_is_flagged_grew() -> None:
    growing = [50.0 + 2 * cycle for cycle in range(30)]
    ssh = row(soakcheck.growth(cycles(growing)), 'peak RSS ssh (MB)')
    assert (ssh['first'], ssh['last'], ssh['met']) == (58.0, 108.0, False)


def test_a_jittery_sampled_peak_that_also_grows_is_flagged_grew() -> None:
    growing = [mb + cycle * 0.5 for cycle, mb in enumerate(JITTERY_SSH)]
    assert row(soakcheck.growth(cycles(growing)), 'peak RSS ssh (MB)')['met'] is False


def test_an_exact_wait4_peak_is_judged_by_its_window_median() -> None:
    flat = [25.6] * 30
    spike = [25.6] * 29 + [40.0]
    rows = soakcheck.growth(cycles(JITTERY_SSH, spike))
    assert row(rows, 'peak RSS ansible (wait4) (MB)')['by'] == 'median'
    assert row(rows, 'peak RSS ansible (wait4) (MB)')['met'] is True
    growing = [25.6 + cycle for cycle in range(30)]
    assert row(soakcheck.growth(cycles(flat, growing)), 'peak RSS ansible (wait4) (MB)')['met'] is False


def test_growth_under_the_floor_passes_whatever_the_ratio() -> None:
    small = [1.0] * 25 + [1.5] * 5
    assert row(soakcheck.growth(cycles(small)), 'peak RSS ssh (MB)')['met'] is True


def test_the_table_names_how_each_row_sums_up_its_windows(capsys) -> None:
    soakcheck.print_growth(soakcheck.growth(cycles(JITTERY_SSH, [25.6] * 30)))
    out = capsys.readouterr().out
    assert 'maximum of each window' in out
    lines = {line.split()[2]: line for line in out.splitlines() if line.startswith('peak RSS')}
    assert lines['ssh'].split()[-1] == 'pass' and ' max ' in lines['ssh']
    assert ' median ' in lines['ansible']
