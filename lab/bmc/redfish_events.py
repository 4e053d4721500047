"""Redfish EventService of the lab BMC: subscriptions and power Events (DSP0266, EventService and
EventDestination schemas), in the shape of a chosen vendor (a personality).

- Personalities (PERSONALITIES; docs/power-events.md has each vendor's table and sources): `dmtf` (DMTF
  ResourceEvent registry 1.3.0), `openbmc` (bmcweb, OpenBMC registry 0.1: no Context at the payload root),
  `hpe` (iLO 6, iLOResourceEvents: OriginOfCondition a plain string) and `dell` (iDRAC9, IDRAC registry SYS
  messages: numeric EventId, a -0800 offset). The personality is read from a file at each power change and
  each request (NODEGUARD_BMC_EVENT_PERSONALITY_FILE; missing = dmtf), so a test can switch it without a
  restart; the EventService resource says which vendor and version it imitates. Only the events change:
  URLs stay the lab's (/redfish/v1/Systems/<node>).
- Subscriptions (EventDestination) are created, listed, read and deleted over Redfish and stored in
  one JSON file (mode 0600: it holds the subscribers' HttpHeaders, e.g. a bearer token), so they
  survive a restart of the emulator. RegistryPrefixes may only name the personality's registry.
- HttpHeaders are write-only: a GET shows `"HttpHeaders": []`, as the schema asks.
- Destinations must be https; deliveries verify the receiver's certificate against the configured
  CA file (NODEGUARD_BMC_EVENT_CA) or the system trust store, follow no redirects, use no proxy.
- Every power change the personality reports becomes one Event per matching subscription (OriginResources
  empty or naming the system; RegistryPrefixes empty or holding the personality's registry), POSTed by a
  delivery thread of that subscription: in order, a few retries with backoff, never on a Redfish request's thread.
- Logs name the subscription, the message and the receiver's host and port: never a header, a path
  or a query (either may carry a token).
"""

from __future__ import annotations

import datetime
import http.client
import itertools
import json
import logging
import os
import queue
import re
import secrets
import ssl
import threading
import time
import uuid
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

SERVICE_PATH = "/redfish/v1/EventService"
SUBSCRIPTIONS_PATH = SERVICE_PATH + "/Subscriptions"
SYSTEMS_PATH = "/redfish/v1/Systems/"


class Personality(NamedTuple):
    """How one vendor's BMC reports power changes. messages: power state -> (MessageId, Message); a state the
    vendor does not report is absent (OpenBMC, iLO and iDRAC send nothing for PoweringOff)."""

    registry: str
    imitates: str
    messages: dict


PERSONALITIES = {
    "dmtf": Personality("ResourceEvent", "DMTF Redfish ResourceEvent message registry 1.3.0, Event v1_7_0", {
        "Off": ("ResourceEvent.1.3.0.ResourcePoweredOff", "The resource '{system}' has powered off."),
        "PoweringOff": ("ResourceEvent.1.3.0.ResourcePoweringOff", "The resource '{system}' is powering off."),
        "On": ("ResourceEvent.1.3.0.ResourcePoweredOn", "The resource '{system}' has powered on."),
    }),
    "openbmc": Personality("OpenBMC", "OpenBMC bmcweb, OpenBMC message registry 0.1.0", {
        "Off": ("OpenBMC.0.1.DCPowerOff", "Host system DC power is off"),
        "On": ("OpenBMC.0.1.DCPowerOn", "Host system DC power is on"),
    }),
    "hpe": Personality("iLOResourceEvents", "HPE iLO 6, iLOResourceEvents registry 1.0", {
        "Off": ("iLOResourceEvents.1.0.ServerPoweredOff", "The server is powered off."),
        "On": ("iLOResourceEvents.1.0.ServerPoweredOn", "The server is powered on."),
    }),
    "dell": Personality("IDRAC", "Dell iDRAC9, IDRAC message registry 2.8 (SYS messages)", {
        "Off": ("IDRAC.2.8.SYS1001", "System is turning off."),
        "On": ("IDRAC.2.8.SYS1000", "System is turning on."),
    }),
}
DEFAULT_PERSONALITY = "dmtf"
IDRAC_ZONE = datetime.timezone(datetime.timedelta(hours=-8))  # iDRAC writes its local time: -0800 here
_numbers = itertools.count(1000)  # OpenBMC's and iDRAC's event ids are numbers

