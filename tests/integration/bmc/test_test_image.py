"""The BMC tests' tiny container image: packed from regular files only, and it really runs."""

from __future__ import annotations

import shutil
import tarfile

from bmclib import image_tag_for, podman, running_machine, shared_libraries, write_rootfs


def test_rootfs_holds_only_regular_files(tmp_path):
    """A symlinked loader (Debian's /lib64/ld-linux-x86-64.so.2) would dangle inside the image."""
    sleep = shutil.which("sleep")
    archive = tmp_path / "rootfs.tar"
    write_rootfs(archive, sleep)
    with tarfile.open(archive) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert "bin/sleep" in members
    for library in shared_libraries(sleep):
        member = members[library.lstrip("/")]
        assert member.isfile(), f"{library} is packed as a {'link' if member.issym() else 'non-file'}"
        assert member.size > 0
    assert all(m.isfile() for m in members.values()), [m.name for m in members.values() if not m.isfile()]


def test_image_tag_follows_content():
    sleep = shutil.which("sleep")
    tag = image_tag_for(sleep)
    assert tag.startswith("localhost/nodeguard-bmctest:")
    assert tag == image_tag_for(sleep)
    assert tag != image_tag_for(shutil.which("true"))


def test_image_runs_a_container(test_image):
    """The fixture builds and probes the image; a container of it stays running until removed."""
    with running_machine("ng-bmctest-image-probe", test_image) as name:
        state = podman("container", "inspect", "--format", "{{.State.Status}}", name).stdout.strip()
    assert state == "running"
