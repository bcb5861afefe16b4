# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an import does when the machine fails it mid-way: a volume that fills, an engine that dies.

Private to the col_agents.tx9 collection. The space an archive needs is
checked before anything is made, but the engine's volume filesystem may fill
while the payload is extracted (another writer took the room): GNU tar and
the engine then say so in the C library's words, and the import fails with
NO_SPACE naming the volume, where it lies and the bytes it needed, instead of
a bare exit status. An engine that dies while the import made its objects
cannot remove them at once: the import waits for it to answer again, then
removes them, so the box is as it was before; an engine that stays away
leaves the import's marker, and the next import of that name removes them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._box.engine_loss import (
    ENGINE_RETURN_WAIT,
    LOSSES,
    engine_lost,
    gone_for_good,
    wait_for_engine,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._docker import ENGINE_ERRORS, docker_error
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._io import free_bytes, says_full

__all__ = ['says_full', 'volume_full', 'discard_through_engine_loss', 'free_volume_space', 'no_space']


def free_volume_space(client: Any) -> tuple[int, str] | tuple[None, None]:
    """(bytes free, path) where the engine keeps its volumes, or (None, None) when that is not on this host."""
    try:
        root = client.api.info().get('DockerRootDir') or '/var/lib/docker'
    except ENGINE_ERRORS as exc:
        raise docker_error('describe the engine', exc)
    path = os.path.join(root, 'volumes')
    free = free_bytes(path)
    return (free, path) if free is not None else (None, None)


def no_space(path: str | None) -> Callable[[str, int, int], Tx9Error]:
    """The NO_SPACE refusal of a payload that needs more than is free under path, for validate_payload."""

    def refusal(member: str, needed: int, free: int) -> Tx9Error:
        return Tx9Error(
            f'Restoring this archive needs more than {needed:d} bytes (reached at the member "{member}") where the '
            f'engine keeps its volumes ({path}), and only {free:d} bytes are free there.',
            'NO_SPACE',
            f'Free space under {path} (remove unused boxes or images), or import on a host with more room.',
            details=dict(needed=needed, free=free, path=path),
        )

    return refusal


def volume_place(api: Any, volume: str) -> str:
    """Where volume's files lie on the engine's host (its mountpoint), or its name when the engine does not say."""
    try:
        found = api.inspect_volume(volume).get('Mountpoint')
    except ENGINE_ERRORS:
        found = None
    return str(found) if found else volume


def volume_full(api: Any, box: str, volume: str, needed: int | None, output: str) -> Tx9Error:
    """NO_SPACE: volume filled while the payload of box was extracted into it (output: what said so)."""
    place = volume_place(api, volume)
    free = free_bytes(place) if place.startswith('/') else None
    need = f'; restoring it needs about {needed:d} bytes there' if needed is not None else ''
    now = f' ({free:d} bytes are free there now)' if free is not None else ''
    said = output.strip().splitlines()[-1] if output.strip() else 'no space left'
    return Tx9Error(
        f'The volume {volume} ({place}) filled while the archive was extracted into it for box {box}{need}{now}: '
        f'{said}. Nothing of the import was kept.',
        'NO_SPACE',
        'Free space on the filesystem where the engine keeps its volumes (remove unused boxes or images), '
        'then import again.',
        details=dict(volume=volume, path=place, needed=needed, free=free),
    )


# How often discard() runs again after the engine answered again (a starting engine may still lose containerd).
DISCARD_RETURNS = 3


def discard_through_engine_loss(
    client: Any,
    discard: Callable[[], None],
    wait: float = ENGINE_RETURN_WAIT,
    waiter: Callable[[Any, float], bool] | None = None,
) -> None:
    """discard(), and when the engine stopped answering, discard() again once it answers (within wait seconds).

    An engine that stays away raises DOCKER_UNAVAILABLE: what was made stays, for the next run to remove.
    """
    for attempt in range(DISCARD_RETURNS + 1):
        try:
            discard()
            return
        except LOSSES as exc:
            if not engine_lost(exc) or attempt == DISCARD_RETURNS:
                raise
            if not (waiter or wait_for_engine)(client, wait):
                raise gone_for_good(exc, wait) from exc
