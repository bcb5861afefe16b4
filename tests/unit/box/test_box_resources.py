# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tx9_resources' flow: refusals before the lock, and which resources a run wants."""

from __future__ import annotations

from typing import Any, NoReturn, cast

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._box import limits
from ansible_collections.col_agents.tx9.plugins.module_utils._box.objects import BoxObjects
from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
from ansible_collections.col_agents.tx9.plugins.module_utils._ops import resources
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error

GIB = 1024 ** 3


class HostWithCpus:
    """A Docker client that only says how many CPUs the host has; anything else fails the test."""

    def __init__(self, cpus: int) -> None:
        self.cpus = cpus

    def info(self) -> dict[str, Any]:
        return {'NCPU': self.cpus}

    def __getattr__(self, name: str) -> NoReturn:
        raise AssertionError(f'{name} was used before the values were checked')


class Untouchable:
    def __getattr__(self, name: str) -> NoReturn:
        raise AssertionError('the state home was used before the values were checked')


def refused(**given: Any) -> Tx9Error:
    values = dict(name='dev', reset=False)
    values.update(given)
    with pytest.raises(Tx9Error) as info:
        resources.ResourcesRun(HostWithCpus(2), cast(StateHome, Untouchable()), values).run()
    return info.value


@pytest.mark.parametrize('given, words', [
    (dict(agent_memory='12 parsecs'), "agent_memory='12 parsecs' is not valid: it is not a size."),
    (dict(executor_memory='9' * 40), "executor_memory='%s' is not valid: it is more than Docker can represent"
                                     % ('9' * 40)),
    (dict(agent_cpus=-1.0), 'agent_cpus=-1.0 is not valid: it is negative.'),
    (dict(agent_cpus=float('inf')), 'agent_cpus=inf is not valid: it is not a finite number.'),
    (dict(executor_cpus=float('nan')), 'executor_cpus=nan is not valid: it is not a finite number.'),
    (dict(agent_cpus=3.0), 'agent_cpus=3.0 is not valid: this host has only 2 CPUs and Docker refuses more.'),
    (dict(agent_volume_budget='lots'), "agent_volume_budget='lots' is not valid: it is not a size."),
])
def test_invalid_values_are_refused_with_invalid_resources_before_the_box_is_locked(given: dict[str, Any], words: str) -> None:
    err = refused(**given)
    assert err.cause == 'INVALID_RESOURCES'
    assert err.reason.startswith(words)


def test_reset_with_values_is_refused_naming_them() -> None:
    err = refused(reset=True, agent_memory='1g', agent_cpus=1.0)
    assert err.cause == 'INVALID_ARGUMENT'
    assert err.reason == 'reset cannot be combined with agent_cpus, agent_memory.'


def test_reset_wants_the_defaults_clamped_to_the_host_and_no_budgets() -> None:
    current = dict(limits.defaults(2), agent_memory=GIB, agent_volume_budget=10 * 1024 ** 2)
    wanted = resources.wanted_resources(dict(reset=True), current, {}, 2)
    assert wanted == limits.defaults(2)
    assert wanted['agent_cpus'] == 2 * limits.NANO and wanted['agent_memory'] == 8 * GIB


def test_a_given_value_changes_only_its_own_resource() -> None:
    current = dict(limits.defaults(8), agent_memory=3 * GIB)
    persisted = limits.to_state(current)
    wanted = resources.wanted_resources(dict(executor_memory='1g'), current, persisted, 8)
    assert wanted == dict(current, executor_memory=GIB)


class Objects(BoxObjects):
    def __init__(self, live: dict[str, Any]) -> None:
        self.live = live

    def live_resources(self) -> dict[str, Any]:
        return self.live


def test_the_current_resources_are_the_live_limits_and_the_saved_budgets() -> None:
    persisted = limits.to_state(dict(limits.defaults(8), agent_memory=4 * GIB, agent_volume_budget=GIB))
    current = resources.current_resources(Objects(dict(agent_memory=2 * GIB, agent_cpus=None)), persisted, 8)
    assert current['agent_memory'] == 2 * GIB
    assert current['agent_volume_budget'] == GIB
    assert current['agent_cpus'] == 4 * limits.NANO


def test_old_limits_are_read_from_the_inspected_container() -> None:
    attrs = {'HostConfig': {'NanoCpus': limits.NANO, 'Memory': GIB, 'MemorySwap': 2 * GIB}}
    assert resources.old_limits(attrs) == dict(NanoCpus=limits.NANO, Memory=GIB, MemorySwap=2 * GIB)
