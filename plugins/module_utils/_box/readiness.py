# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The readiness gate: a box is ready when Executor answers an authenticated MCP initialize and the agent is wired.

Private to the col_agents.tx9 collection. tx9_box (and tx9_import, which
creates its box as tx9_box does) and tx9_mount wait here once they have
started containers. On the way the gate resumes a box an interrupted backup
left quiesced, gives a running agent the box's token when it holds an older
one, and rewires the agent's MCP tools; it gives up with NOT_READY at
wait_timeout, or at once when Executor keeps exiting.
"""

from __future__ import annotations

import time
from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._box import confinement
from ansible_collections.col_agents.tx9.plugins.module_utils._box.guest import guest_status, run_hb
from ansible_collections.col_agents.tx9.plugins.module_utils._box.objects import (
    BoxObjects,
    container_state,
    probe_address,
    role_of,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._box.token import deliver_token
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._mcp import initialize
from ansible_collections.col_agents.tx9.plugins.module_utils._names import ROLE_AGENT, ROLE_EGRESS, ROLE_EXECUTOR

# Who quiesced the box, as the quiesce marker says, when a backup did (`hb down --by backup`).
QUIESCED_BY_BACKUP = 'backup'
# How long the gate waits when wait_timeout is not set, in seconds.
WAIT_TIMEOUT = 180
# The gate looks often for the first seconds, while Executor is likely starting (each look is one small
# request), then less often.
QUICK_LOOK = 0.25
QUICK_LOOKS_FOR = 10


def pause(elapsed: float, waited: bool) -> float:
    """Seconds before the gate's next look, elapsed seconds into it (waited: this run started containers)."""
    if elapsed < QUICK_LOOKS_FOR:
        return QUICK_LOOK
    return 1 if waited else 0.5


# An Executor that exits this many times while the readiness gate waits will not start: the gate stops
# there instead of waiting out wait_timeout (Docker restarts it after 0.1, 0.2, 0.4 ... seconds).
EXECUTOR_EXIT_LIMIT = 3
# What one look at the agent can say besides a problem in words (None: the box is ready).
AGAIN = 'again'
CHECK_MODE = 'check-mode'


def exits_verdict(executor: dict[str, Any], restarts_before: int) -> str | None:
    """The gate's words for an Executor that keeps exiting since the gate began, or None.

    None too while Docker has it running between two exits, when its last exit code is not known.
    """
    exits = (executor.get('RestartCount') or 0) - restarts_before
    if exits < EXECUTOR_EXIT_LIMIT:
        return None
    if container_state(executor) == 'running':
        # Docker clears the exit code as it starts the container again: the next look names it.
        return None
    state = executor['State']
    killed = ', killed for lack of memory' if state.get('OOMKilled') else ''
    return (
        f'Executor exited {exits} times while the gate waited (last exit code {state.get("ExitCode")}{killed}), '
        'so it will not start'
    )


def status_problem(status: dict[str, Any]) -> str:
    """What keeps an agent that is not healthy from being ready, from its `hb status --json` report."""
    if status.get('detail'):
        return str(status['detail'])
    executor = status.get('executor') or {}
    if not executor.get('mcp_ok'):
        return f'Executor is not reachable from the agent ({executor.get("detail", "no detail")})'
    stale = (status.get('wiring') or {}).get('stale') or []
    if stale:
        return f'MCP wiring is stale for {", ".join(stale)}'
    return 'unhealthy'


