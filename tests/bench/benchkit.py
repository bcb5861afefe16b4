# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the benchmarks share: paths, the one-bench-at-a-time lock, timing and the report table.

For the benches that work on a box's /data (backup_bench, import_bench) also:
running commands with their output logged, a bench box with generated /data,
and one module task timed through ansible-playbook under an interpreter
wrapper that records the module process's peak memory (see measure_module).
"""


import fcntl
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS_PATH = os.path.join(REPO_ROOT, '.cache', 'collections')
if COLLECTIONS_PATH not in sys.path:
    sys.path.insert(0, COLLECTIONS_PATH)

TX9_BIN = os.path.dirname(sys.executable)
BENCH_DIR = os.path.join(REPO_ROOT, '.cache', 'bench')
PLAY_DIR = os.path.join(BENCH_DIR, 'plays')
ANSIBLE_CFG = os.path.join(REPO_ROOT, 'ansible.cfg')

GIB = 1024 ** 3
MB = 1000 ** 2

# Where the generated files go, inside the agent's /data.
BENCH_SUBDIR = '/data/home/agent/bench'

RUN_TIMEOUT = 1800
IMAGE_TIMEOUT = 3600

# Where run_logged keeps each command's output: the log directory begin() was given.
_LOGS = dict(dir=None)


class BenchError(Exception):
    """Something the benchmark needed did not run as it should."""


def hold_bench_lock():
    """Fail fast when another bench runs: both would converge, time and remove the same objects."""
    os.makedirs(BENCH_DIR, exist_ok=True)
    handle = open(os.path.join(BENCH_DIR, 'lock'), 'w')  # pylint: disable=consider-using-with
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        sys.exit('bench: another make bench is running on this checkout; wait for it to finish.')
    return handle


def stop_on_term(signum, _frame):
    # SIGTERM (make interrupted, CI stopping) unwinds like Ctrl-C, so the cleanup still runs.
    raise SystemExit(128 + signum)


def begin(log_dir):
    """Start a bench: hold the lock (keep what this returns until exit), unwind on SIGTERM, empty log_dir."""
    lock = hold_bench_lock()
    signal.signal(signal.SIGTERM, stop_on_term)
    # Logs of an earlier run would read as this run's.
    shutil.rmtree(log_dir, ignore_errors=True)
    os.makedirs(log_dir)
    _LOGS['dir'] = log_dir
    return lock


def last_error(output):
    """The most telling line of a failed run, for the table and the report."""
    lines = output.strip().splitlines() or ['no output']
    telling = [line for line in lines if '"msg"' in line or line.startswith(('fatal:', '[ERROR]'))]
    return (telling or lines)[-1].strip()[:400]


def rounded(value, digits=3):
    return None if value is None else round(value, digits)


def timed(phases, name, call, *args):
    started = time.perf_counter()
    try:
        return call(*args)
    finally:
        phases[name] = rounded(time.perf_counter() - started)


# Before each timed side the machine settles: the writes of the side before are synced, then the
# side waits (at most SETTLE_LIMIT seconds) until fewer than QUIET_IO_PERCENT of the last ten seconds
# saw a task stalled on I/O. A side that removed gigabytes of image layers or wrote them back leaves
# the disk busy for a while after it ends; on a virtual disk with a throughput budget that debt would
# otherwise land on whichever side runs next.
IO_PRESSURE = '/proc/pressure/io'
QUIET_IO_PERCENT = 5.0
SETTLE_LIMIT = 300


def io_stall_percent(text):
    """The 'some avg10' figure of a /proc/pressure/io text (None when it has none)."""
    for row in text.splitlines():
        fields = row.split()
        if fields and fields[0] == 'some':
            for field in fields[1:]:
                key, value = field.split('=', 1) if '=' in field else (field, '')
                if key == 'avg10':
                    try:
                        return float(value)
                    except ValueError:
                        return None
    return None


def settle(phases, name, limit=SETTLE_LIMIT):
    """sync, then wait until the disk is quiet (or limit seconds passed); the wait goes into phases[name]."""
    started = time.perf_counter()
    subprocess.run(['sync'], check=False)
    while time.perf_counter() - started < limit:
        try:
            with open(IO_PRESSURE) as handle:
                stalled = io_stall_percent(handle.read())
        except OSError:
            break
        if stalled is None or stalled < QUIET_IO_PERCENT:
            break
        time.sleep(2)
    phases[name] = rounded(time.perf_counter() - started)


def fmt(value, unit='', digits=2):
    return '-' if value is None else '%.*f%s' % (digits, value, unit)


def spread(values):
    """The slowest less the fastest of values, formatted ('-' for none)."""
    return fmt(max(values) - min(values) if values else None)


def verdict(met):
    return 'NOT MEASURED' if met is None else 'met' if met else 'MISSED'


def print_target(what, value, target, met):
    print('%-46s %9s   target %-10s %s' % (what, value, target, verdict(met)))


def print_check(what, found):
    """A yes/no target (found: {value: True, False or None, met}) as print_target prints it."""
    print_target(what, {None: '-', True: 'yes', False: 'no'}[found['value']], 'yes', found['met'])


def print_closing(report, report_path):
    """The last lines of a bench's table: what failed, the phases' times and where the report is."""
    for problem in report['problems']:
        print('\nFAILED %s' % problem)
    print('\nphases (s): %s' % ', '.join('%s %s' % item for item in report['phases'].items()))
    print('report: %s' % os.path.relpath(report_path, REPO_ROOT))


def median_ratio(report, target):
    """The medians of report['runs'] 'ours' and 'baseline' seconds, and their ratio against target (at most)."""
    ours = [run['seconds'] for run in report['runs']['ours']]
    baseline = [run['seconds'] for run in report['runs']['baseline']]
    median_ours = statistics.median(ours) if ours else None
    median_base = statistics.median(baseline) if baseline else None
    ratio = median_ours / median_base if median_ours and median_base else None
    return dict(ours=rounded(median_ours), baseline=rounded(median_base),
                ratio=dict(value=rounded(ratio), target=target, met=None if ratio is None else ratio <= target))


def write_report(report, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as handle:
        json.dump(report, handle, indent=2)
        handle.write('\n')


# ---- running commands ---------------------------------------------------------------------


def build_and_check_room(report, state_home, work, needed):
    """Build the bench image (timed), then refuse to go on with less than needed bytes free for Docker and work."""
    timed(report['phases'], 'build_image', build_image, state_home)
    free = free_bytes([docker_root(), work])
    report['free_bytes_at_start'] = free
    if free is not None and free < needed:
        raise BenchError('only %.1f GiB free on the disks of Docker and %s; the 1 GiB part needs %.0f GiB'
                         % (free / GIB, work, needed / GIB))


def conduct(report, args, work_prefix, bench, cleanup, targets, print_table, report_path, missed=None):
    """Run bench(report, args, state_home, work) in fresh temporary directories; the exit code.

    A BenchError becomes a problem of the report; the cleanup runs whatever happened (a second
    SIGTERM cannot cut it short and leave a box behind); the report is written and printed.
    """
    started = time.perf_counter()
    state_home = tempfile.mkdtemp(prefix='tx9-bench-home-')
    work = tempfile.mkdtemp(prefix=work_prefix)
    try:
        bench(report, args, state_home, work)
    except BenchError as exc:
        report['problems'].append(str(exc))
    except (KeyboardInterrupt, SystemExit):
        report['problems'].append('interrupted: the numbers above are partial')
        raise
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        report['problems'].extend(cleanup(state_home, work, report['phases']))
        report['phases']['total'] = rounded(time.perf_counter() - started)
        report['targets'] = targets(report)
        write_report(report, report_path)
        print_table(report)
    return 1 if report['problems'] or (missed is not None and missed(report)) else 0


def ansible_env(state_home, extra=None):
    env = dict(os.environ)
    env.update(ANSIBLE_CONFIG=ANSIBLE_CFG, TX9_HOME=state_home, ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0',
               PATH=TX9_BIN + os.pathsep + env.get('PATH', ''))
    env.update(extra or {})
    return env


def run_logged(label, argv, env=None, stdin_text=None, timeout=RUN_TIMEOUT, pids=None):
    """Run argv from the repo root in a session of its own, output to <log dir>/<label>.log; (seconds, rc, output).

    pids, a list, gets the process id while it runs (for a bench that watches its memory).

    On a timeout or an interruption the whole session is stopped (ansible-playbook's module,
    docker exec, gpg), so nothing keeps the box lock or the data busy during the cleanup.
    """
    started = time.perf_counter()
    with subprocess.Popen(argv, cwd=REPO_ROOT, env=env, stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          start_new_session=True) as proc:
        if pids is not None:
            pids.append(proc.pid)
        try:
            output = proc.communicate(stdin_text, timeout=timeout)[0]
        except subprocess.TimeoutExpired as exc:
            stop_session(proc)
            raise BenchError('%s did not finish within %d s' % (label, timeout)) from exc
        except BaseException:
            stop_session(proc)
            raise
    seconds = time.perf_counter() - started
    with open(os.path.join(_LOGS['dir'], '%s.log' % label), 'w') as handle:
        handle.write(output)
    return seconds, proc.returncode, output


def stop_session(proc):
    """Stop the session this bench started for proc (its process group, by id), then reap proc."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=10)
            break
        except subprocess.TimeoutExpired:
            continue


