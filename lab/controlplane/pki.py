"""Create the lab control plane's certificates and kubeconfigs, laid out as kubeadm does.

Run on the host; writes under lab/.state/pki (gitignored, keys never committed):

    pki/kubernetes/pki/...            -> copied to the control-plane node's /etc/kubernetes/pki
    pki/kubernetes/*.conf             -> its /etc/kubernetes/{admin,super-admin,controller-manager,scheduler,kubelet}.conf
    pki/nodes/<node>.conf             -> each worker's /etc/kubernetes/kubelet.conf (identity system:node:<node>)
    ../admin.kubeconfig               -> the host's kubeconfig: https://127.0.0.1:<published port>, CA verified

Existing keys and certificates are kept (idempotent); missing ones are created.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import ipaddress
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CLUSTER_NAME = "kubernetes"
SERVICE_IP = "10.96.0.1"  # first address of kubeadm's default service CIDR 10.96.0.0/12
TEN_YEARS = datetime.timedelta(days=3650)
ONE_YEAR = datetime.timedelta(days=365)


def load_or_create_key(path: Path) -> rsa.RSAPrivateKey:
    if path.exists():
        return serialization.load_pem_private_key(path.read_bytes(), password=None)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    path.chmod(0o600)
    return key


def name(common_name: str, organization: str | None = None) -> x509.Name:
    attributes = []
    if organization:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attributes)


class Pair:
    """A certificate and its key, as PEM files <base>.crt and <base>.key."""

    def __init__(self, base: Path):
        self.crt_path = base.with_suffix(".crt")
        self.key_path = base.with_suffix(".key")

    @property
    def cert(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.crt_path.read_bytes())

    @property
    def key(self) -> rsa.RSAPrivateKey:
        return serialization.load_pem_private_key(self.key_path.read_bytes(), password=None)

    def exists(self) -> bool:
        return self.crt_path.exists() and self.key_path.exists()


def make_ca(base: Path, common_name: str) -> Pair:
    pair = Pair(base)
    if pair.exists():
        return pair
    key = load_or_create_key(pair.key_path)
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name(common_name))
        .issuer_name(name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + TEN_YEARS)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=True,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                     crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    pair.crt_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return pair


def make_leaf(base: Path, ca: Pair, common_name: str, *, organization: str | None = None,
              server: bool = False, client: bool = False, sans: list[str] = ()) -> Pair:
    pair = Pair(base)
    if pair.exists():
        return pair
    key = load_or_create_key(pair.key_path)
    usages = ([ExtendedKeyUsageOID.SERVER_AUTH] if server else []) + ([ExtendedKeyUsageOID.CLIENT_AUTH] if client else [])
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name(common_name, organization))
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + ONE_YEAR)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=True,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                     crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), critical=False)
    )
    if sans:
        entries = []
        for san in sans:
            try:
                entries.append(x509.IPAddress(ipaddress.ip_address(san)))
            except ValueError:
                entries.append(x509.DNSName(san))
        builder = builder.add_extension(x509.SubjectAlternativeName(entries), critical=False)
    cert = builder.sign(ca.key, hashes.SHA256())
    pair.crt_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return pair


def apiserver_sans(base: Path) -> list:
    """The subject alternative names of an issued certificate, as strings."""
    names = Pair(base).cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return [str(entry.value) for entry in names]


def b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def write_kubeconfig(path: Path, *, server: str, ca: Pair, user: str, client: Pair) -> None:
    context = f"{user}@{CLUSTER_NAME}"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CLUSTER_NAME,
                      "cluster": {"server": server, "certificate-authority-data": b64(ca.crt_path)}}],
        "users": [{"name": user,
                   "user": {"client-certificate-data": b64(client.crt_path),
                            "client-key-data": b64(client.key_path)}}],
        "contexts": [{"name": context, "context": {"cluster": CLUSTER_NAME, "user": user}}],
        "current-context": context,
        "preferences": {},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)


def write_service_account_keys(pki: Path) -> None:
    key = load_or_create_key(pki / "sa.key")
    pub = pki / "sa.pub"
    if not pub.exists():
        pub.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                      serialization.PublicFormat.SubjectPublicKeyInfo))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--state", type=Path, required=True, help="lab/.state directory")
    parser.add_argument("--node", default="ng-cp1", help="control-plane node name")
    parser.add_argument("--ip", required=True, help="control-plane node address on the lab network")
    parser.add_argument("--host-port", type=int, default=16443, help="apiserver port published on 127.0.0.1")
    parser.add_argument("--workers", nargs="*", default=[], help="worker node names that get a kubelet.conf")
    parser.add_argument("--node-server", help="API server URL in every node's kubelet.conf (default: the control plane's own)")
    parser.add_argument("--lb-sans", nargs="*", default=[],
                        help="the API server load balancer's address and name, in the apiserver certificate's SANs")
    args = parser.parse_args()

    root = args.state / "pki"
    etc = root / "kubernetes"
    pki = etc / "pki"
    pki.mkdir(parents=True, exist_ok=True)
    local_api = f"https://{args.ip}:6443"
    # The kubelets' server: the control plane's own, or its load balancer (lab/lb) as kubeadm's
    # controlPlaneEndpoint; the controllers and scheduler always talk to the local API server.
    node_api = args.node_server or local_api

    ca = make_ca(pki / "ca", "kubernetes")
    make_leaf(pki / "apiserver", ca, "kube-apiserver", server=True, sans=[
        args.node, "kubernetes", "kubernetes.default", "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local", "localhost", SERVICE_IP, args.ip, "127.0.0.1", *args.lb_sans])
    # A lab created before the load balancer existed has a certificate without it: say so instead of a TLS error.
    missing = sorted(set(args.lb_sans) - set(apiserver_sans(pki / "apiserver")))
    if missing and args.node_server:
        raise SystemExit(f"pki.py: {pki / 'apiserver.crt'} was issued without the load balancer's {', '.join(missing)}: "
                         "take the lab down and remove lab/.state/pki to issue it again")
    make_leaf(pki / "apiserver-kubelet-client", ca, "kube-apiserver-kubelet-client",
              organization="kubeadm:cluster-admins", client=True)

    front_proxy_ca = make_ca(pki / "front-proxy-ca", "front-proxy-ca")
    make_leaf(pki / "front-proxy-client", front_proxy_ca, "front-proxy-client", client=True)

    etcd_ca = make_ca(pki / "etcd" / "ca", "etcd-ca")
    etcd_sans = [args.node, "localhost", args.ip, "127.0.0.1", "::1"]
    make_leaf(pki / "etcd" / "server", etcd_ca, args.node, server=True, client=True, sans=etcd_sans)
    make_leaf(pki / "etcd" / "peer", etcd_ca, args.node, server=True, client=True, sans=etcd_sans)
    make_leaf(pki / "etcd" / "healthcheck-client", etcd_ca, "kube-etcd-healthcheck-client", client=True)
    make_leaf(pki / "apiserver-etcd-client", etcd_ca, "kube-apiserver-etcd-client", client=True)

    write_service_account_keys(pki)

    # The kubeconfigs kubeadm writes into /etc/kubernetes, each with its own client certificate.
    clients = root / "clients"
    identities = {
        "admin.conf": ("kubernetes-admin", "kubeadm:cluster-admins"),
        "super-admin.conf": ("kubernetes-super-admin", "system:masters"),
        "controller-manager.conf": ("system:kube-controller-manager", None),
        "scheduler.conf": ("system:kube-scheduler", None),
        "kubelet.conf": (f"system:node:{args.node}", "system:nodes"),
    }
    for filename, (user, group) in identities.items():
        client = make_leaf(clients / filename.removesuffix(".conf"), ca, user, organization=group, client=True)
        server = node_api if filename == "kubelet.conf" else local_api
        write_kubeconfig(etc / filename, server=server, ca=ca, user=user, client=client)

    # Workers: kubelet identities, as `kubeadm join` would leave them after TLS bootstrap.
    for worker in args.workers:
        client = make_leaf(clients / "nodes" / worker, ca, f"system:node:{worker}",
                           organization="system:nodes", client=True)
        write_kubeconfig(root / "nodes" / f"{worker}.conf", server=node_api, ca=ca,
                         user=f"system:node:{worker}", client=client)

    # The host's kubeconfig: admin identity through the port published on loopback.
    admin = Pair(clients / "admin")
    write_kubeconfig(args.state / "admin.kubeconfig", server=f"https://127.0.0.1:{args.host_port}",
                     ca=ca, user="kubernetes-admin", client=admin)
    super_admin = Pair(clients / "super-admin")
    write_kubeconfig(args.state / "super-admin.kubeconfig", server=f"https://127.0.0.1:{args.host_port}",
                     ca=ca, user="kubernetes-super-admin", client=super_admin)


if __name__ == "__main__":
    main()
