# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Processes by PID: /proc, liveness that a reused PID cannot fool, signals to a whole group."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Callable

_CHILDREN: list[subprocess.Popen[bytes]] = []


def read_proc_stat(pid: int | str) -> list[str]:
    """The fields of /proc/PID/stat after the command name, the process state first; OSError when it is gone."""
    with open(f'/proc/{int(pid)}/stat', encoding='utf-8') as f:
        line = f.read()
    # The command name may hold spaces and parentheses: fields start after the last ')'.
    return line[line.rindex(')') + 2 :].split()


def proc_stat(pid: int | str) -> tuple[str, int, int] | None:
    """(state letter, parent pid, start ticks) of a process, or None when it is gone."""
    try:
        fields = read_proc_stat(pid)
        return fields[0], int(fields[1]), int(fields[19])
    except (OSError, ValueError, IndexError, TypeError):
        return None


def start_ticks(pid: int) -> int | None:
    """When the process started (clock ticks after boot), to tell a reused PID apart; None when it is gone."""
    info = proc_stat(pid)
    return info[2] if info else None


def remember_child(proc: subprocess.Popen[bytes]) -> None:
    """Keep a Popen this process started, so reap_children collects its exit status."""
    _CHILDREN.append(proc)


def reap_children() -> None:
    """Collect the exit status of captures this process started, so none stays a zombie."""
    for proc in list(_CHILDREN):
        if proc.poll() is not None:
            _CHILDREN.remove(proc)


def proc_cmdline(pid: int | str) -> list[str]:
    try:
        with open(f'/proc/{int(pid)}/cmdline', 'rb') as f:
            return [part.decode('utf-8', 'replace') for part in f.read().split(b'\0') if part]
    except (OSError, ValueError, TypeError):
        return []


def pid_alive(pid: int | None, start_ticks: int | None = None) -> bool:
    """True when pid runs (not a zombie) and, if given, started at start_ticks."""
    if not pid:
        return False
    reap_children()
    info = proc_stat(pid)
    if info is None or info[0] in ('Z', 'X'):
        return False
    return start_ticks is None or info[2] == start_ticks


def signal_group(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError, TypeError):
        os.killpg(int(pid), signum)


def wait_gone(check: Callable[[], object], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
