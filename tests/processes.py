# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A started run's whole process tree, found and killed: for the suites that kill a playbook midway."""

import os
import signal


def process_tree(root):
    """{pid: pgid} of root and all its descendants, read from /proc."""
    parents, groups = {}, {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as handle:
                fields = handle.read().rsplit(')', 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        groups[int(entry)] = int(fields[2])
    tree, todo = {}, [root]
    while todo:
        pid = todo.pop()
        if pid in groups:
            tree[pid] = groups[pid]
            todo.extend(child for child, parent in parents.items() if parent == pid)
    return tree


def alive(pid):
    """Whether pid runs (a zombie waiting for its reaper does not)."""
    try:
        with open('/proc/%d/stat' % pid) as handle:
            return handle.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False


def kill_tree(root):
    """SIGKILL every process group in root's tree.

    ansible-playbook runs each task in a worker that calls setsid, so the
    module (and the gpg it drives) live in another process group than the
    playbook: killing only the playbook's group would leave the backup running.
    """
    tree = process_tree(root)
    for pgid in sorted(set(tree.values())):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass
    return tree
