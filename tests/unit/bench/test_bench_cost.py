"""bench/cost.py's judgement of a measured window: what its heartbeats got, whether it saturated the lab, and which
profiles share one window."""

import cost


def window(asked, got, not_ready=0):
    return {"requested_heartbeat_rps": asked, "achieved_heartbeat_rps": got, "not_ready_nodes_at_end": not_ready}


def test_a_window_whose_heartbeats_got_what_they_asked_for_did_not_saturate():
    # the lab's kwok stages add up to 4 % jitter: about 2 % fewer writes than asked is not saturation
    assert cost.saturation(window(103.33, 101.0)) == []


def test_heartbeats_starved_below_nine_tenths_saturate_and_the_reason_gives_the_numbers():
    assert cost.saturation(window(1100, 273)) == ["heartbeats got 273 of 1100 writes/s asked (25%)"]


def test_a_node_not_ready_at_the_end_saturates_even_when_the_writes_kept_up():
    assert cost.saturation(window(110, 109, not_ready=3)) == ["3 node(s) NotReady at the end"]


def test_heartbeat_writes_are_lease_renewals_and_status_writes_only():
    measured = {"writes_per_resource": {"PUT leases": 3000, "PATCH nodes/status": 90, "PUT nodes/status": 10,
                                        "POST events": 500, "PATCH nodes": 7}}
    assert cost.heartbeat_writes(measured) == 3100
    # 100 status writes over 100 nodes: the window held one full status report per node
    assert cost.status_reports_per_node(measured, 100) == 1.0


def test_power_event_shares_kubernetes_defaults_window_and_a_preset_does_not():
    default = cost.same_settings_key("kubernetes-default", 1000)
    assert cost.same_settings_key("power-event", 1000) == default
    assert cost.same_settings_key("fast", 1000) != default
