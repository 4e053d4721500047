# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Redfish EventService subscriptions (EventDestination resources) of one service: read, plan, apply.

A subscription is identified by its Destination and Context: two subscriptions with both equal are "the same"
one, whatever else they say. The other settings we manage (Protocol, EventFormatType, RegistryPrefixes,
OriginResources) cannot be changed in place on most services, so a difference means re-creating it.
HttpHeaders are write-only (a service returns them empty or null), so they are never compared: ``force``
re-creates the subscription to set new ones (token rotation).

A re-creation creates the new subscription first and deletes the old ones after it, so there is no moment
without a subscription (events may arrive twice meanwhile; the rulebook deduplicates them). When the create
is refused, nothing has been changed.

Everything a caller gets back is a summary (``summary``): never HttpHeaders, even from a service that
returns them. Error messages are redacted of the password and every header value.

Vendors send power events from their own registries (docs/power-events.md), so a subscription asks for the
registries its vendor really uses (``VENDOR_REGISTRIES``). Each BMC gets its own credential for the power-event
rulebook (``bmc_token``): the rulebook's filter computes the same and so knows which BMC posted.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from typing import NamedTuple
from urllib.parse import urlsplit

from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import PowerError
from ansible_collections.nodeguard.failover.plugins.module_utils.power.redfish import RedfishHTTPError, RedfishSession

EVENT_SERVICE = "/redfish/v1/EventService"
SUBSCRIPTIONS = EVENT_SERVICE + "/Subscriptions"
CONTEXT_MAX = 256  # EventDestination.Context: the spec's limit
SYSTEM_PATH = re.compile(r"/redfish/v1/Systems/[A-Za-z0-9._~-]{1,128}")
HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}")  # an RFC 9110 token
PROTOCOL, EVENT_FORMAT = "Redfish", "Event"
# The registry each vendor's power messages come from (docs/power-events.md): a subscription limited to
# ResourceEvent would keep OpenBMC, iLO and iDRAC from sending their power-off at all.
VENDOR_REGISTRIES = {
    "dmtf": ("ResourceEvent",),  # ResourceEvent 1.3+: ResourcePoweredOff, ResourcePoweringOff, ResourcePoweredOn
    "openbmc": ("OpenBMC",),  # bmcweb: OpenBMC.0.x.DCPowerOff, DCPowerOn
    "hpe": ("iLOResourceEvents",),  # iLO 6 and 7: ServerPoweredOff, ServerPoweredOn
    "dell": ("IDRAC",),  # iDRAC9: SYS1001 (turning off), SYS1000 (turning on), SYS1003 (CPU reset)
}
TOKEN_HEADER = "X-Nodeguard-Token"
TOKEN_PURPOSE = b"nodeguard power events\x00"  # the same in extensions/eda/plugins/event_filter/redfish_power_events.py


def bmc_token(key: str, node: str) -> str:
    """The BMC of ``node``'s own credential for the power-event rulebook: HMAC-SHA256(key, purpose + node), hex.
    The key stays with the rulebook; a BMC holding its token cannot make another node's."""
    if not key:
        raise PowerError("the key of the BMC tokens is empty (NODEGUARD_BMC_TOKEN_KEY, the rulebook's)")
    return hmac.new(key.encode(), TOKEN_PURPOSE + node.encode(), hashlib.sha256).hexdigest()


def registries_for(vendor, registry_prefixes) -> tuple:
    """The registry prefixes to subscribe to: those given, else the vendor's, else ResourceEvent (DMTF)."""
    if registry_prefixes is not None and vendor:
        raise PowerError("give registry_prefixes or vendor, not both")
    if registry_prefixes is not None:
        return tuple(registry_prefixes)
    if vendor and vendor not in VENDOR_REGISTRIES:
        raise PowerError(f"vendor must be one of {', '.join(sorted(VENDOR_REGISTRIES))}, got {vendor!r}")
    return VENDOR_REGISTRIES[vendor or "dmtf"]


class Desired(NamedTuple):
    destination: str
    context: str
    registry_prefixes: tuple  # () = every registry
    origin_resources: tuple  # system paths; () = every resource of the service
    http_headers: dict


