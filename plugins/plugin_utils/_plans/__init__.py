# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fleet plans made on the controller: which boxes move (migration) and which upgrade.

Private to the col_agents.tx9 collection; used by the collection's filter plugins.
"""
