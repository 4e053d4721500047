"""Answers of sushy-tools that DMTF's Redfish Protocol Validator finds wrong, corrected where the lab serves them
(docs/redfish-conformance.md lists each one and why).

- Manager.ServiceEntryPointUUID: sushy-tools' fake managers driver has none, and its Manager resource then says
  null; the property is a UUID string (Manager schema), the UUID of the service root this manager serves. The lab
  serves the service root's UUID (the validator reads it to identify the service, and stops on null).
"""

from __future__ import annotations

import json

MANAGER_PREFIX = "/redfish/v1/Managers/"


def register(app) -> None:
    import flask

    def service_uuid() -> str | None:
        response = app.view_functions["root_resource"]()
        return json.loads(response.get_data()).get("UUID")

    @app.after_request
    def corrected(response: flask.Response) -> flask.Response:
        path = flask.request.path
        if flask.request.method == "GET" and path.startswith(MANAGER_PREFIX) and path.count("/") == 4 and response.status_code == 200:
            document = json.loads(response.get_data())
            if document.get("ServiceEntryPointUUID", "") is None:
                document["ServiceEntryPointUUID"] = service_uuid()
                response.set_data(json.dumps(document, indent=4))
        return response
