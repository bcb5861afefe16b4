# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Processes by PID: /proc/PID/stat, liveness and the command line."""

import os
import subprocess
import sys

from guest_helpers import wait_for
from tx9guest import pids


def test_proc_stat_reads_past_a_command_name_with_spaces_and_parentheses(tmp_path):
    odd = tmp_path / 'a b) c'
    odd.symlink_to(sys.executable)
    proc = subprocess.Popen([str(odd), '-c', 'import time; time.sleep(30)'])
    try:
        state, parent, started = pids.proc_stat(proc.pid)
        assert state in 'RS' and parent == os.getpid() and started > 0
        assert pids.read_proc_stat(proc.pid)[0] == state
    finally:
        proc.kill()
        proc.wait()


def test_a_process_that_is_gone_has_no_stat_and_is_not_alive():
    proc = subprocess.Popen(['true'])
    proc.wait()
    assert pids.proc_stat(proc.pid) is None and pids.start_ticks(proc.pid) is None
    assert not pids.pid_alive(proc.pid) and not pids.pid_alive(None)


def test_the_command_line_of_a_process_is_read_as_its_argv():
    proc = subprocess.Popen(['sleep', '30'])
    try:
        assert wait_for(lambda: pids.proc_cmdline(proc.pid) == ['sleep', '30'])
    finally:
        proc.kill()
        proc.wait()
    assert pids.proc_cmdline(proc.pid) == []
