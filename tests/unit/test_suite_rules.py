# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The suites' own rules: none passes having run nothing, and none asserts on wall-clock time.

A skipped test passes: a suite that skips itself (no root, no engine) reports green having
proved nothing, so a suite that cannot run fails and says why. And a test that asserts how
long something took fails on a loaded machine for no fault of the product: speed belongs to
tests/bench, which compares against a baseline measured in the same run; a test measures
what the product controls (calls, signals, the deadlines it reports, events it waits for).
A wait with a generous deadline that only turns a hang into a failure (a hang guard) is
not a timed assertion.
"""

import ast
import functools
import importlib.util
import os
import textwrap

import pytest

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLEET = os.path.join(TESTS, 'fleet')

# Test files that may skip, with the reason (a parametrisation that does not apply, never the
# environment). None does.
ALLOWED_SKIPS = {}
SKIPS = {'pytest.skip', 'pytest.importorskip', 'pytest.xfail', 'pytest.mark.skip', 'pytest.mark.skipif',
         'pytest.mark.xfail', 'unittest.skip', 'unittest.skipIf', 'unittest.skipUnless', 'unittest.SkipTest',
         'unittest.expectedFailure', 'self.skipTest'}

CLOCKS = {'time', 'monotonic', 'perf_counter', 'time_ns', 'monotonic_ns', 'perf_counter_ns'}
ASSERT_METHODS = {'assertLess', 'assertLessEqual', 'assertGreater', 'assertGreaterEqual', 'assertAlmostEqual'}


def python_files(*folders):
    for folder in folders:
        for root, dirs, files in os.walk(os.path.join(TESTS, folder)):
            dirs[:] = [d for d in dirs if d != '__pycache__']
            for name in sorted(files):
                if name.endswith('.py'):
                    yield os.path.join(root, name)


@functools.lru_cache(maxsize=None)
def parsed(path):
    with open(path) as handle:
        return ast.parse(handle.read(), path)


def load_fleet_conftest():
    spec = importlib.util.spec_from_file_location('tx9_fleet_conftest', os.path.join(FLEET, 'conftest.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Root for the fleet suite.

def test_without_root_the_fleet_suite_fails_every_test_with_a_message_saying_why_and_what_to_do(monkeypatch):
    conftest = load_fleet_conftest()
    monkeypatch.setattr(conftest.os, 'geteuid', lambda: 1000)
    monkeypatch.setattr(conftest.bedlib, 'Bed', lambda **_kwargs: pytest.fail('no bed is made without root'))

    with pytest.raises(BaseException) as outcome:
        next(conftest.fleet.__wrapped__())

    assert outcome.type is pytest.fail.Exception, 'it fails, never skips: %r' % outcome.value
    message = str(outcome.value)
    assert 'needs root' in message and 'uid 1000' in message, message
    assert 'namespaces' in message, 'it says why'
    assert 'sudo make test-fleet' in message, 'it says what to do'


def test_as_root_the_fleet_bed_has_nothing_against_the_run():
    assert load_fleet_conftest().bedlib.root_problem(0) is None


# No skips.

def skips(tree):
    """(line, name) of every skip, conditional skip or expected failure in a module."""
    imported = {}  # from pytest import skip (as name)
    names = []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ('pytest', 'unittest', 'pytest.mark'):
            for alias in node.names:
                if '%s.%s' % (node.module, alias.name) in SKIPS:
                    imported[alias.asname or alias.name] = '%s.%s' % (node.module, alias.name)
        elif isinstance(node, ast.Attribute) and reference(node) in SKIPS:
            found.append((node.lineno, reference(node)))
        elif isinstance(node, ast.Name):
            names.append(node)
    return found + [(node.lineno, imported[node.id]) for node in names if node.id in imported]


def test_no_test_skips_itself_so_that_no_suite_passes_having_run_nothing():
    found = []
    for path in python_files('unit', 'integration', 'fleet'):
        relative = os.path.relpath(path, TESTS)
        if relative not in ALLOWED_SKIPS:
            found += ['tests/%s:%d: %s' % (relative, line, name) for line, name in skips(parsed(path))]
    found += ['tests/conftest.py:%d: %s' % hit for hit in skips(parsed(os.path.join(TESTS, 'conftest.py')))]
    assert found == [], 'a test that cannot run fails and says why (pytest.fail), never skips:\n' + '\n'.join(found)


def test_the_skip_check_finds_each_way_of_skipping():
    source = textwrap.dedent('''
        import pytest, unittest
        pytest.skip('no engine')
        docker = pytest.importorskip('docker')
        @pytest.mark.skipif(True, reason='x')
        def test_a(): pass
        @unittest.skip('x')
        def test_b(): pass
        def test_c(): pytest.xfail('x')
        def test_d(): assert result['skipped'] == 2 and listing(skip=('a',)) and args.skip_4g
        from pytest import skip as give_up
        def test_e(): give_up('no root')
        class T(unittest.TestCase):
            def test_f(self): self.skipTest('x')
    ''')
    assert sorted(skips(ast.parse(source))) == [
        (3, 'pytest.skip'), (4, 'pytest.importorskip'), (5, 'pytest.mark.skipif'), (7, 'unittest.skip'),
        (9, 'pytest.xfail'), (12, 'pytest.skip'), (14, 'self.skipTest')]


# No wall-clock assertions.

def is_clock_call(node):
    """time.time(), time.monotonic() and the like."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in CLOCKS
            and isinstance(node.func.value, ast.Name) and node.func.value.id == 'time')