def checked(label, argv, env=None, stdin_text=None, timeout=RUN_TIMEOUT):
    """run_logged that raises BenchError on a non-zero exit; (seconds, output)."""
    seconds, rc, output = run_logged(label, argv, env, stdin_text, timeout)
    if rc != 0:
        raise BenchError('%s failed (rc %d): %s' % (label, rc, last_error(output)))
    return seconds, output


def kb_to_mb(value):
    return None if value is None else value * 1024 / MB


def write_file(path, text, mode=0o644):
    with open(path, 'w') as handle:
        handle.write(text)
    os.chmod(path, mode)
    return path


def bench_image():
    """The box image the benches use: TX9_BENCH_IMAGE=TAG, so a bench on a shared engine leaves tx9-box:<version> alone."""
    from ansible_collections.col_agents.tx9.plugins.module_utils._version import DEFAULT_IMAGE
    return os.environ.get('TX9_BENCH_IMAGE') or DEFAULT_IMAGE


def build_image(state_home):
    """playbooks/build-image.yml (tx9_image for a TX9_BENCH_IMAGE tag): a no-op when the image is current."""
    tag = os.environ.get('TX9_BENCH_IMAGE')
    if tag:
        argv = [os.path.join(TX9_BIN, 'ansible'), 'localhost', '-m', 'col_agents.tx9.tx9_image', '-a', 'image=%s' % tag]
    else:
        argv = [os.path.join(TX9_BIN, 'ansible-playbook'), 'playbooks/build-image.yml']
    return checked('build-image', argv, ansible_env(state_home), None, IMAGE_TIMEOUT)


