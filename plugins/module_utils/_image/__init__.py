# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The box image: its build context and its build.

Private to the col_agents.tx9 collection.
"""
