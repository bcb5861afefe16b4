# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The YAML subset hb reads and edits in place: block-style `key: value` mappings.

Hermes reads PyYAML, but the image's system Python has no YAML library, so hb
understands only the block style it writes itself (and what PyYAML emits for
it), and edits by lines so the user's other settings and comments survive.
"""

from __future__ import annotations

import json
import re
from typing import Any

YAML_KEY_RE = re.compile(
    r"""^(?P<key>"(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s"'#\-][^:#]*?|-[^\s:#][^:#]*?)\s*:(?:\s+(?P<value>.*))?$"""
)
YAML_TRUE = {'true', 'True', 'TRUE', 'yes', 'Yes', 'YES', 'on', 'On', 'ON'}


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(' '))


def _is_filler(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith('#')


def _yaml_unquote(text: str) -> Any:
    if len(text) >= 2 and text[0] == text[-1] == '"':
        try:
            return json.loads(text)
        except ValueError:
            return text[1:-1]
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    return text


def yaml_scalar(value: str) -> Any:
    value = value.strip()
    if value[:1] in ("'", '"'):
        quote = value[0]
        end = 1
        while end < len(value):
            if value[end] == quote:
                if quote == "'" and value[end + 1 : end + 2] == "'":
                    end += 2
                    continue
                if quote == '"' and value[end - 1] == '\\':
                    end += 1
                    continue
                break
            end += 1
        return _yaml_unquote(value[: end + 1])
    value = re.split(r'\s+#', value, maxsplit=1)[0].strip()
    if value in YAML_TRUE:
        return True
    if value in {'false', 'False', 'FALSE', 'no', 'No', 'NO', 'off', 'Off', 'OFF'}:
        return False
    if value in {'', '~', 'null', 'Null', 'NULL'}:
        return None
    return value


def yaml_key_line(line: str) -> tuple[Any, str | None] | None:
    m = YAML_KEY_RE.match(line.strip())
    if not m:
        return None
    key = _yaml_unquote(m.group('key'))
    value = m.group('value')
    if value is not None and value.strip().startswith('#'):
        value = None
    return key, value


def parse_yaml_mapping(lines: list[str]) -> dict[Any, Any]:
    """Nested dicts from block-style 'key: value' lines (lists are skipped)."""
    root: dict[Any, Any] = {}
    stack = [(-1, root)]
    for line in lines:
        if _is_filler(line) or line.strip().startswith('- ') or line.strip() == '-':
            continue
        parsed = yaml_key_line(line)
        if parsed is None:
            continue
        key, value = parsed
        indent = _indent(line)
        while stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        if value is None or not value.strip():
            child: dict[Any, Any] = {}
            parent[key] = child
            stack.append((indent, child))
        else:
            parent[key] = yaml_scalar(value)
    return root


def yaml_section_end(lines: list[str], start: int, indent: int) -> int:
    """End index of the block whose key line is lines[start] at `indent`."""
    end = start + 1
    last = start + 1
    while end < len(lines):
        if not _is_filler(lines[end]):
            if _indent(lines[end]) <= indent:
                break
            last = end + 1
        end += 1
    return last


def find_yaml_key(lines: list[str], start: int, end: int, indent: int, name: str) -> int | None:
    for i in range(start, end):
        if _is_filler(lines[i]) or _indent(lines[i]) != indent:
            continue
        parsed = yaml_key_line(lines[i])
        if parsed and parsed[0] == name:
            return i
    return None


def first_child_indent(lines: list[str], start: int, end: int) -> int | None:
    for i in range(start, end):
        if not _is_filler(lines[i]):
            return _indent(lines[i])
    return None
