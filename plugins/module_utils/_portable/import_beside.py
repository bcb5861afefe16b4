# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An import that replaces a superseded copy removes it only once the archive is whole on this host.

Private to the col_agents.tx9 collection. The payload is extracted (and
promoted) into a volume of its own beside the copy, labelled
tx9.import-stage=<box> and no box's object. Only when that tree is whole is
the copy removed, the box's agent volume created and the tree moved into it
by renames (both volumes lie in the engine's volume store on this host: no
byte is copied). A failure before then (a volume that fills, an engine that
dies) removes the stage and leaves the copy as it was.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ansible_collections.col_agents.tx9.plugins.module_utils._docker import ENGINE_ERRORS, docker_error, is_not_found
from ansible_collections.col_agents.tx9.plugins.module_utils._names import (
    LABEL_BOX,
    LABEL_OWNER,
    LABEL_ROLE,
    LABEL_VERSION,
    object_names,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.host_volumes import volume_directory
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.stage_promote import move_tree
from ansible_collections.col_agents.tx9.plugins.module_utils._version import COLLECTION_VERSION

if TYPE_CHECKING:
    from ansible_collections.col_agents.tx9.plugins.module_utils._archive.envelope import Archive
    from ansible_collections.col_agents.tx9.plugins.module_utils._archive.gpg import Gpg
    from ansible_collections.col_agents.tx9.plugins.module_utils._portable.importer import Import

LABEL_IMPORT_STAGE = 'tx9.import-stage'
HERE_FIX = 'Run the import on the host whose engine keeps the volume.'


def import_stage_volume(box: str) -> str:
    return f'tx9-{box}-import-stage'


def remove_import_stage(client: Any, box: str) -> None:
    """Remove the import stage of box (a volume of that name without its label is not ours: left alone)."""
    name = import_stage_volume(box)
    try:
        volume = client.api.inspect_volume(name)
        if (volume.get('Labels') or {}).get(LABEL_IMPORT_STAGE) == box:
            client.api.remove_volume(name, force=True)
    except ENGINE_ERRORS as exc:
        if not is_not_found(exc):
            raise docker_error(f'remove volume {name}', exc) from exc


def remove_restore_containers(client: Any, box: str) -> None:
    """Remove the restore containers of box (one an engine that died kept), and nothing else of it."""
    label = {'label': [f'{LABEL_OWNER}=1', f'{LABEL_BOX}={box}', f'{LABEL_ROLE}=restore']}
    try:
        for container in client.api.containers(all=True, filters=label):
            client.api.remove_container(container['Id'], force=True)
    except ENGINE_ERRORS as exc:
        if not is_not_found(exc):
            raise docker_error(f'remove the restore container of {box}', exc) from exc


def restore_beside(job: Import, box: str, image_ref: str, archive: Archive, gpg: Gpg | None) -> None:
    """The archive whole in the import stage of box, then the copy replaced by it (job.kept_copy says which)."""
    name = import_stage_volume(box)
    remove_import_stage(job.client, box)
    labels = {LABEL_IMPORT_STAGE: box, LABEL_VERSION: COLLECTION_VERSION}
    try:
        job.client.api.create_volume(name=name, driver='local', labels=labels)
    except ENGINE_ERRORS as exc:
        raise docker_error(f'create volume {name}', exc) from exc
    job.staging = name
    try:
        job.restore(box, image_ref, archive, gpg)
    finally:
        job.staging = None
    # Whole: only now the copy and its state file go.
    job.discard_copy(box)
    job.kept_copy = False
    job.create_volume(box)
    stage = volume_directory(job.client, name, 'DOCKER_ERROR', HERE_FIX)
    move_tree(stage, volume_directory(job.client, object_names(box)['agent_volume'], 'DOCKER_ERROR', HERE_FIX))
    remove_import_stage(job.client, box)
