# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


class ModuleDocFragment:
    """The host state home option of the tx9 modules."""

    DOCUMENTATION = r"""
options:
  state_home:
    description:
      - The directory on the target host that holds tx9's host-local state (box tokens and
        desired state in C(boxes/), locks in C(locks/), build logs in C(logs/)).
      - When omitted, E(TX9_HOME) on the target host, else C(~/.tx9).
      - Directories are created with mode C(0700) and files with mode C(0600).
    type: path
"""
