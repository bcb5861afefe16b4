# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The boxes of a fleet as inventory hosts: names, groups, variables, and listing each Docker host.

Private to the col_agents.tx9 collection; used by the col_agents.tx9.boxes inventory plugin on the controller.
"""