def reference(node):
    """'name' or 'a.b.name' for a name or attribute chain, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = reference(node.value)
        return base and '%s.%s' % (base, node.attr)
    return None


class ClockFlow(ast.NodeVisitor):
    """Which names hold instants (read from a clock) and which hold durations (a difference of instants)."""

    def __init__(self):
        self.instants = set()
        self.durations = set()

    def holds_instant(self, node):
        return any(is_clock_call(sub) or reference(sub) in self.instants for sub in ast.walk(node))

    def holds_duration(self, node):
        for sub in ast.walk(node):
            if reference(sub) in self.durations:
                return True
            if isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Sub) and \
                    self.holds_instant(sub.left) and self.holds_instant(sub.right):
                return True
        return False

    def assigned(self, targets, value):
        names = [reference(target) for target in targets]
        names = [name for name in names if name]
        if self.holds_duration(value):
            self.durations.update(names)
        elif self.holds_instant(value):
            self.instants.update(names)

    def visit_Assign(self, node):
        self.assigned(node.targets, node.value)

    def visit_AnnAssign(self, node):
        if node.value is not None:
            self.assigned([node.target], node.value)

    def visit_AugAssign(self, node):
        self.assigned([node.target], node.value)


def wall_clock_asserts(tree):
    """Lines of asserts that compare a duration read from the clock with anything.

    The names that hold instants and durations are followed through the whole module (a
    name assigned from the clock anywhere counts everywhere), which can only add findings;
    in this suite no name is used both ways.
    """
    if not any(is_clock_call(node) for node in ast.walk(tree)):
        return []
    flow = ClockFlow()
    for _round in range(3):  # a name may be assigned from another assigned further down
        flow.visit(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            compared = [sub for sub in ast.walk(node.test) if isinstance(sub, ast.Compare)]
            if any(flow.holds_duration(operand) for sub in compared for operand in [sub.left] + sub.comparators):
                found.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ASSERT_METHODS:
            if any(flow.holds_duration(arg) for arg in node.args):
                found.append(node.lineno)
    return found


def test_no_unit_or_integration_test_asserts_on_how_long_something_took():
    found = []
    for path in python_files('unit', 'integration'):
        found += ['tests/%s:%d' % (os.path.relpath(path, TESTS), line) for line in wall_clock_asserts(parsed(path))]
    assert found == [], ('these asserts compare a wall-clock duration, which a loaded machine stretches: assert '
                         'what the product controls, or measure it in tests/bench:\n' + '\n'.join(found))


def test_the_wall_clock_check_finds_elapsed_time_asserts_and_lets_hang_guards_and_timestamps_pass():
    flagged = textwrap.dedent('''
        import time
        def test_a():
            started = time.monotonic()
            run()
            assert time.monotonic() - started < 1
        def test_b():
            started = time.time()
            run()
            elapsed = time.time() - started
            assert result == 0 and elapsed < 20, 'took %.1f s' % elapsed
        class Watch:
            def begin(self):
                self.started = time.time()
            def check(self):
                assert time.time() - self.started <= 60
        def test_c(self):
            begin = time.perf_counter()
            self.assertLess(time.perf_counter() - begin, 5)
    ''')
    assert wall_clock_asserts(ast.parse(flagged)) == [6, 11, 16, 19]
    passed = textwrap.dedent('''
        import time
        def test_a():
            deadline = time.time() + 240
            while not ready():
                assert time.time() < deadline, 'never ready'
                time.sleep(0.05)
        def test_b():
            started = time.time()
            record = backup()
            assert record['time'] >= int(started) and record['seconds'] < 5
            window = (int(started), int(time.time()) + 1)
            assert events(window) == []
        def test_c():
            since = time.time() - 3600
            assert listed(since) == ['b']
    ''')
    assert wall_clock_asserts(ast.parse(passed)) == []
