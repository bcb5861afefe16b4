# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which version of each agent CLI a running box answers with, and from where (box install or image).

Private to the col_agents.tx9 collection. Read from the box's files by one
small script (no tool runs), for tx9_info, list.yml and the inventory's
tx9_tools_drift.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._box.guest import last_json_line, run_in
from ansible_collections.col_agents.tx9.plugins.module_utils._box.tool_pins import PACKAGES
from ansible_collections.col_agents.tx9.plugins.module_utils._box.tools import TOOLS_ROOT, Seen

IMAGE_MODULES = '/usr/local/lib/node_modules'
# `$1` tools root, `$2` the image's node_modules, then triples of `tool package command`. Reads files only (no
# tool runs): prints one JSON object, tool -> the marker (or None), the version in the box install's
# package.json when its command is an executable file (or None), the image copy's version (or None).
REPORT_SCRIPT = r"""import json, os, sys
ROOT, IMAGE = sys.argv[1], sys.argv[2]
def read_json(path, limit):
    try:
        with open(path, 'rb') as handle:
            found = json.loads(handle.read(limit))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None
def version(path):
    found = (read_json(path, 1 << 20) or {}).get('version')
    return found if isinstance(found, str) else None
out = {}
args = sys.argv[3:]
for tool, package, command in zip(args[0::3], args[1::3], args[2::3]):
    home = os.path.join(ROOT, tool)
    names = sorted(os.listdir(home)) if os.path.isdir(home) else []
    markers = [n for n in names if n.startswith('.installed-') and n.endswith('.json')]
    marker = read_json(os.path.join(home, markers[-1]), 4096) if markers else None
    binary = os.path.join(home, 'node_modules', '.bin', command)
    box = version(os.path.join(home, 'node_modules', package, 'package.json')) if os.access(binary, os.X_OK) else None
    out[tool] = dict(marker=marker, box=box, image=version(os.path.join(IMAGE, package, 'package.json')))
print(json.dumps(out))"""


def report_argv() -> list[str]:
    argv = ['python3', '-c', REPORT_SCRIPT, TOOLS_ROOT, IMAGE_MODULES]
    for tool, (package, command) in sorted(PACKAGES.items()):
        argv += [tool, package, command]
    return argv


def parse_report(output: str) -> dict[str, dict[str, Any]] | None:
    """The report script's JSON as tool -> installed, source, pinned and package; None when it is unreadable.

    The box install answers when its marker names the tool's package and the version its package.json holds
    (its command present); pinned is what the marker says was asked for, so a pin whose files are gone (an
    import leaves out node_modules) shows as pinned with the image's version answering.
    """
    found = last_json_line(output)
    if found is None:
        return None
    report: dict[str, dict[str, Any]] = {}
    for tool, (package, _command) in sorted(PACKAGES.items()):
        seen = found.get(tool)
        if not isinstance(seen, dict):
            return None
        found_marker = seen.get('marker')
        marker: dict[str, Any] = found_marker if isinstance(found_marker, dict) else {}
        image = text_or_none(seen.get('image'))
        box = Seen(present=True, marker=marker, box_version=text_or_none(seen.get('box')), image_version=image)
        installed = box.installed(tool)
        report[tool] = dict(
            installed=installed or image,
            source='box' if installed else ('image' if image else None),
            pinned=text_or_none(marker.get('requested')),
            package=package,
        )
    return report


def text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def tools_report(client: Any, agent_id: str) -> dict[str, dict[str, Any]] | None:
    """Each tool's version and source in a running agent container, from its files (no tool runs); None when
    the box cannot say."""
    code, output = run_in(client, agent_id, report_argv(), 'agent', 'the tools report')
    return parse_report(output) if code == 0 else None