MAX_SUBSCRIPTIONS = 64
MAX_CONTEXT = 256
MAX_DESTINATION = 2048
MAX_HEADERS = 16
MAX_HEADER_VALUE = 4096
# Header names as RFC 9110 tokens; values without control characters (no CR/LF: no header injection).
HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}")
HEADER_VALUE = re.compile(r"[^\x00-\x08\x0a-\x1f\x7f]*")
# Set by the BMC itself: a subscriber may not replace them.
RESERVED_HEADERS = frozenset({"host", "content-type", "content-length", "transfer-encoding", "connection"})
WRITABLE = frozenset({
    "Destination", "Context", "Protocol", "EventFormatType", "SubscriptionType",
    "RegistryPrefixes", "OriginResources", "HttpHeaders",
})

# Delivery: the first attempt at once, then these pauses before the next attempts.
RETRY_DELAYS = (1.0, 2.0, 4.0)
CONNECT_TIMEOUT = 5.0
# HTTP statuses worth another attempt; any other 4xx is the receiver's final answer.
RETRYABLE = frozenset({408, 425, 429})

log = logging.getLogger("nodeguard.bmc.events")


class InvalidRequest(ValueError):
    """A subscription request the service refuses (HTTP 400); the message names the property, never a header value."""


def rfc3339(when: datetime.datetime) -> str:
    """UTC, millisecond precision, 'Z' suffix: 2026-11-23T08:00:00.123Z."""
    return when.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


# --- subscriptions ------------------------------------------------------------------------------------

def personality_from(path: str | None) -> tuple[str, Personality]:
    """The personality named in the file at ``path`` (one word), the default when there is none."""
    name = DEFAULT_PERSONALITY
    if path and Path(path).exists():
        name = Path(path).read_text().strip() or DEFAULT_PERSONALITY
    if name not in PERSONALITIES:
        raise ValueError(f"unknown event personality {name!r} in {path}: one of {', '.join(sorted(PERSONALITIES))}")
    return name, PERSONALITIES[name]


def parse_subscription(body: object, systems: list[str], registry: str = PERSONALITIES[DEFAULT_PERSONALITY].registry) -> dict:
    """Check a POSTed EventDestination; return what is stored (with the headers). Raises InvalidRequest."""
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object")
    unknown = sorted(set(body) - WRITABLE)
    if unknown:
        raise InvalidRequest(f"Unknown or read-only properties: {', '.join(unknown)}")
    return {
        "Destination": _destination(body.get("Destination")),
        "Context": _string(body, "Context", "", MAX_CONTEXT),
        "Protocol": _one_of(body, "Protocol", "Redfish"),
        "EventFormatType": _one_of(body, "EventFormatType", "Event"),
        "SubscriptionType": _one_of(body, "SubscriptionType", "RedfishEvent"),
        "RegistryPrefixes": _registry_prefixes(body.get("RegistryPrefixes", []), registry),
        "OriginResources": _origin_resources(body.get("OriginResources", []), systems),
        "HttpHeaders": _http_headers(body.get("HttpHeaders", [])),
    }


def _destination(value: object) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_DESTINATION:
        raise InvalidRequest(f"Destination is required: an https URL of at most {MAX_DESTINATION} characters")
    try:
        url = urlsplit(value)
        url.port  # noqa: B018 (raises ValueError for a malformed port)
    except ValueError:
        raise InvalidRequest("Destination is not a valid URL") from None
    if url.scheme != "https":
        raise InvalidRequest("Destination must be an https URL: events carry the subscriber's credentials")
    if not url.hostname:
        raise InvalidRequest("Destination has no host")
    if url.username is not None or url.password is not None:
        raise InvalidRequest("Destination may not carry credentials: use HttpHeaders")
    if url.fragment or any(ord(c) < 0x21 or ord(c) == 0x7F for c in value):
        raise InvalidRequest("Destination may not have a fragment, spaces or control characters")
    return value


