# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""`make bench`, sixth part: what a box's egress proxy costs, against the same box with `mode: open`.

In one run it makes two boxes with random names: a confined one (`egress: {mode: allowlist,
allow: [allowed.test], resolvers: [<outside DNS>]}`) and an open one (`egress: {mode: open}`).
An outside of the bench's own (tests/integration/egress_outside.py: a web server with a
throwaway CA, a DNS server for allowed.test) starts on the proxy's outside network
tx9-<box>-out and is attached to the open box's network too, so both agents reach the same
server: the confined one through its proxy (https_proxy=http://egress:3128), the open one
directly, with allowed.test pinned to the server's address on its network (curl --resolve, and
the same pin in the Python client). Both agents get the CA in /tmp/outside-ca.pem. It measures:

* throughput: `curl https://allowed.test/bytes/200000000` to /dev/null in each agent (curl's own
  speed_download), after a warm-up, alternating sides, --runs each; target: the confined median
  at least 0.8 times the open one;
* latency: one Python process in each agent makes 1,000 sequential HTTPS requests (a new
  connection each, urllib with the box's proxy environment), timed one by one with perf_counter
  after 20 untimed ones; target: confined p50 minus open p50 at most 5 ms;
* memory: after the runs, the VmHWM (/proc/<pid>/status) of every process of the egress
  container (Squid and the dashboard's relay; Docker's health probes are left out), and their
  sum; target: the sum under 64 MB. `docker stats` memory and the cgroup's peak are reported.

It prints a table, writes .cache/bench/egress-report.json, keeps every command's output under
.cache/bench/egress-logs/ and exits non-zero when something failed or a target was missed. Both
boxes and the outside's containers are removed on exit, also on failure and on SIGTERM.
"""

import argparse
import datetime
import io
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tarfile
import time

import docker

from benchkit import (  # noqa: E402 (it puts the collection on sys.path first)
    BENCH_DIR, MB, PLAY_DIR, REPO_ROOT, TX9_BIN, BenchError, ansible_env, begin, bench_image, build_image, checked,
    conduct, fmt, print_closing, print_target, rounded, settle, timed, tx9_box_absent, write_file)

sys.path.insert(0, os.path.join(REPO_ROOT, 'tests', 'integration'))
from egress_outside import Outside  # noqa: E402

from ansible_collections.col_agents.tx9.plugins.module_utils._names import object_names  # noqa: E402

LOG_DIR = os.path.join(BENCH_DIR, 'egress-logs')
REPORT_PATH = os.path.join(BENCH_DIR, 'egress-report.json')

PREFIX = 'benchegress%s' % secrets.token_hex(3)
BOXES = dict(confined=PREFIX + '-eg', open=PREFIX + '-op')
NAMES = dict((side, object_names(box)) for side, box in BOXES.items())
CA = '/tmp/outside-ca.pem'
HOST = 'allowed.test'
DOWNLOAD = 200 * MB
WARM_DOWNLOAD = 20 * MB
REQUESTS = 1000
TARGET_RATIO = 0.8
TARGET_ADDED_P50_MS = 5.0
TARGET_RSS_MB = 64.0
# What the cleanup must remove besides the boxes: the outside's containers.
HELD = dict(outside=None)

BOX_PLAY = '''---
- name: A box of the egress bench
  hosts: localhost
  gather_facts: false
  tasks:
    - name: The box, with the bench's egress policy
      col_agents.tx9.tx9_box: "{{ bench_box_args }}"
'''

# Runs in an agent: python3 - URL COUNT CAFILE [NAME=ADDRESS]; one JSON line of seconds per request.
LATENCY = r'''
import json, socket, ssl, sys, time, urllib.request
url, count, cafile = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if len(sys.argv) > 4:
    name, address = sys.argv[4].split('=')
    real = socket.getaddrinfo
    socket.getaddrinfo = lambda host, *rest, **kw: real(address if host == name else host, *rest, **kw)
opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=cafile)))
def one():
    started = time.perf_counter()
    with opener.open(url, timeout=10) as reply:
        body = reply.read()
    if reply.status != 200 or not body.startswith(b'hello from outside'):
        sys.exit('unexpected answer %s %r' % (reply.status, body[:80]))
    return time.perf_counter() - started
for _ in range(20):
    one()
print(json.dumps([one() for _ in range(count)]))
'''

# Runs in the egress container: every process but this one, its name, command and VmHWM; the cgroup's peak.
PROCESSES = r'''
import json, os
found, peak = [], None
for entry in (e for e in os.listdir('/proc') if e.isdigit() and int(e) != os.getpid()):
    try:
        status = open('/proc/%s/status' % entry).read()
        cmd = open('/proc/%s/cmdline' % entry, 'rb').read().replace(b'\0', b' ').decode(errors='replace').strip()
    except OSError:
        continue
    fields = dict(line.split(':', 1) for line in status.splitlines() if ':' in line)
    hwm = fields.get('VmHWM', '').split()
    found.append(dict(pid=int(entry), name=fields['Name'].strip(), cmd=cmd[:160], hwm_kb=int(hwm[0]) if hwm else None))
for path in ('/sys/fs/cgroup/memory.peak', '/sys/fs/cgroup/memory/memory.max_usage_in_bytes'):
    try:
        peak = int(open(path).read())
        break
    except (OSError, ValueError):
        pass
print(json.dumps(dict(processes=found, cgroup_peak=peak)))
'''


def make_box(state_home, work, side, egress, label):
    """tx9_box for one of the bench's boxes with this egress policy, through ansible-playbook."""
    os.makedirs(PLAY_DIR, exist_ok=True)
    play = write_file(os.path.join(PLAY_DIR, 'egress-bench-box.yml'), BOX_PLAY)
    extra = write_file(os.path.join(work, '%s-vars.json' % label), json.dumps(
        dict(bench_box_args=dict(name=BOXES[side], image=bench_image(), egress=egress))))
    checked(label, [os.path.join(TX9_BIN, 'ansible-playbook'), play, '-e', '@' + extra], ansible_env(state_home))


def put_ca(client, side, pem):
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode='w') as tar:
        info = tarfile.TarInfo(os.path.basename(CA))
        info.size, info.mode = len(pem), 0o644
        tar.addfile(info, io.BytesIO(pem))
    client.containers.get(NAMES[side]['agent']).put_archive(os.path.dirname(CA), data.getvalue())


