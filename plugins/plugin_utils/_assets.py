# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's image assets on the controller: where they are, and their digest."""

from __future__ import annotations

import os

from ansible_collections.col_agents.tx9.plugins.module_utils._image.context import assets_digest, read_tree

COLLECTION_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ASSETS_DIR = os.path.join(COLLECTION_ROOT, 'assets')


def controller_assets_digest() -> str:
    """SHA-256 of the controller's assets as a build context holds them (the host's CA bundle left out)."""
    return assets_digest(read_tree(ASSETS_DIR))
