# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Helpers of the guest tests: where the runtime is, files to set up, processes to wait for."""

import os
import time

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


def write_tree(base, files):
    """Write files (relative name: text) below base, making directories as needed."""
    for rel, content in files.items():
        path = os.path.join(base, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            f.write(content)


def alive(pid):
    """True while pid runs and is not a zombie."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False


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
