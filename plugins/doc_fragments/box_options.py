# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


class ModuleDocFragment:
    """The per-box options that modules creating or recreating a box share (RESOURCES: the limits and
    budgets among them; MAPPING: all of them as one dict)."""

    DOCUMENTATION = r"""
options:
  image:
    description:
      - The box image both containers run. A box whose containers run another image is
        recreated on it (that is the upgrade); its volumes and token stay.
      - When omitted, the image the box was last given (kept in its state file), and for a new
        box the collection's own C(tx9-box:<collection version>).
    type: str
  executor_web_base_url:
    description:
      - The exact public origin (for example an HTTPS reverse proxy) people reach the dashboard
        at; passed to Executor as E(EXECUTOR_WEB_BASE_URL) and allowed in its Host header check.
      - Persisted per box; omitted keeps the box's current value.
    type: str
  executor_publish:
    description:
      - Where Executor's port 4788 is published, as C(ADDR:PORT) or C(PORT).
      - Default all interfaces and a port Docker picks. Persisted per box.
    type: str
  egress:
    description:
      - The box's egress policy. Omitted, the box keeps the policy it has (a new box is open).
      - A mapping. C(mode=open) is today's box, no proxy, the agent reaches whatever the host reaches.
      - C(mode=allowlist) with a list C(allow) confines the box. The agent and Executor are on an internal
        network with no route out and no address of the host on it, cannot send raw frames, and reach
        the outside only through the box's egress proxy (a third container, C(tx9-<box>-egress), which
        also publishes the dashboard). It lets through what C(allow) names and C(deny)
        does not (deny wins). Entries are C(host), C(host:port[,port]), C(*.domain), an IPv4 address
        or CIDR, a bracketed IPv6 one, or C(preset:tools); the port is 443 unless given.
        C(executor) narrows Executor's own list (each entry within C(allow)).
        C(resolvers) are the name servers the proxy asks instead of the host's.
      - Switching between open and allowlist recreates the box's containers (the network changes).
        Changing the rules recreates only the egress proxy; the agent and Executor keep running.
      - The readiness gate proves the box has no other way out, or fails with EGRESS_OPEN. See docs/egress.md.
    type: raw
  executor_dns:
    description:
      - IPv4 DNS servers for the Executor container. Persisted per box.
    type: list
    elements: str
  executor_allowed_hosts:
    description:
      - Extra host names Executor accepts in the HTTP Host header, beyond C(executor), localhost,
        the dashboard URL's host and the host of O(executor_web_base_url). Persisted per box.
    type: list
    elements: str
  clear_executor_config:
    description:
      - Return the executor options to their defaults. Cannot be combined with them.
    type: bool
    default: false
  wait_timeout:
    description:
      - Seconds the readiness gate waits for Executor and the agent before failing with
        cause C(NOT_READY).
    type: int
    default: 180
"""

    # The limits and budgets of a box: set at creation (tx9_box, tx9_import, tx9_preflight) or
    # changed live (tx9_resources).
    RESOURCES = r"""
options:
  agent_cpus:
    description:
      - CPUs for the agent container, a number such as V(1.5) (or a string of one); a new box gets 4, clamped
        to the host's CPU count.
      - A value that is not a number (C(lots)), more than the host has, zero, negative or non-finite values
        fail with cause C(INVALID_RESOURCES), naming the value and the fix, before anything changes.
      - Changed limits are applied live, without recreating the container.
    type: raw
  agent_memory:
    description:
      - Memory limit of the agent container in binary units, such as V(512m), V(1g) or V(8GiB), or an integer
        of bytes (as RV(col_agents.tx9.tx9_info#module:boxes[].desired) gives it); at least V(6m); a new box
        gets V(8g). Swap is twice the memory.
      - A value that is not a size fails with cause C(INVALID_RESOURCES).
    type: raw
  executor_cpus:
    description:
      - CPUs for the Executor container, a number such as V(1.5); a new box gets 2, clamped to the host's CPU count.
      - Checked as O(agent_cpus) is.
    type: raw
  executor_memory:
    description:
      - Memory limit of the Executor container, such as V(2g) (what a new box gets), or an integer of bytes.
      - Checked as O(agent_memory) is.
    type: raw
  agent_volume_budget:
    description:
      - An advisory size budget for the agent data volume, such as V(50g), an integer of bytes, or V(unlimited).
        Reported against usage; never enforced.
      - A value that is neither a size nor V(unlimited) fails with cause C(INVALID_RESOURCES).
    type: raw
  executor_volume_budget:
    description:
      - An advisory size budget for the Executor scratch volume, as O(agent_volume_budget), or V(unlimited).
    type: raw
"""

    # col_agents.tx9.box_options.mapping: the box options above, also taken as one mapping.
    MAPPING = r"""
options:
  options:
    description:
      - The box options as one mapping, such as the C(options) of a move the migration role plans; each
        key is the name of a box option of this module and takes the place of that option.
      - Each value is checked as the option of that name is. A key that is not a box option, or a value
        that differs from the same option given on its own, is refused with cause C(INVALID_ARGUMENT).
    type: dict
"""
