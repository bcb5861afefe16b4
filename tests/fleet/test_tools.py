# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/tools.yml over real SSH on the bed: the pins the inventory gives (tx9_tools per host, the tools of a
box's tx9_boxes entry) reach each box one host after the other, the inventory plugin groups the boxes whose
tools differ from their pins in tx9_tools_drift, and a rerun calls no registry.

The bed's hosts reach no package registry, so each box serves its own: a small npm registry in the agent
container (127.0.0.1) holding a package named @openai/codex in the versions the tests pin, whose codex command
reports its version. The tests of this file share the boxes and go in order."""


import json
import os
import re
import subprocess
import uuid

import pytest

from conftest import BIN, REPO_ROOT, graph_groups, plain, recaps

TOOLS = os.path.join(REPO_ROOT, 'playbooks', 'tools.yml')
PORT = 48733
HOST_PIN = '9.9.1'
BOX_PIN = '9.9.2'
NPMRC = '/data/home/agent/.npmrc'
# argv[1] the port, the rest the versions served. Packument at /@openai%2fcodex, tarballs at /codex-<v>.tgz.
REGISTRY = r'''
import base64, hashlib, http.server, io, json, sys, tarfile, urllib.parse
PORT, VERSIONS = int(sys.argv[1]), sys.argv[2:]
BASE = 'http://127.0.0.1:%d' % PORT
def tarball(version):
    buf = io.BytesIO()
    package = json.dumps(dict(name='@openai/codex', version=version, bin=dict(codex='bin/codex.js')))
    script = '#!/usr/bin/env node\nconsole.log("codex-cli %s");\n' % version
    with tarfile.open(fileobj=buf, mode='w:gz') as tar:
        for name, text, mode in (('package/package.json', package, 0o644), ('package/bin/codex.js', script, 0o755)):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()
BALLS = dict(('/codex-%s.tgz' % v, tarball(v)) for v in VERSIONS)
def meta(v):
    data = BALLS['/codex-%s.tgz' % v]
    dist = dict(tarball='%s/codex-%s.tgz' % (BASE, v), shasum=hashlib.sha1(data).hexdigest(),
                integrity='sha512-' + base64.b64encode(hashlib.sha512(data).digest()).decode())
    return dict(name='@openai/codex', version=v, bin=dict(codex='bin/codex.js'), dist=dist)
DOC = json.dumps({'name': '@openai/codex', 'dist-tags': {'latest': VERSIONS[-1]},
                  'versions': dict((v, meta(v)) for v in VERSIONS)}).encode()
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        path = urllib.parse.unquote(self.path.split('?')[0])
        body = DOC if path == '/@openai/codex' else BALLS.get(path)
        self.send_response(200 if body else 404)
        self.send_header('Content-Type', 'application/json' if body is DOC else 'application/octet-stream')
        self.send_header('Content-Length', str(len(body or b'')))
        self.end_headers()
        self.wfile.write(body or b'')
http.server.ThreadingHTTPServer(('127.0.0.1', PORT), Handler).serve_forever()
'''
READY = ('for i in $(seq 50); do python3 -c "import urllib.request as u; u.urlopen(\\"$1\\")" 2>/dev/null && exit 0; '
         'sleep 0.2; done; exit 1')


def agent(name):
    return 'tx9-%s-agent' % name


def in_box(fleet, host, name, argv, user='agent'):
    code, output = fleet.ssh(host, ['docker', 'exec', '-u', user, agent(name)] + argv)
    return code, output.strip()


def serve(fleet, host, name):
    """The box's own registry, up and answering, with the agent's npm pointed at it."""
    code, output = fleet.ssh(host, ['docker', 'exec', '-d', '-u', 'agent', agent(name), 'python3', '-c', REGISTRY,
                                    str(PORT), HOST_PIN, BOX_PIN])
    assert code == 0, output
    code, output = in_box(fleet, host, name, ['sh', '-c', READY, 'ready', 'http://127.0.0.1:%d/codex-%s.tgz'
                                              % (PORT, HOST_PIN)])
    assert code == 0, output
    code, output = in_box(fleet, host, name, ['sh', '-c', 'printf "registry=%s\\n" "$2" > "$1"', 'npmrc', NPMRC,
                                              'http://127.0.0.1:%d/' % PORT])
    assert code == 0, output


def stop_serving(fleet, host, name):
    in_box(fleet, host, name, ['pkill', '-f', 'import base64, hashlib, http[.]server'], user='root')


def codex(fleet, host, name):
    """Codex's version line as agent in a login shell and through a plain docker exec."""
    login = in_box(fleet, host, name, ['bash', '-lc', 'codex --version'])
    plain = in_box(fleet, host, name, ['codex', '--version'])
    assert login[0] == 0 and plain[0] == 0, (login, plain)
    return login[1].split()[-1], plain[1].split()[-1]


@pytest.fixture(scope='module')
def pinned(bed, tmp_path_factory):
    """A running box on each host, serving its registry; an inventory of pins: tx9_tools on every host, the
    second host's box pinned on its own by its tx9_boxes entry; the plugin's configuration."""
    name = 'tl%s' % uuid.uuid4().hex[:6]
    first, second = bed.hosts[0], bed.hosts[1]
    work = tmp_path_factory.mktemp('tools')
    pins = work / 'pins.yml'
    pins.write_text(json.dumps(dict(fleet=dict(hosts={
        first.name: dict(tx9_tools=dict(codex=HOST_PIN)),
        second.name: dict(tx9_tools=dict(codex=HOST_PIN), tx9_boxes=[dict(name=name, tools=dict(codex=BOX_PIN))]),
    }))))
    config = work / 'tx9.boxes.yml'
    config.write_text('plugin: col_agents.tx9.boxes\nhost_group: fleet\n')
    try:
        made = bed.module('tx9_box', 'fleet', dict(name=name))
        for host in bed.hosts:
            assert not made[host.name].get('failed') and made[host.name]['box']['state'] == 'running', made
            serve(bed, host, name)
        yield dict(name=name, first=first, second=second, pins=str(pins), config=str(config),
                   image=codex(bed, first, name)[0])
    finally:
        bed.module('tx9_box', 'fleet', dict(name=name, state='absent'))


