# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A box's quiesce state and gateway, as the running agent reports them, and `quiesced` made so.

Private to the col_agents.tx9 collection. The truth is the agent's own
marker on /data, read and changed through `hb status`, `hb down` and `hb up`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._box.guest import guest_status, run_hb
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error

# The quiesce marker's content (`hb down --by`) when a person quiesced the box through tx9_box
# (quiesced: true); a backup writes its own ('backup') and resumes the box only while that stays.
QUIESCED_BY_USER = 'user'


def guest_view(status: Mapping[str, Any] | None) -> dict[str, Any]:
    """quiesced, quiesced_by and the gateway from an `hb status --json` report (None when unknown)."""
    if not status or 'quiesced' not in status:
        return dict(quiesced=None, quiesced_by=None, gateway=None)
    gateway = status.get('gateway') or {}
    return dict(
        quiesced=bool(status.get('quiesced')),
        quiesced_by=status.get('quiesced_by'),
        gateway=dict(enabled=gateway.get('enabled'), state=gateway.get('state')),
    )


def running_guest_view(client: Any, agent_attrs: Mapping[str, Any] | None) -> dict[str, Any]:
    """guest_view of a running agent container; all None when it does not run."""
    if not agent_attrs or not (agent_attrs.get('State') or {}).get('Running'):
        return guest_view(None)
    return guest_view(guest_status(client, agent_attrs['Id']))


def quiesce_step(current: bool | None, wanted: bool | None) -> str | None:
    """'down', 'up' or None: what makes a box quiesced as wanted (None wanted: leave it)."""
    if wanted is None or current is None or bool(current) == bool(wanted):
        return None
    return 'down' if wanted else 'up'


def converge_quiesced(
    client: Any, agent_id: str, wanted: bool | None, check_mode: bool, known: dict[str, Any] | None = None
) -> tuple[str | None, dict[str, Any]]:
    """Make the running box quiesced (or not) as wanted; (action words or None, guest view after).

    known: what `hb status` answered a moment ago under the same lock (the readiness gate's last look), read
    again only when not given.
    """
    view = guest_view(known if known is not None else guest_status(client, agent_id))
    step = quiesce_step(view['quiesced'], wanted)
    if step is None:
        return None, view
    words = 'quiesce the box (hb down)' if step == 'down' else 'resume the box (hb up)'
    if check_mode:
        return words, dict(view, quiesced=bool(wanted), quiesced_by=QUIESCED_BY_USER if wanted else None)
    args = ['down', '--by', QUIESCED_BY_USER] if step == 'down' else ['up']
    code, output = run_hb(client, agent_id, args)
    if code != 0:
        raise Tx9Error(
            f'hb {step} failed in box {agent_id[:12]}: {output.strip()[-300:]}',
            'GUEST_FAILED',
            'Run hb doctor inside the box and fix what it names, then run again.',
        )
    return words, guest_view(guest_status(client, agent_id))