def _single_line(value: str) -> bool:
    return not any(ord(c) < 32 or ord(c) == 127 for c in value)


def check_destination(destination: str) -> str:
    """The events' destination: an https URL without user information."""
    parts = urlsplit(destination or "")
    if parts.scheme != "https" or not parts.hostname:
        raise PowerError(
            f"destination must be an https URL (https://rulebook.example:5000/endpoint), got {destination!r}: "
            "a BMC posts the events with their headers (the bearer token), so plain http would show them to the network"
        )
    if "@" in parts.netloc:
        raise PowerError("destination must not contain user information (user:password@host); put credentials in http_headers")
    if not _single_line(destination) or " " in destination:
        raise PowerError("destination must be one URL without spaces or control characters")
    return destination


def check_desired(destination, context, registry_prefixes, origin_resources, http_headers) -> Desired:
    """Validated settings, or PowerError naming what is wrong (never a header value)."""
    check_destination(destination)
    if not context or len(context) > CONTEXT_MAX or not _single_line(context):
        raise PowerError(f"context must be 1 to {CONTEXT_MAX} characters on one line (for example nodeguard:worker3)")
    for prefix in registry_prefixes or ():
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9]{0,63}", prefix or ""):
            raise PowerError(f"registry_prefixes: {prefix!r} is not a registry prefix (like ResourceEvent)")
    for path in origin_resources or ():
        if not SYSTEM_PATH.fullmatch(path or ""):
            raise PowerError(f"origin_resources: {path!r} is not a system path like /redfish/v1/Systems/worker3")
    headers = {}
    for name, value in (http_headers or {}).items():
        if not HEADER_NAME.fullmatch(str(name)):
            raise PowerError(f"http_headers: {name!r} is not an HTTP header name")
        if not isinstance(value, str) or not value or not _single_line(value):
            raise PowerError(f"http_headers: the value of {name} must be a non-empty string on one line (value not shown)")
        headers[str(name)] = value
    return Desired(destination, context, tuple(registry_prefixes or ()), tuple(origin_resources or ()), headers)


def header_secrets(desired: Desired) -> tuple:
    """What must never be shown of the headers: each value, and its credential alone (``Bearer <token>`` -> the token)."""
    values = set()
    for value in desired.http_headers.values():
        values.add(value)
        values.add(value.split()[-1])
    return tuple(sorted(values, key=len, reverse=True))  # longest first, so the whole value is replaced as one


def _same_destination(a: str, b: str) -> bool:
    """Destinations compared as a service may normalise them: scheme and host in any case, the default port implied."""

    def norm(url):
        parts = urlsplit(url or "")
        port = parts.port if parts.port not in (None, 443) else ""
        return parts.scheme.lower(), (parts.hostname or "").lower(), port, parts.path or "/", parts.query

    try:
        return norm(a) == norm(b)
    except ValueError:  # an unparsable port in what a service returned
        return a == b


def _paths(links) -> list:
    return sorted(link.get("@odata.id") for link in links or [] if isinstance(link, dict) and isinstance(link.get("@odata.id"), str))


def summary(path: str, member: dict) -> dict:
    """What we show of a subscription: never its HttpHeaders."""
    return {
        "path": path,
        "id": str(member.get("Id") or path.rstrip("/").rsplit("/", 1)[-1]),
        "destination": str(member.get("Destination") or ""),
        "context": str(member.get("Context") or ""),
        "protocol": str(member.get("Protocol") or ""),
        "event_format_type": str(member.get("EventFormatType") or ""),
        "registry_prefixes": sorted(str(p) for p in member.get("RegistryPrefixes") or []),
        "origin_resources": _paths(member.get("OriginResources")),
    }


def desired_summary(desired: Desired) -> dict:
    return {
        "destination": desired.destination,
        "context": desired.context,
        "protocol": PROTOCOL,
        "event_format_type": EVENT_FORMAT,
        "registry_prefixes": sorted(desired.registry_prefixes),
        "origin_resources": sorted(desired.origin_resources),
    }


def matches(existing: dict, desired: Desired) -> bool:
    """Is ``existing`` (a summary) the subscription ``desired`` names: same Destination and Context."""
    return existing["context"] == desired.context and _same_destination(existing["destination"], desired.destination)


