# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Each box of a fleet as one inventory host: its name, groups and variables.

Private to the col_agents.tx9 collection. Pure: the inventory plugin hands in
tx9_info's records and the Docker host's variables, and adds what comes out.
"""

from __future__ import annotations

import calendar
import re
import time
from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._box.backup_record import TIME_FORMAT
from ansible_collections.col_agents.tx9.plugins.plugin_utils._plans.tools import box_pins, drifted

GROUP_ALL = 'tx9_boxes'
GROUP_DRIFT = 'tx9_drift'
GROUP_STALE = 'tx9_backup_stale'
GROUP_SUPERSEDED = 'tx9_superseded'
GROUP_TOOLS_DRIFT = 'tx9_tools_drift'
GROUP_HOST_PREFIX = 'tx9_host_'
GROUP_STATE_PREFIX = 'tx9_'
DEFAULT_MAX_AGE = '24h'
UNITS = dict(s=1, m=60, h=3600, d=86400, w=604800)
DURATION = re.compile(r'^(?:(\d+)([smhdw]))+\Z')
DURATION_PART = re.compile(r'(\d+)([smhdw])')
# Variables of a Docker host that say nothing about how to reach it.
NOT_CONNECTION = frozenset(['ansible_facts', 'ansible_local'])

# A box's tx9_info record; one inventory host to add: (name, groups, variables).
Record = dict[str, Any]
Planned = tuple[str, list[str], dict[str, Any]]
# A Docker host's tx9_tools and tx9_boxes, as its inventory gives them.
HostPins = tuple[Any, Any]


def parse_max_age(value: object) -> int:
    """Seconds from an int, a digit string (seconds) or a duration such as 24h, 90m, 7d or 1d12h."""
    text = str(value).strip().lower()
    if text.isdigit():
        return int(text)
    if not DURATION.match(text):
        raise ValueError(f'backup_max_age must be seconds or a duration such as 24h, 90m, 7d or 1d12h, not {value!r}')
    return sum(int(count) * UNITS[unit] for count, unit in DURATION_PART.findall(text))


def parse_time(text: str | None) -> int | None:
    """Seconds since the epoch of a recorded backup time, or None when it does not parse."""
    try:
        return calendar.timegm(time.strptime(text, TIME_FORMAT))  # type: ignore[arg-type]  # None is a TypeError
    except (TypeError, ValueError):
        return None


def backup_stale(last_backup: dict[str, Any] | None, max_age: int, now: float) -> bool:
    """True unless the box has a verified backup no older than max_age seconds at now."""
    if not last_backup or not last_backup.get('verified'):
        return True
    moment = parse_time(last_backup.get('time'))
    return moment is None or now - moment > max_age


def group_part(name: str) -> str:
    """A host name as part of a group name: anything but letters, digits and _ becomes _."""
    return re.sub(r'[^A-Za-z0-9_]', '_', name)


def box_host_name(box: str, host: str) -> str:
    """The inventory name of a box: <box>@<Docker host>, unique across the fleet."""
    return f'{box}@{host}'


def box_groups(record: Record, host: str, stale: bool, tools_drift: list[str] | None = None) -> list[str]:
    """The groups a box belongs to: every box, its state, drift, its Docker host, a stale backup, tools that
    do not answer as pinned.

    A copy a move left behind is in tx9_superseded and its host's group only: no play over a state,
    drift or stale backups takes it for the box.
    """
    if record.get('superseded'):
        return [GROUP_ALL, GROUP_SUPERSEDED, GROUP_HOST_PREFIX + group_part(host)]
    groups = [
        GROUP_ALL,
        GROUP_STATE_PREFIX + group_part(record.get('state') or 'unknown'),
        GROUP_HOST_PREFIX + group_part(host),
    ]
    if record.get('drift'):
        groups.append(GROUP_DRIFT)
    if stale:
        groups.append(GROUP_STALE)
    if tools_drift:
        groups.append(GROUP_TOOLS_DRIFT)
    return groups


def box_vars(record: Record, host: str, stale: bool) -> dict[str, Any]:
    """The tx9_* variables of a box's inventory host, from its tx9_info record (which holds no token)."""
    return dict(
        tx9_box_name=record['name'],
        tx9_host=host,
        tx9_state=record.get('state'),
        tx9_image=record.get('image'),
        tx9_version=record.get('version'),
        tx9_drift=bool(record.get('drift')),
        tx9_dashboard_url=record.get('dashboard_url'),
        tx9_last_backup=record.get('last_backup'),
        tx9_backup_stale=stale,
        tx9_superseded=record.get('superseded'),
        tx9_box_info=record,
    )


def connection_vars(host: str, variables: dict[str, Any]) -> dict[str, Any]:
    """The ansible_* variables of a Docker host, with ansible_host defaulting to its inventory name."""
    found = {
        name: value for name, value in variables.items() if name.startswith('ansible_') and name not in NOT_CONNECTION
    }
    if found.get('ansible_host') in (None, ''):
        found['ansible_host'] = host
    return found


def url_source(url: str | None, python: str) -> tuple[str, dict[str, Any]]:
    """(host name, variables) for a box listed through a docker_host URL from the controller.

    The box's tasks run on the controller (local connection, python: the interpreter that
    runs Ansible, which has the Docker SDK) against that URL, given to the modules as
    tx9_docker_host.
    """
    match = re.match(r'^(\w+)://(?:[^@/]*@)?(\[[^\]]*\]|[^:/]*)(?::(\d+))?', url or '')
    if not match:
        raise ValueError(
            'docker_hosts entries are URLs such as unix:///var/run/docker.sock, ssh://user@host or '
            f'tcp://host:2376, not {url!r}'
        )
    scheme, address, port = match.groups()
    name = 'localhost' if scheme == 'unix' or not address else address.strip('[]')
    if port:
        name = f'{name}_{port}'
    variables = dict(ansible_connection='local', ansible_python_interpreter=python, tx9_docker_host=url)
    return name, variables


def tool_vars(record: Record, host: str, pins: HostPins | None) -> dict[str, Any]:
    """tx9_tools (the versions the inventory pins the box to) and tx9_tools_drift (its tools that do not answer
    as pinned, or as its own pin says when the inventory gives none)."""
    host_pins, declared = pins or (None, None)
    wanted = box_pins(host_pins, declared, record['name'], host)
    return dict(tx9_tools=wanted, tx9_tools_drift=drifted(record, wanted))


def populate_plan(
    listings: dict[str, list[Record]], max_age: int, now: float, pins: dict[str, HostPins] | None = None
) -> list[Planned]:
    """[(inventory name, groups, variables)] for every box of {host: [tx9_info record]}, sorted.

    pins: each Docker host's tx9_tools and tx9_boxes; pins of the wrong shape are a ValueError naming them.
    """
    plan: list[Planned] = []
    for host in sorted(listings):
        for record in sorted(listings[host], key=lambda r: r['name']):
            stale = backup_stale(record.get('last_backup'), max_age, now)
            variables = dict(box_vars(record, host, stale), **tool_vars(record, host, (pins or {}).get(host)))
            groups = box_groups(record, host, stale, variables['tx9_tools_drift'])
            plan.append((box_host_name(record['name'], host), groups, variables))
    return plan
