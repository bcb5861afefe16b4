# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A box's egress policy: read, kept in the state file, shown, and rendered as its proxy's Squid configuration.

Private to the col_agents.tx9 collection. The design is docs/egress.md (not
yet enforced). The `egress` option is None or {mode: open} (today's
behaviour) or {mode: allowlist, allow: [...], deny: [...], executor: [...]}:
the box reaches what allow names and deny does not (deny wins), and Executor,
when executor is given, only what that stricter list names. An explicitly
empty `allow: []` is valid and means nothing is reachable; an allowlist that
leaves allow out is refused, so no egress at all is never an accident. The
entries are read by egress_rules.py; presets are expanded when read, each rule
keeping the preset it came from. A policy is normalised (rules sorted, ports
of one host merged, duplicates dropped), so an unchanged policy compares equal
however it was written, and it is hashable.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._box.egress_rules import (
    PRESETS,
    Rule,
    as_list,
    parse_list,
    refuse,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error

__all__ = [
    'ACCESS_LOG',
    'LOG_FORMAT',
    'OPEN',
    'PRESETS',
    'STATE_KEYS',
    'Policy',
    'Rule',
    'diff_view',
    'from_state',
    'parse',
    'parse_decision',
    'squid_config',
    'summary',
    'to_state',
]

OPEN_MODE = 'open'
ALLOWLIST = 'allowlist'
KEYS = ('mode', 'allow', 'deny', 'executor', 'resolvers')
LISTS = ('allow', 'deny', 'executor', 'resolvers')
STATE_KEYS = dict(
    mode='TX9_EGRESS_MODE',
    allow='TX9_EGRESS_ALLOW',
    deny='TX9_EGRESS_DENY',
    executor='TX9_EGRESS_EXECUTOR',
    resolvers='TX9_EGRESS_RESOLVERS',
)
# The DNS servers the proxy may be given instead of the host's (a name server per address).
MAX_RESOLVERS = 8


@dataclass(frozen=True)
class Policy:
    """A normalised egress policy; executor None means Executor has the box's list."""

    mode: str = OPEN_MODE
    allow: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()
    executor: tuple[Rule, ...] | None = None
    resolvers: tuple[str, ...] = ()


OPEN = Policy()


def parse_resolvers(value: object, where: str) -> tuple[str, ...]:
    """The proxy's name servers: IP addresses, at most MAX_RESOLVERS, order kept, duplicates dropped."""
    found: list[str] = []
    items = as_list(value, where)
    if len(items) > MAX_RESOLVERS:
        raise refuse(where, value, f'it names {len(items)} servers', f'Give at most {MAX_RESOLVERS}.')
    for index, item in enumerate(items):
        try:
            address = str(ipaddress.ip_address(str(item).strip())) if isinstance(item, str) else ''
        except ValueError:
            address = ''
        if not address:
            raise refuse(f'{where}[{index}]', item, 'it is not an IP address', 'Give a name server by its address.')
        if address not in found:
            found.append(address)
    return tuple(found)


def parse(value: object, where: str = 'egress') -> Policy:
    """The policy the `egress` option asks for; every bad value is EGRESS_POLICY_INVALID naming the entry.

    A wildcard *.example.com covers example.com itself and every name below it, as Squid's .example.com does.
    Keys given as None count as left out (Ansible fills unset suboptions with None).
    """
    if value is None:
        return OPEN
    if not isinstance(value, Mapping):
        raise refuse(where, value, 'it is not a mapping', 'Write {mode: open}, or {mode: allowlist, allow: [...]}.')
    unknown = next((key for key in value if key not in KEYS), None)
    if unknown is not None:
        raise refuse(
            f'{where}.{unknown}', value[unknown], 'it is not an option of egress', 'Use mode, allow, deny, executor.'
        )
    given = {key: value[key] for key in KEYS if value.get(key) is not None}
    mode = given.get('mode', OPEN_MODE)
    if mode == OPEN_MODE:
        for key in LISTS:
            if key in given:
                raise refuse(
                    f'{where}.{key}',
                    given[key],
                    'mode open lets everything out and takes no rules',
                    f'Write mode: allowlist to use rules, or leave {key} out.',
                )
        return OPEN
    if mode != ALLOWLIST:
        raise refuse(f'{where}.mode', mode, 'it is neither open nor allowlist', 'Write mode: open or mode: allowlist.')
    if 'allow' not in given:
        raise refuse(
            f'{where}.allow',
            None,
            'an allowlist without allow would let nothing out at all',
            'List what the box may reach, such as allow: [preset:tools]; if nothing, write allow: [] explicitly.',
        )
    allow = parse_list(given['allow'], f'{where}.allow')
    deny = parse_list(given.get('deny', []), f'{where}.deny')
    executor = None
    if 'executor' in given:
        executor = parse_list(given['executor'], f'{where}.executor', within=allow)
    resolvers = parse_resolvers(given.get('resolvers', []), f'{where}.resolvers')
    return Policy(ALLOWLIST, allow, deny, executor, resolvers)


# ---- the state file and the views ---------------------------------------------------------------


def entries(rules: Iterable[Rule]) -> list[str]:
    """The entries that give rules back: each rule written directly, then each preset once, by name."""
    kept = list(rules)
    presets = sorted(set(rule.preset for rule in kept if rule.preset))
    return [rule.text for rule in kept if not rule.preset] + [f'preset:{name}' for name in presets]


def _dump(rules: Iterable[Rule]) -> str:
    return json.dumps(entries(rules), separators=(',', ':'))


def to_state(policy: Policy) -> dict[str, str]:
    """The state file's keys: all empty (left out of the file) for an open box; entries as compact JSON lists."""
    if policy.mode == OPEN_MODE:
        return dict.fromkeys(STATE_KEYS.values(), '')
    return {
        STATE_KEYS['mode']: ALLOWLIST,
        STATE_KEYS['allow']: _dump(policy.allow),
        STATE_KEYS['deny']: _dump(policy.deny) if policy.deny else '',
        STATE_KEYS['executor']: '' if policy.executor is None else _dump(policy.executor),
        STATE_KEYS['resolvers']: json.dumps(list(policy.resolvers), separators=(',', ':')) if policy.resolvers else '',
    }


def from_state(persisted: Mapping[str, str], box: str = '?') -> Policy:
    """The box's policy from its state file; none kept means open. Presets expand as this collection lists them."""
    values = {key: persisted.get(state_key) or '' for key, state_key in STATE_KEYS.items()}
    if not any(values.values()):
        return OPEN
    try:
        given: dict[str, object] = {key: json.loads(values[key]) for key in LISTS if values[key]}
        given['mode'] = values['mode'] or None
        return parse(given)
    except (ValueError, Tx9Error) as exc:
        raise Tx9Error(
            f'The state file of box {box} holds an egress policy tx9 cannot read '
            f'({getattr(exc, "reason", None) or exc}).',
            'STATE_HOME',
            'Correct or remove the TX9_EGRESS_ lines of the box state file, then give the policy again '
            'with the egress option of col_agents.tx9.tx9_box.',
        )


def option_value(policy: Policy) -> dict[str, Any]:
    """The policy as the egress option gives it back (presets by name), for a box that moves or is described."""
    if policy.mode == OPEN_MODE:
        return dict(mode=OPEN_MODE)
    value: dict[str, Any] = dict(mode=ALLOWLIST, allow=entries(policy.allow))
    if policy.deny:
        value['deny'] = entries(policy.deny)
    if policy.executor is not None:
        value['executor'] = entries(policy.executor)
    if policy.resolvers:
        value['resolvers'] = list(policy.resolvers)
    return value


def diff_view(policy: Policy) -> dict[str, Any]:
    """The policy as a diff shows it: the mode and each rule's label (presets expanded, each named)."""
    if policy.mode == OPEN_MODE:
        return dict(mode=OPEN_MODE)
    view: dict[str, Any] = dict(
        mode=ALLOWLIST, allow=[rule.label for rule in policy.allow], deny=[rule.label for rule in policy.deny]
    )
    if policy.executor is not None:
        view['executor'] = [rule.label for rule in policy.executor]
    if policy.resolvers:
        view['resolvers'] = list(policy.resolvers)
    return view


def summary(policy: Policy) -> dict[str, Any]:
    """The mode and the rule count, for tx9_info, list.yml and the inventory."""
    return dict(mode=policy.mode, rules=len(policy.allow) + len(policy.deny) + len(policy.executor or ()))


# ---- the proxy's Squid configuration --------------------------------------------------------------

# Decisions go to the container's output, where `docker logs` and tx9_logs read them.
ACCESS_LOG = '/dev/stdout'
PROXY_PORT = 3128
# Executor's own port: whoever uses it gets Executor's list, which is never wider than the box's.
EXECUTOR_PROXY_PORT = 3129
LOG_FORMAT = (
    '%ts.%03tu client=%>a method=%rm host=%>rd port=%>rP status=%>Hs squid=%Ss/%Sh err=%err_code '
    'rule=%{rule}note dst=%<a:%<p url=%ru bytes=%<st'
)
# Every value a rule puts into the configuration: validated entries can only produce these characters.
SAFE = re.compile(r'[A-Za-z0-9._:/,*=\[\]-]+')
LOG_PATH = re.compile(r'/[A-Za-z0-9._/-]+')
SETTINGS = (
    '# The egress proxy of one tx9 box, generated from its egress policy; changes here are overwritten.',
    f'http_port {PROXY_PORT} name=box_proxy',
    f'http_port {EXECUTOR_PROXY_PORT} name=executor_proxy',
    'pid_filename none',
    '# Ignored when started as the proxy user (USER proxy).',
    'cache_effective_user proxy',
    "# Not Docker's huge nofile limit.",
    'max_filedescriptors 4096',
    'workers 1',
    'cache deny all',
    'cache_mem 0 MB',
    'memory_pools off',
    'netdb_filename none',
    'pinger_enable off',
    'coredump_dir /tmp',
    'shutdown_lifetime 1 seconds',
    'logfile_rotate 0',
    'via off',
    'forwarded_for delete',
    'httpd_suppress_version_string on',
    '# Pages in English from one directory, ERR_EGRESS_DENIED among them.',
    'error_directory /usr/share/squid/errors/templates',
)
FIXED_ACLS = (
    '# -n: a name is never resolved, an IP literal never reverse-resolved, to decide; dst acls run only',
    '# for IP literals (after host_is_ip) or for names already allowed, so no denied name is ever looked up.',
    r'acl host_is_ip dstdom_regex -n ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ^\[.*\]$',
    '# Keeps bare TCP probes out of the log.',
    'acl has_request has request',
    '# Rule markers (annotate_transaction) always match; each stands last on its line, so it runs only',
    '# when the rest of the line matched and the log names the rule that decided.',
)
TAIL = (
    'icp_access deny all',
    'htcp_access deny all',
    f'logformat egress {LOG_FORMAT}',
)


def safe(value: str) -> str:
    """value when it can stand in squid.conf as one token; anything else is a bug upstream of this module."""
    if not SAFE.fullmatch(value):
        raise ValueError(f'{value!r} cannot be written into squid.conf')
    return value


class _Conf:
    """The acls and http_access lines of one configuration; acls are named by a counter, never by rule text."""

    def __init__(self) -> None:
        self.acls: list[str] = []
        self.access: list[str] = []
        self.ports: dict[tuple[int, ...], str] = {}
        self.markers: dict[str, str] = {}
        self.targets: dict[tuple[str, str], str] = {}
        self.denied: list[str] = []

    def acl(self, prefix: str, kind: str, *values: str) -> str:
        name = f'{prefix}_{len(self.acls) + 1}'
        self.acls.append(' '.join(('acl', name, kind, *(safe(value) for value in values))))
        return name

    def port(self, ports: tuple[int, ...]) -> str:
        if ports not in self.ports:
            self.ports[ports] = self.acl('p', 'port', *(str(int(port)) for port in ports))
        return self.ports[ports]

    def marker(self, label: str) -> str:
        if label not in self.markers:
            self.markers[label] = self.acl('r', 'annotate_transaction', f'rule={label}')
        return self.markers[label]

    def line(self, action: str, acls: Iterable[str], label: str) -> None:
        marker = self.marker(label)
        self.access.append(' '.join(('http_access', action, *acls, marker)))
        if action == 'deny' and marker not in self.denied:
            self.denied.append(marker)

    def target(self, rule: Rule) -> list[str]:
        """The acls that match rule's hosts: names by dstdomain -n, networks by dst behind host_is_ip."""
        key = (rule.kind, rule.target)
        if key not in self.targets:
            if rule.kind == 'net':
                self.targets[key] = self.acl('n', 'dst', rule.target)
            else:
                self.targets[key] = self.acl(
                    'd', 'dstdomain', '-n', ('.' if rule.kind == 'domain' else '') + rule.target
                )
        return ['host_is_ip', self.targets[key]] if rule.kind == 'net' else [self.targets[key]]

    def rule(self, action: str, rule: Rule, label: str, lead: tuple[str, ...] = ()) -> None:
        """One rule's line: its hosts, then its ports, then its marker."""
        self.line(action, [*lead, *self.target(rule), self.port(rule.ports)], label)


def allowed_names(allow: Iterable[Rule]) -> list[str]:
    """The dstdomain values of every allowed name, none inside another (Squid warns about overlaps)."""
    kept = list(allow)
    domains = sorted(set(rule.target for rule in kept if rule.kind == 'domain'))
    domains = [d for d in domains if not any(d.endswith('.' + other) for other in domains)]
    names = sorted(set(rule.target for rule in kept if rule.kind == 'name'))
    names = [n for n in names if not any(n == d or n.endswith('.' + d) for d in domains)]
    return names + ['.' + domain for domain in domains]


def _deny_lines(conf: _Conf, policy: Policy) -> None:
    """Deny rules, first of all; a denied network also stops an allowed name that resolves into it."""
    names = allowed_names(policy.allow)
    resolved = None
    if names and any(rule.kind == 'net' for rule in policy.deny):
        resolved = conf.acl('a', 'dstdomain', '-n', *names)
    for rule in policy.deny:
        label = f'deny/{rule.label}'
        conf.rule('deny', rule, label)
        if rule.kind == 'net' and resolved:
            conf.line('deny', [resolved, conf.port(rule.ports), conf.target(rule)[-1]], label)


def squid_config(policy: Policy, box_subnet: str, access_log: str = ACCESS_LOG) -> str:
    """squid.conf (Squid 5.7) of the box's egress proxy, in http_access order: clients outside
    the box network, the deny rules, Executor's own list (when given, for requests on Executor's port) and its
    default deny, the box's allow rules, and the default deny. Refused requests get the page ERR_EGRESS_DENIED."""
    if policy.mode != ALLOWLIST:
        raise ValueError('an open box has no egress proxy')
    if not LOG_PATH.fullmatch(access_log):
        raise ValueError(f'{access_log!r} is not an absolute path squid.conf can carry')
    subnet = ipaddress.ip_network(box_subnet, strict=False)
    conf = _Conf()
    fixed = [f'acl boxnet src {subnet}']
    if policy.resolvers:
        fixed.append('dns_nameservers ' + ' '.join(str(ipaddress.ip_address(ip)) for ip in policy.resolvers))
    conf.line('deny', ['!boxnet'], 'deny:client-not-in-box')
    _deny_lines(conf, policy)
    if policy.executor is not None:
        fixed.append('acl from_executor myportname executor_proxy')
        for rule in policy.executor:
            conf.rule('allow', rule, f'executor/{rule.label}', ('from_executor',))
        conf.line('deny', ['from_executor'], 'deny:executor-default')
    for rule in policy.allow:
        conf.rule('allow', rule, rule.label)
    conf.line('deny', ['all'], 'deny:default')
    lines = [
        *SETTINGS,
        *fixed,
        *FIXED_ACLS,
        *conf.acls,
        *conf.access,
        *(f'deny_info ERR_EGRESS_DENIED {marker}' for marker in conf.denied),
        *TAIL,
        f'access_log stdio:{access_log} egress has_request',
        'cache_log stdio:/dev/stderr',
        'cache_store_log none',
    ]
    return '\n'.join(lines) + '\n'


# ---- the proxy's decisions ----------------------------------------------------------------------

MAX_LINE = 65536
DECISION = re.compile(
    r'(?P<seconds>[0-9]{1,10})\.(?P<millis>[0-9]{3}) client=(?P<client>\S+) method=(?P<method>\S+)'
    r' host=(?P<host>\S+) port=(?P<port>\S+) status=(?P<status>\S+) squid=(?P<squid>\S+) err=\S+'
    r' rule=(?P<rule>\S+) dst=\S+ url=.* bytes=(?P<bytes>[0-9]+|-)'
)


def _number(text: str) -> int | None:
    return int(text) if text.isdigit() else None


def parse_decision(line: str) -> dict[str, Any] | None:
    """One access-log line of LOG_FORMAT as {time, client, method, host, port, status, decision, rule, bytes};
    None for a line that is not one. time is UTC ISO 8601 with milliseconds, as tx9_logs' events have it."""
    text = line.rstrip('\r\n')
    match = DECISION.fullmatch(text) if len(text) <= MAX_LINE else None
    if not match:
        return None
    moment = datetime.datetime.fromtimestamp(int(match['seconds']), datetime.UTC)
    rule = match['rule']
    denied = rule.startswith('deny') or 'DENIED' in match['squid']
    return dict(
        time=moment.strftime('%Y-%m-%dT%H:%M:%S.') + match['millis'] + 'Z',
        client=match['client'],
        method=match['method'],
        host=match['host'],
        port=_number(match['port']),
        status=_number(match['status']),
        decision='denied' if denied else 'allowed',
        rule=None if rule == '-' else rule,
        bytes=_number(match['bytes']) or 0,
    )
