"""Both ends of bench/deadconn.py's dead TCP connections, run inside the lab's worker containers.

Copied into the containers and started with their own python3 (Debian bookworm), so the sockets
live in the workers' network namespaces with the sysctls set there. Standard library only.

    deadconn_peer.py serve PORT...
        echo server: answers each "ping" line with "pong", reads and drops everything else.
        Runs until the container is powered off.
    deadconn_peer.py client HOST DATA_PORTS IDLE_PORTS LIMIT
        one connection per port (comma-separated lists, either may be empty), SO_KEEPALIVE on the
        idle ones, one ping/pong on each; prints {"event": "ready", ...} and waits for a line "off"
        on stdin (the server has been powered off); then writes 64 bytes on each data connection
        and waits, at most LIMIT seconds, until every socket reports an error. Prints one JSON
        line per event and {"event": "done", ...} at the end.

Timestamps are time.monotonic() (CLOCK_MONOTONIC: the same clock in every container and on the host).
"""

from __future__ import annotations

import errno
import json
import select
import socket
import struct
import subprocess
import sys
import threading
import time

SYSCTLS = ("tcp_retries2", "tcp_keepalive_time", "tcp_keepalive_intvl", "tcp_keepalive_probes",
           "tcp_retries1", "tcp_syn_retries")
TCP_USER_TIMEOUT = getattr(socket, "TCP_USER_TIMEOUT", 18)
SAMPLE_SECONDS = 0.01
_print_lock = threading.Lock()


def emit(event: str, **fields) -> None:
    with _print_lock:
        sys.stdout.write(json.dumps({"event": event, "t": time.monotonic(), **fields}) + "\n")
        sys.stdout.flush()


def serve(ports: list[int]) -> None:
    listeners = []
    for port in ports:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("0.0.0.0", port))
        listener.listen(16)
        listeners.append(listener)
    emit("listening", ports=ports)
    clients: dict[socket.socket, bytes] = {}
    while True:
        readable = select.select(listeners + list(clients), [], [])[0]
        for sock in readable:
            if sock in listeners:
                conn = sock.accept()[0]
                clients[conn] = b""
                continue
            data = sock.recv(65536)
            if not data:
                clients.pop(sock).close()
                continue
            buffered = clients[sock] + data
            while b"\n" in buffered:
                line, buffered = buffered.split(b"\n", 1)
                if line == b"ping":
                    sock.sendall(b"pong\n")
            clients[sock] = buffered[-64:]


def tcp_info(sock: socket.socket) -> dict:
    """The fields of struct tcp_info (linux/tcp.h) this benchmark reads."""
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    state, _ca, retransmits, probes, backoff = struct.unpack_from("7B", raw, 0)[:5]
    rto_us, = struct.unpack_from("I", raw, 8)
    unacked, = struct.unpack_from("I", raw, 24)
    rtt_us, rttvar_us = struct.unpack_from("2I", raw, 68)
    total_retrans, = struct.unpack_from("I", raw, 100)
    return {"state": state, "retransmits": retransmits, "probes": probes, "backoff": backoff,
            "rto_ms": rto_us / 1000, "unacked": unacked, "rtt_ms": rtt_us / 1000,
            "rttvar_ms": rttvar_us / 1000, "total_retrans": total_retrans}


def neighbour_monitor(host: str) -> None:
    """Every change of the server's ARP entry (ip monitor neigh), stamped with the monotonic clock."""
    try:
        process = subprocess.Popen(["stdbuf", "-oL", "ip", "monitor", "neigh"], stdout=subprocess.PIPE, text=True)
    except OSError as error:
        emit("neigh-monitor-unavailable", error=str(error))
        return
    for line in process.stdout:
        if line.startswith(host + " "):
            emit("neigh", line=line.strip())


