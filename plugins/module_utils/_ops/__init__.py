# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engines of the per-box operations: one file per module it serves (tx9_info, tx9_doctor,
tx9_gateway, tx9_logs, tx9_mount, tx9_resources, tx9_prune), above the box model in _box.

Private to the col_agents.tx9 collection.
"""
