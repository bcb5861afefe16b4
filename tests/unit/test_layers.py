# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engine's layers: no import cycle between its packages, and a bottom layer that imports nothing above it."""

from __future__ import annotations

import ast
import pathlib

import pytest

PLUGINS = pathlib.Path(__file__).resolve().parents[2] / 'plugins'
PREFIX = 'ansible_collections.col_agents.tx9.plugins.'
# The shared modules every package may use; they import only each other.
BOTTOM = frozenset(f'module_utils.{name}' for name in (
    '_errors', '_version', '_names', '_io', '_docker', '_lock', '_mcp'))


def unit_of(parts: tuple[str, ...]) -> str:
    """The package (or top-level module) a module belongs to: module_utils._box, module_utils._io, ..."""
    return '.'.join(parts[:2])


def package_graph(root: pathlib.Path = PLUGINS) -> dict[str, set[str]]:
    """Package -> the other packages its modules import, for module_utils and plugin_utils."""
    graph: dict[str, set[str]] = {}
    for path in sorted(root.rglob('*.py')):
        parts = path.relative_to(root).with_suffix('').parts
        if parts[0] not in ('module_utils', 'plugin_utils'):
            continue
        source = unit_of(parts)
        edges = graph.setdefault(source, set())
        for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PREFIX):
                target = unit_of(tuple(node.module[len(PREFIX):].split('.')))
                if target != source:
                    edges.add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of graph as the packages along it (first repeated last), or None."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return path[path.index(node):] + [node]
        if node in done:
            return None
        for target in sorted(graph.get(node, ())):
            cycle = visit(target, path + [node])
            if cycle:
                return cycle
        done.add(node)
        return None

    for start in sorted(graph):
        cycle = visit(start, [])
        if cycle:
            return cycle
    return None


def test_no_package_of_the_engine_imports_one_that_imports_it_back() -> None:
    cycle = find_cycle(package_graph())
    assert cycle is None, 'import cycle: ' + ' -> '.join(cycle or [])


def test_the_bottom_layer_imports_nothing_above_it() -> None:
    graph = package_graph()
    above = {name: sorted(graph.get(name, set()) - BOTTOM) for name in BOTTOM}
    assert {name: targets for name, targets in above.items() if targets} == {}


def test_controller_code_is_never_imported_by_module_utils() -> None:
    graph = package_graph()
    assert {source: sorted(targets) for source, targets in graph.items()
            if source.startswith('module_utils') and any(t.startswith('plugin_utils') for t in targets)} == {}


@pytest.mark.parametrize('graph, cycle', [
    ({'a': {'b'}, 'b': {'a'}}, ['a', 'b', 'a']),
    ({'a': {'b'}, 'b': {'c'}, 'c': {'a'}}, ['a', 'b', 'c', 'a']),
    ({'a': {'b', 'c'}, 'b': {'c'}, 'c': set()}, None),
])
def test_the_cycle_finder_names_a_cycle_it_is_given_and_none_in_a_layered_graph(
        graph: dict[str, set[str]], cycle: list[str] | None) -> None:
    assert find_cycle(graph) == cycle


def test_a_cycle_added_to_the_tree_is_found(tmp_path: pathlib.Path) -> None:
    for name, imported in (('_archive', '_box'), ('_box', '_archive')):
        package = tmp_path / 'module_utils' / name
        package.mkdir(parents=True)
        (package / 'mod.py').write_text(f'from {PREFIX}module_utils.{imported}.mod import thing\n', encoding='utf-8')
    assert find_cycle(package_graph(tmp_path)) == ['module_utils._archive', 'module_utils._box', 'module_utils._archive']