# ---- a bench box and its generated /data --------------------------------------------------

BOX_PLAY = '''---
- name: %(title)s
  hosts: localhost
  gather_facts: false
  tasks:
    - name: The box %(box)s, running
      col_agents.tx9.tx9_box:
        name: %(box)s
        image: %(image)s
'''


def create_box(state_home, box, play_name, title, label='create-box'):
    """The box, with tx9_box's defaults, through a one-task play written to PLAY_DIR/play_name."""
    os.makedirs(PLAY_DIR, exist_ok=True)
    play = write_file(os.path.join(PLAY_DIR, play_name), BOX_PLAY % dict(title=title, box=box, image=bench_image()))
    return checked(label, [os.path.join(TX9_BIN, 'ansible-playbook'), play], ansible_env(state_home))


def tx9_box_absent(state_home, box, label):
    argv = [os.path.join(TX9_BIN, 'ansible'), 'localhost', '-m', 'col_agents.tx9.tx9_box', '-a', 'name=%s state=absent' % box]
    checked(label, argv, ansible_env(state_home))


def docker_remove_box(names):
    """A box's objects by name (object_names of the box), whatever state a killed run left them in."""
    for argv in (['docker', 'rm', '-f', names['agent'], names['executor']],
                 ['docker', 'volume', 'rm', '-f', names['agent_volume'], names['executor_volume']],
                 ['docker', 'network', 'rm', names['network']]):
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


