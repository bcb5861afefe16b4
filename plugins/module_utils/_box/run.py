# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every run of a module on one box starts from: the engine, the state home, the options.

Private to the col_agents.tx9 collection.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome


class BoxRun:
    """One module run on the box params name: its actions are what it did (or would do in check mode)."""

    def __init__(
        self,
        client: Any,
        home: StateHome,
        params: dict[str, Any],
        check_mode: bool = False,
        docker_host: str | None = None,
    ) -> None:
        self.client = client
        self.home = home
        self.params = params
        self.check_mode = check_mode
        self.docker_host = docker_host
        self.box: str = params.get('name') or ''
        self.actions: list[str] = []
