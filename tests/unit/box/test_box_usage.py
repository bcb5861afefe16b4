# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""CPU and memory in use as tx9_info's usage reports them: the docker stats figures, only for running containers."""

from __future__ import annotations

import threading
import time
from typing import Any

import docker

from ansible_collections.col_agents.tx9.plugins.module_utils._ops import usage

MIB = 1024 ** 2


def stats(total: int, system: int, pre_total: int | None = None, pre_system: int | None = None,
          cpus: int = 4, memory: dict[str, Any] | None = None) -> dict[str, Any]:
    pre = {} if pre_system is None else dict(cpu_usage=dict(total_usage=pre_total), system_cpu_usage=pre_system)
    return dict(cpu_stats=dict(cpu_usage=dict(total_usage=total), system_cpu_usage=system, online_cpus=cpus),
                precpu_stats=pre,
                memory_stats=memory if memory is not None else dict(usage=300 * MIB, limit=1024 * MIB,
                                                                    stats=dict(inactive_file=100 * MIB)))


def test_cpu_percent_is_the_container_share_of_host_cpu_time_times_the_online_cpus() -> None:
    assert usage.cpu_percent(stats(1_500, 20_000, 1_000, 10_000)) == 20.0


def test_cpu_percent_without_a_first_reading_is_none_and_a_second_sample_supplies_it() -> None:
    first = stats(1_000, 10_000)
    assert usage.cpu_percent(first) is None
    assert usage.cpu_percent(stats(1_250, 20_000), previous=first) == 10.0


def test_memory_in_use_leaves_out_the_inactive_page_cache_on_cgroup_v1_and_v2() -> None:
    assert usage.memory_used(stats(0, 0)) == 200 * MIB
    v1 = dict(usage=300 * MIB, stats=dict(total_inactive_file=50 * MIB, inactive_file=100 * MIB))
    assert usage.memory_used(stats(0, 0, memory=v1)) == 250 * MIB
    assert usage.memory_used(stats(0, 0, memory=dict(usage=10, stats=dict(inactive_file=20)))) == 10
    assert usage.memory_used(stats(0, 0, memory={})) is None


class Api:
    """The SDK's low-level stats call: each answer takes `delay` seconds, as the daemon's does; with
    together=n, no call answers before n calls are waiting at once (a one-by-one caller breaks it)."""

    def __init__(self, answers: dict[str, Any], delay: float = 0.0, together: int = 0) -> None:
        self.answers, self.delay, self.calls = answers, delay, []
        self.lock = threading.Lock()
        self.barrier = threading.Barrier(together, timeout=10) if together else None

    def stats(self, container: str, stream: bool = True) -> Any:
        assert stream is False
        with self.lock:
            self.calls.append(container)
        if self.barrier:
            self.barrier.wait()
        time.sleep(self.delay)
        answer = self.answers[container]
        if isinstance(answer, Exception):
            raise answer
        return answer


class Client:
    def __init__(self, api: Api) -> None:
        self.api = api


def listed(name: str, agent: str, executor: str) -> dict[str, Any]:
    return dict(name=name, containers=dict(agent=dict(id=f'{name}-a', state=agent),
                                           executor=dict(id=f'{name}-e', state=executor)))


def test_only_running_containers_are_sampled_all_at_once_and_the_rest_report_none() -> None:
    answers = {f'b{i}-{r}': stats(1_500, 20_000, 1_000, 10_000) for i in range(4) for r in 'ae'}
    api = Api(answers, together=7)
    boxes = [listed(f'b{i}', 'running', 'running') for i in range(3)] + [listed('b3', 'running', 'exited')]
    usage.box_usage(Client(api), boxes)
    assert sorted(api.calls) == sorted(k for k in answers if k != 'b3-e')
    assert boxes[0]['usage']['agent'] == dict(cpu_percent=20.0, memory_bytes=200 * MIB, memory_limit_bytes=1024 * MIB)
    assert boxes[3]['usage'] == dict(agent=boxes[0]['usage']['agent'], executor=None)


def test_a_container_the_engine_cannot_sample_reports_none_and_the_others_still_report() -> None:
    api = Api({'b0-a': docker.errors.NotFound('gone'), 'b0-e': stats(1_500, 20_000, 1_000, 10_000)})
    boxes = [listed('b0', 'running', 'running')]
    usage.box_usage(Client(api), boxes)
    assert boxes[0]['usage']['agent'] is None and boxes[0]['usage']['executor']['cpu_percent'] == 20.0


def test_a_container_that_does_not_answer_by_the_deadline_reports_none() -> None:
    api = Api({'slow': stats(1_500, 20_000, 1_000, 10_000)}, delay=1.0)
    assert usage.sample(Client(api), dict(key='slow'), deadline=0.1) == dict(key=None)