def _string(body: dict, name: str, default: str, limit: int) -> str:
    value = body.get(name, default)
    if not isinstance(value, str) or len(value) > limit:
        raise InvalidRequest(f"{name} must be a string of at most {limit} characters")
    return value


def _one_of(body: dict, name: str, only: str) -> str:
    value = body.get(name, only)
    if value != only:
        raise InvalidRequest(f"{name} must be {only!r}: the only value this service supports")
    return value


def _registry_prefixes(value: object, registry: str) -> list[str]:
    if not isinstance(value, list) or any(prefix != registry for prefix in value):
        raise InvalidRequest(f"RegistryPrefixes must be a list; the only registry this service uses is {registry}")
    return sorted(set(value))


def _origin_resources(value: object, systems: list[str]) -> list[dict]:
    if not isinstance(value, list):
        raise InvalidRequest("OriginResources must be a list of {\"@odata.id\": \"/redfish/v1/Systems/<id>\"}")
    known = {SYSTEMS_PATH + name for name in systems}
    paths = []
    for item in value:
        path = item.get("@odata.id") if isinstance(item, dict) and len(item) == 1 else None
        if not isinstance(path, str) or path.rstrip("/") not in known:
            raise InvalidRequest("OriginResources may only name systems of this service (/redfish/v1/Systems/<id>)")
        paths.append(path.rstrip("/"))
    return [{"@odata.id": path} for path in sorted(set(paths))]


def _http_headers(value: object) -> list[list[str]]:
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise InvalidRequest("HttpHeaders must be a list of objects of header names and values")
    headers = [(name, header) for item in value for name, header in item.items()]
    if len(headers) > MAX_HEADERS:
        raise InvalidRequest(f"HttpHeaders: at most {MAX_HEADERS} headers")
    for name, header in headers:
        if not isinstance(name, str) or not HEADER_NAME.fullmatch(name) or name.lower() in RESERVED_HEADERS:
            raise InvalidRequest("HttpHeaders: a header name is not a valid HTTP token or is set by the service")
        # The value is a secret: the message names neither it nor its header.
        if not isinstance(header, str) or len(header) > MAX_HEADER_VALUE or not HEADER_VALUE.fullmatch(header):
            raise InvalidRequest("HttpHeaders: a header value is not a string without control characters")
    return [[name, header] for name, header in headers]


def public_view(sub_id: str, sub: dict) -> dict:
    """The EventDestination resource as a GET shows it: HttpHeaders are write-only."""
    return {
        "@odata.type": "#EventDestination.v1_7_0.EventDestination",
        "@odata.id": f"{SUBSCRIPTIONS_PATH}/{sub_id}",
        "Id": sub_id,
        "Name": f"Event subscription {sub_id}",
        "Destination": sub["Destination"],
        "Context": sub["Context"],
        "Protocol": sub["Protocol"],
        "EventFormatType": sub["EventFormatType"],
        "SubscriptionType": sub["SubscriptionType"],
        "RegistryPrefixes": list(sub["RegistryPrefixes"]),
        "OriginResources": [dict(origin) for origin in sub["OriginResources"]],
        "HttpHeaders": [],
    }


def matches(sub: dict, system: str, registry: str = PERSONALITIES[DEFAULT_PERSONALITY].registry) -> bool:
    origins = {origin["@odata.id"] for origin in sub["OriginResources"]}
    prefixes = set(sub["RegistryPrefixes"])
    return (not origins or SYSTEMS_PATH + system in origins) and (not prefixes or registry in prefixes)


