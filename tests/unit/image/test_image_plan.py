# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Planning the box image from the assets' digest alone (the action plugin's first call), and the controller's
lookup of the label a current image carries."""

from __future__ import annotations

import hashlib
import pathlib
from types import SimpleNamespace
from typing import Any

import pytest
from ansible.errors import AnsibleLookupError

from ansible_collections.col_agents.tx9.plugins.lookup.image_digest import LookupModule
from ansible_collections.col_agents.tx9.plugins.module_utils._image import build, context, ensure
from ansible_collections.col_agents.tx9.plugins.plugin_utils._assets import controller_assets_digest

ASSETS = 'a' * 64
CA = b'-----BEGIN CERTIFICATE-----\n'


def plan(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path, label: str | None, check_mode: bool = True,
         **params: Any) -> dict[str, Any]:
    """plan_from_digest on an engine whose image carries label (None: no such image)."""
    image = None if label is None else SimpleNamespace(id='sha256:feed', labels={'tx9.assets': label})
    monkeypatch.setattr(build, 'find_image', lambda _client, _tag: image)
    bundle = tmp_path / 'ca.crt'
    bundle.write_bytes(CA)
    asked = dict(image='tx9-box:test', force=False, assets_sha256=ASSETS, trust_host_ca=True, ca_bundle=str(bundle),
                 log_path=None)
    asked.update(params)
    return ensure.plan_from_digest(None, SimpleNamespace(logs_dir=str(tmp_path)), asked, check_mode)


def current() -> str:
    return context.image_digest(ASSETS, hashlib.sha256(CA).hexdigest())


def test_an_image_labelled_with_the_assets_and_ca_digest_is_current_and_needs_no_assets(monkeypatch, tmp_path):
    result = plan(monkeypatch, tmp_path, current(), check_mode=False)
    assert result == dict(changed=False, image_id='sha256:feed', assets_hash=current())


def test_a_stale_image_in_check_mode_is_planned_for_a_build_with_its_log_named(monkeypatch, tmp_path):
    result = plan(monkeypatch, tmp_path, 'b' * 64)
    assert result['built'] and result['changed'] and 'assets_needed' not in result
    assert result['planned_log_path'].startswith(str(tmp_path) + '/image-build-tx9-box_test-')


@pytest.mark.parametrize('label, force', [(None, False), ('b' * 64, False), (current(), True)])
def test_a_missing_stale_or_forced_image_asks_for_the_assets(monkeypatch, tmp_path, label, force):
    result = plan(monkeypatch, tmp_path, label, check_mode=False, force=force)
    assert result['assets_needed'] and result['built']


def test_without_trusting_the_hosts_ca_the_digest_holds_no_bundle(monkeypatch, tmp_path):
    untrusted = context.image_digest(ASSETS, hashlib.sha256(b'').hexdigest())
    assert plan(monkeypatch, tmp_path, untrusted, trust_host_ca=False)['changed'] is False


def test_the_lookup_gives_the_label_an_image_of_the_controllers_assets_carries():
    ca = hashlib.sha256(CA).hexdigest()
    assert LookupModule().run([], ca_sha256=ca) == [context.image_digest(controller_assets_digest(), ca)]


@pytest.mark.parametrize('terms, options', [(['x'], dict(ca_sha256='0' * 64)), ([], dict(ca_sha256='nothex')),
                                            ([], {}), ([], dict(ca_sha256='0' * 64, other=1))])
def test_the_lookup_refuses_terms_other_options_and_a_ca_digest_of_another_shape(terms, options):
    with pytest.raises(AnsibleLookupError):
        LookupModule().run(terms, **options)
