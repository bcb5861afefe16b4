# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An engine that dies mid-run: told apart from a refusal, waited for, and the flow run again once it answers."""

from __future__ import annotations

import docker.errors
import pytest
import requests

from ansible_collections.col_agents.tx9.plugins.module_utils._box import engine_loss
from ansible_collections.col_agents.tx9.plugins.module_utils._box.engine_loss import (
    ENGINE_RETURNED,
    engine_lost,
    noting_returns,
    through_engine_loss,
    wait_for_engine,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._docker import docker_error, engine_unreachable
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error


class Response:
    def __init__(self, status: int) -> None:
        self.status_code = status
        self.reason = 'error'
        self.url = 'http://docker/x'


def api_error(status: int, explanation: str) -> docker.errors.APIError:
    return docker.errors.APIError('500 Server Error', Response(status), explanation=explanation)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    'exc',
    [
        requests.exceptions.ConnectionError('Connection aborted.'),
        requests.exceptions.ChunkedEncodingError('Connection broken'),
        ConnectionRefusedError(111, 'Connection refused'),
        ConnectionResetError(104, 'Connection reset by peer'),
        api_error(500, 'connection error: desc = "transport: Error while dialing: dial unix containerd.sock"'),
        api_error(500, 'failed to create task: containerd: transport is closing'),
    ],
)
def test_an_engine_that_stopped_answering_is_unavailable_not_a_refusal(exc: Exception) -> None:
    assert engine_unreachable(exc)
    err = docker_error('create container tx9-dev-agent', exc)
    assert err.cause == 'DOCKER_UNAVAILABLE' and 'stopped answering while trying to create container' in err.reason
    assert engine_lost(err) and engine_lost(exc)


@pytest.mark.parametrize(
    'exc',
    [
        api_error(409, 'Conflict. The container name "/tx9-dev-agent" is already in use'),
        api_error(500, 'driver failed programming external connectivity: port is already allocated'),
        docker.errors.NotFound('No such container'),
        BrokenPipeError(32, 'Broken pipe'),
        OSError('bind source path does not exist'),
    ],
)
def test_a_request_the_engine_refused_stays_a_docker_error(exc: Exception) -> None:
    assert not engine_unreachable(exc)
    assert docker_error('start dev', exc).cause == 'DOCKER_ERROR'
    assert not engine_lost(exc)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class Engine:
    """A client whose ping fails until it has been asked down times."""

    def __init__(self, down: int) -> None:
        self.down = down
        self.pings = 0

    def ping(self) -> bool:
        self.pings += 1
        if self.pings <= self.down:
            raise requests.exceptions.ConnectionError('refused')
        return True


def test_the_wait_ends_as_soon_as_the_engine_answers() -> None:
    clock = Clock()
    assert wait_for_engine(Engine(down=3), 90, clock, clock.sleep)
    assert clock.now == 3.0


def test_an_engine_that_stays_away_is_given_up_after_the_wait() -> None:
    clock = Clock()
    assert not wait_for_engine(Engine(down=1000), 10, clock, clock.sleep)
    assert clock.now == 10.0


def lost() -> Tx9Error:
    return docker_error('remove container abc', requests.exceptions.ConnectionError('Connection aborted.'))


def test_a_flow_that_lost_the_engine_runs_again_once_it_answers_and_each_return_is_noted() -> None:
    runs, returns = [], []

    def flow() -> dict[str, object]:
        runs.append(1)
        if len(runs) == 1:
            raise lost()
        if len(runs) == 2:
            raise requests.exceptions.ConnectionError('Connection refused')
        return dict(changed=False, actions=['start the agent container tx9-dev-agent'])

    result = through_engine_loss(object(), flow, on_return=lambda: returns.append(1), waiter=lambda c, w: True)
    assert len(runs) == 3 and len(returns) == 2
    noted = noting_returns(result, len(returns))
    assert noted['changed'] is True
    assert noted['actions'] == [ENGINE_RETURNED, ENGINE_RETURNED, 'start the agent container tx9-dev-agent']


def test_an_engine_that_does_not_come_back_fails_the_run_as_unavailable_saying_to_run_it_again() -> None:
    def flow() -> None:
        raise lost()

    with pytest.raises(Tx9Error) as raised:
        through_engine_loss(object(), flow, wait=30, waiter=lambda c, w: False)
    assert raised.value.cause == 'DOCKER_UNAVAILABLE'
    assert 'did not answer again within 30 s' in raised.value.reason and 'run the same task again' in raised.value.fix


def test_an_engine_lost_again_after_every_return_fails_the_run_after_the_last_one() -> None:
    runs = []

    def flow() -> None:
        runs.append(1)
        raise lost()

    with pytest.raises(Tx9Error) as raised:
        through_engine_loss(object(), flow, returns=2, waiter=lambda c, w: True)
    assert raised.value.cause == 'DOCKER_UNAVAILABLE' and len(runs) == 3


@pytest.mark.parametrize(
    'exc', [Tx9Error('No such box.', 'NO_BOX'), api_error(409, 'Conflict'), KeyError('Id')]
)
def test_any_other_failure_is_raised_at_once_without_waiting_for_the_engine(exc: Exception) -> None:
    def flow() -> None:
        raise exc

    def waiter(client: object, wait: float) -> bool:
        raise AssertionError('waited for an engine that did not go away')

    with pytest.raises(type(exc)):
        through_engine_loss(object(), flow, waiter=waiter)


def test_a_run_without_a_lost_engine_is_reported_as_it_is() -> None:
    result = dict(changed=False, actions=[])
    assert noting_returns(dict(result), 0) == result
    assert engine_loss.ENGINE_RETURNS >= 1