def make_boxes(report, state_home, work, client):
    """Both boxes, the outside on the proxy's network and the open box's, the CA in both agents; the pins."""
    phases = report['phases']
    timed(phases, 'create_confined', make_box, state_home, work, 'confined', dict(mode='allowlist', allow=[HOST]),
          'create-confined')
    timed(phases, 'create_open', make_box, state_home, work, 'open', dict(mode='open'), 'create-open')
    outside = HELD['outside'] = Outside(client, bench_image(), prefix=PREFIX + '-out')
    try:
        outside.start(NAMES['confined']['egress_network'])
        outside.attach(NAMES['open']['network'])
    except (AssertionError, docker.errors.DockerException) as exc:
        raise BenchError('the outside did not start: %s' % str(exc)[:400]) from exc
    policy = dict(mode='allowlist', allow=[HOST], resolvers=[outside.dns_ip])
    timed(phases, 'resolvers', make_box, state_home, work, 'confined', policy, 'confined-resolvers')
    for side in BOXES:
        put_ca(client, side, outside.ca_pem)
    open_ip = outside.ips_on(NAMES['open']['network'])[0]
    report['outside'] = dict(dns=outside.dns_ip, server_confined=outside.server_ip, server_open=open_ip)
    return dict(confined=[], open=['--resolve', '%s:443:%s' % (HOST, open_ip)]), dict(confined=[], open=['%s=%s' % (HOST, open_ip)])


def download(side, pin, size, label):
    """curl in the side's agent, to /dev/null; (bytes per second, bytes) as curl measured them."""
    argv = ['docker', 'exec', '-u', 'agent', NAMES[side]['agent'], 'curl', '-sS', '-o', '/dev/null', '--max-time', '600',
            '--cacert', CA, '-w', '%{speed_download} %{size_download}\\n', *pin, 'https://%s/bytes/%d' % (HOST, size)]
    output = checked(label, argv)[1]
    speed, got = output.strip().splitlines()[-1].split()[:2]
    if int(float(got)) != size:
        raise BenchError('%s: got %s bytes of %d' % (label, got, size))
    return float(speed)


