# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The .tx9 archive: container and metadata, tar reader and writer, payload validator, gpg.

Private to the col_agents.tx9 collection.
"""
