# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's version. Private to the col_agents.tx9 collection.

It names the box image (tx9-box:<version>) and labels every object; a unit
test keeps it equal to galaxy.yml.
"""

COLLECTION_VERSION = '0.1.0'
IMAGE_REPOSITORY = 'tx9-box'
DEFAULT_IMAGE = f'{IMAGE_REPOSITORY}:{COLLECTION_VERSION}'
