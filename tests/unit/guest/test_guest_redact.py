# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Redaction of secrets from log lines, and the level a line says it has."""

import pytest

from tx9guest import redact

TOKEN = '0123456789abcdef' * 4


@pytest.fixture
def redactor():
    return redact.Redactor({'BOXD_EXECUTOR_TOKEN': TOKEN, 'HOME': '/data/home/agent', 'GITHUB_TOKEN': 'short'})


def test_the_box_token_is_redacted_wherever_it_appears(redactor):
    assert redactor('connecting with %s now' % TOKEN) == 'connecting with [REDACTED] now'
    assert TOKEN not in redactor('url=http://executor:4788/mcp?x=%s' % TOKEN)


def test_an_authorization_bearer_header_is_stored_without_its_credential(redactor):
    assert redactor('Authorization: Bearer x') == 'Authorization: [REDACTED]'
    assert redactor('> proxy-authorization: Basic dXNlcjpwYXNz') == '> proxy-authorization: [REDACTED]'
    assert redactor('curl -H "Authorization: Bearer abc.def"') == 'curl -H "Authorization: [REDACTED]'


def test_a_bare_bearer_credential_is_redacted(redactor):
    assert redactor('sent bearer eyJhbGciOi.J9x_y-z') == 'sent bearer [REDACTED]'


def test_sk_style_api_keys_and_github_tokens_are_redacted(redactor):
    line = 'keys sk-ant-api03-AbCdEfGhIjKlMnOp and ghp_abcdefghijklmnopqrstuvwxyz0123 end'
    assert redactor(line) == 'keys [REDACTED] and [REDACTED] end'


def test_cookie_headers_are_redacted(redactor):
    assert redactor('Set-Cookie: session=abc; Path=/') == 'Set-Cookie: [REDACTED]'
    assert redactor('cookie: a=b') == 'cookie: [REDACTED]'


@pytest.mark.parametrize('line, expected', [
    ('token=abc123', 'token=[REDACTED]'),
    ('access_token: abc123', 'access_token: [REDACTED]'),
    ('{"refresh_token": "a b c", "n": 1}', '{"refresh_token": "[REDACTED]", "n": 1}'),
    ("password='hunter 2' user=x", "password='[REDACTED]' user=x"),
    ('https://x/cb?id_token%3Dabc&state=1', 'https://x/cb?id_token%3D[REDACTED]&state=1'),
    ('OPENAI_API_KEY=abcdef', 'OPENAI_API_KEY=[REDACTED]'),
    ('client_secret = s3cr3t', 'client_secret = [REDACTED]'),
])
def test_secret_keys_followed_by_equals_colon_or_an_encoded_equals_lose_their_value(redactor, line, expected):
    assert redactor(line) == expected


@pytest.mark.parametrize('line', [
    'max_tokens=4096 input_tokens: 12',
    'token_count=5',
    'the gateway started',
    'HOME=/data/home/agent',
])
def test_ordinary_text_and_token_counts_are_left_alone(redactor, line):
    assert redactor(line) == line


def test_short_environment_values_are_not_treated_as_secrets(redactor):
    assert redactor('short and sweet') == 'short and sweet'


def test_redaction_is_stable_when_applied_twice(redactor):
    once = redactor('Authorization: Bearer x token=%s' % TOKEN)
    assert redactor(once) == once


@pytest.mark.parametrize('name, sensitive', [
    ('BOXD_EXECUTOR_TOKEN', True), ('GHTOKEN', True), ('DB_PASSWORD', True), ('AWS_SECRET_ACCESS_KEY', True),
    ('ANTHROPIC_API_KEY', True), ('HTTP_COOKIE', True), ('TOKENIZERS_PARALLELISM', False), ('HOME', False),
])
def test_environment_names_that_hold_secrets_are_recognised(name, sensitive):
    assert redact.sensitive_env_name(name) is sensitive


@pytest.mark.parametrize('line, level', [
    ('2026-01-01 ERROR something broke', 'error'),
    ('[WARN] disk almost full', 'warning'),
    ('level=debug msg=x', 'debug'),
    ('{"level": "info", "msg": "x"}', 'info'),
    ('INFO:root:hello', 'info'),
    ('no error here, just words', None),
])
def test_the_level_is_read_from_the_line_when_it_says_one(line, level):
    assert redact.detect_level(line) == level
