# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A staged tree becomes the box: its agent volume made of it by renames, then the box as an import makes it.

Private to the col_agents.tx9 collection. The box's agent volume is created
(the box's labels), the entries of the staged volume's directory are renamed
into it on this host (both are directories of the engine's volume store, on
one filesystem: no byte is copied, however big the box), and the box is
created with a fresh token and passes its readiness gate. Whatever fails
after the volume was created removes what was made for the box (the move
then reverts; its source still holds the data); the staged volume is removed
once the box passed.
"""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from ansible_collections.col_agents.tx9.plugins.module_utils._box import superseded
from ansible_collections.col_agents.tx9.plugins.module_utils._box.quiesce import converge_quiesced
from ansible_collections.col_agents.tx9.plugins.module_utils._box.reconcile import Reconciler, require_image
from ansible_collections.col_agents.tx9.plugins.module_utils._docker import (
    ENGINE_ERRORS,
    connection_from_params,
    docker_error,
    is_not_found,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._lock import box_lock
from ansible_collections.col_agents.tx9.plugins.module_utils._names import object_names
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.import_marker import ImportMarker

if TYPE_CHECKING:
    from ansible_collections.col_agents.tx9.plugins.module_utils._portable.stage import Stage

ACTIONS = ['create the agent volume', 'move the staged tree into it']


def promote_stage(stage: Stage, check_mode: bool) -> dict[str, Any]:
    """Create stage.box from its stage; NAME_EXISTS when the name is taken (unless a superseded copy to replace)."""
    box = stage.box
    params = dict(stage.params, name=box, state='present', recreate=False)
    docker_host = connection_from_params(stage.params)['docker_host']
    reconciler = Reconciler(stage.client, stage.home, params, check_mode=check_mode, docker_host=docker_host)
    reconciler.validate()
    marker = ImportMarker(stage.home, box)
    record = stage.record.read() or {}
    with box_lock(stage.client, stage.home, box, discard_after=check_mode):
        unfinished = marker.exists()
        replacing = None if unfinished else stage.refuse_taken(box)
        require_image(stage.client, stage.image_ref())
        actions = ([f'remove what an unfinished import of {box} left'] if unfinished else []) + list(ACTIONS)
        if replacing:
            actions.insert(
                0,
                f'remove the copy of {box} here, {superseded.describe(replacing)} (its data set aside '
                'until the stage is removed)',
            )
        if check_mode:
            return dict(changed=True, actions=actions + ['create the box with a fresh token'], box=dict(name=box))
        if unfinished and marker.archive() == stage.record.path:
            # A promotion killed after its renames left the tree in the box's agent volume: back into the stage first.
            reclaim_tree(stage, box)
        if replacing:
            stage.set_aside(box)
        if unfinished or replacing:
            stage.discard(box)
        # From here the box's agent volume is this promotion's: nothing set aside goes back into it.
        stage.end_set_aside()
        marker.write(SimpleNamespace(path=stage.record.path, payload_sha256=record.get('head')))  # type: ignore[arg-type]
        try:
            stage.create_volume(box)
            move_tree(stage.mountpoint(stage.volume(box)), stage.mountpoint(object_names(box)['agent_volume']))
            result: dict[str, Any] = reconciler.run_locked()
        except BaseException:
            # The stage gets its tree back before the box's objects go; when it cannot (the engine is away), nothing
            # goes and the marker stays, for the next promotion to do it.
            if reclaimed(stage, box):
                stage.discard(box)
                marker.remove()
            raise
        marker.remove()
        stage.discard_stage()
    result['actions'] = actions + result.get('actions', [])
    result['box'].update(quiesced=True, gateway_disabled=True)
    result.update(changed=True)
    result.pop('diff', None)
    return result


def agent_tree(stage: Stage, box: str) -> str | None:
    """The directory of the box's agent volume on this host, None when there is no such volume."""
    agent_volume = object_names(box)['agent_volume']
    try:
        stage.client.api.inspect_volume(agent_volume)
    except ENGINE_ERRORS as exc:
        if is_not_found(exc):
            return None
        raise docker_error(f'inspect volume {agent_volume}', exc) from exc
    return stage.mountpoint(agent_volume)


def reclaim_tree(stage: Stage, box: str) -> None:
    """Move the tree a promotion moved into the box's agent volume back into the stage (nothing when it has none)."""
    tree = agent_tree(stage, box)
    if tree is not None:
        move_tree(tree, stage.mountpoint(stage.volume(box)))


def reclaimed(stage: Stage, box: str) -> bool:
    """reclaim_tree, True when the stage holds its tree again; False (and nothing changed more) when it cannot."""
    try:
        reclaim_tree(stage, box)
    except (Tx9Error, OSError):
        return False
    except ENGINE_ERRORS:
        return False
    return True


def move_tree(source: str, dest: str) -> None:
    """Rename every entry of source into dest and give dest source's owner and mode (what a promotion moved, or
    moves back: no entry is in both)."""
    if os.stat(source).st_dev != os.stat(dest).st_dev:
        raise Tx9Error(
            f'The staged volume ({source}) and the new agent volume ({dest}) are on different filesystems, '
            'so the staged tree cannot be moved without copying it.',
            'PRECOPY_UNAVAILABLE',
            'Move the box with tx9_migrate_strategy: full.',
        )
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    src_fd = os.open(source, flags)
    dst_fd = os.open(dest, flags)
    try:
        # Owner and mode first: a move stopped midway leaves dest with the tree's, and moving back gives them back.
        info = os.fstat(src_fd)
        os.fchown(dst_fd, info.st_uid, info.st_gid)
        os.fchmod(dst_fd, info.st_mode & 0o7777)
        for name in os.listdir(src_fd):
            os.rename(name, name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
    finally:
        os.close(src_fd)
        os.close(dst_fd)


def resume_promoted(client: Any, box: str) -> str | None:
    """Resume the promoted box (hb up); None once it runs resumed, else why not (the caller resumes it later)."""
    try:
        agent = client.api.inspect_container(object_names(box)['agent'])
        converge_quiesced(client, agent['Id'], False, False)
    except ENGINE_ERRORS as exc:
        return f'Box {box} was made here but not resumed ({exc}); resume it with tx9_box quiesced=false.'
    except Tx9Error as err:
        return f'Box {box} was made here but not resumed ({err.reason}); resume it with tx9_box quiesced=false.'
    return None
