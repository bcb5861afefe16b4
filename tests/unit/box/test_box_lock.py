# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The per-box lock: one holder at a time, and a second one fails fast."""


import errno
import fcntl
import os
import stat
import subprocess
import sys
import textwrap
import threading

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils import _lock
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._lock import BoxLock
from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome

# The one try a lock that never waits makes: it cannot block (LOCK_NB). A lock that queued or
# retried would show another flag or more tries.
ONE_TRY = [fcntl.LOCK_EX | fcntl.LOCK_NB]
# How long any lock call may take before the test fails instead of hanging: a
# call that blocks is a regression, and a hung run shows nothing.
HANG = 60.0

HOLDER = textwrap.dedent('''
    import sys
    sys.path.insert(0, sys.argv[1])
    from ansible_collections.col_agents.tx9.plugins.module_utils._lock import BoxLock
    from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
    lock = BoxLock(StateHome(sys.argv[2]), sys.argv[3]).acquire()
    print('held', flush=True)
    sys.stdin.readline()
    lock.release()
    print('released', flush=True)
    sys.stdin.readline()
''')

TRIER = textwrap.dedent('''
    import fcntl, sys
    sys.path.insert(0, sys.argv[1])
    from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
    from ansible_collections.col_agents.tx9.plugins.module_utils._lock import BoxLock
    from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
    tries, flock = [], fcntl.flock
    fcntl.flock = lambda fd, operation: tries.append(operation) or flock(fd, operation)
    try:
        BoxLock(StateHome(sys.argv[2]), sys.argv[3]).acquire()
        outcome = 'acquired'
    except Tx9Error as err:
        outcome = err.cause
    print(outcome, ','.join(str(operation) for operation in tries))
''')


def within(seconds, call, *args):
    """call(*args)'s result, or its exception; fails when it has not returned after seconds.

    The call runs in a daemon thread, so a call that blocks for good is left
    behind and the test fails instead of hanging.
    """
    outcome = {}

    def run():
        try:
            outcome['value'] = call(*args)
        except BaseException as exc:  # handed to the test's thread below
            outcome['error'] = exc

    worker = threading.Thread(target=run, name='tx9-lock-call')
    worker.daemon = True
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        pytest.fail('%s did not return within %s seconds' % (getattr(call, '__name__', call), seconds))
    if 'error' in outcome:
        raise outcome['error']
    return outcome['value']


def acquire(home, box):
    """BoxLock(home, box).acquire(), failing the test when it does not return within HANG."""
    return within(HANG, BoxLock(home, box).acquire)


def collections_path():
    """The sys.path entry this test imported the collection from."""
    path = os.path.abspath(_lock.__file__)
    return path[:path.rindex(os.sep + 'ansible_collections' + os.sep)]


class Holder:
    """A lock holder in another process, told by stdin when to release."""

    def __init__(self, home, box):
        self.proc = subprocess.Popen(
            [sys.executable, '-c', HOLDER, collections_path(), home.path, box],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, universal_newlines=True)
        assert self.said() == 'held'

    def said(self):
        """The holder's next line; fails when it says nothing within HANG."""
        return within(HANG, self.proc.stdout.readline).strip()

    def release(self):
        self.proc.stdin.write('\n')
        self.proc.stdin.flush()
        assert self.said() == 'released'

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stdin.close()
        self.proc.stdout.close()


@pytest.fixture
def home(tmp_path):
    return StateHome(str(tmp_path / 'home'))


@pytest.fixture
def holders():
    started = []
    yield started
    for holder in started:
        holder.close()


def try_in_another_process(home, box):
    try:
        out = subprocess.check_output(
            [sys.executable, '-c', TRIER, collections_path(), home.path, box],
            universal_newlines=True, timeout=HANG)
    except subprocess.TimeoutExpired:
        pytest.fail('acquiring the lock in another process did not return within %s seconds' % HANG)
    outcome, tries = out.split()
    return outcome, [int(operation) for operation in tries.split(',')]


def flock_tries(monkeypatch):
    """The operation of every flock call the lock module makes from now on."""
    tries = []
    flock = _lock.fcntl.flock
    monkeypatch.setattr(_lock.fcntl, 'flock', lambda fd, operation: tries.append(operation) or flock(fd, operation))
    return tries


def test_a_second_holder_of_a_box_lock_fails_at_its_one_try_with_box_busy(home, holders, monkeypatch):
    holders.append(Holder(home, 'b1'))
    tries = flock_tries(monkeypatch)

    with pytest.raises(Tx9Error) as info:
        acquire(home, 'b1')

    assert tries == ONE_TRY
    assert info.value.cause == 'BOX_BUSY'
    assert 'b1' in info.value.reason
    assert info.value.fix


