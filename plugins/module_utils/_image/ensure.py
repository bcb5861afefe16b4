# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tx9_image: the box image built from the assets, taken from an exported archive, or found; then
exported, its layers listed and unused images pruned, as the module's options ask.

Private to the col_agents.tx9 collection.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import tempfile
from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
from ansible_collections.col_agents.tx9.plugins.module_utils._docker import find_image
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._image.build import (
    ImageBuilder,
    image_status,
    new_log_path,
    remove_images,
    unused_box_images,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._image.context import image_digest, read_ca
from ansible_collections.col_agents.tx9.plugins.module_utils._image.layers import image_layers, present_layers
from ansible_collections.col_agents.tx9.plugins.module_utils._image.transfer import (
    export_image,
    image_facts,
    load_archive,
    present_image,
)


def unpack_assets(archive: str, into: str) -> str:
    with tarfile.open(archive, 'r') as tar:
        if hasattr(tarfile, 'data_filter'):
            tar.extractall(into, filter='data')
        else:
            tar.extractall(into)
    return into


def host_ca(params: dict[str, Any]) -> str | None:
    """The CA bundle a build on this host trusts, None when none is."""
    return params['ca_bundle'] if params['trust_host_ca'] and os.path.isfile(params['ca_bundle']) else None


def plan_from_digest(client: Any, home: StateHome, params: dict[str, Any], check_mode: bool) -> dict[str, Any]:
    """source=build with only the assets' digest (the action plugin's first call): the image's state, and whether
    the assets must come for a build (assets_needed; the action plugin sends them and calls again)."""
    digest = image_digest(params['assets_sha256'], hashlib.sha256(read_ca(host_ca(params))).hexdigest())
    status, image = image_status(client, params['image'], digest)
    result: dict[str, Any] = dict(changed=False, image_id=image.id if image else '', assets_hash=digest)
    if status != 'current' or params['force']:
        result.update(changed=True, built=True)
        if check_mode:
            result['planned_log_path'] = params['log_path'] or new_log_path(home.logs_dir, params['image'])
        else:
            result['assets_needed'] = True
    return result


def build_image(client: Any, home: StateHome, params: dict[str, Any], check_mode: bool) -> dict[str, Any]:
    """source=build: the image from the assets, built when missing or stale."""
    work = None
    assets = params['assets_dir']
    if not assets and not params['assets_archive'] and params['assets_sha256']:
        return plan_from_digest(client, home, params, check_mode)
    try:
        if not assets and params['assets_archive']:
            work = tempfile.mkdtemp(prefix='tx9-assets-')
            assets = unpack_assets(params['assets_archive'], work)
        if not assets:
            raise Tx9Error(
                'No assets to build from: assets_dir is unset and the action plugin sent no assets_archive.',
                'ASSETS_INVALID',
                'Call the module through the col_agents.tx9.tx9_image action, or set assets_dir.',
            )
        builder = ImageBuilder(
            client,
            assets,
            tag=params['image'],
            ca_bundle=host_ca(params),
            log_dir=home.logs_dir,
            base_bootstrap=params['base_bootstrap'],
            build_timeout=params['build_timeout'],
        )
        status, image = builder.status()
        result = dict(changed=False, image_id=image.id if image else '', assets_hash=builder.digest)
        if status != 'current' or params['force']:
            result.update(changed=True, built=True)
            if not check_mode:
                result['log_path'] = builder.build(params['log_path'])
                result['image_id'] = builder.status()[1].id
            else:
                result['planned_log_path'] = params['log_path'] or builder.new_log_path()
        return result
    finally:
        if work:
            shutil.rmtree(work, ignore_errors=True)


def load_image(client: Any, params: dict[str, Any], check_mode: bool) -> dict[str, Any]:
    """source=archive: the image from an exported archive, unless the engine has its ID."""
    changed, loaded, image = load_archive(
        client, params['image'], params['archive_path'], params['archive_sha256'], params['image_id'], check_mode
    )
    result = dict(
        changed=changed,
        loaded=loaded,
        image_id='',
        assets_hash='',
        archive=dict(path=params['archive_path'], sha256=params['archive_sha256']),
    )
    if image is not None:
        result.update(image_facts(image))
    if params['layers']:
        result['present_layers'] = present_layers(client.images.list(), params['layers'])
    return result


def ensure_image(client: Any, params: dict[str, Any], check_mode: bool) -> dict[str, Any]:
    """The module's whole result: the image as the options ask for it."""
    home = StateHome(params['state_home']).ensure()
    result = dict(
        changed=False,
        image=params['image'],
        image_id='',
        assets_hash='',
        built=False,
        loaded=False,
        exported=False,
        archive=None,
        log_path=None,
        log_dir=home.logs_dir,
        pruned=[],
        layers=[],
        present_layers=0,
    )
    if params['source'] == 'archive':
        result.update(load_image(client, params, check_mode))
    elif params['source'] == 'present':
        result.update(image_facts(present_image(client, params['image'])))
    else:
        result.update(build_image(client, home, params, check_mode))
        if result.get('assets_needed'):
            return result
    if params['export_path'] and not (check_mode and result['built']):
        exported, record = export_image(
            client, params['image'], params['export_path'], check_mode, params['omit_layers']
        )
        result.update(exported=exported, archive=record, changed=result['changed'] or exported)
    elif params['export_path']:
        result.update(exported=True, changed=True)
    image = find_image(client, result['image_id']) if result['image_id'] else None
    result['layers'] = image_layers(image) if image is not None else []
    if params['prune']:
        unused = unused_box_images(client, keep_tags=[params['image']])
        result['pruned'] = [tags[0] if tags else image_id for image_id, tags in unused]
        if unused:
            result['changed'] = True
            if not check_mode:
                remove_images(client, unused)
    return result
