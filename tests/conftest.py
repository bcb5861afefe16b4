# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Make `ansible_collections.col_agents.tx9...` importable in every test.

The collection is reached through .cache/collections, where `make
collection-link` links ansible_collections/col_agents/tx9 to the repo root
(ansible.cfg points collections_path there too). The link is made here when
it is missing, so a bare `pytest` works as well.
"""


import os
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS_PATH = os.path.join(REPO_ROOT, '.cache', 'collections')
COLLECTION_LINK = os.path.join(COLLECTIONS_PATH, 'ansible_collections', 'col_agents', 'tx9')


def _ensure_collection_link():
    if os.path.realpath(COLLECTION_LINK) == os.path.realpath(REPO_ROOT):
        return
    parent = os.path.dirname(COLLECTION_LINK)
    if not os.path.isdir(parent):
        os.makedirs(parent)
    if os.path.lexists(COLLECTION_LINK):
        os.unlink(COLLECTION_LINK)
    os.symlink(REPO_ROOT, COLLECTION_LINK)


_ensure_collection_link()
if COLLECTIONS_PATH not in sys.path:
    sys.path.insert(0, COLLECTIONS_PATH)
