# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Outliving an engine that dies mid-run: wait for it to answer again, then carry on from what it has.

Private to the col_agents.tx9 collection. A run that loses the Docker engine
(its daemon killed and started again by its service manager) would leave a
box half-changed: a recreated container removed and not yet made again.
through_engine_loss runs a flow again once the engine answers, and the flow,
which plans from the objects the engine reports, finishes what was asked.
An engine that stays away fails the run with DOCKER_UNAVAILABLE; the next
run of the same task finishes it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from ansible_collections.col_agents.tx9.plugins.module_utils._docker import ENGINE_ERRORS, engine_unreachable
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error

T = TypeVar('T')
# What a flow raises when it loses the engine: a Tx9Error it made of the SDK's failure, or that failure itself.
LOSSES: tuple[type[Exception], ...] = (Tx9Error, *ENGINE_ERRORS)
# How long a run waits for a lost engine to answer again (a service manager restarts one in seconds).
ENGINE_RETURN_WAIT = 90.0
# How often a run starts its flow again after the engine came back.
ENGINE_RETURNS = 2


def engine_lost(exc: BaseException) -> bool:
    """Whether exc says the engine stopped answering (not that it refused a request)."""
    if isinstance(exc, Tx9Error):
        return exc.cause == 'DOCKER_UNAVAILABLE'
    return engine_unreachable(exc)


def engine_answers(client: Any) -> bool:
    try:
        client.ping()
    except ENGINE_ERRORS:
        return False
    return True


def wait_for_engine(
    client: Any,
    wait: float = ENGINE_RETURN_WAIT,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """Whether the engine answers again within wait seconds."""
    deadline = clock() + wait
    while True:
        if engine_answers(client):
            return True
        if clock() >= deadline:
            return False
        sleep(1.0)


def gone_for_good(exc: BaseException, wait: float) -> Tx9Error:
    """DOCKER_UNAVAILABLE for an engine that did not answer again within wait seconds."""
    said = exc.reason if isinstance(exc, Tx9Error) else f'The Docker engine stopped answering: {exc}'
    return Tx9Error(
        f'{said} It did not answer again within {wait:.0f} s, so the run stopped part way.',
        'DOCKER_UNAVAILABLE',
        'Start Docker on the host again (the col_agents.tx9.tx9_host role does), then run the same task again: '
        'it carries on from what the engine has.',
    )


def through_engine_loss(
    client: Any,
    flow: Callable[[], T],
    on_return: Callable[[], None] | None = None,
    wait: float = ENGINE_RETURN_WAIT,
    returns: int = ENGINE_RETURNS,
    waiter: Callable[[Any, float], bool] | None = None,
) -> T:
    """flow(), run again (at most returns times) each time the engine it lost answers again.

    on_return is called before each new run (to note it among the actions). An engine that does
    not answer within wait seconds fails the run with DOCKER_UNAVAILABLE.
    """
    waiter = waiter or wait_for_engine
    for attempt in range(returns + 1):
        try:
            return flow()
        except LOSSES as exc:
            if not engine_lost(exc):
                raise
            if not waiter(client, wait):
                raise gone_for_good(exc, wait) from exc
            if attempt == returns:
                raise
        if on_return is not None:
            on_return()
    raise AssertionError('unreachable')


ENGINE_RETURNED = 'the engine stopped answering mid-run and answered again: carry on from what it has'


def noting_returns(result: dict[str, Any], returns: int) -> dict[str, Any]:
    """A run's result with the engine's returns said first among its actions (and the run changed)."""
    if returns:
        result['actions'] = [ENGINE_RETURNED] * returns + list(result.get('actions') or [])
        result['changed'] = True
    return result
