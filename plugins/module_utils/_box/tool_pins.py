# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which agent CLIs a box can pin and what a pin looks like: plain facts, with no engine behind them, for the
tools module and for the controller's plan of pins alike.

Private to the col_agents.tx9 collection.
"""

from __future__ import annotations

import re

# tool -> (npm package, command)
PACKAGES: dict[str, tuple[str, str]] = {
    'claude': ('@anthropic-ai/claude-code', 'claude'),
    'codex': ('@openai/codex', 'codex'),
}
LATEST = 'latest'
VERSION_PATTERN = re.compile(r'^\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?$')