# Runs inside the agent container as the agent user: python3 - ROOT SET RANDOM_BYTES TEXT_BYTES.
# It writes ROOT/setNN/blobs/blobNNN.bin (128 MiB each, from os.urandom) and
# ROOT/setNN/src/pkgNNNN/modNNNNN.<ext>: 1-20 KiB of source-like text each, lines
# drawn from a pool generated from a vocabulary (gzip -6 makes about a quarter of it).
GENERATOR = r'''
import os
import random
import sys

BLOB = 128 * 1024 * 1024
FILES_PER_DIR = 250
WORDS = ('request response buffer handle value index count limit cache entry record table stream chunk offset '
         'payload header status error retry timeout config option parser token member archive volume service '
         'worker thread queue signal event state result client server session manager helper factory').split()
KEYWORDS = ('if', 'for', 'while', 'return', 'yield', 'raise', 'with', 'try', 'elif', 'assert')
EXTENSIONS = ('py', 'go', 'ts', 'c', 'rs', 'md', 'js', 'txt')


def identifier(rng):
    parts = rng.sample(WORDS, rng.randint(1, 3))
    if rng.random() < 0.3:
        return ''.join(part.capitalize() for part in parts)
    return '_'.join(parts)


def line(rng, idents):
    def pick():
        return rng.choice(idents)
    indent = '    ' * rng.randint(0, 3)
    kind = rng.randint(0, 9)
    if kind == 0:
        return '%sdef %s(self, %s, %s=%d):' % (indent, pick(), pick(), pick(), rng.randint(0, 4096))
    if kind == 1:
        return '%s# %s' % (indent, ' '.join(rng.choice(WORDS) for count in range(rng.randint(3, 12))))
    if kind == 2:
        return '%s%s %s %s %s:' % (indent, rng.choice(KEYWORDS), pick(), rng.choice(('>', '<', '==', 'in', 'is not')), pick())
    if kind == 3:
        return '%sreturn %s.%s(%s)' % (indent, pick(), pick(), ', '.join(pick() for count in range(rng.randint(0, 3))))
    if kind == 4:
        return '%s%s = "%s %s %d"' % (indent, pick(), rng.choice(WORDS), rng.choice(WORDS), rng.randint(0, 1 << 20))
    if kind == 5:
        return ''
    return '%s%s = %s.%s(%s, %s)' % (indent, pick(), pick(), pick(), pick(), hex(rng.getrandbits(rng.choice((8, 16, 32)))))


def write_text(root, rng, total):
    idents = [identifier(rng) for count in range(4000)]
    pool = [line(rng, idents) for count in range(60000)]
    written = count = 0
    while written < total:
        directory = os.path.join(root, 'src', 'pkg%04d' % (count // FILES_PER_DIR))
        if count % FILES_PER_DIR == 0:
            os.makedirs(directory, exist_ok=True)
        size = min(rng.randint(1024, 20 * 1024), total - written)
        text = '\n'.join(rng.choices(pool, k=size // 30 + 8)).encode()[:size]
        with open(os.path.join(directory, 'mod%05d.%s' % (count, rng.choice(EXTENSIONS))), 'wb') as handle:
            handle.write(text)
        written += len(text)
        count += 1
    return count


def write_random(root, total):
    os.makedirs(os.path.join(root, 'blobs'), exist_ok=True)
    written = index = 0
    while written < total:
        size = min(BLOB, total - written)
        with open(os.path.join(root, 'blobs', 'blob%03d.bin' % index), 'wb') as handle:
            left = size
            while left:
                chunk = os.urandom(min(left, 1 << 20))
                handle.write(chunk)
                left -= len(chunk)
        written += size
        index += 1
    return index


def main():
    root = os.path.join(sys.argv[1], 'set%02d' % int(sys.argv[2]))
    os.makedirs(root)
    blobs = write_random(root, int(sys.argv[3]))
    files = write_text(root, random.Random(int(sys.argv[2])), int(sys.argv[4]))
    print('%d %d' % (blobs, files))


main()
'''


