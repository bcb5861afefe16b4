# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every file of the collection's Python stays small enough to read whole, every function to read at once."""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 60


def python_files() -> list[pathlib.Path]:
    return sorted([*(ROOT / 'plugins').rglob('*.py'), *(ROOT / 'assets' / 'guest').rglob('*.py')])


def long_functions(path: pathlib.Path, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """name:lines of each function in path longer than limit (a nested function counts on its own too)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > limit:
                found.append(f'{node.name}:{lines}')
    return found


def test_no_python_file_of_the_collection_is_over_500_lines() -> None:
    long = {str(path.relative_to(ROOT)): count for path in python_files()
            if (count := len(path.read_text(encoding='utf-8').splitlines())) > MAX_FILE_LINES}
    assert long == {}


def test_no_function_of_the_collection_is_over_60_lines() -> None:
    long = {str(path.relative_to(ROOT)): found for path in python_files() if (found := long_functions(path))}
    assert long == {}


def test_a_function_over_the_limit_is_named_with_its_length(tmp_path: pathlib.Path) -> None:
    source = tmp_path / 'long.py'
    source.write_text('def short():\n    pass\n\n\ndef long():\n' + '    x = 1\n' * 61, encoding='utf-8')
    assert long_functions(source) == ['long:62']
