# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A volume's directory on this host: found where the engine says, else the caller's own cause and fix
(PRECOPY_UNAVAILABLE for a pre-copied move, DOCKER_ERROR for an import beside a copy)."""

from __future__ import annotations

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._portable import precopy
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.host_volumes import volume_directory

LOCAL = 'http+docker://localhost'


class Api:
    def __init__(self, base_url, volumes, refusal=None):
        self.base_url = base_url
        self.volumes = volumes
        self.refusal = refusal

    def inspect_volume(self, name):
        if self.refusal is not None:
            raise self.refusal
        return self.volumes[name]


class Client:
    def __init__(self, base_url=LOCAL, volumes=None, refusal=None):
        self.api = Api(base_url, volumes or {}, refusal)


def test_the_directory_the_engine_names_is_returned_when_it_is_on_this_host(tmp_path):
    client = Client(volumes={'tx9-dev-agent': {'Mountpoint': str(tmp_path)}})
    assert volume_directory(client, 'tx9-dev-agent', 'DOCKER_ERROR', 'fix') == str(tmp_path)


@pytest.mark.parametrize('cause', ['DOCKER_ERROR', 'STATE_HOME'])
def test_an_engine_on_another_host_fails_with_the_callers_cause_and_fix(cause):
    client = Client(base_url='https://engine.example:2376', volumes={'v': {'Mountpoint': '/'}})
    with pytest.raises(Tx9Error) as refused:
        volume_directory(client, 'v', cause, 'do this')
    assert (refused.value.cause, refused.value.fix) == (cause, 'do this')
    assert 'the engine runs elsewhere' in refused.value.reason


@pytest.mark.parametrize('volume', [{'Mountpoint': '/nowhere/tx9-v/_data'}, {}])
def test_a_directory_not_on_this_host_fails_with_the_callers_cause_naming_it(volume):
    with pytest.raises(Tx9Error) as refused:
        volume_directory(Client(volumes={'v': volume}), 'v', 'DOCKER_ERROR', 'do this')
    assert (refused.value.cause, refused.value.fix) == ('DOCKER_ERROR', 'do this')
    assert 'is not on this host' in refused.value.reason
    assert (volume.get('Mountpoint') or 'none named') in refused.value.reason


def test_an_engine_that_refuses_the_inspection_is_a_docker_error_whatever_the_callers_cause():
    client = Client(refusal=OSError('connection reset'))
    with pytest.raises(Tx9Error) as refused:
        volume_directory(client, 'v', 'STATE_HOME', 'do this')
    assert refused.value.cause in ('DOCKER_ERROR', 'DOCKER_UNAVAILABLE') and 'inspect volume v' in refused.value.reason


def test_a_pre_copied_move_asks_for_the_agent_volume_of_its_box_with_its_own_cause_and_fix(monkeypatch):
    monkeypatch.setattr(precopy, 'volume_directory', lambda client, name, cause, fix: (name, cause, fix))
    asked = precopy.volume_root(Client(), 'dev')
    assert asked == ('tx9-dev-agent-data', 'PRECOPY_UNAVAILABLE', precopy.UNAVAILABLE_FIX)
