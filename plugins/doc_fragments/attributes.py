# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


class ModuleDocFragment:
    """The attributes of the tx9 modules that only read."""

    READ_ONLY = r"""
attributes:
  check_mode:
    support: full
    description: Reads only, so a check-mode run is a real run.
  diff_mode:
    support: none
    description: Reads only.
  idempotent:
    support: full
    description: Reads only.
"""