class ReadinessGate:
    """One wait for one box to become ready.

    actions: what the gate did on the way, in words, for the run's actions;
    rewired: whether the agent's MCP wiring had to be refreshed.
    """

    def __init__(
        self,
        client: Any,
        box: str,
        docker_host: str | None = None,
        timeout: int | None = None,
        check_mode: bool = False,
    ) -> None:
        self.client = client
        self.box = box
        self.docker_host = docker_host
        self.timeout = timeout or WAIT_TIMEOUT
        self.check_mode = check_mode
        self.actions: list[str] = []
        self.rewired = False
        self.delivered = False
        # What the agent answered when the gate found it ready.
        self.ready_status: dict[str, Any] | None = None

    def wait(self, objects: BoxObjects, token: str, waited: bool) -> bool:
        """Wait until Executor answers an authenticated initialize and the agent is wired.

        objects: the box as inspected after its containers started; waited: whether this run started
        any (then the gate looks less often). Returns True when the agent's MCP wiring had to be refreshed
        (in check mode: would have to be); NOT_READY when the box is not ready in time.
        """
        started = time.time()
        deadline = started + self.timeout
        agent = objects.containers[ROLE_AGENT]
        executor = objects.containers[ROLE_EXECUTOR]
        if agent is None or executor is None:
            # Removed by someone else since the run started it.
            raise self.not_ready(f'its {ROLE_AGENT if agent is None else ROLE_EXECUTOR} container is gone', False)
        restarts = executor.get('RestartCount') or 0
        current = objects
        while True:
            verdict = self.look(current.publisher(), agent['Id'], token)
            if verdict is None:
                self.prove_confined(current)
                return self.rewired
            if verdict == AGAIN:
                continue
            if verdict == CHECK_MODE:
                return True
            # Look at the box again: its published port, and whether Executor keeps exiting.
            current = BoxObjects(self.client, self.box)
            executor = current.containers[ROLE_EXECUTOR] or executor
            exited = exits_verdict(executor, restarts)
            if exited or time.time() >= deadline:
                raise self.not_ready(exited or verdict, timed_out=not exited)
            time.sleep(pause(time.time() - started, waited))

    def look(self, publisher: dict[str, Any] | None, agent_id: str, token: str) -> str | None:
        """One look at Executor through its published port (the egress proxy's on a confined box), then the
        agent: None (ready), AGAIN, CHECK_MODE, or the problem in words."""
        if publisher is None:
            return 'its egress proxy container is gone'
        address, port = probe_address(publisher, self.docker_host)
        if not port:
            # The container exited (or restarts) before Docker published its port.
            who = 'Its egress proxy' if role_of(publisher) == ROLE_EGRESS else 'Executor'
            return f'{who} publishes no port (its container is {container_state(publisher)})'
        _status, problem = initialize(address, port, token, timeout=3)
        if problem:
            return f'Executor on {address}:{port}: {problem}'
        return self.agent_step(agent_id, token)

    def prove_confined(self, objects: BoxObjects) -> None:
        """EGRESS_OPEN when a box with an egress allowlist has another way out than its proxy."""
        if not objects.confined:
            return
        problems = confinement.proof(self.client, self.box, objects.network, objects.containers)
        if problems:
            raise confinement.refusal(self.box, problems)

    def not_ready(self, verdict: str, timed_out: bool) -> Tx9Error:
        within = f' within {self.timeout} seconds' if timed_out else ''
        return Tx9Error(
            f'Box {self.box} did not become ready{within}: {verdict}.',
            'NOT_READY',
            f'Look at docker logs tx9-{self.box}-executor and tx9-{self.box}-agent, then run again (raise wait_timeout '
            'on a slow host).',
        )

    def agent_step(self, agent_id: str, token: str) -> str | None:
        """One look at the agent: None (ready), AGAIN, CHECK_MODE, or the problem in words."""
        status = guest_status(self.client, agent_id)
        if status.get('quiesced') and status.get('quiesced_by') == QUIESCED_BY_BACKUP:
            # An interrupted backup left the box quiesced; no backup runs now (we hold the lock).
            if self.check_mode:
                return CHECK_MODE
            code, output = run_hb(self.client, agent_id, ['up', '--if-by', QUIESCED_BY_BACKUP])
            if code != 0:
                return f'hb up after an interrupted backup failed: {output.strip()[-300:]}'
            self.actions.append('resume the box after an interrupted backup')
            return AGAIN
        if status.get('healthy'):
            self.ready_status = status
            return None
        executor = status.get('executor') or {}
        if not executor.get('mcp_ok') and '401' in (executor.get('detail') or '') and not self.delivered:
            # The agent holds an older token (a rotation was interrupted): give it the box's.
            if self.check_mode:
                return CHECK_MODE
            deliver_token(self.client, agent_id, token)
            self.delivered = True
            self.actions.append('deliver the current token to the running agent')
            return AGAIN
        if executor.get('mcp_ok') and not (status.get('wiring') or {}).get('current'):
            if self.check_mode:
                return CHECK_MODE
            code, output = run_hb(self.client, agent_id, ['wire-once'])
            if code == 0:
                self.rewired = True
                return AGAIN
            return f'hb wire-once failed: {output.strip()[-300:]}'
        return f'the agent reports: {status_problem(status)}'
