# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""`make bench`, second part: what a tx9_backup costs, against the plain pipeline.

On one box (bench-bk) whose agent /data holds 1 GiB of generated files (half
incompressible: a few big files from /dev/urandom; half text: tens of
thousands of 1-20 KiB source-like files, written inside the container as the
agent user, so they are real files on the volume), it measures in one run:

* the plain pipeline `tar -C /data -c . | gzip -6 | gpg --symmetric
  --cipher-algo AES256` (gpg's defaults otherwise, so gpg compresses again),
  run as root inside the agent container on the same data, timed inside;
* col_agents.tx9.tx9_backup (encrypted, passphrase as a module argument)
  through ansible-playbook: the wall time of its task (validation and
  read-back included), the module's own `duration`, and its peak RSS;
* the archive: two members, a payload that gpg decrypts and `tar -tz` lists;
* after adding 3 GiB more of the same mix (4 GiB), one more tx9_backup: its
  time and peak RSS, to show that memory does not grow with /data. This part
  needs about 12 GiB free; without them it is NOT MEASURED (which is no pass).

The pipeline and the backup alternate (--runs each, default 3); the ratio is
of their medians. Both read /data from the page cache: it was just written.

How peak memory is measured: the backup task runs under an interpreter
wrapper (ansible_python_interpreter of that task only) that starts the real
Python on the AnsiballZ module and waits for it with wait4(). The kernel's
ru_maxrss from wait4 is the exact peak RSS of the module process (or, were one
larger, of a child it waited for: gpg), including the last moments of the
run, which sampling would miss. While it runs, the wrapper also samples every
0.1 s the VmHWM (/proc/<pid>/status, itself a high-water mark) of the module
process and of its gpg children, so the report shows each on its own. The
peak RSS reported is the larger of ru_maxrss and the module's sampled VmHWM
(the kernel syncs its RSS counters lazily, so they can differ by a fraction
of a MB), in MB of 10^6 bytes. Nothing of the module is changed; the wrapper
costs one Python start-up.

It prints a table, writes .cache/bench/backup-report.json, keeps every
command's output under .cache/bench/backup-logs/ and exits non-zero only when
something failed to run; a missed target is printed as MISSED. The box and
every temporary file are removed on exit, also on failure and on SIGTERM.
"""


import argparse
import datetime
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from benchkit import (  # noqa: E402 (it puts the collection on sys.path first)
    BENCH_DIR, PLAY_DIR, REPO_ROOT, TX9_BIN, begin, fmt, last_error, print_target, rounded, timed,
    write_report)

from ansible_collections.col_agents.tx9.plugins.module_utils._box.names import object_names  # noqa: E402

LOG_DIR = os.path.join(BENCH_DIR, 'backup-logs')
REPORT_PATH = os.path.join(BENCH_DIR, 'backup-report.json')
ANSIBLE_CFG = os.path.join(REPO_ROOT, 'ansible.cfg')

BOX = 'bench-bk'
NAMES = object_names(BOX)
AGENT = NAMES['agent']
# Where the generated files go, inside the agent's /data.
BENCH_SUBDIR = '/data/home/agent/bench'
PASSWORD = 'tx9-bench-passphrase'
PAYLOAD = 'data.tar.gz.gpg'

GIB = 1024 ** 3
MB = 1000 ** 2
BASE_SIZE = 1 * GIB
GROWN_SIZE = 4 * GIB
# Free space the runs need on the disks of Docker and of the archives: the data,
# plus the payload and the archive the module writes side by side, with margin.
BASE_FREE = 4 * GIB
GROWN_FREE = 12 * GIB

TARGET_RATIO = 0.3
TARGET_RSS_MB = 200.0
# RSS "does not grow" from 1 GiB to 4 GiB when it grows by at most this much (noise).
RSS_NOISE_MB = 10.0
RSS_NOISE_FRACTION = 0.10

RUN_TIMEOUT = 1800
IMAGE_TIMEOUT = 3600

# The timed play. The interpreter wrapper is set on the backup task only, so the
# other tasks run as usual and only the module's process is measured.
BACKUP_PLAY = '''---
- name: One timed tx9_backup of the bench box
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Note when the backup task starts
      ansible.builtin.set_fact:
        bench_started: "{{ now(utc=true).timestamp() }}"

    - name: Back up the bench box
      col_agents.tx9.tx9_backup:
        name: "{{ bench_box }}"
        dest: "{{ bench_dest }}"
        password: "{{ bench_password }}"
      vars:
        ansible_python_interpreter: "{{ bench_interpreter }}"
      register: bench_backup

    - name: Note when it ended
      ansible.builtin.set_fact:
        bench_ended: "{{ now(utc=true).timestamp() }}"

    - name: Save the result for the bench
      ansible.builtin.copy:
        content: "{{ bench_backup | combine({'task_seconds': (bench_ended | float) - (bench_started | float)}) | to_json }}"
        dest: "{{ bench_result }}"
        mode: "0600"
'''

BOX_PLAY = '''---
- name: The backup bench's box
  hosts: localhost
  gather_facts: false
  tasks:
    - name: The box bench-bk, running
      col_agents.tx9.tx9_box:
        name: %s
''' % BOX

# The module's interpreter for the timed task (see the module docstring). @PYTHON@ is
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

# The plain pipeline, as root in the agent container, timed inside (no docker exec start-up).
# gpg gets a fresh home of its own, as a first-time user's would be; its output goes away after.
PIPELINE = r'''
set -o pipefail
export GNUPGHOME=$(mktemp -d)
started=$(date +%s.%N)
tar -C /data -c . | gzip -6 | gpg --batch --pinentry-mode loopback --passphrase "$1" --symmetric --cipher-algo AES256 -o /tmp/x.gpg
rc=$?
ended=$(date +%s.%N)
size=$(stat -c %s /tmp/x.gpg 2>/dev/null || echo 0)
rm -rf /tmp/x.gpg "$GNUPGHOME"
echo "PIPELINE $started $ended $size"
exit $rc
'''

# The archive, read as a person would: its payload, decrypted by gpg, listed by tar -tz.
VERIFY = r'''
set -o pipefail
tar -xOf "$1" data.tar.gz.gpg | gpg --homedir "$2" --batch --quiet --pinentry-mode loopback --passphrase-file "$3" --decrypt \
    | tar -tz | wc -l
'''


class BenchError(Exception):
    """Something the benchmark needed did not run as it should."""


# ---- running commands ---------------------------------------------------------------------


def ansible_env(state_home, extra=None):
    env = dict(os.environ)
    env.update(ANSIBLE_CONFIG=ANSIBLE_CFG, TX9_HOME=state_home, ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0',
               PATH=TX9_BIN + os.pathsep + env.get('PATH', ''))
    env.update(extra or {})
    return env


def run_logged(label, argv, env=None, stdin_text=None, timeout=RUN_TIMEOUT):
    """Run argv from the repo root in a session of its own, output to backup-logs/<label>.log; (seconds, rc, output).

    On a timeout or an interruption the whole session is stopped (ansible-playbook's module,
    docker exec, gpg), so nothing keeps the box lock or the data busy during the cleanup.
    """
    started = time.perf_counter()
    with subprocess.Popen(argv, cwd=REPO_ROOT, env=env, stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          start_new_session=True) as proc:
        try:
            output = proc.communicate(stdin_text, timeout=timeout)[0]
        except subprocess.TimeoutExpired as exc:
            stop_session(proc)
            raise BenchError('%s did not finish within %d s' % (label, timeout)) from exc
        except BaseException:
            stop_session(proc)
            raise
    seconds = time.perf_counter() - started
    with open(os.path.join(LOG_DIR, '%s.log' % label), 'w') as handle:
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


# ---- the box and its data -----------------------------------------------------------------


def write_file(path, text, mode=0o644):
    with open(path, 'w') as handle:
        handle.write(text)
    os.chmod(path, mode)
    return path


def tx9_box_absent(state_home, label):
    argv = [os.path.join(TX9_BIN, 'ansible'), 'localhost', '-m', 'col_agents.tx9.tx9_box', '-a', 'name=%s state=absent' % BOX]
    checked(label, argv, ansible_env(state_home))


def docker_remove_box():
    """The box's objects by name, whatever state a killed run left them in (the fallback of tx9_box absent)."""
    for argv in (['docker', 'rm', '-f', NAMES['agent'], NAMES['executor']],
                 ['docker', 'volume', 'rm', '-f', NAMES['agent_volume'], NAMES['executor_volume']],
                 ['docker', 'network', 'rm', NAMES['network']]):
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def generate(label, set_number, size):
    """Half of size from /dev/urandom, half source-like text, as the agent user; (seconds, blobs, text files)."""
    half = size // 2
    argv = ['docker', 'exec', '-i', '-u', 'agent', AGENT, 'python3', '-', BENCH_SUBDIR, str(set_number), str(half), str(size - half)]
    seconds, output = checked(label, argv, stdin_text=GENERATOR)
    blobs, files = (int(word) for word in output.strip().splitlines()[-1].split())
    return seconds, blobs, files


def data_size():
    """(bytes, files) of the agent's /data as the pipeline and the backup read it."""
    output = checked('data-size', ['docker', 'exec', '-u', 'root', AGENT, 'sh', '-c', 'du -sb /data | cut -f1; find /data | wc -l'])[1]
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


# ---- the measurements ---------------------------------------------------------------------


def time_pipeline(label):
    load = os.getloadavg()[0]
    seconds, output = checked(label, ['docker', 'exec', '-u', 'root', AGENT, 'bash', '-c', PIPELINE, 'pipeline', PASSWORD])
    words = [line for line in output.splitlines() if line.startswith('PIPELINE ')][-1].split()
    return dict(load_before=rounded(load, 2), seconds=float(words[2]) - float(words[1]), exec_seconds=rounded(seconds),
                output_size=int(words[3]))


class BackupRunner:
    """tx9_backup through ansible-playbook, under the measuring interpreter wrapper."""

    def __init__(self, state_home, work):
        self.state_home = state_home
        self.work = work
        self.dest = os.path.join(work, 'dest')
        os.makedirs(self.dest)
        self.play = write_file(os.path.join(PLAY_DIR, 'backup-bench.yml'), BACKUP_PLAY)
        self.wrapper = write_file(os.path.join(work, 'tx9-bench-python'), WRAPPER.replace('@PYTHON@', sys.executable), 0o755)
        self.gnupg_home = os.path.join(work, 'gnupg')
        os.makedirs(self.gnupg_home, 0o700)
        self.passfile = write_file(os.path.join(work, 'passphrase'), PASSWORD + '\n', 0o600)

    def run(self, label):
        result_path = os.path.join(self.work, '%s-result.json' % label)
        rss_path = os.path.join(self.work, '%s-rss.json' % label)
        extra = os.path.join(self.work, '%s-vars.json' % label)
        with open(extra, 'w') as handle:
            json.dump(dict(bench_box=BOX, bench_dest=self.dest, bench_password=PASSWORD, bench_interpreter=self.wrapper,
                           bench_result=result_path), handle)
        argv = [os.path.join(TX9_BIN, 'ansible-playbook'), self.play, '-e', '@' + extra]
        load = os.getloadavg()[0]
        seconds, output = checked(label, argv, ansible_env(self.state_home, dict(TX9_BENCH_RSS_OUT=rss_path)))
        with open(result_path) as handle:
            result = json.load(handle)
        with open(rss_path) as handle:
            rss = json.load(handle)
        if result.get('failed') or not result.get('path'):
            raise BenchError('%s: tx9_backup returned no archive: %s' % (label, last_error(output)))
        run = dict(load_before=rounded(load, 2), task_seconds=result['task_seconds'], play_seconds=seconds, duration=result.get('duration'),
                   module_process_seconds=rss['seconds'], archive_size=result.get('size'), members=result.get('members'),
                   rss_mb=kb_to_mb(max(rss['maxrss_kb'], rss['module_hwm_kb'] or 0)), maxrss_mb=kb_to_mb(rss['maxrss_kb']),
                   module_hwm_mb=kb_to_mb(rss['module_hwm_kb']),
                   gpg_hwm_mb=kb_to_mb(rss['gpg_hwm_kb']), gpg_processes=rss['gpg_processes'], others_hwm_kb=rss['others_hwm_kb'])
        try:
            run['verify'] = self.verify(label, result['path'], result.get('members'))
        finally:
            os.unlink(result['path'])
        return run

    def verify(self, label, path, members):
        """Two members, metadata that says encrypted, a payload gpg decrypts and tar -tz lists in full."""
        problems = []
        listing = run_logged(label + '-members', ['tar', '-tf', path])[2].split()
        if listing != ['metadata.json', PAYLOAD]:
            problems.append('the archive holds %s, not metadata.json and %s' % (' '.join(listing)[:200], PAYLOAD))
        try:
            metadata = json.loads(run_logged(label + '-metadata', ['tar', '-xOf', path, 'metadata.json'])[2])
        except ValueError:
            metadata = {}
        if not isinstance(metadata, dict) or not metadata.get('encrypted') or metadata.get('payload') != PAYLOAD:
            problems.append('metadata.json does not describe an encrypted payload')
        seconds, rc, output = run_logged(label + '-verify', ['bash', '-c', VERIFY, 'verify', path, self.gnupg_home, self.passfile])
        listed = int(output.split()[-1]) if rc == 0 and output.split() and output.split()[-1].isdigit() else None
        if rc != 0 or listed is None:
            problems.append('gpg --decrypt | tar -tz failed (rc %d): %s' % (rc, last_error(output)))
        elif members is not None and listed != members:
            problems.append('tar -tz lists %d members, the module reported %d' % (listed, members))
        return dict(readable=not problems, listed=listed, seconds=rounded(seconds), problems=problems)


# ---- the bench ----------------------------------------------------------------------------


def summarize(runs):
    if not runs:
        return None
    keys = ('task_seconds', 'play_seconds', 'duration', 'module_process_seconds')
    summary = dict((key, rounded(statistics.median(run[key] for run in runs))) for key in keys)
    summary.update(rss_mb=rounded(max(run['rss_mb'] for run in runs), 1),
                   module_hwm_mb=rounded(max(run['module_hwm_mb'] or 0 for run in runs), 1),
                   gpg_hwm_mb=rounded(max(run['gpg_hwm_mb'] or 0 for run in runs), 1),
                   readable=all(run['verify']['readable'] for run in runs),
                   archive_size=runs[-1]['archive_size'], members=runs[-1]['members'])
    return summary


def bench(report, args, state_home, work):
    phases = report['phases']
    timed(phases, 'build_image', checked, 'build-image', [os.path.join(TX9_BIN, 'ansible-playbook'), 'playbooks/build-image.yml'],
          ansible_env(state_home), None, IMAGE_TIMEOUT)
    free = free_bytes([docker_root(), work])
    report['free_bytes_at_start'] = free
    if free is not None and free < BASE_FREE:
        raise BenchError('only %.1f GiB free on the disks of Docker and %s; the 1 GiB part needs %.0f GiB'
                         % (free / GIB, work, BASE_FREE / GIB))
    # Start from nothing: a killed earlier run may have left the box behind.
    tx9_box_absent(state_home, 'preclean')
    docker_remove_box()
    os.makedirs(PLAY_DIR, exist_ok=True)
    box_play = write_file(os.path.join(PLAY_DIR, 'backup-bench-box.yml'), BOX_PLAY)
    timed(phases, 'create_box', checked, 'create-box', [os.path.join(TX9_BIN, 'ansible-playbook'), box_play], ansible_env(state_home))
    seconds, blobs, files = generate('generate-1g', 1, BASE_SIZE)
    phases['generate_1g'] = rounded(seconds)
    size, entries = data_size()
    report['data'] = dict(base=dict(bytes=size, entries=entries, blobs=blobs, text_files=files))
    runner = BackupRunner(state_home, work)
    started = time.perf_counter()
    for index in range(args.runs):
        # Alternate, so that drift on the host hits both alike.
        report['pipeline_runs'].append(time_pipeline('pipeline-1g-%d' % (index + 1)))
        report['backup_runs'].append(runner.run('backup-1g-%d' % (index + 1)))
    phases['measure_1g'] = rounded(time.perf_counter() - started)
    grown(report, args, runner)


def grown(report, args, runner):
    """The 4 GiB part: 3 GiB more of the same mix, then one more backup."""
    if args.skip_4g:
        report['grown_skipped'] = 'skipped on request (--skip-4g)'
        return
    free = free_bytes([docker_root(), runner.work])
    if free is not None and free < GROWN_FREE:
        report['grown_skipped'] = ('only %.1f GiB free on the disks of Docker and %s; growing /data to 4 GiB needs about %.0f GiB'
                                   % (free / GIB, runner.work, GROWN_FREE / GIB))
        return
    seconds, blobs, files = generate('generate-4g', 2, GROWN_SIZE - BASE_SIZE)
    report['phases']['generate_4g'] = rounded(seconds)
    size, entries = data_size()
    report['data']['grown'] = dict(bytes=size, entries=entries, blobs=blobs, text_files=files)
    started = time.perf_counter()
    report['grown_runs'].append(runner.run('backup-4g-1'))
    report['phases']['measure_4g'] = rounded(time.perf_counter() - started)


def targets(report):
    base = summarize(report['backup_runs'])
    grown_run = summarize(report['grown_runs'])
    pipeline = statistics.median(run['seconds'] for run in report['pipeline_runs']) if report['pipeline_runs'] else None
    ratio = base['task_seconds'] / pipeline if base and pipeline else None
    rss_1g = base['rss_mb'] if base else None
    rss_4g = grown_run['rss_mb'] if grown_run else None
    growth = rss_4g - rss_1g if None not in (rss_1g, rss_4g) else None
    grows = None if growth is None else growth > max(RSS_NOISE_MB, RSS_NOISE_FRACTION * rss_1g)
    data = report.get('data', {})
    added = data['grown']['entries'] - data['base']['entries'] if 'grown' in data and 'base' in data else None
    per_member = growth * MB / added if growth is not None and added else None
    duration_ratio = base['duration'] / pipeline if base and pipeline and base['duration'] else None
    readable = None if base is None else base['readable'] and (grown_run is None or grown_run['readable'])
    return dict(
        pipeline_seconds=rounded(pipeline), backup=base, backup_4g=grown_run,
        ratio=dict(value=rounded(ratio), target=TARGET_RATIO, met=None if ratio is None else ratio <= TARGET_RATIO,
                   duration_ratio=rounded(duration_ratio)),
        rss_1g=dict(value=rss_1g, target=TARGET_RSS_MB, met=None if rss_1g is None else rss_1g < TARGET_RSS_MB),
        rss_4g=dict(value=rss_4g, target=TARGET_RSS_MB, met=None if rss_4g is None else rss_4g < TARGET_RSS_MB),
        rss_growth=dict(value=rounded(growth, 1), tolerance='the larger of %.0f MB and %.0f %%' % (RSS_NOISE_MB, 100 * RSS_NOISE_FRACTION),
                        met=None if grows is None else not grows, added_entries=added, bytes_per_added_entry=rounded(per_member, 0)),
        readable=dict(value=readable, met=readable))


def cleanup(state_home, work, phases):
    """Remove the box (the tx9 way, then by name whatever is left) and the temporary files."""
    problems = []
    started = time.perf_counter()
    try:
        tx9_box_absent(state_home, 'cleanup')
    except BenchError as exc:
        problems.append(str(exc))
    docker_remove_box()
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(state_home, ignore_errors=True)
    phases['cleanup'] = rounded(time.perf_counter() - started)
    return problems


# ---- output -------------------------------------------------------------------------------


def print_table(report):
    found = report['targets']
    base, grown_run = found['backup'] or {}, found['backup_4g'] or {}
    data = report.get('data', {})
    print('\ntx9 backup bench: /data of box %s, half incompressible, half text; %d run(s) each, alternating\n'
          % (BOX, len(report['pipeline_runs'])))
    for key, title in (('base', '1 GiB'), ('grown', '4 GiB')):
        if key in data:
            print('  data %s: %.2f GiB in %d entries (%d 128 MiB blobs, %d text files)' % (
                title, data[key]['bytes'] / GIB, data[key]['entries'], data[key]['blobs'], data[key]['text_files']))
    print('\n%-46s %9s  %s' % ('wall seconds (1 GiB)', 'median', 'runs'))
    rows = (('plain pipeline tar | gzip -6 | gpg', 'seconds', report['pipeline_runs']),
            ('tx9_backup task', 'task_seconds', report['backup_runs']),
            ('  its duration (module return)', 'duration', report['backup_runs']),
            ('  its ansible-playbook run', 'play_seconds', report['backup_runs']))
    for title, key, runs in rows:
        values = [run[key] for run in runs]
        print('%-46s %9s  %s' % (title, fmt(statistics.median(values) if values else None),
                                 ' '.join(fmt(value) for value in values)))
    if report['pipeline_runs'] and base:
        print('%-46s %9s  tx9 archive %s' % ('output bytes: pipeline', report['pipeline_runs'][-1]['output_size'], base['archive_size']))
    if grown_run:
        print('%-46s %9s  duration %s' % ('tx9_backup task (4 GiB)', fmt(grown_run['task_seconds']), fmt(grown_run['duration'])))
    print()
    print_target('ratio tx9_backup / pipeline (medians)', fmt(found['ratio']['value'], digits=3), '<= %.2f' % TARGET_RATIO, found['ratio']['met'])
    print_target('peak RSS of the module, 1 GiB', fmt(found['rss_1g']['value'], ' MB', 1), '< %.0f MB' % TARGET_RSS_MB,
                 found['rss_1g']['met'])
    print_target('peak RSS of the module, 4 GiB', fmt(found['rss_4g']['value'], ' MB', 1), '< %.0f MB' % TARGET_RSS_MB,
                 found['rss_4g']['met'])
    print_target('RSS growth 1 GiB -> 4 GiB', fmt(found['rss_growth']['value'], ' MB', 1), 'no growth', found['rss_growth']['met'])
    print_target('archive readable (gpg -d | tar -tz)', {None: '-', True: 'yes', False: 'no'}[found['readable']['value']],
                 'yes', found['readable']['met'])
    print('(for reading: the module\'s own duration against the pipeline %s; RSS growth per entry added to /data %s B)'
          % (fmt(found['ratio']['duration_ratio'], digits=3), fmt(found['rss_growth']['bytes_per_added_entry'], '', 0)))
    for title, summary in (('1 GiB', base), ('4 GiB', grown_run)):
        if summary:
            print('(%s: module process VmHWM %s MB sampled, gpg VmHWM %s MB sampled; peak RSS: the larger of that VmHWM and wait4 ru_maxrss)'
                  % (title, fmt(summary['module_hwm_mb'], '', 1), fmt(summary['gpg_hwm_mb'], '', 1)))
    if report.get('grown_skipped'):
        print('\nNOT MEASURED the 4 GiB part: %s' % report['grown_skipped'])
    for run in report['backup_runs'] + report['grown_runs']:
        for problem in run['verify']['problems']:
            print('\nMISSED readable archive: %s' % problem)
    for problem in report['problems']:
        print('\nFAILED %s' % problem)
    print('\nphases (s): %s' % ', '.join('%s %s' % item for item in report['phases'].items()))
    print('report: %s' % os.path.relpath(REPORT_PATH, REPO_ROOT))


def parse_args():
    parser = argparse.ArgumentParser(description='Time tx9_backup against tar | gzip -6 | gpg and measure its peak memory.')
    parser.add_argument('--runs', type=int, default=3, help='timed runs of the pipeline and of tx9_backup on 1 GiB (default 3)')
    parser.add_argument('--skip-4g', action='store_true', help='leave out the 4 GiB part (reported as NOT MEASURED)')
    return parser.parse_args()


def main():
    args = parse_args()
    _lock = begin(LOG_DIR)  # held until the process exits
    started = time.perf_counter()
    report = dict(started=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'), box=BOX, runs=args.runs,
                  host=dict(cpus=os.cpu_count()), pipeline_runs=[], backup_runs=[], grown_runs=[], phases={}, problems=[])
    state_home = tempfile.mkdtemp(prefix='tx9-bench-home-')
    work = tempfile.mkdtemp(prefix='tx9-bench-backup-')
    try:
        bench(report, args, state_home, work)
    except BenchError as exc:
        report['problems'].append(str(exc))
    except (KeyboardInterrupt, SystemExit):
        report['problems'].append('interrupted: the numbers above are partial')
        raise
    finally:
        # A second SIGTERM must not cut the cleanup short and leave the box behind.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        report['problems'].extend(cleanup(state_home, work, report['phases']))
        report['phases']['total'] = rounded(time.perf_counter() - started)
        report['targets'] = targets(report)
        write_report(report, REPORT_PATH)
        print_table(report)
    return 1 if report['problems'] else 0


if __name__ == '__main__':
    sys.exit(main())
