# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Listing the boxes of a host from the daemon's labels.

Private to the col_agents.tx9 collection. Works with the state home gone:
the daemon is the truth about what exists; the state home only adds the
advisory budgets and the token for an authenticated URL.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ansible_collections.col_agents.tx9.plugins.module_utils._box import (
    egress,
    executor_config,
    host_mounts,
    limits,
    superseded,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._box.backup_record import last_backup
from ansible_collections.col_agents.tx9.plugins.module_utils._box.drill_record import read_drill
from ansible_collections.col_agents.tx9.plugins.module_utils._box.executor_config import url_host_for
from ansible_collections.col_agents.tx9.plugins.module_utils._box.objects import (
    LABEL_WEB_BASE_URL,
    ROLES,
    BoxObjects,
    dashboard_url,
    published_binding,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._box.quiesce import running_guest_view
from ansible_collections.col_agents.tx9.plugins.module_utils._box.tools_report import tools_report
from ansible_collections.col_agents.tx9.plugins.module_utils._docker import (
    box_names_from_labels,
    docker_error,
    is_engine_error,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._ops.usage import box_usage
from ansible_collections.col_agents.tx9.plugins.module_utils._version import COLLECTION_VERSION

if TYPE_CHECKING:
    from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome

TOKEN_KEY = 'EXECUTOR_MCP_TOKEN'
IMAGE_KEY = 'TX9_IMAGE'
DASHBOARD_USER = 'tx9'


def volume_usage(client: Any) -> dict[str, int | None]:
    """Volume name -> bytes used, from one /system/df query (None when not reported); {} when the engine
    does not answer it."""
    try:
        volumes = client.df().get('Volumes') or []
    except Exception as exc:
        if not is_engine_error(exc):
            raise
        return {}
    usage: dict[str, int | None] = {}
    for volume in volumes:
        size = (volume.get('UsageData') or {}).get('Size')
        usage[volume['Name']] = size if size is not None and size >= 0 else None
    return usage


def budget_status(used: int | None, budget: int | None) -> str:
    if not budget:
        return 'unlimited'
    if used is None:
        return 'unknown'
    return 'over' if used > budget else 'ok'


def persisted_budgets(persisted: dict[str, str]) -> dict[str, int]:
    """Role -> the advisory volume budget in bytes from a state file (0: unlimited)."""
    keys = {option: key for option, key, _kind in limits.RESOURCE_OPTIONS}
    return {role: int(persisted.get(keys[f'{role}_volume_budget']) or 0) for role in ROLES}


def volume_report(
    objects: BoxObjects, budgets: Mapping[str, int | None], usage: Mapping[str, int | None]
) -> dict[str, dict[str, Any]]:
    """Each volume's measured use against its advisory budget; budgets are never enforced."""
    volumes = {}
    for role in ROLES:
        name = objects.names[f'{role}_volume']
        budget = budgets.get(role) or 0
        used = usage.get(name) if objects.volumes[role] is not None else None
        status = budget_status(used, budget)
        volumes[role] = dict(
            name=name,
            exists=objects.volumes[role] is not None,
            used_bytes=used,
            budget_bytes=budget or None,
            budget_status=status,
            over_budget=status == 'over',
            budget_enforced=False,
        )
    return volumes


def live_limits(objects: BoxObjects) -> dict[str, Any]:
    """The CPU and memory limits the daemon reports for the box's containers; CPUs as counts."""
    return {
        option: value / float(limits.NANO) if value and option.endswith('_cpus') else value
        for option, value in objects.live_resources().items()
    }


def desired_options(persisted: dict[str, str], live: dict[str, Any], image: str | None) -> dict[str, Any]:
    """The box's desired state as the options tx9_box and tx9_import take: image, executor options,
    limits and budgets from the state file, a limit missing there from the live containers.
    CPUs are counts, memory and budgets integers of bytes (a budget of none is 'unlimited'), as
    tx9_info's limits and tx9_resources' resources give them.

    Host mounts are left out: they name this host's directories and never travel.
    """
    options: dict[str, Any] = dict(image=persisted.get(IMAGE_KEY) or image)
    try:
        options.update(executor_config.resolve({}, persisted))
    except Tx9Error:
        pass  # an unreadable value is left to the box's own defaults rather than carried
    keys = {option: key for option, key, _kind in limits.RESOURCE_OPTIONS}
    for option, key, kind in limits.RESOURCE_OPTIONS:
        value = persisted.get(keys[option]) or live.get(option)
        if kind == 'budget':
            # Bytes as an integer, as tx9_resources reports them; 0 or none is unlimited.
            options[option] = int(value) if value and str(value) != '0' else 'unlimited'
        elif value:
            options[option] = int(value) / float(limits.NANO) if kind == 'cpus' else int(value)
    try:
        policy = egress.from_state(persisted)
    except Tx9Error:
        policy = egress.OPEN  # as above: the box's policy is then given again where it lands
    if policy != egress.OPEN:
        # An open box carries none: wherever it lands, a box is open unless told otherwise.
        options['egress'] = egress.option_value(policy)
    return options


def mount_report(objects: BoxObjects, persisted: dict[str, str]) -> list[dict[str, Any]]:
    """The host mounts the agent container has, with require_mountpoint from the state file."""
    required: dict[str, bool] = {}
    try:
        required = {m['target']: m['require_mountpoint'] for m in host_mounts.from_state(persisted, objects.box)}
    except Tx9Error:
        pass  # an unreadable mount list does not stop a listing; the daemon still says what is mounted
    return [
        dict(source=source, target=target, read_only=read_only, require_mountpoint=required.get(target, False))
        for source, target, read_only in host_mounts.live_mounts(objects.containers['agent'])
    ]


def last_drill(home: StateHome | None, box: str) -> dict[str, Any] | None:
    """The box's last drill record, or None; an unreadable record does not stop a listing."""
    try:
        return read_drill(home, box) if home else None
    except Tx9Error:
        return None


def describe_box(
    client: Any, home: StateHome | None, box: str, usage: dict[str, int | None], with_token: bool = False
) -> dict[str, Any]:
    """One box as tx9_info reports it."""
    objects = BoxObjects(client, box)
    persisted = home.read_box(box) if home else {}
    summary: dict[str, Any] = objects.summary()
    executor = objects.containers['executor']
    labels = ((executor or {}).get('Config') or {}).get('Labels') or {}
    publisher = objects.publisher()
    address, _port = published_binding(publisher)
    values = dict(executor_web_base_url=labels.get(LABEL_WEB_BASE_URL))
    summary['dashboard_url'] = dashboard_url(values, url_host_for(address), publisher)
    summary['egress'] = (
        egress.summary(egress.from_state(persisted, box))
        if persisted
        else dict(mode=egress.ALLOWLIST if objects.confined else egress.OPEN_MODE, rules=None)
    )
    summary['drift'] = bool(summary['version'] and summary['version'] != COLLECTION_VERSION)
    summary['collection_version'] = COLLECTION_VERSION
    summary['limits'] = live_limits(objects)
    created = [attrs['Created'] for attrs in objects.containers.values() if attrs]
    summary['created'] = min(created) if created else None
    summary['volumes'] = volume_report(objects, persisted_budgets(persisted), usage)
    summary['mounts'] = mount_report(objects, persisted)
    summary['last_backup'] = last_backup(persisted, last_drill(home, box))
    summary['desired'] = desired_options(persisted, objects.live_resources(), summary['image'])
    summary['superseded'] = superseded.read(persisted, objects.containers)
    agent = objects.containers['agent']
    summary.update(running_guest_view(client, agent))
    running = bool(agent and (agent.get('State') or {}).get('Running'))
    summary['tools'] = tools_report(client, agent['Id']) if agent and running else None
    if with_token:
        token = persisted.get(TOKEN_KEY) or objects.token()
        summary['auth_url'] = authenticated_url(summary['dashboard_url'], token) if token else None
    return summary


def authenticated_url(url: str | None, token: str) -> str | None:
    """The dashboard URL carrying the token, or None without a URL.

    Executor checks HTTP Basic credentials (any user, the token as password) and
    bearer headers; a browser sends the credentials embedded in the URL. The
    _token query parameter is kept for Executor releases that read it.
    """
    if not url:
        return None
    scheme, rest = url.split('://', 1)
    return f'{scheme}://{DASHBOARD_USER}:{token}@{rest}?_token={token}'


def list_boxes(
    client: Any, home: StateHome | None, name: str | None = None, with_token: bool = False, with_usage: bool = False
) -> list[dict[str, Any]]:
    """The boxes as tx9_info reports them; with_usage adds each running container's CPU and memory in use."""
    names = box_names_from_labels(client)
    if name is not None:
        names = [n for n in names if n == name]
    usage = volume_usage(client) if names else {}
    boxes = [describe_box(client, home, box, usage, with_token) for box in names]
    if with_usage:
        box_usage(client, boxes)
    return boxes


def image_list(client: Any) -> list[dict[str, Any]]:
    """Every image on the host as {id, tags}, sorted by ID; tags sorted, without Docker's <none> placeholder."""
    try:
        images = client.api.images()
    except Exception as exc:
        if not is_engine_error(exc):
            raise
        raise docker_error('list the images', exc)
    found = [
        dict(id=image['Id'], tags=sorted(tag for tag in image.get('RepoTags') or [] if tag != '<none>:<none>'))
        for image in images
    ]
    return sorted(found, key=lambda image: image['id'])
