# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Helpers of the guest tests: where the runtime is, files to set up, processes to wait for."""

import json
import os
import threading
import time

import pytest

GUEST = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))), 'assets', 'guest')


def wait_for(check, timeout=10.0):
    """check()'s first truthy result within timeout, else its last result."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.05)
    return check()


# How long a call may block before the test fails instead of hanging: a hang guard, never a speed bound.
HANG_GUARD = 60.0


def returns_without_blocking_on(fifo, call):
    """call()'s result (or its exception); fails the test when call blocks on the FIFO fifo.

    call runs in a thread. When it has not returned after HANG_GUARD (it waits for a writer that never
    comes), the FIFO is opened for writing and closed, which lets it go on, and the test fails.
    """
    outcome = {}

    def run():
        try:
            outcome['value'] = call()
        except BaseException as exc:  # handed to the test's thread below
            outcome['error'] = exc

    worker = threading.Thread(target=run, name='tx9-fifo-call', daemon=True)
    worker.start()
    worker.join(HANG_GUARD)
    if worker.is_alive():
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
        worker.join(HANG_GUARD)
        pytest.fail('%s blocked on the FIFO %s' % (getattr(call, '__name__', call), fifo))
    if 'error' in outcome:
        raise outcome['error']
    return outcome['value']


def exit_messages(log_path):
    """The messages of the process_exit events a log capture wrote to log_path, oldest first."""
    with open(log_path) as f:
        return [record['message'] for record in map(json.loads, f) if record['type'] == 'process_exit']


def write_tree(base, files):
    """Write files (relative name: text) below base, making directories as needed."""
    for rel, content in files.items():
        path = os.path.join(base, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            f.write(content)


def group_members(pgid):
    """PIDs of the processes, zombies aside, in process group pgid."""
    members = []
    for entry in os.listdir('/proc'):
        try:
            with open('/proc/%s/stat' % entry) as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != 'Z' and int(fields[2]) == pgid:
            members.append(int(entry))
    return members