def throughput(report, pins, runs):
    for side in BOXES:
        download(side, pins[side], WARM_DOWNLOAD, 'warm-%s' % side)
    for index in range(runs):
        # Alternate which side goes first, so that drift on the host hits both alike.
        for side in (('open', 'confined') if index % 2 == 0 else ('confined', 'open')):
            report['throughput'][side].append(download(side, pins[side], DOWNLOAD, 'download-%s-%d' % (side, index + 1)))


def latency(report, pins, count):
    for side in ('open', 'confined'):
        argv = ['docker', 'exec', '-i', '-u', 'agent', NAMES[side]['agent'], 'python3', '-', 'https://%s/ok' % HOST,
                str(count), CA, *pins[side]]
        seconds = json.loads(checked('latency-%s' % side, argv, stdin_text=LATENCY)[1].strip().splitlines()[-1])
        ms = sorted(value * 1000 for value in seconds)
        report['latency'][side] = dict(requests=len(ms), p50=rounded(statistics.median(ms)), p90=rounded(ms[int(0.9 * len(ms))]),
                                       p99=rounded(ms[int(0.99 * len(ms))]), mean=rounded(statistics.fmean(ms)),
                                       min=rounded(ms[0]), max=rounded(ms[-1]))


def egress_memory(report):
    """VmHWM of the egress container's processes (health probes left out), their sum, docker stats, the cgroup peak."""
    egress = NAMES['confined']['egress']
    found = json.loads(checked('egress-processes', ['docker', 'exec', '-i', egress, 'python3', '-'],
                               stdin_text=PROCESSES)[1].strip().splitlines()[-1])
    kept = [p for p in found['processes'] if p['hwm_kb'] and 'socket.create_connection' not in p['cmd']]
    stats = checked('egress-stats', ['docker', 'stats', '--no-stream', '--format', '{{.MemUsage}}', egress])[1].strip()
    report['egress_memory'] = dict(
        processes=[dict(p, hwm_mb=rounded(p['hwm_kb'] * 1024 / MB, 1)) for p in kept],
        sum_mb=rounded(sum(p['hwm_kb'] for p in kept) * 1024 / MB, 1) if kept else None, docker_stats=stats,
        cgroup_peak_mb=rounded(found['cgroup_peak'] / MB, 1) if found['cgroup_peak'] else None,
        left_out=[p['cmd'][:60] for p in found['processes'] if p not in kept])


def bench(report, args, state_home, work):
    phases = report['phases']
    timed(phases, 'build_image', build_image, state_home)
    client = docker.from_env(version='auto', timeout=120)
    curl_pins, python_pins = make_boxes(report, state_home, work, client)
    settle(phases, 'settle')
    timed(phases, 'throughput', throughput, report, curl_pins, args.runs)
    timed(phases, 'latency', latency, report, python_pins, args.requests)
    egress_memory(report)


def targets(report):
    found = dict((side, statistics.median(values) / MB if values else None) for side, values in report['throughput'].items())
    ratio = found['confined'] / found['open'] if found['confined'] and found['open'] else None
    lat = report['latency']
    added = lat['confined']['p50'] - lat['open']['p50'] if 'open' in lat and 'confined' in lat else None
    rss = report.get('egress_memory', {}).get('sum_mb')
    return dict(
        open_mb_s=rounded(found['open'], 1), confined_mb_s=rounded(found['confined'], 1),
        ratio=dict(value=rounded(ratio), target=TARGET_RATIO, met=None if ratio is None else ratio >= TARGET_RATIO),
        added_p50=dict(value=rounded(added), target=TARGET_ADDED_P50_MS, met=None if added is None else added <= TARGET_ADDED_P50_MS),
        rss=dict(value=rss, target=TARGET_RSS_MB, met=None if rss is None else rss < TARGET_RSS_MB))


def missed(report):
    return any(report['targets'][key]['met'] is not True for key in ('ratio', 'added_p50', 'rss'))


