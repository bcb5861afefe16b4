# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One command's view of the box: its settings, paths, Executor address, token and markers."""

from __future__ import annotations

import os
import socket
import stat
from typing import overload

from .cmdargs import WHO_RE
from .settings import Paths, flag, load_settings, number, read_text
from .tools import find_tool
from .wiring import current_token

DEFAULT_EXECUTOR_HOST = 'executor'
DEFAULT_EXECUTOR_PORT = 4788


class Context:
    """Settings, paths, the Executor URL and the current token for one run."""

    def __init__(self, settings: dict[str, str] | None = None) -> None:
        self.settings = load_settings() if settings is None else settings
        self.paths = Paths(self.settings)
        self.host = self.settings.get('EXECUTOR_HOST') or DEFAULT_EXECUTOR_HOST
        self.port = int(self.settings.get('EXECUTOR_PORT') or DEFAULT_EXECUTOR_PORT)
        self.url = f'http://{self.host}:{self.port}/mcp'
        self._token: str | None = None

    @property
    def token(self) -> str | None:
        # Read on first use: restore-promote runs before the home is in place.
        if self._token is None:
            self._token = (
                current_token(self.settings, read_text(self.paths.token_env), read_text(self.paths.token_file)) or ''
            )
        return self._token or None

    @property
    def box(self) -> str:
        return self.settings.get('TX9_BOX_NAME') or socket.gethostname()

    @property
    def wiring_enabled(self) -> bool:
        return flag(self.settings, 'WIRE_EXECUTOR_MCP')

    @property
    def quiesced(self) -> bool:
        return os.path.lexists(self.paths.quiesced)

    @property
    def quiesced_by(self) -> str | None:
        """Who quiesced the box (the marker's content), or None when it is not quiesced."""
        return quiesced_by(self.paths.quiesced)

    @property
    def gateway_enabled(self) -> bool:
        return not os.path.lexists(self.paths.gateway_disabled)

    @property
    def hermes_installed(self) -> bool:
        return flag(self.settings, 'INSTALL_HERMES') and find_tool('hermes') is not None

    @overload
    def number(self, name: str, default: int) -> int:
        """An int for an int default, a float for a float default."""

    @overload
    def number(self, name: str, default: float) -> float:
        """An int for an int default, a float for a float default."""

    def number(self, name: str, default: float) -> float:
        """A numeric setting, or default when it is unset or not a number."""
        return number(self.settings, name, default)


def quiesced_by(marker: str) -> str | None:
    """The marker's first word; "unknown" when it is unreadable, odd, or not a plain file."""
    if not os.path.lexists(marker):
        return None
    try:
        fd = os.open(marker, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError:
        return 'unknown'
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return 'unknown'
        content = os.read(fd, 256).decode('utf-8', 'replace').strip()
    except OSError:
        return 'unknown'
    finally:
        os.close(fd)
    first = content.splitlines()[0].strip() if content else ''
    return first if WHO_RE.match(first) else 'unknown'