def wait_for_error(name: str, sock: socket.socket, results: dict) -> None:
    try:
        data = sock.recv(4096)
        results[name] = {"t_end": time.monotonic(), "outcome": "eof" if not data else "data"}
    except OSError as error:
        results[name] = {"t_end": time.monotonic(), "outcome": "error", "errno": error.errno,
                         "error": errno.errorcode.get(error.errno, str(error.errno))}
    emit("closed", conn=name, **results[name])


def connect(host: str, port: int) -> socket.socket:
    """Connect, retrying for a while: the server may still be starting."""
    deadline = time.monotonic() + 30
    while True:
        try:
            return socket.create_connection((host, port), timeout=5)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def client(host: str, data_ports: list[int], idle_ports: list[int], limit: float) -> None:
    sysctls = {}
    for key in SYSCTLS:
        with open(f"/proc/sys/net/ipv4/{key}", encoding="ascii") as handle:
            sysctls[key] = int(handle.read().split()[0])
    threading.Thread(target=neighbour_monitor, args=(host,), daemon=True).start()
    conns: dict[str, dict] = {}
    for kind, ports in (("data", data_ports), ("idle", idle_ports)):
        for port in ports:
            sock = connect(host, port)
            sock.settimeout(None)
            if kind == "idle":
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            conns[f"{kind}-{port}"] = {"kind": kind, "port": port, "sock": sock}
    # The idle connections' keepalive clock starts at the last segment received: the pong.
    for name, conn in conns.items():
        sock = conn["sock"]
        sock.sendall(b"ping\n")
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = sock.recv(64)
            if not chunk:
                raise SystemExit(f"{name}: server closed during ping")
            reply += chunk
        conn["t_last_recv"] = time.monotonic()
        conn["user_timeout_ms"] = sock.getsockopt(socket.IPPROTO_TCP, TCP_USER_TIMEOUT)
        conn["info_ready"] = tcp_info(sock)
    results: dict[str, dict] = {}
    for name, conn in conns.items():
        if conn["kind"] == "idle":
            threading.Thread(target=wait_for_error, args=(name, conn["sock"], results), daemon=True).start()
    emit("ready", sysctls=sysctls,
         conns={name: {k: v for k, v in conn.items() if k != "sock"} for name, conn in conns.items()})
    if sys.stdin.readline().strip() != "off":
        raise SystemExit("expected 'off' on stdin")
    for name, conn in conns.items():
        if conn["kind"] == "data":
            conn["t_send"] = time.monotonic()
            conn["sock"].sendall(b"x" * 63 + b"\n")
            threading.Thread(target=wait_for_error, args=(name, conn["sock"], results), daemon=True).start()
    emit("sent", t_send={name: conn["t_send"] for name, conn in conns.items() if "t_send" in conn})
    # Every change of the retransmission state, so the page can show when each timer fired.
    last: dict[str, tuple] = {}
    timelines: dict[str, list] = {name: [] for name in conns}
    deadline = time.monotonic() + limit
    while len(results) < len(conns) and time.monotonic() < deadline:
        for name, conn in conns.items():
            if name in results:
                continue
            try:
                info = tcp_info(conn["sock"])
            except OSError:
                continue
            key = (info["total_retrans"], info["probes"], info["backoff"], info["state"])
            if key != last.get(name):
                last[name] = key
                timelines[name].append({"t": time.monotonic(), **info})
        time.sleep(SAMPLE_SECONDS)
    report = {}
    for name, conn in conns.items():
        entry = {k: v for k, v in conn.items() if k != "sock"}
        entry.update(results.get(name, {"outcome": "open", "t_end": None}))
        entry["timeline"] = timelines[name]
        report[name] = entry
    emit("done", sysctls=sysctls, conns=report)


def main(argv: list[str]) -> None:
    def ports(text: str) -> list[int]:
        return [int(port) for port in text.split(",") if port]

    if argv[:1] == ["serve"]:
        serve([int(port) for port in argv[1:]])
    elif argv[:1] == ["client"] and len(argv) == 5:
        client(argv[1], ports(argv[2]), ports(argv[3]), float(argv[4]))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