def up_to_date(existing: dict, desired: Desired) -> bool:
    """Does it also deliver what ``desired`` asks for. A service that leaves EventFormatType out means Event (the default)."""
    want = desired_summary(desired)
    return (
        existing["protocol"] == PROTOCOL
        and existing["event_format_type"] in ("", EVENT_FORMAT)
        and existing["registry_prefixes"] == want["registry_prefixes"]
        and existing["origin_resources"] == want["origin_resources"]
    )


class Plan(NamedTuple):
    create: bool
    delete: list  # paths
    keep: dict  # the summary of the subscription left as it is, or None
    matching: list  # summaries of every subscription with the same Destination and Context, before


def plan(existing: list, desired: Desired, state: str, force: bool) -> Plan:
    """What to do so the service holds exactly one up-to-date subscription (present) or none (absent)."""
    matching = [s for s in existing if matches(s, desired)]
    if state == "absent":
        return Plan(False, [s["path"] for s in matching], None, matching)
    keep = None if force else next((s for s in matching if up_to_date(s, desired)), None)
    return Plan(keep is None, [s["path"] for s in matching if s is not keep], keep, matching)


class EventSubscriptions:
    """The EventService subscriptions of one Redfish service, over the collection's Redfish transport."""

    def __init__(self, connection: dict, header_values: tuple = ()):
        self.session = RedfishSession(connection, secrets=header_values)
        self.address = self.session.address

    def service(self) -> dict:
        answer = self.session.fetch("GET", EVENT_SERVICE)
        if not answer:
            raise PowerError(f"redfish {self.address} has no EventService")
        return {
            "service_enabled": answer.get("ServiceEnabled") is not False,
            "event_format_types": [str(t) for t in answer.get("EventFormatTypes") or []],
            "registry_prefixes": [str(p) for p in answer.get("RegistryPrefixes") or []],
        }

    def list(self) -> list:
        """Summaries of every subscription (members given inline are not fetched again)."""
        collection = self.session.fetch("GET", SUBSCRIPTIONS)
        found = []
        for link in collection.get("Members") or []:
            path = link.get("@odata.id") if isinstance(link, dict) else None
            if not isinstance(path, str):
                raise PowerError(f"redfish {self.address}: a member of {SUBSCRIPTIONS} has no @odata.id")
            if "Destination" in link:
                found.append(summary(path, link))
                continue
            try:
                found.append(summary(path, self.session.fetch("GET", path)))
            except RedfishHTTPError as e:
                if e.status != 404:  # deleted between the list and the read: not there
                    raise
        return sorted(found, key=lambda s: s["path"])

    def create(self, desired: Desired) -> dict:
        body = {
            "Destination": desired.destination,
            "Context": desired.context,
            "Protocol": PROTOCOL,
            "EventFormatType": EVENT_FORMAT,
        }
        if desired.registry_prefixes:
            body["RegistryPrefixes"] = list(desired.registry_prefixes)
        if desired.origin_resources:
            body["OriginResources"] = [{"@odata.id": path} for path in desired.origin_resources]
        if desired.http_headers:
            body["HttpHeaders"] = [{name: value} for name, value in desired.http_headers.items()]
        answer = self.session.request("POST", SUBSCRIPTIONS, body)
        path = urlsplit(answer.location).path if answer.location else answer.body.get("@odata.id")
        if not isinstance(path, str) or not path.startswith(SUBSCRIPTIONS + "/"):
            raise PowerError(f"redfish {self.address} accepted the subscription but named no resource for it (Location or @odata.id)")
        self.session.url(answer.location or path)  # a Location on another origin is refused, like any link
        created = answer.body if answer.body.get("Destination") else self.session.fetch("GET", path)
        return summary(path, created)

    def delete(self, path: str) -> None:
        try:
            self.session.request("DELETE", path)
        except RedfishHTTPError as e:
            if e.status != 404:  # already gone is what we wanted
                raise

    def apply(self, steps: Plan, desired: Desired) -> dict:
        """Create first, then delete: no moment without a subscription. Returns the resulting subscription or None."""
        result = steps.keep
        if steps.create:
            result = self.create(desired)
        for path in steps.delete:
            self.delete(path)
        return result