class SubscriptionStore:
    """Subscriptions by Id in one JSON file (0600, written atomically); one lock for readers and writers."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self._subs: dict[str, dict] = json.loads(path.read_text()) if path.exists() else {}

    def items(self) -> list[tuple[str, dict]]:
        with self._lock:
            return sorted(self._subs.items())

    def get(self, sub_id: str) -> dict | None:
        with self._lock:
            return self._subs.get(sub_id)

    def add(self, sub: dict) -> str:
        with self._lock:
            if len(self._subs) >= MAX_SUBSCRIPTIONS:
                raise InvalidRequest(f"This service holds at most {MAX_SUBSCRIPTIONS} subscriptions")
            sub_id = secrets.token_hex(8)
            self._subs[sub_id] = sub
            self._save()
            return sub_id

    def delete(self, sub_id: str) -> bool:
        with self._lock:
            if self._subs.pop(sub_id, None) is None:
                return False
            self._save()
            return True

    def _save(self) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(self._subs, f, indent=2, sort_keys=True)
        os.replace(tmp, self.path)


# --- events and delivery ------------------------------------------------------------------------------

def event_record(system: str, state: str, when: datetime.datetime, personality: str = DEFAULT_PERSONALITY) -> dict | None:
    """The event record ``personality``'s vendor sends for this power change, or None when it sends none."""
    if state not in PERSONALITIES[personality].messages:
        return None
    message_id, message = PERSONALITIES[personality].messages[state]
    message = message.format(system=system)
    if personality == "openbmc":  # bmcweb: a log entry; no OriginOfCondition, the subscription's Context per record
        return {"@odata.type": "#Message.v1_1_1.Message", "EventId": str(next(_numbers)),
                "EventTimestamp": when.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S+00:00"), "EventType": "Event",
                "Message": message, "MessageArgs": [], "MessageId": message_id, "MessageSeverity": "OK", "Severity": "OK"}
    if personality == "hpe":  # iLO: OriginOfCondition a plain string with a trailing slash
        return {"EventId": str(uuid.uuid4()), "EventTimestamp": when.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "EventType": "Alert", "Message": message, "MessageArgs": [], "MessageId": message_id,
                "OriginOfCondition": f"{SYSTEMS_PATH}{system}/", "Severity": "OK"}
    if personality == "dell":  # iDRAC9: numeric EventId, local time with an offset without colon
        return {"EventId": next(_numbers), "EventTimestamp": when.astimezone(IDRAC_ZONE).strftime("%Y-%m-%dT%H:%M:%S-0800"),
                "EventType": "Alert", "MemberId": uuid.uuid4().hex[:8], "Message": message, "MessageArgs": [],
                "MessageArgs@odata.count": 0, "MessageId": message_id, "MessageSeverity": "OK",
                "OriginOfCondition": {"@odata.id": SYSTEMS_PATH + system}, "Severity": "OK"}
    return {  # DMTF ResourceEvent 1.3.0: the resource's name as the one argument
        "EventId": uuid.uuid4().hex,
        "EventTimestamp": rfc3339(when),
        "MessageSeverity": "OK",
        "Message": message,
        "MessageId": message_id,
        "MessageArgs": [system],
        "OriginOfCondition": {"@odata.id": SYSTEMS_PATH + system},
    }


def event_payload(record: dict, context: str, personality: str = DEFAULT_PERSONALITY) -> dict:
    """The Event POSTed to one subscription; ``personality`` decides where the Context goes."""
    if personality == "openbmc":  # bmcweb sends no Context at the payload root
        return {"@odata.type": "#Event.v1_4_0.Event", "Id": str(record["EventId"]), "Name": "Event Log",
                "Events": [dict(record, Context=context)]}
    names = {"hpe": ("#Event.v1_2_0.Event", "Events"), "dell": ("#Event.v1_4_0.Event", "Event Array")}
    odata_type, name = names.get(personality, ("#Event.v1_7_0.Event", "Power event"))
    return {"@odata.type": odata_type, "Id": uuid.uuid4().hex, "Name": name, "Context": context, "Events": [record]}