def quiet(argv):
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def cleanup(state_home, work, phases):
    """The outside first (it holds both networks), then both boxes the tx9 way, then by name whatever is left."""
    problems = []
    started = time.perf_counter()
    if HELD['outside'] is not None:
        try:
            HELD['outside'].close()
        except docker.errors.DockerException as exc:
            problems.append('could not remove the outside: %s' % exc)
    quiet(['docker', 'rm', '-f', PREFIX + '-out-web', PREFIX + '-out-dns'])
    for side, box in BOXES.items():
        try:
            tx9_box_absent(state_home, box, 'cleanup-%s' % side)
        except BenchError as exc:
            problems.append(str(exc))
        names = NAMES[side]
        quiet(['docker', 'rm', '-f', names['agent'], names['executor'], names['egress']])
        quiet(['docker', 'volume', 'rm', '-f', names['agent_volume'], names['executor_volume']])
        quiet(['docker', 'network', 'rm', names['network'], names['egress_network']])
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(state_home, ignore_errors=True)
    phases['cleanup'] = rounded(time.perf_counter() - started)
    return problems


def print_table(report):
    found, lat, memory = report['targets'], report['latency'], report.get('egress_memory') or {}
    print('\ntx9 egress bench: boxes %s (allowlist, through its proxy) and %s (open); outside %s\n'
          % (BOXES['confined'], BOXES['open'], report.get('outside')))
    print('%-46s %9s  %s' % ('download of %d MB, MB/s' % (DOWNLOAD // MB), 'median', 'runs'))
    for side in ('open', 'confined'):
        values = [value / MB for value in report['throughput'][side]]
        print('%-46s %9s  %s' % (side, fmt(statistics.median(values) if values else None, digits=1),
                                 ' '.join(fmt(value, digits=1) for value in values)))
    print('\n%-46s %9s  %s' % ('%d HTTPS requests, new connection each, ms' % report['requests'], 'p50', 'p90 p99 mean min max'))
    for side in ('open', 'confined'):
        row = lat.get(side) or {}
        print('%-46s %9s  %s' % (side, fmt(row.get('p50')), ' '.join(fmt(row.get(key)) for key in ('p90', 'p99', 'mean', 'min', 'max'))))
    print('\negress container processes, VmHWM:')
    for proc in memory.get('processes', []):
        print('  %-44s %6s MB  (pid %d)' % (proc['cmd'][:44] or proc['name'], fmt(proc['hwm_mb'], digits=1), proc['pid']))
    print('  docker stats: %s; cgroup peak (page cache included): %s MB'
          % (memory.get('docker_stats', '-'), fmt(memory.get('cgroup_peak_mb'), digits=1)))
    print()
    print_target('throughput confined / open (medians)', fmt(found['ratio']['value'], digits=3), '>= %.1f' % TARGET_RATIO,
                 found['ratio']['met'])
    print_target('added p50 latency (confined - open)', fmt(found['added_p50']['value'], ' ms'), '<= %.0f ms' % TARGET_ADDED_P50_MS,
                 found['added_p50']['met'])
    print_target('egress container peak RSS (sum of VmHWM)', fmt(found['rss']['value'], ' MB', 1), '< %.0f MB' % TARGET_RSS_MB,
                 found['rss']['met'])
    print_closing(report, REPORT_PATH)


def parse_args():
    parser = argparse.ArgumentParser(description="Measure a confined box's egress proxy against the same traffic with mode: open.")
    parser.add_argument('--runs', type=int, default=3, help='timed %d MB downloads per side (default 3)' % (DOWNLOAD // MB))
    parser.add_argument('--requests', type=int, default=REQUESTS, help='HTTPS requests per side (default %d)' % REQUESTS)
    return parser.parse_args()


def main():
    args = parse_args()
    _lock = begin(LOG_DIR)  # held until the process exits
    report = dict(started=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'), boxes=BOXES,
                  runs=args.runs, requests=args.requests, host=dict(cpus=os.cpu_count(), load=rounded(os.getloadavg()[0], 2)),
                  throughput=dict(open=[], confined=[]), latency={}, phases={}, problems=[])
    return conduct(report, args, 'tx9-bench-egress-', bench, cleanup, targets, print_table, REPORT_PATH, missed)


if __name__ == '__main__':
    sys.exit(main())
