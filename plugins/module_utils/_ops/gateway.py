# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tx9_gateway: the box's single-writer Hermes gateway, enabled or disabled through `hb`.

Private to the col_agents.tx9 collection. Under the box lock, the gateway's
status is read with `hb status --json`; a change goes through `hb
gateway-enable --confirm-single-writer ...` or `hb gateway-disable`, which
own the markers and the process. Enabling needs the caller's explicit
confirmation that no other copy of this Hermes identity runs a gateway.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ansible_collections.col_agents.tx9.plugins.module_utils._box import superseded
from ansible_collections.col_agents.tx9.plugins.module_utils._box.guest import guest_status, run_hb
from ansible_collections.col_agents.tx9.plugins.module_utils._box.objects import container_state
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._lock import box_lock
from ansible_collections.col_agents.tx9.plugins.module_utils._names import ROLE_AGENT, validate_box_name
from ansible_collections.col_agents.tx9.plugins.module_utils._ops.logs import existing_box

if TYPE_CHECKING:
    from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome

PHRASE = 'I_CONFIRM_NO_OTHER_GATEWAY_USES_THIS_IDENTITY'
# Gateway states in which its process runs (or is being started by hb).
RUNNING = ('running', 'starting')
ALIVE = RUNNING + ('restarting',)
GUEST_FIX = 'Run `hb doctor` and `hb logs hermes` in the box and fix what they name, then run again.'


def gateway_view(status: dict[str, Any]) -> dict[str, Any]:
    """The gateway part of `hb status --json`, as tx9_gateway returns it."""
    gateway = status.get('gateway')
    if not isinstance(gateway, dict):
        raise Tx9Error(
            f'The box did not report its gateway: {status.get("detail") or "no gateway in hb status"}',
            'GUEST_FAILED',
            GUEST_FIX,
        )
    return dict(
        enabled=bool(gateway.get('enabled')),
        running=gateway.get('state') in RUNNING,
        state=gateway.get('state'),
        pid=gateway.get('pid'),
        since=gateway.get('since'),
        detail=gateway.get('detail'),
        quiesced=bool(status.get('quiesced')),
    )


def settled(view: dict[str, Any], state: str) -> bool:
    """True when the gateway already is as state asks: enabled and running, or disabled and not running."""
    if state == 'enabled':
        return bool(view['enabled'] and view['running'])
    return not view['enabled'] and view['state'] not in ALIVE


def predicted(view: dict[str, Any], state: str) -> dict[str, Any]:
    """The view after a change to state (check mode)."""
    after = dict(view, enabled=state == 'enabled', running=state == 'enabled', pid=None, since=None)
    after['state'] = 'running' if state == 'enabled' else 'disabled'
    return after


class GatewaySwitch:
    """One tx9_gateway run."""

    def __init__(self, client: Any, home: StateHome, params: dict[str, Any], check_mode: bool = False) -> None:
        self.client = client
        self.home = home
        self.box: str = validate_box_name(params['name'])
        self.state: str | None = params.get('state')
        self.confirmed = params.get('confirm_single_writer') is True
        self.check_mode = check_mode

    def run(self) -> dict[str, Any]:
        if self.state == 'enabled' and not self.confirmed:
            raise Tx9Error(
                f'Enabling the Hermes gateway of box {self.box} needs confirm_single_writer: true; two gateways of one '
                'Hermes identity must never run at once.',
                'CONFIRMATION_REQUIRED',
                'Make sure no other box or machine runs a gateway for this Hermes identity, then set '
                'confirm_single_writer: true.',
            )
        with box_lock(self.client, self.home, self.box):
            return self.run_locked()

    def run_locked(self) -> dict[str, Any]:
        objects = existing_box(self.client, self.box)
        agent = objects.containers[ROLE_AGENT]
        if agent is None or container_state(agent) != 'running':
            raise Tx9Error(
                f'The agent container of box {self.box} is not running, and the gateway lives in it.',
                'NOT_RUNNING',
                'Start the box with col_agents.tx9.tx9_box state=present.',
            )
        before = gateway_view(guest_status(self.client, agent['Id']))
        if self.state is None or settled(before, self.state):
            return dict(changed=False, gateway=before)
        mark = superseded.read(self.home.read_box(self.box), objects.containers)
        if self.state == 'enabled' and mark:
            # A copy a move left behind shares the box's Hermes identity: its gateway would be a second writer.
            raise superseded.refusal(self.box, mark, 'its gateway is not enabled')
        if self.state == 'enabled' and before['quiesced']:
            raise Tx9Error(
                f'Box {self.box} is quiesced, and nothing runs in it until it resumes, the gateway included.',
                'GUEST_FAILED',
                'Resume the box (`hb up` in it), then run this again.',
            )
        if self.check_mode:
            return dict(changed=True, gateway=predicted(before, self.state))
        return dict(changed=True, gateway=switch(self.client, self.box, agent['Id'], self.state))


def switch(client: Any, box: str, agent_id: str, state: str) -> dict[str, Any]:
    """The gateway of box put in state by hb (enabling is confirmed by the caller); its view afterwards."""
    args = ['gateway-enable', '--confirm-single-writer', PHRASE] if state == 'enabled' else ['gateway-disable']
    code, output = run_hb(client, agent_id, args)
    if code != 0:
        words = ' '.join(output.strip().splitlines()[-3:])[-500:]
        raise Tx9Error(f'hb {args[0]} failed in box {box} (exit {code}): {words}', 'GUEST_FAILED', GUEST_FIX)
    return gateway_view(guest_status(client, agent_id))


def disable(client: Any, box: str, agent_id: str, check_mode: bool = False) -> tuple[bool, dict[str, Any]]:
    """(changed, view): the gateway of box stopped and kept disabled, for a caller holding the box lock."""
    before = gateway_view(guest_status(client, agent_id))
    if settled(before, 'disabled'):
        return False, before
    return True, predicted(before, 'disabled') if check_mode else switch(client, box, agent_id, 'disabled')
