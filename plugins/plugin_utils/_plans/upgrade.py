# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which boxes of a host the upgrade role moves to the target image, and which it leaves alone.

Private to the col_agents.tx9 collection; pure (no Ansible, no Docker). The
host reports its boxes (tx9_info: each container's image ID, the desired
image of the state file) and the ID the target image has on its engine. A box
whose containers all run that ID is current. A box whose owner chose an image
is left alone unless forced: an inventory entry naming an image other than
the target, or a desired image that is not one of the collection's release
tags (tx9-box:<version>) nor an image ID (what a rollback leaves when the
box's old tag had moved on).
"""

from __future__ import annotations

import re
from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._box import superseded
from ansible_collections.col_agents.tx9.plugins.module_utils._version import IMAGE_REPOSITORY
from ansible_collections.col_agents.tx9.plugins.plugin_utils._plans.migration import PlanError, entry_of

RELEASE_TAG = re.compile(rf'^{re.escape(IMAGE_REPOSITORY)}:\d+\.\d+\.\d+([-+.][0-9A-Za-z.-]+)?$')
IMAGE_ID = re.compile(r'^sha256:[0-9a-f]{64}$')
UPGRADABLE = ('running', 'stopped')


def follows_collection(image: str | None) -> bool:
    """Whether a desired image follows the collection's releases (so an upgrade may move it)."""
    return bool(RELEASE_TAG.match(image or '') or IMAGE_ID.match(image or ''))


def pinned_image(desired: str | None, declared: str | None, target: str) -> str | None:
    """The image the box's owner chose instead of the target, or None.

    declared: the image of the box's inventory entry (None without one); desired: the state file's.
    """
    if declared:
        return None if declared == target else declared
    if not desired or desired == target or follows_collection(desired):
        return None
    return desired


def declared_images(declared: list[Any] | None, host: str) -> dict[str, str]:
    """Box name -> the image its entry in the host's tx9_boxes names (entries without one left out)."""
    images: dict[str, str] = {}
    for entry in declared or []:
        name, options = entry_of(entry, host)
        if options.get('image'):
            images[name] = options['image']
    return images


def running_image_ids(box: dict[str, Any]) -> list[str]:
    """The image IDs the box's existing containers run, the agent's first."""
    containers = box.get('containers') or {}
    ids = [(containers.get(role) or {}).get('image_id') for role in ('agent', 'executor')]
    return [image_id for image_id in ids if image_id]


def skip(box: str, reason: str, current: bool = False) -> dict[str, Any]:
    return dict(box=box, reason=reason, current=current)


def judge(
    box: dict[str, Any], target: str, target_id: str, pins: dict[str, str], force: bool
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(the upgrade of one box, or None; the reason it is skipped, or None)."""
    name = box['name']
    ids = running_image_ids(box)
    if box.get('superseded'):
        return None, skip(
            name,
            f'skipped: it is a copy a move left behind, {superseded.describe(box["superseded"])}; the box runs there',
        )
    if box.get('state') not in UPGRADABLE:
        return None, skip(
            name, f'skipped: it is {box.get("state")}; repair it first (col_agents.tx9.tx9_box, tx9_doctor)'
        )
    if ids and all(image_id == target_id for image_id in ids):
        return None, skip(name, f'already on {target}', current=True)
    desired = (box.get('desired') or {}).get('image') or box.get('image')
    pin = pinned_image(desired, pins.get(name), target)
    if pin and not force:
        return None, skip(name, f'skipped: its owner chose the image {pin} (tx9_upgrade_force: true upgrades it)')
    return dict(
        box=name,
        state=box['state'],
        target=target,
        target_id=target_id,
        from_image=desired or ids[0],
        from_image_id=ids[0],
        from_version=box.get('version'),
        pinned=pin,
    ), None


def plan(
    boxes: list[dict[str, Any]] | None,
    target: str,
    target_id: str,
    wanted: list[str] | None = None,
    declared: list[Any] | None = None,
    force: bool = False,
    host: str = 'this host',
) -> dict[str, list[dict[str, Any]]]:
    """The host's upgrades (in name order) and the boxes it leaves alone, each with its reason.

    boxes: tx9_info's boxes; target: the image reference; target_id: its ID on this host's engine;
    wanted: the box names to consider (empty: every box); declared: the host's tx9_boxes entries.
    """
    if not target or not target_id:
        raise PlanError(f'the target image and its ID on {host} are needed')
    pins = declared_images(declared, host)
    by_name = {box['name']: box for box in boxes or []}
    names = sorted(set(wanted)) if wanted else sorted(by_name)
    upgrades: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    for name in names:
        if name not in by_name:
            skipped.append(skip(name, f'skipped: not on {host}'))
            continue
        upgrade, left = judge(by_name[name], target, target_id, pins, force)
        if upgrade:
            upgrades.append(upgrade)
        elif left:
            skipped.append(left)
    return dict(upgrades=upgrades, skipped=skipped)
