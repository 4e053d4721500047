"""Run sushy-tools' Redfish emulator over TLS with the podman-backed systems driver.

Usage: redfish_serve.py CONFIG_FILE   (a sushy-tools config file, written by bmc.sh)

We do not call sushy-emulator's own main(): it installs a SIGCHLD handler that reaps
every child process, which would steal the exit status of the podman commands the
driver runs (subprocess then reports success for a failed command).

Next to sushy-tools' resources it serves the lab's EventService (redfish_events.py) and its
Server-Sent Events stream (sse_stream.py), and runs the power watcher (power_watch.py) that
turns every power change into Events. conformance.py corrects what DMTF's protocol validator
refuses in sushy-tools' own answers (docs/redfish-conformance.md).
"""

from __future__ import annotations

import logging
import ssl
import sys
from pathlib import Path

import conformance
import redfish_events
import sse_stream
from power_watch import PowerWatcher
from redfish_systems import PodmanSystemsDriver
from sushy_tools.emulator import main as emulator
from sushy_tools.emulator.resources.systems import fakedriver


def tls_context(cert_file: str, key_file: str) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert_file, key_file)
    return context


def start_event_service(app) -> None:
    """EventService resources, the subscriptions store and the power watcher; logs to stderr (our log)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s events: %(message)s"))
    events_log = logging.getLogger("nodeguard.bmc.events")
    events_log.addHandler(handler)
    events_log.setLevel(logging.INFO)
    events_log.propagate = False

    config = app.config
    service = redfish_events.EventService(
        redfish_events.SubscriptionStore(Path(config["NODEGUARD_BMC_EVENT_SUBSCRIPTIONS"])),
        ca_file=config.get("NODEGUARD_BMC_EVENT_CA") or None,
        ca_required=bool(config.get("NODEGUARD_BMC_EVENT_CA_REQUIRED")),
        personality_file=config.get("NODEGUARD_BMC_EVENT_PERSONALITY_FILE") or None,
    )
    driver = app.systems  # our PodmanSystemsDriver, created once for the app
    driver.events = service
    redfish_events.register(app, service, driver.systems)
    sse_stream.register(app, service, Path(config["NODEGUARD_BMC_EVENT_SUBSCRIPTIONS"]).parent)
    PowerWatcher(driver.containers(), driver.power_changed).start()


def main(config_file: str) -> int:
    # sushy-tools has no plug-in point for systems drivers: with SUSHY_EMULATOR_FAKE_DRIVER
    # it instantiates fakedriver.FakeDriver, so we hand it our subclass under that name.
    fakedriver.FakeDriver = PodmanSystemsDriver

    app = emulator.app
    app.configure(config_file=config_file)  # also installs HTTP basic auth (AUTH_FILE)
    config = app.config
    start_event_service(app)
    conformance.register(app)  # sushy-tools' answers the DMTF protocol validator refuses, corrected
    app.run(
        host=config["SUSHY_EMULATOR_LISTEN_IP"],
        port=config["SUSHY_EMULATOR_LISTEN_PORT"],
        ssl_context=tls_context(config["SUSHY_EMULATOR_SSL_CERT"], config["SUSHY_EMULATOR_SSL_KEY"]),
        threaded=True,
    )
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
