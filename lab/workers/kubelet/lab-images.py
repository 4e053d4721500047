"""Makes the lab's pod images in the node and imports them into containerd: nothing is ever pulled.

- registry.k8s.io/pause:3.10: the project's pause program (lab/k8s-build/pause, bind-mounted from the
  build cache at /usr/local/bin/pause). The lab workloads and containerd's sandbox_image name this tag;
  with imagePullPolicy IfNotPresent the kubelet finds it here.
- localhost/nodeguard-lab/busybox:1.35: Debian's busybox-static with one link per applet.

Each image is a one-layer OCI archive written with fixed timestamps (the same digest at every boot),
imported with `ctr -n k8s.io images import` into the native snapshotter (containerd-config.toml).
Runs as nodeguard-lab-images.service, after containerd and before the kubelet.
"""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import tarfile
import tempfile
from pathlib import Path

PAUSE = ("registry.k8s.io/pause:3.10", Path("/usr/local/bin/pause"), ["/pause"])
BUSYBOX = ("localhost/nodeguard-lab/busybox:1.35", Path("/bin/busybox"), ["/bin/sh"])
PLATFORM = {"architecture": "amd64", "os": "linux"}


def add_file(archive: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, 0
    archive.addfile(info, io.BytesIO(data))


def add_link(archive: tarfile.TarFile, name: str, target: str) -> None:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode, info.mtime = tarfile.SYMTYPE, target, 0o777, 0
    archive.addfile(info)


def layer(binary: Path, name: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        data = binary.read_bytes()
        if name == PAUSE[0]:
            add_file(archive, "pause", data, 0o755)
        else:
            for directory in ("bin", "tmp", "etc"):
                info = tarfile.TarInfo(directory)
                info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o1777 if directory == "tmp" else 0o755, 0
                archive.addfile(info)
            add_file(archive, "bin/busybox", data, 0o755)
            applets = subprocess.run([str(binary), "--list"], check=True, capture_output=True, text=True).stdout.split()
            for applet in sorted(set(applets) - {"busybox"}):
                add_link(archive, f"bin/{applet}", "busybox")
            add_file(archive, "etc/passwd", b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n")
            add_file(archive, "etc/group", b"root:x:0:\nnogroup:x:65534:\n")
    return buffer.getvalue()


def blob(archive: tarfile.TarFile, data: bytes, media_type: str) -> dict:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    add_file(archive, "blobs/sha256/" + digest.split(":", 1)[1], data)
    return {"mediaType": media_type, "digest": digest, "size": len(data)}


def oci_archive(name: str, binary: Path, entrypoint: list[str]) -> bytes:
    layer_data = layer(binary, name)
    diff_id = "sha256:" + hashlib.sha256(layer_data).hexdigest()
    config = {
        **PLATFORM,
        "config": {"Entrypoint": entrypoint, "Env": ["PATH=/bin"], "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    }
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        layer_desc = blob(archive, layer_data, "application/vnd.oci.image.layer.v1.tar")
        config_desc = blob(archive, json.dumps(config).encode(), "application/vnd.oci.image.config.v1+json")
        manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "config": config_desc, "layers": [layer_desc]}
        manifest_desc = blob(archive, json.dumps(manifest).encode(), manifest["mediaType"])
        manifest_desc["platform"] = PLATFORM
        manifest_desc["annotations"] = {"io.containerd.image.name": name,
                                        "org.opencontainers.image.ref.name": name.rsplit(":", 1)[1]}
        index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                 "manifests": [manifest_desc]}
        add_file(archive, "index.json", json.dumps(index).encode())
        add_file(archive, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
    return buffer.getvalue()


def main() -> None:
    for name, binary, entrypoint in (PAUSE, BUSYBOX):
        with tempfile.NamedTemporaryFile(suffix=".tar") as handle:
            handle.write(oci_archive(name, binary, entrypoint))
            handle.flush()
            subprocess.run(["ctr", "-n", "k8s.io", "images", "import", "--snapshotter", "native", handle.name],
                           check=True, stdout=subprocess.DEVNULL)
        print(f"imported {name}")


if __name__ == "__main__":
    main()
