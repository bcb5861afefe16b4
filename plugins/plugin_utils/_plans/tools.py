# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which agent CLI each box is pinned to by the inventory, which boxes get tx9_tools, and which drift.

Private to the col_agents.tx9 collection; pure (no Ansible, no Docker).
A host's `tx9_tools` (tool -> version) pins every box of the host; the
`tools` of a box's entry in the host's `tx9_boxes` pins that box, tool by
tool over the host's (a tool given as null there is not pinned for that
box). Without pins from the inventory, a box's own pin (the marker of its
last tx9_tools install, tx9_info's `pinned`) is what it should answer with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._box.tool_pins import LATEST, PACKAGES, VERSION_PATTERN

# tool -> version (or latest); a box's tx9_info record.
Pins = dict[str, str]
Record = Mapping[str, Any]


class PinError(ValueError):
    pass


def read_pins(value: object, where: str) -> dict[str, str | None]:
    """A mapping of tool -> version, latest, or null (not pinned); PinError naming where otherwise."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise PinError(f'{where} must be a mapping of tool to version, such as codex: 0.169.0, not {value!r}')
    pins: dict[str, str | None] = {}
    for tool, version in value.items():
        if tool not in PACKAGES:
            raise PinError(f'{where} names the tool {tool!r}; the tools are {", ".join(sorted(PACKAGES))}')
        if version is None:
            pins[str(tool)] = None
            continue
        text = str(version).strip()
        if text != LATEST and not VERSION_PATTERN.match(text):
            raise PinError(f'{where} pins {tool} to {version!r}; give latest or a version such as 0.169.0')
        pins[str(tool)] = text
    return pins


def entry_tools(declared: object, box: str, host: str) -> dict[str, str | None]:
    """The tools of box's entry in the host's tx9_boxes ({} when the entry has none or the box has no entry)."""
    if declared in (None, ''):
        return {}
    if not isinstance(declared, list):
        raise PinError(f'{host}: tx9_boxes must be a list of box names or entries, not {declared!r}')
    for entry in declared:
        if isinstance(entry, Mapping) and entry.get('name') == box:
            return read_pins(entry.get('tools'), f'{host}: the tools of the tx9_boxes entry of {box}')
    return {}


def box_pins(host_pins: object, declared: object, box: str, host: str) -> Pins:
    """The versions the inventory pins box to: the host's tx9_tools, then its tx9_boxes entry's tools."""
    merged = dict(read_pins(host_pins, f'{host}: tx9_tools'))
    merged.update(entry_tools(declared, box, host))
    return {tool: version for tool, version in sorted(merged.items()) if version is not None}


def drifted(record: Record, pins: Pins) -> list[str]:
    """The tools of a running box that do not answer as pinned, sorted; [] when its tools are unknown.

    With pins from the inventory, a tool drifts unless the box's own install answers with the pinned version
    (any version for latest, when the install was made for latest). Without, a tool drifts when the box's pin
    no longer answers (an import leaves out node_modules).
    """
    tools = record.get('tools')
    if not isinstance(tools, Mapping) or record.get('superseded'):
        return []
    found = []
    for tool in sorted(PACKAGES):
        found_tool = tools.get(tool)
        seen: Mapping[str, Any] = found_tool if isinstance(found_tool, Mapping) else {}
        wanted = pins.get(tool) if pins else seen.get('pinned')
        if wanted is None:
            continue
        answers = seen.get('source') == 'box' and (
            seen.get('pinned') == LATEST if wanted == LATEST else seen.get('installed') == wanted
        )
        if not answers:
            found.append(tool)
    return found


def tools_plan(
    boxes: Sequence[Record], host_pins: object, declared: object, selected: list[str], host: str
) -> dict[str, list[dict[str, Any]]]:
    """{installs: [{box, tools}], skipped: [{box, reason}]}: the selected boxes of a host with pins.

    Only a running box takes a pin (the install runs in its agent container); a copy a move left behind
    takes none. A selected box without pins is said, never passed over in silence.
    """
    installs: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    by_name = {str(record.get('name')): record for record in boxes}
    for box in selected:
        record = by_name.get(box) or {}
        pins = box_pins(host_pins, declared, box, host)
        if not pins:
            skipped.append(dict(box=box, reason='no pins: neither tx9_tools nor its tx9_boxes entry names a tool'))
        elif record.get('superseded'):
            skipped.append(dict(box=box, reason='a copy a move left behind; its pins go to the box where it runs'))
        elif record.get('state') != 'running':
            skipped.append(
                dict(
                    box=box,
                    reason=f'{record.get("state") or "not found"}: a pin is installed in the running box; '
                    'start it (tx9_box state=present) and run again',
                )
            )
        else:
            installs.append(dict(box=box, tools=pins))
    return dict(installs=installs, skipped=skipped)
