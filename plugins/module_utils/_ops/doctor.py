# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tx9_doctor: a box's health as a list of named checks, from the host and from inside the box.

Private to the col_agents.tx9 collection. Host checks: each container runs
and carries the box's labels; Executor's published port answers; an MCP
client's opening with the box token succeeds (initialize, then
notifications/initialized) and one without the token is refused with 401,
both judged by _mcp.py, the rules the box uses too; the containers' version
is the collection's (or the one asked for); each volume exists, and its use against its advisory
budget is reported (over budget is a warning, state `warn`, never a failure: budgets are never
enforced). Box checks: `hb doctor --json`, each of its checks as `hb <name>`. Reads only.
"""

from __future__ import annotations

import concurrent.futures
import socket
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ansible_collections.col_agents.tx9.plugins.module_utils._box import confinement
from ansible_collections.col_agents.tx9.plugins.module_utils._box.guest import last_json_line, run_hb
from ansible_collections.col_agents.tx9.plugins.module_utils._box.objects import (
    ROLES,
    BoxObjects,
    container_state,
    probe_address,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._mcp import handshake, refusal_problem
from ansible_collections.col_agents.tx9.plugins.module_utils._names import (
    LABEL_BOX,
    LABEL_OWNER,
    LABEL_ROLE,
    LABEL_VERSION,
    ROLE_AGENT,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._ops.info import describe_box, volume_usage
from ansible_collections.col_agents.tx9.plugins.module_utils._ops.logs import box_secret, existing_box
from ansible_collections.col_agents.tx9.plugins.module_utils._version import COLLECTION_VERSION

if TYPE_CHECKING:
    from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome

PROBE_TIMEOUT = 5.0


# A check's state: passed, failed, or passed with a warning (a volume over its advisory budget).
PASS, FAIL, WARN = 'pass', 'fail', 'warn'


def check(name: str, ok: object, detail: str) -> dict[str, Any]:
    return dict(name=name, ok=bool(ok), detail=detail)


def warning(name: str, detail: str) -> dict[str, Any]:
    """A check that passed with a warning: it never fails the doctor."""
    return dict(name=name, ok=True, detail=detail, state=WARN)


def container_check(box: str, role: str, attrs: dict[str, Any] | None) -> dict[str, Any]:
    """The container exists, runs, and carries tx9=1, tx9.box, tx9.role and tx9.version."""
    name = f'{role} container'
    if attrs is None:
        return check(name, False, f'tx9-{box}-{role} is missing; run col_agents.tx9.tx9_box state=present')
    labels = (attrs.get('Config') or {}).get('Labels') or {}
    expected = {LABEL_OWNER: '1', LABEL_BOX: box, LABEL_ROLE: role}
    wrong = sorted(k for k, v in expected.items() if labels.get(k) != v)
    if not labels.get(LABEL_VERSION):
        wrong.append(LABEL_VERSION)
    if wrong:
        return check(name, False, f'labels {", ".join(wrong)} are not what box {box} expects')
    state = container_state(attrs)
    if state != 'running':
        return check(name, False, f'{state}; start it with col_agents.tx9.tx9_box state=present')
    return check(name, True, f'running, labelled for box {box}')


def port_answers(address: str, port: int | str) -> str:
    """'' when a TCP connection to address:port opens, else why not."""
    try:
        socket.create_connection((address, int(port)), timeout=PROBE_TIMEOUT).close()
    except (OSError, ValueError) as exc:
        return f'nothing answers on {address}:{port} ({exc})'
    return ''


def endpoint_checks(
    executor: dict[str, Any] | None, token: str | None, docker_host: str | None
) -> list[dict[str, Any]]:
    """The published port, the handshake with the token, and the refusal without it."""
    address, port = probe_address(executor, docker_host)
    if not port:
        why = 'Executor publishes no port (its container is not running)'
        return [check(name, False, why) for name in ('executor port', 'mcp handshake', 'mcp without token')]
    where = f'{address}:{port}'
    problem = port_answers(address, port)
    checks = [check('executor port', not problem, problem or f'{where} answers')]
    if not token:
        checks.append(check('mcp handshake', False, 'no box token in the state home or the containers'))
    else:
        result = handshake(address, port, token, timeout=PROBE_TIMEOUT)
        server = result['server'] or {}
        checks.append(
            check(
                'mcp handshake',
                not result['problem'],
                result['problem']
                or f'initialize and notifications/initialized accepted by {server.get("name")} {server.get("version")}',
            )
        )
    problem = refusal_problem(address, port, timeout=PROBE_TIMEOUT)
    checks.append(
        check('mcp without token', not problem, problem or 'an initialize without the token is refused (401)')
    )
    return checks


def version_check(containers: Mapping[str, dict[str, Any] | None], expected: str | None = None) -> dict[str, Any]:
    """The containers carry the expected tx9 version: the collection's unless the caller names another."""
    expected = expected or COLLECTION_VERSION
    versions = {
        role: ((attrs or {}).get('Config') or {}).get('Labels', {}).get(LABEL_VERSION)
        for role, attrs in containers.items()
    }
    stale = sorted(role for role, version in versions.items() if version != expected)
    if not stale:
        return check('image version', True, expected)
    found = f'{", ".join(stale)} at {", ".join(str(versions[r]) for r in stale)}'
    if expected == COLLECTION_VERSION:
        return check(
            'image version', False, f'{found}, the collection is {expected}; run col_agents.tx9.tx9_box to upgrade'
        )
    return check('image version', False, f'{found}, expected {expected}')