class EventService:
    """Publishes power changes to the matching subscriptions; one delivery thread per subscription."""

    def __init__(self, store: SubscriptionStore, ca_file: str | None, ca_required: bool, personality_file: str | None = None):
        self.store = store
        self.personality_file = personality_file
        # ca_required: the CA was named explicitly; if the file is missing, deliveries fail (never fall
        # back to another trust store). Otherwise a missing file means the system trust store.
        self.ca_file = ca_file
        self.ca_required = ca_required
        self._queues: dict[str, queue.Queue] = {}
        self._lock = threading.Lock()

    def personality(self) -> tuple[str, Personality]:
        """The personality now (re-read each time: a test switches it without a restart)."""
        return personality_from(self.personality_file)

    def power_changed(self, system: str, state: str, when: datetime.datetime) -> None:
        """Queue one Event per matching subscription and return at once."""
        name, personality = self.personality()
        record = event_record(system, state, when, name)
        if record is None:
            log.info("%s %s: %s sends no event for it", system, state, name)
            return
        targets = [sub_id for sub_id, sub in self.store.items() if matches(sub, system, personality.registry)]
        log.info("%s %s at %s (event %s, %s): %d subscription(s)", system, record["MessageId"],
                 record["EventTimestamp"], record["EventId"], name, len(targets))
        for sub_id in targets:
            self._queue(sub_id).put((name, record))

    def _queue(self, sub_id: str) -> queue.Queue:
        with self._lock:
            if sub_id not in self._queues:
                self._queues[sub_id] = queue.Queue()
                threading.Thread(target=self._deliver_forever, args=(sub_id,), daemon=True,
                                 name=f"events-{sub_id}").start()
            return self._queues[sub_id]

    def delete(self, sub_id: str) -> bool:
        """Delete the subscription; its delivery thread drops what is queued and ends."""
        if not self.store.delete(sub_id):
            return False
        with self._lock:
            events = self._queues.pop(sub_id, None)
        if events is not None:
            events.put(None)
        return True

    def _deliver_forever(self, sub_id: str) -> None:
        with self._lock:
            events = self._queues[sub_id]
        while True:
            item = events.get()
            if item is None:
                return
            name, record = item
            try:
                self._deliver(sub_id, record, name)
            except Exception as e:  # noqa: BLE001 - a delivery thread must not die: the next event deserves its try
                log.error("subscription %s: event %s not delivered: %s", sub_id, record["EventId"], type(e).__name__)

    def _deliver(self, sub_id: str, record: dict, personality: str = DEFAULT_PERSONALITY) -> None:
        payload = None
        for attempt, delay in enumerate((0.0, *RETRY_DELAYS), start=1):
            time.sleep(delay)
            sub = self.store.get(sub_id)
            if sub is None:
                log.info("subscription %s deleted: event %s dropped", sub_id, record["EventId"])
                return
            payload = payload or event_payload(record, sub["Context"], personality)  # the same Id on every attempt
            url = urlsplit(sub["Destination"])
            receiver = f"{url.hostname}:{url.port or 443}"
            try:
                status = self._post(url, sub, payload)
            except (OSError, http.client.HTTPException) as e:
                outcome, final = _describe(e), False
            else:
                outcome, final = f"HTTP {status}", status < 500 and status not in RETRYABLE
                if 200 <= status < 300:
                    log.info("subscription %s: event %s (%s) delivered to %s, attempt %d", sub_id,
                             record["EventId"], record["MessageId"], receiver, attempt)
                    return
            log.warning("subscription %s: event %s to %s, attempt %d: %s", sub_id, record["EventId"],
                        receiver, attempt, outcome)
            if final:
                break
        log.error("subscription %s: event %s (%s) not delivered", sub_id, record["EventId"], record["MessageId"])

    def _tls(self) -> ssl.SSLContext:
        if self.ca_file and (self.ca_required or os.path.exists(self.ca_file)):
            context = ssl.create_default_context(cafile=self.ca_file)
        else:
            context = ssl.create_default_context()  # the system trust store
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        return context

    def _post(self, url, sub: dict, payload: dict) -> int:
        # http.client: no redirects, no proxy, no environment (REQUESTS_CA_BUNDLE and friends).
        connection = http.client.HTTPSConnection(url.hostname, url.port or 443, context=self._tls(),
                                                 timeout=CONNECT_TIMEOUT)
        try:
            headers = dict(sub["HttpHeaders"])
            headers["Content-Type"] = "application/json"
            target = (url.path or "/") + (f"?{url.query}" if url.query else "")
            connection.request("POST", target, body=json.dumps(payload).encode(), headers=headers)
            response = connection.getresponse()
            response.read(65536)
            return response.status
        finally:
            connection.close()


