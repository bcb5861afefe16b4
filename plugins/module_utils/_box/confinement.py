# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A confined box: how its containers are set up so the egress proxy is their only way out, and the proof.

Private to the col_agents.tx9 collection. A box with an egress allowlist
(egress.py) has its agent and Executor on an internal network on which the
host keeps no address (so neither the outside nor the host answers), without
the capability to send raw frames, with the proxy in their environment; the
proxy (the same image, as the proxy user, no capabilities, read-only) is on
that network as `egress` and on its own outside network, and publishes the
dashboard. proof() says what, if anything, leaves another way out; the
readiness gate and tx9_doctor fail with EGRESS_OPEN on any of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._box import egress
from ansible_collections.col_agents.tx9.plugins.module_utils._box.executor_config import parse_publish
from ansible_collections.col_agents.tx9.plugins.module_utils._box.guest import run_in
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._names import ROLE_AGENT, ROLE_EXECUTOR, object_names

# Raw frames reach the host's stack even on an internal network; without NET_RAW they cannot be sent.
CAP_DROP = ['NET_RAW']
# A failed lookup of an outside name fails in about two seconds instead of twenty.
DNS_OPTIONS = ['timeout:1', 'attempts:1']
NO_PROXY = 'executor,egress,localhost,127.0.0.1'
# The box network of a confined box: the host keeps no address on it, so nothing on the host answers.
INHIBIT_IPV4 = 'com.docker.network.bridge.inhibit_ipv4'
NETWORK_OPTIONS = {INHIBIT_IPV4: 'true'}
EGRESS_LIMITS = dict(NanoCpus=0, Memory=256 * 1024 * 1024, MemorySwap=512 * 1024 * 1024)
# From inside a container: every gateway its routes name, tried by TCP; a gateway that answers at all
# (accepts or refuses) is a way out. Prints one line per gateway: "<address> open|closed".
PROBE = r"""
import socket, struct
seen = []
with open('/proc/net/route') as routes:
    for line in list(routes)[1:]:
        fields = line.split()
        if len(fields) > 2 and fields[2] != '00000000':
            address = socket.inet_ntoa(struct.pack('<L', int(fields[2], 16)))
            if address not in seen:
                seen.append(address)
for address in seen:
    probe = socket.socket()
    probe.settimeout(0.5)
    try:
        probe.connect((address, 9))
        verdict = 'open'
    except ConnectionRefusedError:
        verdict = 'open'
    except OSError:
        verdict = 'closed'
    finally:
        probe.close()
    print(address, verdict)
"""


def confine(spec: dict[str, Any], role: str) -> None:
    """An agent's or Executor's settings on a confined box: its only way out is the egress proxy.

    Only a confined box has these keys, so an open box keeps its config hash; the rules are not among
    them (they live in the egress container), so a rule changes without touching these two.
    """
    port = egress.EXECUTOR_PROXY_PORT if role == ROLE_EXECUTOR else egress.PROXY_PORT
    proxy = f'http://egress:{port}'
    for key in ('http_proxy', 'https_proxy', 'HTTP_PROXY', 'HTTPS_PROXY'):
        spec['environment'][key] = proxy
    spec['environment'].update(no_proxy=NO_PROXY, NO_PROXY=NO_PROXY, NODE_USE_ENV_PROXY='1')
    spec.update(egress=egress.ALLOWLIST, cap_drop=CAP_DROP, dns_opt=DNS_OPTIONS)
    if role == ROLE_EXECUTOR:
        # The proxy publishes the dashboard: a port published by a container on an internal network only
        # is silently dropped by Docker.
        spec['ports'] = None


def egress_settings(
    box: str, policy: egress.Policy, executor_values: Mapping[str, Any], remembered_port: str | None
) -> dict[str, Any]:
    """The proxy's settings: its policy (in the hash; the configuration itself is rendered at create, when
    the box network's subnet is known), on its own outside network, publishing the dashboard."""
    names = object_names(box)
    address, asked_port = parse_publish(executor_values.get('executor_publish'))
    return dict(
        name=names['egress'],
        entrypoint=['/opt/tx9/bin/tx9-egress-entrypoint'],
        environment={'TX9_BOX_NAME': box},
        policy=egress.to_state(policy),
        network=names['egress_network'],
        alias='egress',
        ports=[address, asked_port or remembered_port or ''],
        dns=[],
    )


def network_problems(box: str, network: Mapping[str, Any] | None) -> list[str]:
    """What makes the box network a way out: not internal, or the host keeps an address on it."""
    name = object_names(box)['network']
    if network is None:
        return [f'the box network {name} is missing']
    problems = []
    if not network.get('Internal'):
        problems.append(f'the box network {name} is not internal')
    if (network.get('Options') or {}).get(INHIBIT_IPV4) != 'true':
        problems.append(f'the host keeps an address on the box network {name}')
    return problems


def container_problems(box: str, role: str, attrs: Mapping[str, Any] | None) -> list[str]:
    """What gives one of the box's containers another way out: another network, or raw frames."""
    if attrs is None:
        return []
    name = object_names(box)[role]
    problems = []
    networks = sorted(set((attrs.get('NetworkSettings') or {}).get('Networks') or {}) - {object_names(box)['network']})
    if networks:
        problems.append(f'{name} is also on {", ".join(networks)}')
    dropped = set(((attrs.get('HostConfig') or {}).get('CapDrop')) or [])
    if not dropped & {'NET_RAW', 'CAP_NET_RAW', 'ALL'}:
        problems.append(f'{name} may send raw frames (NET_RAW is not dropped)')
    return problems


def probe_problems(client: Any, box: str, role: str, attrs: Mapping[str, Any] | None) -> list[str]:
    """What a running container finds from inside: a gateway of its routes that answers."""
    if attrs is None or not (attrs.get('State') or {}).get('Running'):
        return []
    name = object_names(box)[role]
    code, output = run_in(client, str(attrs['Id']), ['python3', '-c', PROBE], 'nobody', 'the egress probe')
    if code != 0:
        return [f'the egress probe could not run in {name} ({output.strip()[-200:]})']
    answering = [line.split()[0] for line in output.splitlines() if line.endswith(' open')]
    return [f'from {name}, the gateway {address} answers' for address in answering]


def proof(client: Any, box: str, network: Mapping[str, Any] | None, containers: Mapping[str, Any]) -> list[str]:
    """Every way out of a confined box besides its proxy (an empty list: none)."""
    problems = network_problems(box, network)
    for role in (ROLE_AGENT, ROLE_EXECUTOR):
        problems += container_problems(box, role, containers.get(role))
    for role in (ROLE_AGENT, ROLE_EXECUTOR):
        problems += probe_problems(client, box, role, containers.get(role))
    return problems


def refusal(box: str, problems: list[str]) -> Tx9Error:
    """EGRESS_OPEN: the box's policy is not what stands between it and the outside."""
    return Tx9Error(
        f'Box {box} has an egress allowlist but another way out: {"; ".join(problems)}.',
        'EGRESS_OPEN',
        f'Recreate the box (col_agents.tx9.tx9_box name={box} recreate=true) so only its egress proxy leads out, '
        'and look for whatever attached its containers elsewhere.',
    )
