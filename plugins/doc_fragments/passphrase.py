# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


class ModuleDocFragment:
    """How the modules that take a backup passphrase keep it off the screen in ad-hoc runs."""

    DOCUMENTATION = r"""
options: {}
notes:
  - "The passphrase is never shown by the module (O(password) has C(no_log)), but ansible-core shows a failed
    ad-hoc task's arguments as they were written, so C(-a 'password=...') would put it on the screen and in logs.
    Give it in a form that shows only its own text: E(TX9_PASSWORD) in the module's environment on the target and
    no O(password) (for C(localhost), the controller's, C(TX9_PASSWORD=... ansible localhost -m ...)); a
    Vault-encrypted variable (C(-a 'password={{ vault_tx9_backup_password }}' -e @vault.yml --ask-vault-pass));
    or the same variable in a vars file only you can read, without Vault. In playbooks, use Vault."
"""
