# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What tx9_info and tx9_resources report about volumes, limits and mounts."""

from __future__ import annotations

from typing import Any

import docker
import pytest
import requests

from ansible_collections.col_agents.tx9.plugins.module_utils._ops import info
from ansible_collections.col_agents.tx9.plugins.module_utils._box import host_mounts
from ansible_collections.col_agents.tx9.plugins.module_utils._names import object_names
from ansible_collections.col_agents.tx9.plugins.module_utils._box.objects import BoxObjects

MIB = 1024 ** 2


class Objects(BoxObjects):
    """BoxObjects as inspect-shaped dicts."""

    def __init__(self, agent: dict[str, Any] | None = None, executor: dict[str, Any] | None = None,
                 volumes: dict[str, Any] | None = None) -> None:
        self.box = 'dev'
        self.names = object_names('dev')
        self.containers = dict(agent=agent, executor=executor)
        self.volumes = volumes if volumes is not None else dict(agent={'Name': 'a'}, executor={'Name': 'e'})


def test_a_volume_over_its_budget_is_flagged_and_the_budget_is_never_enforced() -> None:
    usage = {'tx9-dev-agent-data': 30 * MIB, 'tx9-dev-exec-data': MIB}
    report = info.volume_report(Objects(), dict(agent=10 * MIB, executor=0), usage)
    assert report['agent'] == dict(name='tx9-dev-agent-data', exists=True, used_bytes=30 * MIB, budget_bytes=10 * MIB,
                                   budget_status='over', over_budget=True, budget_enforced=False)
    assert report['executor']['budget_status'] == 'unlimited' and report['executor']['over_budget'] is False


def test_unknown_usage_is_not_flagged_over_budget() -> None:
    report = info.volume_report(Objects(), dict(agent=MIB, executor=MIB), {})
    assert report['agent']['budget_status'] == 'unknown' and report['agent']['over_budget'] is False


def test_a_missing_volume_reports_no_usage() -> None:
    report = info.volume_report(Objects(volumes=dict(agent=None, executor={'Name': 'e'})), {}, {'tx9-dev-agent-data': 5})
    assert report['agent']['exists'] is False and report['agent']['used_bytes'] is None


def test_budgets_come_from_the_state_file_keys() -> None:
    persisted = {'TX9_AGENT_VOLUME_BUDGET_BYTES': str(10 * MIB)}
    assert info.persisted_budgets(persisted) == dict(agent=10 * MIB, executor=0)


def test_live_limits_are_cpus_as_counts_and_memory_in_bytes() -> None:
    agent = {'HostConfig': {'NanoCpus': 1500000000, 'Memory': 1024 * MIB}}
    assert info.live_limits(Objects(agent=agent)) == dict(agent_cpus=1.5, agent_memory=1024 * MIB)


def test_mounts_are_listed_from_the_agent_container_with_require_mountpoint_from_the_state_file() -> None:
    agent = {'Mounts': [{'Type': 'bind', 'Source': '/srv/nas', 'Destination': '/mnt/nas', 'RW': False},
                        {'Type': 'bind', 'Source': '/srv/tmp', 'Destination': '/mnt/tmp', 'RW': True}]}
    persisted = host_mounts.to_state([host_mounts.new_mount('/srv/nas', '/mnt/nas', True, True)])
    assert info.mount_report(Objects(agent=agent), persisted) == [
        dict(source='/srv/nas', target='/mnt/nas', read_only=True, require_mountpoint=True),
        dict(source='/srv/tmp', target='/mnt/tmp', read_only=False, require_mountpoint=False)]


def test_an_unreadable_mount_list_does_not_stop_the_listing() -> None:
    agent = {'Mounts': [{'Type': 'bind', 'Source': '/srv/nas', 'Destination': '/mnt/nas', 'RW': True}]}
    report = info.mount_report(Objects(agent=agent), {host_mounts.MOUNTS_KEY: 'not json'})
    assert report == [dict(source='/srv/nas', target='/mnt/nas', read_only=False, require_mountpoint=False)]


def test_a_box_without_an_agent_container_lists_no_mounts() -> None:
    assert info.mount_report(Objects(), {}) == []


def test_the_desired_state_comes_from_the_state_file_in_the_form_the_box_modules_take_memory_as_integer_bytes() -> None:
    persisted = {'TX9_IMAGE': 'tx9-box:0.1.0', 'TX9_EXECUTOR_PUBLISH': '127.0.0.1:4788',
                 'TX9_EXECUTOR_DNS': '1.1.1.1,9.9.9.9', 'TX9_AGENT_NANO_CPUS': '1500000000',
                 'TX9_AGENT_MEMORY_BYTES': str(512 * MIB), 'TX9_AGENT_VOLUME_BUDGET_BYTES': str(10 * MIB)}
    live = dict(agent_cpus=2000000000, agent_memory=1024 * MIB, executor_cpus=1000000000, executor_memory=256 * MIB)
    desired = info.desired_options(persisted, live, 'tx9-box:0.0.9')
    assert desired == dict(image='tx9-box:0.1.0', executor_web_base_url=None, executor_publish='127.0.0.1:4788',
                           executor_dns=['1.1.1.1', '9.9.9.9'], executor_allowed_hosts=[], agent_cpus=1.5,
                           agent_memory=512 * MIB, executor_cpus=1.0, executor_memory=256 * MIB,
                           agent_volume_budget=10 * MIB, executor_volume_budget='unlimited')


def test_without_a_state_file_the_desired_state_is_the_live_limits_and_the_running_image() -> None:
    desired = info.desired_options({}, dict(agent_cpus=None, agent_memory=64 * MIB), 'tx9-box:0.1.0')
    assert desired['image'] == 'tx9-box:0.1.0' and desired['agent_memory'] == 64 * MIB
    assert 'agent_cpus' not in desired and desired['agent_volume_budget'] == 'unlimited'
    assert 'mounts' not in desired


def test_the_image_list_gives_each_image_its_id_and_sorted_tags_without_dockers_placeholder() -> None:
    class Api:
        @staticmethod
        def images() -> list[dict[str, Any]]:
            return [{'Id': 'sha256:bb', 'RepoTags': ['tx9-box:0.2.0', 'tx9-box:0.1.0']},
                    {'Id': 'sha256:aa', 'RepoTags': ['<none>:<none>']},
                    {'Id': 'sha256:cc', 'RepoTags': None}]

    client = type('Client', (), {'api': Api()})()
    assert info.image_list(client) == [
        dict(id='sha256:aa', tags=[]),
        dict(id='sha256:bb', tags=['tx9-box:0.1.0', 'tx9-box:0.2.0']),
        dict(id='sha256:cc', tags=[]),
    ]


class DfClient:
    """A client whose /system/df query raises what it is given."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def df(self) -> dict[str, Any]:
        raise self.error


def test_an_engine_that_does_not_answer_the_usage_query_gives_no_usage() -> None:
    assert info.volume_usage(DfClient(docker.errors.APIError('df busy'))) == {}
    assert info.volume_usage(DfClient(requests.exceptions.ConnectionError('gone'))) == {}


def test_a_programming_error_in_the_usage_query_is_not_hidden_as_no_usage() -> None:
    with pytest.raises(AttributeError):
        info.volume_usage(DfClient(AttributeError('no such method')))
