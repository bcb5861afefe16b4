# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Portable boxes: backup to a .tx9 archive and import from one.

Private to the col_agents.tx9 collection.
"""
