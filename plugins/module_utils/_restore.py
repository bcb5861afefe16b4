# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Importing a .tx9 archive as a new box.

Private to the col_agents.tx9 collection. Everything is validated (container,
metadata, checksum, decryption, every payload member) before any Docker
object is created; then the agent volume is filled through a throwaway
container (staged, then promoted), and the box is created with a fresh
token. A failure at any step removes everything the import created.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import io
import tarfile

from ansible_collections.col_agents.tx9.plugins.module_utils._archive import plain_payload, read_archive, validate_payload
from ansible_collections.col_agents.tx9.plugins.module_utils._box import BoxObjects, remove_labelled
from ansible_collections.col_agents.tx9.plugins.module_utils._docker import docker_error
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._image import find_image
from ansible_collections.col_agents.tx9.plugins.module_utils._lifecycle import Reconciler
from ansible_collections.col_agents.tx9.plugins.module_utils._lock import BoxLock
from ansible_collections.col_agents.tx9.plugins.module_utils._version import DEFAULT_IMAGE
from ansible_collections.col_agents.tx9.plugins.module_utils._names import (
    LABEL_ROLE, ROLE_AGENT, box_labels, object_names, validate_box_name)

STAGE = '/data/.tx9-restore-stage'
CHUNK = 1024 * 1024
RESTORE_TIMEOUT = 1800


def stage_directory_tar():
    """A tiny tar that creates the private staging directory under /data."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode='w') as tar:
        info = tarfile.TarInfo(STAGE.rsplit('/', 1)[1])
        info.type = tarfile.DIRTYPE
        info.mode = 0o700
        tar.addfile(info)
    return buffer.getvalue()


def chunks(stream):
    while True:
        data = stream.read(CHUNK)
        if not data:
            return
        yield data


class Import(object):
    """One import of one archive as one new box."""

    def __init__(self, client, home, path, params, password=None, gpg_factory=None):
        self.client = client
        self.home = home
        self.path = path
        self.params = params
        self.password = password
        self.gpg_factory = gpg_factory

    def gpg(self, archive):
        if not archive.encrypted:
            return None
        if not self.password:
            raise Tx9Error('%s is encrypted and no passphrase was given.' % self.path, 'PASSWORD_REQUIRED',
                           'Set password (or TX9_PASSWORD on the target host) to the backup\'s passphrase.')
        from ansible_collections.col_agents.tx9.plugins.module_utils._gpg import Gpg, check_passphrase
        check_passphrase(self.password)
        return (self.gpg_factory or Gpg)()

    def run(self, check_mode=False):
        archive = read_archive(self.path)
        box = validate_box_name(self.params.get('name') or archive.metadata.box)
        gpg = self.gpg(archive)
        params = dict(self.params, name=box, state='present', recreate=False)
        reconciler = Reconciler(self.client, self.home, params, check_mode=check_mode,
                                docker_host=self.params.get('docker_host'))
        reconciler.validate()
        with BoxLock(self.home, box):
            self.refuse_taken(box)
            image_ref = params.get('image') or DEFAULT_IMAGE
            if find_image(self.client, image_ref) is None:
                raise Tx9Error('The image %s is not on this host.' % image_ref, 'IMAGE_MISSING',
                               'Build it first with col_agents.tx9.tx9_image (or playbooks/build-image.yml).')
            summary = validate_payload(archive, self.password, gpg)
            info = dict(archive=archive.as_dict(), members=summary.members)
            if check_mode:
                return dict(changed=True, box=dict(name=box, state='running', quiesced=True, gateway_disabled=True),
                            actions=['validate the archive', 'create the agent volume', 'restore /data',
                                     'create the box with a fresh token'], **info)
            try:
                self.create_volume(box)
                self.restore(box, image_ref, archive, gpg)
                result = reconciler.run_locked()
            except BaseException:
                remove_labelled(self.client, box)
                self.home.delete_box(box)
                raise
        result['actions'] = ['validate the archive', 'create the agent volume', 'restore /data'] + result['actions']
        result['box'].update(quiesced=True, gateway_disabled=True)
        result.update(changed=True, **info)
        result.pop('diff', None)
        return result

    def refuse_taken(self, box):
        if BoxObjects(self.client, box).exists() or self.home.read_box(box):
            raise Tx9Error('A box named %s already exists on this host; import never replaces a box.' % box,
                           'NAME_EXISTS', 'Import under another name (name=...), or delete %s first.' % box)

    def create_volume(self, box):
        name = object_names(box)['agent_volume']
        try:
            self.client.api.create_volume(name=name, driver='local', labels=box_labels(box, ROLE_AGENT))
        except Exception as exc:
            raise docker_error('create volume %s' % name, exc)

    def restore(self, box, image_ref, archive, gpg):
        """Extract the payload into a staging directory in the volume, then promote it in a throwaway container."""
        api = self.client.api
        labels = box_labels(box)
        labels[LABEL_ROLE] = 'restore'
        host_config = api.create_host_config(
            binds={object_names(box)['agent_volume']: {'bind': '/data', 'mode': 'rw'}},
            network_mode='none', security_opt=['no-new-privileges'])
        try:
            helper = api.create_container(image_ref, name='tx9-%s-restore' % box, labels=labels, user='root',
                                          entrypoint=['/opt/tx9/bin/hb', 'restore-promote', STAGE],
                                          host_config=host_config)['Id']
        except Exception as exc:
            raise docker_error('create the restore container of %s' % box, exc)
        try:
            self.upload(helper, archive, gpg)
            api.start(helper)
            code = api.wait(helper, timeout=RESTORE_TIMEOUT).get('StatusCode')
            if code != 0:
                logs = api.logs(helper).decode('utf-8', 'replace').strip()[-600:]
                raise Tx9Error('Restoring /data of %s failed (exit %s): %s' % (box, code, logs), 'DOCKER_ERROR',
                               'Nothing was kept; read the message, then import again.')
        finally:
            try:
                api.remove_container(helper, force=True)
            except Exception:
                pass

    def upload(self, helper, archive, gpg):
        api = self.client.api
        try:
            api.put_archive(helper, '/data', stage_directory_tar())
            with plain_payload(archive, self.password, gpg) as stream:
                # Docker unpacks the gzip stream itself; gpg's verdict arrives when this block ends.
                api.put_archive(helper, STAGE, chunks(stream))
        except Tx9Error:
            raise
        except Exception as exc:
            raise docker_error('copy the archive into the restore container', exc)
