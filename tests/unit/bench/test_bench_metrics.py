"""Write rates are computed from /metrics counters the way docs/benchmarks/README.md says."""

import metrics

APISERVER_BEFORE = """
apiserver_request_total{code="200",resource="leases",subresource="",verb="PUT"} 100
apiserver_request_total{code="200",resource="nodes",subresource="status",verb="PATCH"} 10
apiserver_request_total{code="200",resource="nodes",subresource="",verb="GET"} 999
apiserver_request_body_size_bytes_sum{resource="leases",verb="update"} 50000
apiserver_request_body_size_bytes_sum{resource="nodes",verb="get"} 7
"""
APISERVER_AFTER = """
apiserver_request_total{code="200",resource="leases",subresource="",verb="PUT"} 160
apiserver_request_total{code="409",resource="leases",subresource="",verb="PUT"} 2
apiserver_request_total{code="200",resource="nodes",subresource="status",verb="PATCH"} 40
apiserver_request_total{code="200",resource="nodes",subresource="",verb="GET"} 5000
apiserver_request_body_size_bytes_sum{resource="leases",verb="update"} 80000
apiserver_request_body_size_bytes_sum{resource="nodes",verb="get"} 70000
"""


def snapshot(apiserver, etcd_db, etcd_received):
    result = metrics.Snapshot()
    metrics.parse_apiserver(apiserver, result)
    metrics.parse_etcd(f"etcd_mvcc_db_total_size_in_bytes {etcd_db}\n"
                       f"etcd_network_client_grpc_received_bytes_total {etcd_received}\n", result)
    return result


def test_window_counts_write_verbs_only_and_all_response_codes():
    window = metrics.window(snapshot(APISERVER_BEFORE, 1000, 0), snapshot(APISERVER_AFTER, 4000, 600), 30.0)
    assert window["write_requests"] == 92  # 62 lease PUTs (any code) + 30 status PATCHes; GETs ignored
    assert window["write_rps"] == round(92 / 30, 2)
    assert window["writes_per_resource"] == {"PATCH nodes/status": 30, "PUT leases": 62}
    assert window["write_bytes_per_s"] == 1000.0  # 30000 body bytes of updates in 30s; GET bodies ignored
    assert window["etcd_received_bytes_per_s"] == 20.0
    assert window["etcd_db_growth_bytes_per_min"] == 6000.0
