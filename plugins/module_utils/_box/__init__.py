# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The box model: its Docker objects, desired state, limits, host mounts, Executor options, token and the in-box hb.

Private to the col_agents.tx9 collection. objects.py says what exists and what
should (BoxObjects, BoxSpec), writer.py creates and removes it, reconcile.py
brings one to its desired state; state.py is the host state home, limits.py,
host_mounts.py and executor_config.py the options kept there, token.py the box
token, egress.py and egress_rules.py the egress policy (a draft: read, kept and
rendered for the proxy, not yet enforced), guest.py and quiesce.py the in-box
hb, backup_record.py, drill_record.py and authlink.py what the box's backups,
drills and dashboard link leave on the host.
Box names and the box lock sit in the bottom layer (_names.py, _lock.py), the
per-module engines in _ops/.
"""