def test_a_second_process_never_waits_for_a_held_lock(home):
    lock = acquire(home, 'b1')
    try:
        outcome, tries = try_in_another_process(home, 'b1')
    finally:
        lock.release()

    assert outcome == 'BOX_BUSY'
    assert tries == ONE_TRY


def test_releasing_a_lock_lets_the_next_holder_in(home, holders):
    holder = Holder(home, 'b1')
    holders.append(holder)
    with pytest.raises(Tx9Error) as info:
        acquire(home, 'b1')
    assert info.value.cause == 'BOX_BUSY'

    holder.release()

    acquire(home, 'b1').release()


def test_leaving_the_with_block_releases_the_lock(home):
    def enter_and_leave():
        with BoxLock(home, 'b1'):
            pass

    within(HANG, enter_and_leave)

    assert try_in_another_process(home, 'b1')[0] == 'acquired'


def test_an_error_inside_the_with_block_still_releases_the_lock(home):
    def fail_inside():
        with BoxLock(home, 'b1'):
            raise RuntimeError('boom')

    with pytest.raises(RuntimeError):
        within(HANG, fail_inside)

    assert try_in_another_process(home, 'b1')[0] == 'acquired'


def test_a_holder_that_dies_leaves_the_lock_free(home, holders):
    holder = Holder(home, 'b1')
    holders.append(holder)

    holder.close()

    acquire(home, 'b1').release()


def test_a_lock_on_one_box_does_not_block_another_box(home, holders):
    holders.append(Holder(home, 'b1'))

    acquire(home, 'b2').release()


def test_releasing_twice_is_harmless(home):
    lock = acquire(home, 'b1')

    lock.release()
    lock.release()

    assert try_in_another_process(home, 'b1')[0] == 'acquired'


def test_the_lock_file_lives_in_the_home_locks_folder_as_0600(home):
    def lock_path():
        with BoxLock(home, 'b1') as lock:
            return lock.path

    old_umask = os.umask(0o022)
    try:
        path = within(HANG, lock_path)
    finally:
        os.umask(old_umask)

    assert path == os.path.join(home.locks_dir, 'b1.lock')
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(home.locks_dir).st_mode) == 0o700


def test_a_lock_for_an_invalid_box_name_is_refused_and_the_reason_names_it(home):
    with pytest.raises(Tx9Error) as info:
        BoxLock(home, '../b1')

    assert info.value.cause == 'INVALID_NAME'
    assert "'../b1'" in info.value.reason
    assert not os.path.exists(os.path.join(home.locks_dir, '../b1.lock'))


def test_discarding_a_held_lock_removes_its_file_and_releases_it(home):
    lock = acquire(home, 'b1')

    lock.discard()

    assert not os.path.exists(lock.path)
    assert not lock.held
    acquire(home, 'b1').release()


def test_discarding_needs_the_lock_held(home):
    lock = acquire(home, 'b1')
    lock.release()

    with pytest.raises(RuntimeError):
        lock.discard()
    assert os.path.exists(lock.path)


def test_a_waiter_that_opened_the_lock_file_before_its_holder_discarded_it_locks_the_new_file(home, monkeypatch):
    """The race a removable lock file opens: the second opener must not lock the removed file."""
    first = acquire(home, 'b1')
    second = BoxLock(home, 'b1')
    real_flock = _lock.fcntl.flock
    calls = []

    def flock_after_discard(fd, operation):
        # The second opener has its descriptor of the old file; the holder discards it now.
        if not calls and first.held:
            calls.append(fd)
            first.discard()
        return real_flock(fd, operation)

    monkeypatch.setattr(_lock.fcntl, 'flock', flock_after_discard)
    within(HANG, second.acquire)
    monkeypatch.setattr(_lock.fcntl, 'flock', real_flock)
    try:
        # It holds the file now at the path, so a third opener is refused.
        assert os.path.exists(second.path)
        assert try_in_another_process(home, 'b1')[0] == 'BOX_BUSY'
    finally:
        second.release()


def test_a_lock_that_must_not_create_its_file_fails_with_enoent_when_there_is_none(home):
    with pytest.raises(OSError) as info:
        BoxLock(home, 'b1', create=False).acquire()

    assert info.value.errno == errno.ENOENT
    assert not os.path.exists(os.path.join(home.locks_dir, 'b1.lock'))
