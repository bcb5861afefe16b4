# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run tx9_lease as this run: the controller, the ansible-playbook process and its start.

A lease refused (BOX_BUSY) to a run of this controller whose process is gone is
taken over: a killed run's rerun goes on.
"""

from __future__ import annotations

import os
import socket
from typing import Any

from ansible.plugins.action import ActionBase


def started(pid: int) -> str | None:
    """The start time of process pid (clock ticks since boot, /proc), '' where /proc is not; None when it is gone."""
    try:
        with open(f'/proc/{pid}/stat', encoding='ascii', errors='replace') as handle:
            fields = handle.read().rsplit(')', 1)[-1].split()
        return fields[19] if len(fields) > 19 else ''
    except FileNotFoundError:
        return None
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            return ''
        return ''


def this_run(controller: str, pid: int) -> dict[str, Any]:
    """The run of ansible-playbook process pid on controller."""
    return dict(run=f'{controller}:{pid}:{started(pid) or ""}', controller=controller, pid=pid)


def gone_here(holder: dict[str, Any], controller: str) -> bool:
    """Whether the run holding a lease was on this controller and its process is gone (or is another one now)."""
    if not holder.get('run') or holder.get('controller') != controller:
        return False
    try:
        pid = int(holder.get('pid') or 0)
    except (TypeError, ValueError):
        return False
    if pid <= 0:
        return False
    return bool(this_run(controller, pid)['run'] != holder['run'])


class ActionModule(ActionBase):
    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result: dict[str, Any] = super().run(tmp, task_vars)
        controller = socket.gethostname()
        # A task runs in a worker process forked by ansible-playbook: its parent is the run.
        args = dict(self._task.args, holder=this_run(controller, os.getppid()))
        answer = self._execute_module(module_name='col_agents.tx9.tx9_lease', module_args=args, task_vars=task_vars)
        holder = answer.get('holder') or {}
        if answer.get('failed') and answer.get('cause') == 'BOX_BUSY' and gone_here(holder, controller):
            args['takeover'] = holder['run']
            answer = self._execute_module(module_name='col_agents.tx9.tx9_lease', module_args=args, task_vars=task_vars)
            if not answer.get('failed'):
                answer['taken_over'] = holder
        result.update(answer)
        return result
