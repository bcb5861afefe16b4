# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host state home (~/.tx9 or $TX9_HOME) and per-box state files.

Private to the col_agents.tx9 collection. Directories are 0700, files 0600,
and every file is written atomically: a temp file in the same directory,
fsync, then rename. Docker labels stay the truth about what exists; the state
file holds the box token and the box's desired state.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._io import ensure_dir, write_atomic
from ansible_collections.col_agents.tx9.plugins.module_utils._names import names_in, validate_box_name


def default_home() -> str:
    return os.environ.get('TX9_HOME') or os.path.join(os.path.expanduser('~'), '.tx9')


def parse_env(text: str) -> dict[str, str]:
    """KEY=VALUE lines; '#' comments and blank lines are ignored."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith('#') or '=' not in line:
            continue
        key, value = line.split('=', 1)
        values[key.strip()] = value
    return values


def render_env(values: Mapping[str, object]) -> str:
    """Sorted KEY=VALUE lines; empty values are left out, not stored."""
    lines = [f'{key}={values[key]}' for key in sorted(values) if values[key] not in (None, '')]
    return ''.join(line + '\n' for line in lines)


class StateHome:
    """The directory that holds tx9's host-local state."""

    def __init__(self, path: str | None = None) -> None:
        self.path = os.path.abspath(os.path.expanduser(path or default_home()))

    @property
    def boxes_dir(self) -> str:
        return os.path.join(self.path, 'boxes')

    @property
    def locks_dir(self) -> str:
        return os.path.join(self.path, 'locks')

    @property
    def logs_dir(self) -> str:
        return os.path.join(self.path, 'logs')

    def ensure(self) -> StateHome:
        for path in (self.path, self.boxes_dir, self.locks_dir, self.logs_dir):
            ensure_dir(path)
        return self

    def box_file(self, box: str) -> str:
        return os.path.join(self.boxes_dir, f'{validate_box_name(box)}.env')

    def lock_file(self, box: str) -> str:
        return os.path.join(self.locks_dir, f'{validate_box_name(box)}.lock')

    def read_box(self, box: str) -> dict[str, str]:
        """The box's state as a dict; empty when it has no state file."""
        try:
            with open(self.box_file(box)) as handle:
                return parse_env(handle.read())
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                return {}
            raise Tx9Error(
                f'The state file of box {box} cannot be read: {exc.strerror}.',
                'STATE_HOME',
                f'Check the permissions of {self.box_file(box)}.',
            )

    def write_box(self, box: str, values: Mapping[str, object]) -> None:
        """Replace the box's state file in one rename; a write that fails leaves the old file as it was."""
        self.ensure()
        try:
            write_atomic(self.box_file(box), render_env(values))
        except Tx9Error as err:
            if err.cause == 'NO_SPACE':
                raise
            raise Tx9Error(
                f'The state file of box {box} cannot be written; the old one is kept: {err.reason}',
                'STATE_HOME',
                f'Make {self.path} writable (it may be on a read-only filesystem), or point TX9_HOME elsewhere.',
            ) from err

    def delete_box(self, box: str) -> bool:
        """Remove the box's state file; True when one was removed."""
        try:
            os.unlink(self.box_file(box))
            return True
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                return False
            raise

    def box_names(self) -> list[str]:
        """Names of boxes that have a state file (invalid names skipped)."""
        return names_in(self.boxes_dir, '.env')

    def lock_names(self) -> list[str]:
        """Names of boxes that have a lock file (invalid names skipped)."""
        return names_in(self.locks_dir, '.lock')
