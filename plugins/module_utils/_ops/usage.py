# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""CPU and memory in use by running box containers: one `docker stats` sample each.

Private to the col_agents.tx9 collection. The figures are the ones `docker stats`
prints. A non-streaming stats call (stream=False, one_shot=False) makes the daemon
read the container's cgroup twice about a second apart, so precpu_stats holds the
first reading and cpu_stats the second: the CPU percentage is the container's share
of the host's CPU time between them, times the online CPUs (100 is one whole CPU).
one_shot=True would answer at once but with an empty precpu_stats, which gives no
percentage; should a daemon still answer without a first reading, a second call
supplies it. Memory is the usage minus the inactive page cache (inactive_file on
cgroup v2, total_inactive_file on v1), as the CLI subtracts it. The containers are
sampled concurrently, so a listing waits about one sample however many boxes it has;
a container that does not answer within the deadline is reported as null.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._docker import is_engine_error

WORKERS = 8
DEADLINE = 20.0


def cpu_percent(stats: Mapping[str, Any], previous: Mapping[str, Any] | None = None) -> float | None:
    """The CPU percentage between precpu_stats (or previous's cpu_stats) and cpu_stats; None without both."""
    now = stats.get('cpu_stats') or {}
    before = ((previous or {}).get('cpu_stats') if previous is not None else stats.get('precpu_stats')) or {}
    readings = (
        now.get('system_cpu_usage'),
        before.get('system_cpu_usage'),
        (now.get('cpu_usage') or {}).get('total_usage'),
        (before.get('cpu_usage') or {}).get('total_usage'),
    )
    if any(reading is None for reading in readings):
        return None
    system_now, system_before, total_now, total_before = (int(reading or 0) for reading in readings)
    system_delta = system_now - system_before
    cpu_delta = total_now - total_before
    if system_delta <= 0:
        return None
    if cpu_delta < 0:
        return 0.0
    cpus = int(now.get('online_cpus') or len((now.get('cpu_usage') or {}).get('percpu_usage') or []) or 1)
    return round(cpu_delta / system_delta * cpus * 100.0, 2)


def memory_used(stats: Mapping[str, Any]) -> int | None:
    """Bytes in use without the inactive page cache, as `docker stats` counts them; None when not reported."""
    memory = stats.get('memory_stats') or {}
    usage = memory.get('usage')
    if usage is None:
        return None
    detail = memory.get('stats') or {}
    for key in ('total_inactive_file', 'inactive_file'):
        cache = detail.get(key)
        if cache is not None and cache < usage:
            return int(usage - cache)
    return int(usage)


def one_sample(client: Any, container_id: str) -> dict[str, Any] | None:
    """One container's CPU percentage, memory in use and memory limit; None when the engine gives none."""
    try:
        stats = client.api.stats(container_id, stream=False)
        cpu = cpu_percent(stats)
        if cpu is None and (stats.get('cpu_stats') or {}).get('system_cpu_usage') is not None:
            cpu = cpu_percent(client.api.stats(container_id, stream=False), previous=stats)
    except Exception as exc:
        if not is_engine_error(exc):
            raise
        return None
    if not stats.get('memory_stats') and cpu is None:
        return None  # a container that stopped meanwhile answers with empty figures
    limit = (stats.get('memory_stats') or {}).get('limit')
    return dict(cpu_percent=cpu, memory_bytes=memory_used(stats), memory_limit_bytes=int(limit) if limit else None)


def sample(client: Any, container_ids: Mapping[str, str], deadline: float = DEADLINE) -> dict[str, Any]:
    """Key -> one_sample of its container, all sampled at once; None for one not answered by the deadline."""
    found: dict[str, Any] = dict.fromkeys(container_ids)
    if not container_ids:
        return found
    pool = ThreadPoolExecutor(max_workers=min(WORKERS, len(container_ids)))
    try:
        futures = {pool.submit(one_sample, client, cid): key for key, cid in container_ids.items()}
        done, _pending = wait(futures, timeout=deadline)
        for future in done:
            found[futures[future]] = future.result()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return found


def box_usage(client: Any, boxes: list[dict[str, Any]]) -> None:
    """Add `usage` to each box summary: per role the sample of its running container, else None."""
    running = {
        (index, role): container['id']
        for index, box in enumerate(boxes)
        for role, container in (box.get('containers') or {}).items()
        if container and container.get('state') == 'running' and container.get('id')
    }
    samples = sample(client, {f'{index}/{role}': cid for (index, role), cid in running.items()})
    for index, box in enumerate(boxes):
        box['usage'] = {role: samples.get(f'{index}/{role}') for role in (box.get('containers') or {})}
