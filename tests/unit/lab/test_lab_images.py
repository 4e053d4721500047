"""The real-kubelet worker's pod images (lab/workers/kubelet/lab-images.py): OCI archives containerd imports.

containerd only imports an archive whose index, manifest, config and layer agree (digests and sizes),
and the CRI only finds the image under the name the workloads use; the node makes them at every boot,
so the bytes must be the same each time (no re-import churn, a stable image id).
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import tarfile
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "lab" / "workers" / "kubelet" / "lab-images.py"
spec = importlib.util.spec_from_file_location("lab_images", SCRIPT)
lab_images = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lab_images)


@pytest.fixture
def binaries(tmp_path):
    pause = tmp_path / "pause"
    pause.write_bytes(b"\x7fELF pause program")
    busybox = tmp_path / "busybox"
    busybox.write_text("#!/bin/sh\nprintf 'busybox\\nsh\\nsleep\\ncat\\n'\n")
    busybox.chmod(0o755)
    return pause, busybox


def members(data: bytes) -> dict[str, tarfile.TarInfo | bytes]:
    out = {}
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        for info in archive.getmembers():
            out[info.name] = archive.extractfile(info).read() if info.isfile() else info
    return out


def blob(files: dict, descriptor: dict) -> bytes:
    data = files["blobs/sha256/" + descriptor["digest"].split(":", 1)[1]]
    assert descriptor["digest"] == "sha256:" + hashlib.sha256(data).hexdigest()
    assert descriptor["size"] == len(data)
    return data


def image(data: bytes) -> tuple[dict, dict, dict[str, tarfile.TarInfo | bytes]]:
    files = members(data)
    assert json.loads(files["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    index = json.loads(files["index.json"])
    [entry] = index["manifests"]
    manifest = json.loads(blob(files, entry))
    config = json.loads(blob(files, manifest["config"]))
    [layer_descriptor] = manifest["layers"]
    layer = blob(files, layer_descriptor)
    # The config names the uncompressed layer by its digest: containerd checks it when unpacking.
    assert config["rootfs"]["diff_ids"] == ["sha256:" + hashlib.sha256(layer).hexdigest()]
    return entry, config, members(layer)


def test_pause_image_is_named_as_the_workloads_and_sandbox_image_say(binaries):
    pause = binaries[0]
    entry, config, layer = image(lab_images.oci_archive("registry.k8s.io/pause:3.10", pause, ["/pause"]))
    assert entry["annotations"]["io.containerd.image.name"] == "registry.k8s.io/pause:3.10"
    assert entry["platform"] == {"architecture": "amd64", "os": "linux"}
    assert config["config"]["Entrypoint"] == ["/pause"]
    assert layer["pause"] == pause.read_bytes()


def test_busybox_image_has_a_link_per_applet(binaries):
    busybox = binaries[1]
    entry, config, layer = image(lab_images.oci_archive("localhost/nodeguard-lab/busybox:1.35", busybox, ["/bin/sh"]))
    assert entry["annotations"]["io.containerd.image.name"] == "localhost/nodeguard-lab/busybox:1.35"
    assert layer["bin/busybox"] == busybox.read_bytes()
    for applet in ("sh", "sleep", "cat"):
        assert layer[f"bin/{applet}"].issym() and layer[f"bin/{applet}"].linkname == "busybox"
    assert "bin/busybox" in layer and not isinstance(layer["tmp"], bytes) and layer["tmp"].mode == 0o1777
    assert config["config"]["Entrypoint"] == ["/bin/sh"]


def test_archives_are_the_same_bytes_at_every_boot(binaries):
    pause, busybox = binaries
    for name, binary in (("registry.k8s.io/pause:3.10", pause), ("localhost/nodeguard-lab/busybox:1.35", busybox)):
        assert lab_images.oci_archive(name, binary, ["/x"]) == lab_images.oci_archive(name, binary, ["/x"])