def generate(agent, label, set_number, size):
    """Half of size from /dev/urandom, half source-like text, as the agent user; (seconds, blobs, text files)."""
    half = size // 2
    argv = ['docker', 'exec', '-i', '-u', 'agent', agent, 'python3', '-', BENCH_SUBDIR, str(set_number), str(half), str(size - half)]
    seconds, output = checked(label, argv, stdin_text=GENERATOR)
    blobs, files = (int(word) for word in output.strip().splitlines()[-1].split())
    return seconds, blobs, files


def data_size(agent, root='/data', label='data-size'):
    """(bytes, entries) of root in the container agent, counted as root."""
    output = checked(label, ['docker', 'exec', '-u', 'root', agent, 'sh', '-c', 'du -sb %s | cut -f1; find %s | wc -l' % (root, root)])[1]
    size, entries = output.split()[:2]
    return int(size), int(entries)


def free_bytes(paths):
    """The least free space among the filesystems of paths (missing paths are skipped)."""
    free = [shutil.disk_usage(path).free for path in paths if os.path.exists(path)]
    return min(free) if free else None


def docker_root():
    proc = subprocess.run(['docker', 'info', '--format', '{{.DockerRootDir}}'], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          universal_newlines=True, check=False)
    return proc.stdout.strip() or '/var/lib/docker'


# ---- one module task, timed, and its peak memory ------------------------------------------

# A play that times one task of module. Its options come from the vars of the run
# (option: var name); the interpreter wrapper is set on that task only, so the other
# tasks run as usual and only the module's process is measured.
TIMED_PLAY_HEAD = '''---
- name: %(title)s
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Note when the timed task starts
      ansible.builtin.set_fact:
        bench_started: "{{ now(utc=true).timestamp() }}"

    - name: %(task)s
      %(module)s:
'''

TIMED_PLAY_TAIL = '''      vars:
        ansible_python_interpreter: "{{ bench_interpreter }}"
      register: bench_task

    - name: Note when it ended
      ansible.builtin.set_fact:
        bench_ended: "{{ now(utc=true).timestamp() }}"

    - name: Save the result for the bench
      ansible.builtin.copy:
        content: "{{ bench_task | combine({'task_seconds': (bench_ended | float) - (bench_started | float)}) | to_json }}"
        dest: "{{ bench_result }}"
        mode: "0600"
'''


def write_timed_play(name, title, task, module, options):
    """PLAY_DIR/name: the play measure_module runs; options maps each module option to a var name."""
    lines = ''.join('        %s: "{{ %s }}"\n' % (option, var) for option, var in options)
    text = TIMED_PLAY_HEAD % dict(title=title, task=task, module=module) + lines + TIMED_PLAY_TAIL
    os.makedirs(PLAY_DIR, exist_ok=True)
    return write_file(os.path.join(PLAY_DIR, name), text)