def _describe(e: Exception) -> str:
    """The failure without anything the exception might quote from the request."""
    if isinstance(e, ssl.SSLCertVerificationError):
        return f"TLS verification failed ({e.verify_message})"
    if isinstance(e, ssl.SSLError):
        return f"TLS error ({e.reason})"
    if isinstance(e, TimeoutError):
        return "timed out"
    if isinstance(e, ConnectionRefusedError):
        return "connection refused"
    if isinstance(e, OSError) and e.strerror:
        return f"{type(e).__name__}: {e.strerror}"
    return type(e).__name__


# --- the Redfish resources ----------------------------------------------------------------------------

def event_service_resource(personality: str = DEFAULT_PERSONALITY) -> dict:
    return {
        "@odata.type": "#EventService.v1_7_0.EventService",
        "@odata.id": SERVICE_PATH,
        "Id": "EventService",
        "Name": "Event Service",
        "Description": f"nodeguard lab BMC; its events imitate {PERSONALITIES[personality].imitates}",
        "Oem": {"Nodeguard": {"Personality": personality, "Imitates": PERSONALITIES[personality].imitates}},
        "ServiceEnabled": True,
        "Status": {"State": "Enabled", "Health": "OK"},
        "DeliveryRetryAttempts": len(RETRY_DELAYS),
        "DeliveryRetryIntervalSeconds": int(RETRY_DELAYS[0]),
        "EventFormatTypes": ["Event"],
        "RegistryPrefixes": [PERSONALITIES[personality].registry],
        "ResourceTypes": ["ComputerSystem"],
        "Subscriptions": {"@odata.id": SUBSCRIPTIONS_PATH},
    }


def register(app, service: EventService, systems: list[str]) -> None:
    """Add the EventService resources to sushy-tools' Flask app (its basic auth covers them)."""
    import flask
    from sushy_tools import error

    def respond(document: dict, status: int = 200, headers: dict | None = None) -> flask.Response:
        return flask.Response(json.dumps(document, indent=2), status=status, headers=headers or {},
                              content_type="application/json")

    @app.route(SERVICE_PATH, methods=["GET"])
    def event_service():
        return respond(event_service_resource(service.personality()[0]))

    @app.route(SUBSCRIPTIONS_PATH, methods=["GET", "POST"])
    def subscriptions():
        if flask.request.method == "GET":
            members = [{"@odata.id": f"{SUBSCRIPTIONS_PATH}/{sub_id}"} for sub_id, _sub in service.store.items()]
            return respond({
                "@odata.type": "#EventDestinationCollection.EventDestinationCollection",
                "@odata.id": SUBSCRIPTIONS_PATH,
                "Name": "Event subscriptions",
                "Members": members,
                "Members@odata.count": len(members),
            })
        body = flask.request.get_json(silent=True)
        try:
            sub = parse_subscription(body, systems, service.personality()[1].registry)
            sub_id = service.store.add(sub)
        except InvalidRequest as e:
            raise error.BadRequest(str(e)) from None
        url = urlsplit(sub["Destination"])
        log.info("subscription %s created: https://%s:%s, context %r, origins %s", sub_id, url.hostname,
                 url.port or 443, sub["Context"], [o["@odata.id"] for o in sub["OriginResources"]] or "all")
        return respond(public_view(sub_id, sub), 201, {"Location": f"{SUBSCRIPTIONS_PATH}/{sub_id}"})

    @app.route(SUBSCRIPTIONS_PATH + "/<sub_id>", methods=["GET", "DELETE"])
    def subscription(sub_id):
        if flask.request.method == "DELETE":
            if not service.delete(sub_id):
                raise error.NotFound(f"Subscription {sub_id} was not found")
            log.info("subscription %s deleted", sub_id)
            return flask.Response(status=204)
        sub = service.store.get(sub_id)
        if sub is None:
            raise error.NotFound(f"Subscription {sub_id} was not found")
        return respond(public_view(sub_id, sub))

    # The service root links the EventService, as Redfish clients discover it there.
    root_view = app.view_functions["root_resource"]

    def root_with_event_service():
        response = root_view()
        document = json.loads(response.get_data())
        document["EventService"] = {"@odata.id": SERVICE_PATH}
        response.set_data(json.dumps(document, indent=4))
        return response

    app.view_functions["root_resource"] = root_with_event_service
