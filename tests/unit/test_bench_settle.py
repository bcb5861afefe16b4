# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The benches' reading of the kernel's I/O pressure, which decides when a timed side may start."""


import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'bench'))

import benchkit  # noqa: E402  pylint: disable=wrong-import-position

PRESSURE = 'some avg10=12.50 avg60=3.10 avg300=0.80 total=123456\nfull avg10=9.00 avg60=2.00 avg300=0.50 total=99\n'


def test_the_stall_figure_is_the_ten_second_average_of_the_some_row():
    assert benchkit.io_stall_percent(PRESSURE) == 12.5


def test_a_text_without_a_some_row_or_with_a_bad_figure_gives_no_stall_figure():
    assert benchkit.io_stall_percent('full avg10=9.00 avg60=2.00 avg300=0.50 total=99\n') is None
    assert benchkit.io_stall_percent('some avg10=many avg60=2.00\n') is None
    assert benchkit.io_stall_percent('') is None


def test_settling_records_its_wait_and_stops_once_the_disk_is_quiet(tmp_path, monkeypatch):
    pressure = tmp_path / 'io'
    pressure.write_text(PRESSURE.replace('12.50', '0.40'))
    monkeypatch.setattr(benchkit, 'IO_PRESSURE', str(pressure))
    phases = {}
    benchkit.settle(phases, 'settle_ours_1', limit=30)
    assert 0 <= phases['settle_ours_1'] < 30


def test_settling_gives_up_after_its_limit_on_a_disk_that_stays_busy(tmp_path, monkeypatch):
    pressure = tmp_path / 'io'
    pressure.write_text(PRESSURE)
    monkeypatch.setattr(benchkit, 'IO_PRESSURE', str(pressure))
    monkeypatch.setattr(benchkit.time, 'sleep', lambda _seconds: None)
    phases = {}
    benchkit.settle(phases, 'settle_baseline_2', limit=0.05)
    assert phases['settle_baseline_2'] >= 0.05
