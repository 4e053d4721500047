"""Server-Sent Events for the lab BMC's EventService (DSP0266, "Server-Sent Events"; the stream format of the
WHATWG HTML standard), as bmcweb serves them: GET /redfish/v1/EventService/SSE (HTTP basic auth, like every
resource here) streams every power Event of every system, without filtering by resource.

- Each Event is `id: N` (an increasing integer) and `data: <Event JSON>`, then a blank line. The Event is the one
  the EventService builds for its subscriptions in the shape of the BMC's personality (redfish_events.event_record
  and event_payload), with an empty Context (a stream has no subscription to take one from). So the `openbmc`
  personality streams bmcweb's event-log records: `Name` "Event Log", no OriginOfCondition. A power change the
  personality reports no message for (PoweringOff outside `dmtf`) is not streamed.
- The last RING events are kept, in memory and in sse-events.json in the state directory (mode 0600), so a client
  that reconnects with `Last-Event-ID: N` gets every kept event after N, also after a restart of the emulator.
- A comment line (`: keep-alive`) every NODEGUARD_BMC_SSE_KEEPALIVE seconds (default 10; 0 = none, as bmcweb).
- NODEGUARD_BMC_SSE_STALL=1 imitates a hung event service: the stream opens, says it is stalled once, then sends
  nothing more (for the source's fall-back test).
- The EventService resource names the stream in ServerSentEventUri.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import threading
import time
from pathlib import Path

import redfish_events

SSE_PATH = redfish_events.SERVICE_PATH + "/SSE"
RING = 256
log = logging.getLogger("nodeguard.bmc.events")


class EventStream:
    """The kept events and the queues of the connected clients."""

    def __init__(self, store: Path, keepalive: float, stall: bool, personality=lambda: redfish_events.DEFAULT_PERSONALITY):
        self.store = store
        self.personality = personality  # the personality's name now (re-read at each event, like the EventService's)
        self.keepalive = keepalive
        self.stall = stall
        self._lock = threading.Lock()
        self._clients: list[queue.Queue] = []
        self._kept: list[tuple[int, str]] = []
        if store.exists():
            self._kept = [(int(i), data) for i, data in json.loads(store.read_text())]

    def publish(self, system: str, state: str, when) -> None:
        name = self.personality()
        record = redfish_events.event_record(system, state, when, name)
        if record is None:
            log.info("SSE: %s %s: %s sends no event for it", system, state, name)
            return
        with self._lock:
            number = self._kept[-1][0] + 1 if self._kept else 1
            payload = dict(redfish_events.event_payload(record, "", name), Id=str(number))
            data = json.dumps(payload, separators=(",", ":"))
            self._kept = [*self._kept, (number, data)][-RING:]
            self._save()
            clients = list(self._clients)
        log.info("SSE event %d (%s %s) to %d stream(s)", number, system, record["MessageId"], len(clients))
        for client in clients:
            client.put((number, data))

    def _save(self) -> None:
        tmp = self.store.with_name(self.store.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(self._kept, f)
        os.replace(tmp, self.store)

    def lines(self, last_event_id: str | None):
        """The stream of one client: the kept events after ``last_event_id``, then each new one, with keep-alives."""
        client: queue.Queue = queue.Queue()
        with self._lock:
            self._clients.append(client)
            after = int(last_event_id) if (last_event_id or "").isdigit() else None
            missed = [item for item in self._kept if after is not None and item[0] > after]
        log.info("SSE stream opened (Last-Event-ID %s, %d kept event(s) replayed)", after, len(missed))
        try:
            yield ": nodeguard lab BMC event stream\n\n"
            if self.stall:
                yield ": stalled\n\n"
                while True:
                    time.sleep(3600)
            for number, data in missed:
                yield f"id: {number}\ndata: {data}\n\n"
            while True:
                try:
                    number, data = client.get(timeout=self.keepalive or None)
                except queue.Empty:
                    yield ": keep-alive\n\n"
                    continue
                yield f"id: {number}\ndata: {data}\n\n"
        finally:
            with self._lock:
                self._clients.remove(client)
            log.info("SSE stream closed")


def register(app, service: redfish_events.EventService, state_dir: Path) -> EventStream:
    """Serve the stream, name it in the EventService resource, and publish every power change to it too."""
    import flask

    stream = EventStream(
        state_dir / "sse-events.json",
        keepalive=float(os.environ.get("NODEGUARD_BMC_SSE_KEEPALIVE", "10")),
        stall=os.environ.get("NODEGUARD_BMC_SSE_STALL") == "1",
        personality=lambda: service.personality()[0],
    )

    @app.route(SSE_PATH, methods=["GET"])
    def event_stream():
        body = stream.lines(flask.request.headers.get("Last-Event-ID"))
        return flask.Response(flask.stream_with_context(body), content_type="text/event-stream", headers={"Cache-Control": "no-cache"})

    service_view = app.view_functions["event_service"]

    def event_service_with_stream():
        response = service_view()
        document = json.loads(response.get_data())
        document["ServerSentEventUri"] = SSE_PATH
        response.set_data(json.dumps(document, indent=2))
        return response

    app.view_functions["event_service"] = event_service_with_stream

    power_changed = service.power_changed

    def power_changed_and_streamed(system, state, when):
        power_changed(system, state, when)
        stream.publish(system, state, when)

    service.power_changed = power_changed_and_streamed
    return stream
