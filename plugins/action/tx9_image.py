# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run tx9_image on the target with the digest of the collection's image assets; ship the assets only when
the image is due for a build, then run it again."""

from __future__ import annotations

import os
from typing import Any

from ansible.plugins.action import ActionBase

from ansible_collections.col_agents.tx9.plugins.module_utils._image.context import assets_digest, pack, read_tree
from ansible_collections.col_agents.tx9.plugins.plugin_utils._assets import ASSETS_DIR


class ActionModule(ActionBase):
    TRANSFERS_FILES = True

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result: dict[str, Any] = super().run(tmp, task_vars)
        args = dict(self._task.args)
        try:
            builds = args.get('source', 'build') == 'build'
            if builds and not args.get('assets_dir') and not args.get('assets_archive'):
                if not os.path.isdir(ASSETS_DIR):
                    result.update(
                        failed=True,
                        cause='ASSETS_INVALID',
                        msg=f'The collection has no assets directory at {ASSETS_DIR}.',
                        fix='Reinstall the col_agents.tx9 collection.',
                    )
                    return result
                assets = read_tree(ASSETS_DIR)
                # The digest first: the assets travel only when the image is due for a build.
                args['assets_sha256'] = assets_digest(assets)
                planned = self.tx9_image(args, task_vars)
                if not planned.get('assets_needed'):
                    result.update(planned)
                    return result
                remote = self._connection._shell.join_path(self._connection._shell.tmpdir, 'tx9-assets.tar')
                self._transfer_data(remote, pack(assets))
                self._fixup_perms2((self._connection._shell.tmpdir, remote))
                args['assets_archive'] = remote
            result.update(self.tx9_image(args, task_vars))
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        return result

    def tx9_image(self, args: dict[str, Any], task_vars: dict[str, Any] | None) -> dict[str, Any]:
        done: dict[str, Any] = self._execute_module(
            module_name='col_agents.tx9.tx9_image', module_args=args, task_vars=task_vars
        )
        return done
