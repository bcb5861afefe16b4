# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The two ways a command fails: a sentence for the user (exit 1) or wrong arguments (exit 2)."""


class HbError(Exception):
    """A failure whose message says what is wrong and what to run."""


class UsageError(Exception):
    """Wrong arguments: usage goes to stderr and the exit code is 2."""