# The module's interpreter for the timed task (see measure_module). @PYTHON@ is
# the venv's Python, which the inventory gives every other task.
WRAPPER = '''#!@PYTHON@
"""Run the AnsiballZ module given in argv under the real Python; record its peak memory."""
import json
import os
import subprocess
import sys
import threading
import time

REAL = '@PYTHON@'
INTERVAL = 0.1


def read(pid, name):
    with open('/proc/%d/%s' % (pid, name)) as handle:
        return handle.read()


def descendants(root):
    """{pid: comm} of root and everything below it now."""
    children, comms = {}, {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            stat = read(int(entry), 'stat')
        except OSError:
            continue
        head, tail = stat.rsplit(')', 1)
        comms[int(entry)] = head.split('(', 1)[1]
        children.setdefault(int(tail.split()[1]), []).append(int(entry))
    found, todo = {}, [root]
    while todo:
        pid = todo.pop()
        if pid in comms:
            found[pid] = comms[pid]
        todo.extend(children.get(pid, ()))
    return found


def hwm_kb(pid):
    try:
        for line in read(pid, 'status').splitlines():
            if line.startswith('VmHWM:'):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def main():
    started = time.time()
    child = subprocess.Popen([REAL] + sys.argv[1:])
    peaks = {}
    done = threading.Event()

    def sample():
        while not done.is_set():
            for pid, comm in descendants(child.pid).items():
                value = hwm_kb(pid)
                if value is not None:
                    peaks[pid] = (comm, max(value, peaks.get(pid, (comm, 0))[1]))
            done.wait(INTERVAL)

    sampler = threading.Thread(target=sample)
    sampler.daemon = True
    sampler.start()
    status, usage = os.wait4(child.pid, 0)[1:]
    done.set()
    sampler.join()
    child.returncode = os.waitstatus_to_exitcode(status)
    module = peaks.pop(child.pid, ('python', None))[1]
    gpg = [kb for comm, kb in peaks.values() if comm.startswith('gpg')]
    others = dict(('%s[%d]' % (comm, pid), kb) for pid, (comm, kb) in peaks.items() if not comm.startswith('gpg'))
    with open(os.environ['TX9_BENCH_RSS_OUT'], 'w') as handle:
        json.dump(dict(pid=child.pid, seconds=round(time.time() - started, 3), maxrss_kb=usage.ru_maxrss,
                       module_hwm_kb=module, gpg_hwm_kb=max(gpg) if gpg else None, gpg_processes=len(gpg),
                       others_hwm_kb=others), handle)
    code = child.returncode
    sys.exit(code if code >= 0 else 128 - code)


main()
'''


def write_wrapper(work):
    """The measuring interpreter, in the private directory work."""
    return write_file(os.path.join(work, 'tx9-bench-python'), WRAPPER.replace('@PYTHON@', sys.executable), 0o755)


def measure_module(label, play, variables, state_home, work, wrapper):
    """Run a play of write_timed_play with variables; the module's result and what it cost.

    How peak memory is measured: the timed task runs under an interpreter wrapper
    (ansible_python_interpreter of that task only) that starts the real Python on
    the AnsiballZ module and waits for it with wait4(). The kernel's ru_maxrss from
    wait4 is the exact peak RSS of the module process (or, were one larger, of a
    child it waited for: gpg), including the last moments of the run, which
    sampling would miss. While it runs, the wrapper also samples every 0.1 s the
    VmHWM (/proc/<pid>/status, itself a high-water mark) of the module process and
    of its gpg children, so each can be shown on its own. The peak RSS is the larger
    of ru_maxrss and the module's sampled VmHWM (the kernel syncs its RSS counters
    lazily, so they can differ by a fraction of a MB), in MB of 10^6 bytes. Nothing
    of the module is changed; the wrapper costs one Python start-up.

    Returns dict(result (the registered result, task_seconds added: the task's wall
    time), play_seconds, load_before, output, and the memory figures).
    """
    result_path = os.path.join(work, '%s-result.json' % label)
    rss_path = os.path.join(work, '%s-rss.json' % label)
    extra = os.path.join(work, '%s-vars.json' % label)
    with open(extra, 'w') as handle:
        json.dump(dict(variables, bench_interpreter=wrapper, bench_result=result_path), handle)
    argv = [os.path.join(TX9_BIN, 'ansible-playbook'), play, '-e', '@' + extra]
    load = os.getloadavg()[0]
    seconds, output = checked(label, argv, ansible_env(state_home, dict(TX9_BENCH_RSS_OUT=rss_path)))
    with open(result_path) as handle:
        result = json.load(handle)
    with open(rss_path) as handle:
        rss = json.load(handle)
    for path in (result_path, rss_path, extra):
        os.unlink(path)
    return dict(result=result, play_seconds=seconds, load_before=rounded(load, 2), output=output,
                module_process_seconds=rss['seconds'], rss_mb=kb_to_mb(max(rss['maxrss_kb'], rss['module_hwm_kb'] or 0)),
                maxrss_mb=kb_to_mb(rss['maxrss_kb']), module_hwm_mb=kb_to_mb(rss['module_hwm_kb']),
                gpg_hwm_mb=kb_to_mb(rss['gpg_hwm_kb']), gpg_processes=rss['gpg_processes'], others_hwm_kb=rss['others_hwm_kb'])