def budget_checks(volumes: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Each volume's use against its advisory budget (from tx9_info's view of the box); over budget warns."""
    checks: list[dict[str, Any]] = []
    for role in ROLES:
        volume = volumes[role]
        name = f'{role} volume'
        if not volume['exists']:
            checks.append(check(name, False, f'{volume["name"]} is missing'))
            continue
        used = volume['used_bytes']
        budget = volume['budget_bytes']
        status = volume['budget_status']
        detail = f'{used if used is not None else "unknown"} bytes used'
        if budget:
            detail += f' of a {budget:d}-byte budget'
        if status == 'over':
            detail += f'; over budget (advisory, never enforced): free space in the box or raise {role}_volume_budget'
            checks.append(warning(name, detail + f' ({status})'))
            continue
        checks.append(check(name, True, detail + f' ({status})'))
    return checks


def guest_checks(client: Any, agent: dict[str, Any] | None) -> list[dict[str, Any]]:
    """`hb doctor --json` in the agent, each check named `hb <name>`."""
    if agent is None or container_state(agent) != 'running':
        return [check('hb doctor', False, 'the agent container is not running, so hb doctor cannot run')]
    code, output = run_hb(client, agent['Id'], ['doctor', '--json'])
    report = last_json_line(output)
    if not isinstance(report, dict) or not isinstance(report.get('checks'), list):
        tail = ' '.join(output.strip().splitlines()[-2:])[-300:]
        return [check('hb doctor', False, f'hb doctor --json exited {code} without a report: {tail}')]
    return [
        check(f'hb {item.get("name")}', item.get('ok') is True, str(item.get('detail') or ''))
        for item in report['checks']
        if isinstance(item, dict)
    ]


EGRESS_CHECK = 'egress confined'


def egress_checks(client: Any, objects: BoxObjects) -> list[dict[str, Any]]:
    """On a confined box: nothing but its egress proxy leads out (the readiness gate's proof)."""
    if not objects.confined:
        return []
    problems = confinement.proof(client, objects.box, objects.network, objects.containers)
    return [check(EGRESS_CHECK, not problems, '; '.join(problems) or 'only the egress proxy leads out')]


class Doctor:
    """One tx9_doctor run."""

    def __init__(
        self,
        client: Any,
        home: StateHome,
        params: dict[str, Any],
        docker_host: str | None = None,
        hide: Callable[[str], None] | None = None,
    ) -> None:
        self.client = client
        self.home = home
        self.name: str = params['name']
        self.fail_on_error: bool = params.get('fail_on_error', True)
        self.version: str | None = params.get('version')
        self.docker_host = docker_host
        self.hide = hide

    def run(self) -> dict[str, Any]:
        objects = existing_box(self.client, self.name)
        token = box_secret(self.home, objects)
        if token and self.hide:
            self.hide(token)
        box = objects.box
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            # hb doctor, the longest check (it runs each tool of the box), runs while the host's checks do.
            guest = pool.submit(guest_checks, self.client, objects.containers[ROLE_AGENT])
            checks = [container_check(box, role, attrs) for role, attrs in objects.all_containers().items()]
            checks += endpoint_checks(objects.publisher(), token, self.docker_host)
            checks += egress_checks(self.client, objects)
            checks.append(version_check(objects.containers, self.version))
            checks += budget_checks(describe_box(self.client, self.home, box, volume_usage(self.client))['volumes'])
            checks += guest.result()
        for item in checks:
            item.setdefault('state', PASS if item['ok'] else FAIL)
        failed = [c['name'] for c in checks if not c['ok']]
        warned = [c for c in checks if c['state'] == WARN]
        result = dict(
            changed=False, ok=not failed, failed_checks=failed, warned_checks=[c['name'] for c in warned], checks=checks
        )
        if warned:
            result['warnings'] = [f'Box {box}, {c["name"]}: {c["detail"]}' for c in warned]
        if failed and self.fail_on_error and EGRESS_CHECK in failed:
            raise confinement.refusal(box, [next(c['detail'] for c in checks if c['name'] == EGRESS_CHECK)])
        if failed and self.fail_on_error:
            raise Tx9Error(
                f'Box {box} failed {len(failed)} of {len(checks)} checks: {", ".join(failed)}.',
                'UNHEALTHY',
                'Read the detail of each check named in failed_checks and fix it; set '
                'fail_on_error: false to report without failing.',
                details=result,
            )
        return result