def box_inventory(fleet, pinned, *args):
    """ansible-inventory over the bed's inventory, the pins, then the plugin's configuration."""
    argv = [os.path.join(BIN, 'ansible-inventory'), '-i', fleet.inventory, '-i', pinned['pins'],
            '-i', pinned['config']] + list(args)
    proc = subprocess.run(argv, cwd=REPO_ROOT, env=fleet.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=900, check=False)
    assert proc.returncode == 0 and 'are not in the inventory' not in proc.stderr, proc.stdout + proc.stderr
    return proc.stdout


def drifting(fleet, pinned):
    return graph_groups(box_inventory(fleet, pinned, '--graph')).get('tx9_tools_drift', [])


def test_the_inventory_puts_boxes_whose_codex_differs_from_their_pins_in_tx9_tools_drift(bed, pinned):
    name = pinned['name']
    assert pinned['image'] not in (HOST_PIN, BOX_PIN)
    assert drifting(bed, pinned) == sorted('%s@%s' % (name, h.name) for h in bed.hosts)
    listed = plain(json.loads(box_inventory(bed, pinned, '--host', '%s@%s' % (name, pinned['second'].name))))
    assert listed['tx9_tools'] == dict(codex=BOX_PIN) and listed['tx9_tools_drift'] == ['codex']
    assert listed['tx9_box_info']['tools']['codex']['source'] == 'image'


def test_tools_yml_pins_each_box_as_the_inventory_says_one_host_after_the_other(bed, pinned):
    name, first, second = pinned['name'], pinned['first'], pinned['second']
    output = bed.playbook(TOOLS, '-i', pinned['pins'], '-e', 'tx9_hosts=fleet')
    # serial 1: one batch per host, each listing its own boxes.
    assert output.count('TASK [col_agents.tx9.tx9_upgrade : List the boxes of the host and their tools]') == 2
    assert {host: recap['changed'] for host, recap in recaps(output).items()} == {first.name: 1, second.name: 1}
    assert codex(bed, first, name) == (HOST_PIN, HOST_PIN)
    assert codex(bed, second, name) == (BOX_PIN, BOX_PIN)
    info = bed.module('tx9_info', 'fleet', dict(name=name))
    assert info[first.name]['boxes'][0]['tools']['codex'] == dict(installed=HOST_PIN, source='box', pinned=HOST_PIN,
                                                                  package='@openai/codex')
    assert info[second.name]['boxes'][0]['tools']['codex']['installed'] == BOX_PIN
    assert drifting(bed, pinned) == []
    listed = bed.playbook(os.path.join(REPO_ROOT, 'playbooks', 'list.yml'), '-e', 'tx9_list_width=160')
    assert re.search(r'tools: claude [\d.]+ \(image\), codex %s \(box\)' % re.escape(BOX_PIN), listed), listed[-3000:]


def test_a_rerun_changes_nothing_and_calls_no_registry(bed, pinned):
    for host in bed.hosts:
        stop_serving(bed, host, pinned['name'])
    try:
        output = bed.playbook(TOOLS, '-i', pinned['pins'], '-e', 'tx9_hosts=fleet')
    finally:
        for host in bed.hosts:
            serve(bed, host, pinned['name'])
    assert all(recap['changed'] == 0 and recap['failed'] == 0 for recap in recaps(output).values()), output[-3000:]


def test_a_pin_whose_files_are_gone_drifts_and_a_play_over_tx9_tools_drift_installs_it_on_that_box_only(
        bed, pinned):
    name, first, second = pinned['name'], pinned['first'], pinned['second']
    # What an import leaves of a pin: its marker, without node_modules.
    code, output = in_box(bed, first, name, ['rm', '-rf', '/data/home/agent/.local/share/tx9/tools/codex/node_modules'])
    assert code == 0, output
    assert codex(bed, first, name) == (pinned['image'], pinned['image'])
    assert drifting(bed, pinned) == ['%s@%s' % (name, first.name)]
    output = bed.playbook(TOOLS, '-i', pinned['pins'], '-i', pinned['config'], '-e', 'tx9_hosts=tx9_tools_drift')
    assert {host: recap['changed'] for host, recap in recaps(output).items()} == {'%s@%s' % (name, first.name): 1}
    assert codex(bed, first, name) == (HOST_PIN, HOST_PIN)
    assert codex(bed, second, name) == (BOX_PIN, BOX_PIN)
    assert drifting(bed, pinned) == []


def test_upgrade_yml_installs_the_pins_again_after_its_upgrades(bed, pinned):
    name, first = pinned['name'], pinned['first']
    code, output = in_box(bed, first, name, ['rm', '-rf', '/data/home/agent/.local/share/tx9/tools/codex/node_modules'])
    assert code == 0, output
    output = bed.playbook(os.path.join(REPO_ROOT, 'playbooks', 'upgrade.yml'), '-i', pinned['pins'],
                          '-e', 'tx9_hosts=fleet', '-e', 'tx9_upgrade_backup=false')
    assert "TASK [col_agents.tx9.tx9_upgrade : Pin the tools of each box, the boxes of this host at once]" in output
    assert codex(bed, first, name) == (HOST_PIN, HOST_PIN)
    assert codex(bed, pinned['second'], name) == (BOX_PIN, BOX_PIN)
    assert drifting(bed, pinned) == []
