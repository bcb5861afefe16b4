# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A box: its Docker objects, desired state, limits, Executor options, names, lock, listing and the in-box hb.

Private to the col_agents.tx9 collection.
"""
