# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Container limits and advisory volume budgets of a box.

Private to the col_agents.tx9 collection. The one parser, persistence and
live update of limits, for tx9_box and tx9_resources alike. CPUs are stored
as NanoCPUs, memory and budgets as bytes (Docker's binary units); a budget of
0 means unlimited. Budgets are advisory: local volumes are never
quota-enforced.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._docker import ENGINE_ERRORS, docker_error
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error

NANO = 10**9
MIN_MEMORY = 6 * 1024 * 1024
MIN_CPUS = 0.01
# Docker keeps sizes in signed 64-bit numbers; swap (twice the memory) must fit too.
MAX_BYTES = 2**63 - 1
MAX_MEMORY = MAX_BYTES // 2
UNITS = {'': 1, 'b': 1, 'k': 1024, 'm': 1024**2, 'g': 1024**3, 't': 1024**4}
SIZE = re.compile(r'^\s*(\d+(?:\.\d+)?)\s*([bkmgt]?)(?:i?b)?\s*$', re.IGNORECASE)

CPUS_FIX = 'Give a number of CPUs such as 1.5 (at least 0.01).'

DEFAULT_CPUS = dict(agent=4.0, executor=2.0)
DEFAULT_MEMORY = dict(agent=8 * 1024**3, executor=2 * 1024**3)

# Option name -> (state file key, kind)
RESOURCE_OPTIONS = (
    ('agent_cpus', 'TX9_AGENT_NANO_CPUS', 'cpus'),
    ('agent_memory', 'TX9_AGENT_MEMORY_BYTES', 'memory'),
    ('executor_cpus', 'TX9_EXECUTOR_NANO_CPUS', 'cpus'),
    ('executor_memory', 'TX9_EXECUTOR_MEMORY_BYTES', 'memory'),
    ('agent_volume_budget', 'TX9_AGENT_VOLUME_BUDGET_BYTES', 'budget'),
    ('executor_volume_budget', 'TX9_EXECUTOR_VOLUME_BUDGET_BYTES', 'budget'),
)


def _invalid(option: str, value: object, why: str, fix: str) -> Tx9Error:
    return Tx9Error(f'{option}={value!r} is not valid: {why}.', 'INVALID_RESOURCES', fix)


def parse_size(option: str, value: object, maximum: int = MAX_BYTES) -> int:
    """Bytes from an int or a string such as 512m, 8g, 8GiB."""
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    else:
        match = SIZE.match(str(value))
        if not match:
            raise _invalid(option, value, 'it is not a size', 'Give bytes or a size such as 512m, 8g or 8GiB.')
        number = int(Decimal(match.group(1)) * UNITS[match.group(2).lower()])
    if number < 0:
        raise _invalid(option, value, 'it is negative', 'Give a positive size such as 8g.')
    if number > maximum:
        raise _invalid(
            option,
            value,
            f'it is more than Docker can represent (at most {maximum} bytes)',
            'Give a size such as 8g.',
        )
    return number


def parse_memory(option: str, value: object) -> int:
    number = parse_size(option, value, MAX_MEMORY)
    if number < MIN_MEMORY:
        raise _invalid(option, value, 'Docker needs at least 6 MiB', 'Give at least 6m, for example 2g.')
    return number


def parse_budget(option: str, value: object) -> int:
    if str(value).strip().lower() in ('unlimited', 'none', '0'):
        return 0
    if not (isinstance(value, int) and not isinstance(value, bool)) and not SIZE.match(str(value)):
        raise _invalid(option, value, 'it is not a size', 'Give bytes, a size such as 512m, 50g or 8GiB, or unlimited.')
    return parse_size(option, value)


def parse_cpus(option: str, value: Any, host_cpus: int) -> int:
    """NanoCPUs from a CPU count; more than the host has is refused."""
    if isinstance(value, bool):
        raise _invalid(option, value, 'it is not a number of CPUs', CPUS_FIX)
    try:
        cpus = float(value)
    except (TypeError, ValueError, OverflowError):
        raise _invalid(option, value, 'it is not a number of CPUs', CPUS_FIX)
    if not math.isfinite(cpus):
        raise _invalid(option, value, 'it is not a finite number', 'Give a number such as 1.5.')
    if cpus < 0:
        raise _invalid(option, value, 'it is negative', 'Give a positive number such as 1.5.')
    if cpus < MIN_CPUS:
        raise _invalid(option, value, f'Docker needs at least {MIN_CPUS:.2f} CPUs', 'Give a number such as 1.5.')
    if host_cpus and cpus > host_cpus:
        raise _invalid(
            option,
            value,
            f'this host has only {host_cpus} CPUs and Docker refuses more',
            f'Give at most {host_cpus}.',
        )
    if cpus * NANO > MAX_BYTES:
        raise _invalid(option, value, 'it is more than Docker can represent', 'Give a number such as 1.5.')
    return int(round(cpus * NANO))


def parse_option(option: str, kind: str, value: object, host_cpus: int) -> int:
    if kind == 'cpus':
        return parse_cpus(option, value, host_cpus)
    if kind == 'memory':
        return parse_memory(option, value)
    return parse_budget(option, value)


def host_cpu_count(client: Any) -> int:
    """The CPUs the Docker host has, or 0 when it does not say."""
    try:
        return int(client.info().get('NCPU') or 0)
    except ENGINE_ERRORS + (ValueError, TypeError):  # no answer, or not a number
        return 0


def defaults(host_cpus: int) -> dict[str, int]:
    """The default limits, CPU counts clamped to what the host has."""
    values: dict[str, int] = {}
    for role in ('agent', 'executor'):
        cpus = DEFAULT_CPUS[role]
        if host_cpus:
            cpus = min(cpus, float(host_cpus))
        values[f'{role}_cpus'] = int(round(cpus * NANO))
        values[f'{role}_memory'] = DEFAULT_MEMORY[role]
        values[f'{role}_volume_budget'] = 0
    return values


def asked_once(count: Callable[[], int]) -> Callable[[], int]:
    """count, called at most once however often the answer is wanted."""
    known: list[int] = []

    def ask() -> int:
        if not known:
            known.append(count())
        return known[0]

    return ask


def validate(params: Mapping[str, Any], host_cpus: Callable[[], int]) -> dict[str, int]:
    """The given options, parsed; host_cpus is called only when a CPU option is given."""
    cpus = asked_once(host_cpus)
    parsed: dict[str, int] = {}
    for option, _key, kind in RESOURCE_OPTIONS:
        given = params.get(option)
        if given is not None:
            parsed[option] = parse_option(option, kind, given, cpus() if kind == 'cpus' else 0)
    return parsed


def resolve(
    params: Mapping[str, Any],
    persisted: Mapping[str, str],
    host_cpus: Callable[[], int],
    live: Mapping[str, int | None] | None = None,
) -> dict[str, int]:
    """The box's resources: given options, else persisted, else live, else defaults.

    Validates every given option before anything is changed. host_cpus (the host's CPU count, 0 when it does not
    say) is called at most once, and only when a CPU option is given or a CPU limit takes its default.
    """
    cpus = asked_once(host_cpus)
    given = validate(params, cpus)
    resolved: dict[str, int] = {}
    live = live or {}
    for option, key, kind in RESOURCE_OPTIONS:
        if option in given:
            resolved[option] = given[option]
        elif persisted.get(key, '') != '':
            resolved[option] = int(persisted[key])
        elif (found := live.get(option)) is not None:
            resolved[option] = found
        else:
            resolved[option] = defaults(cpus() if kind == 'cpus' else 0)[option]
    return resolved


def to_state(resources: Mapping[str, int]) -> dict[str, str]:
    """State file keys for resources (budgets of 0 are dropped: unlimited)."""
    return dict((key, str(resources[option]) if resources[option] else '') for option, key, _kind in RESOURCE_OPTIONS)


def container_limits(resources: Mapping[str, int], role: str) -> dict[str, int]:
    """The Docker limits of one role's container: NanoCpus, Memory, and swap at twice the memory."""
    memory = resources[f'{role}_memory']
    return dict(NanoCpus=resources[f'{role}_cpus'], Memory=memory, MemorySwap=2 * memory)


def limits_differ(host_config: Mapping[str, Any], limits: Mapping[str, int]) -> bool:
    """Whether a container's HostConfig differs from limits in CPUs or memory."""
    return host_config.get('NanoCpus') != limits['NanoCpus'] or host_config.get('Memory') != limits['Memory']


def update_live(client: Any, container_id: str, limits: Mapping[str, int], name: str) -> None:
    """Apply limits to a running or stopped container in place (docker update); its id stays."""
    api = client.api
    try:
        # The SDK's update_container has no NanoCpus, so post the documented body directly.
        response = api._post_json(api._url('/containers/{0}/update', container_id), data=limits)
        api._raise_for_status(response)
    except ENGINE_ERRORS as exc:
        raise docker_error(f'update the limits of {name}', exc)


def human(resources: Mapping[str, int], sizes: Callable[[int], str] | None = None) -> dict[str, Any]:
    """A readable view: CPUs as floats, sizes in bytes (or as sizes(bytes) says), 0 budgets as 'unlimited'."""
    view: dict[str, Any] = {}
    for option, _key, kind in RESOURCE_OPTIONS:
        value = resources[option]
        if kind == 'cpus':
            view[option] = value / float(NANO)
        elif kind == 'budget' and not value:
            view[option] = 'unlimited'
        else:
            view[option] = sizes(value) if sizes else value
    return view


def human_size(number: int) -> str:
    """Bytes in the largest binary unit that holds them whole: 3221225472 -> '3 GiB', 1610612736 -> '1536 MiB'."""
    for unit, factor in (('TiB', 1024**4), ('GiB', 1024**3), ('MiB', 1024**2), ('KiB', 1024)):
        if number and number % factor == 0:
            return f'{number // factor} {unit}'
    return f'{number} B'


def diff_view(resources: Mapping[str, int]) -> dict[str, Any]:
    """Resources as a diff shows them: memory and budgets in binary units ('3 GiB'), never bare bytes."""
    return human(resources, human_size)
