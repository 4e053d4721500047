package main

// Drives the plugin as the kubelet does, over its two unix sockets, with real bind mounts in a
// temporary directory. Needs root (mount(2)); run it in a private mount namespace:
//
//	cd lab/k8s-build && unshare -m --propagation private go test ./csinode

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	registration "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

func dial(t *testing.T, socket string) *grpc.ClientConn {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(socket); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("socket %s did not appear", socket)
		}
		time.Sleep(20 * time.Millisecond)
	}
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func wantCode(t *testing.T, err error, want codes.Code) {
	t.Helper()
	if status.Code(err) != want {
		t.Fatalf("got %v, want code %s", err, want)
	}
}

func TestPluginAsTheKubeletUsesIt(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test mounts: run it as root in a private mount namespace (see the file's comment)")
	}
	root := t.TempDir()
	cfg := config{nodeName: "ng-worker4", kubeletDir: filepath.Join(root, "kubelet"), dataDir: filepath.Join(root, "data")}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})

	// 1. Registration, as the kubelet's plugin watcher does it.
	reg := registration.NewRegistrationClient(dial(t, cfg.registrationSocket()))
	info, err := reg.GetInfo(ctx, &registration.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Type != registration.CSIPlugin || info.Name != driverName || info.Endpoint != cfg.csiSocket() ||
		len(info.SupportedVersions) != 1 || info.SupportedVersions[0] != "1.0.0" {
		t.Fatalf("GetInfo: %v", info)
	}
	if _, err := reg.NotifyRegistrationStatus(ctx, &registration.RegistrationStatus{PluginRegistered: true}); err != nil {
		t.Fatal(err)
	}

	// 2. Identity and node info, as the kubelet reads them to write CSINode.
	conn := dial(t, cfg.csiSocket())
	identity := csi.NewIdentityClient(conn)
	plugin, err := identity.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	if err != nil || plugin.Name != driverName {
		t.Fatalf("GetPluginInfo: %v %v", plugin, err)
	}
	probe, err := identity.Probe(ctx, &csi.ProbeRequest{})
	if err != nil || !probe.GetReady().GetValue() {
		t.Fatalf("Probe: %v %v", probe, err)
	}
	node := csi.NewNodeClient(conn)
	nodeInfo, err := node.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil || nodeInfo.NodeId != "ng-worker4" {
		t.Fatalf("NodeGetInfo: %v %v", nodeInfo, err)
	}
	caps, err := node.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
	if err != nil || len(caps.Capabilities) != 1 ||
		caps.Capabilities[0].GetRpc().GetType() != csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME {
		t.Fatalf("NodeGetCapabilities: %v %v", caps, err)
	}

	// 3. Stage and publish, each twice (idempotent); a file written in the pod's directory is the volume's.
	capability := &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: "ext4"}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
	staging := filepath.Join(cfg.kubeletDir, "plugins/kubernetes.io/csi", driverName, "abc/globalmount")
	target := filepath.Join(cfg.kubeletDir, "pods/uid/volumes/kubernetes.io~csi/lab-db-0/mount")
	publish := &csi.NodePublishVolumeRequest{VolumeId: "db-0", StagingTargetPath: staging, TargetPath: target, VolumeCapability: capability}

	_, err = node.NodePublishVolume(ctx, publish)
	wantCode(t, err, codes.FailedPrecondition) // not staged yet
	for i := 0; i < 2; i++ {
		if _, err := node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "db-0", StagingTargetPath: staging, VolumeCapability: capability}); err != nil {
			t.Fatalf("NodeStageVolume #%d: %v", i+1, err)
		}
		if _, err := node.NodePublishVolume(ctx, publish); err != nil {
			t.Fatalf("NodePublishVolume #%d: %v", i+1, err)
		}
	}
	if err := os.WriteFile(filepath.Join(target, "written-by-pod"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cfg.dataDir, "db-0", "written-by-pod")); err != nil {
		t.Fatalf("the pod's file is not in the volume's directory: %v", err)
	}

	// 4. Read-only publish of the same volume to a second target.
	readOnly := filepath.Join(cfg.kubeletDir, "pods/uid2/volumes/kubernetes.io~csi/lab-db-0/mount")
	if _, err := node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "db-0", StagingTargetPath: staging, TargetPath: readOnly, VolumeCapability: capability, Readonly: true}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(readOnly, "nope"), nil, 0o644); err == nil {
		t.Fatal("a read-only publish accepted a write")
	}

	// 5. Honest errors: bad handles, relative paths or outside the kubelet's, block volumes, multi-node access.
	_, err = node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "../etc", StagingTargetPath: staging, VolumeCapability: capability})
	wantCode(t, err, codes.InvalidArgument)
	_, err = node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "db-1", StagingTargetPath: "relative/path", VolumeCapability: capability})
	wantCode(t, err, codes.InvalidArgument)
	_, err = node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "db-0", StagingTargetPath: staging, TargetPath: filepath.Join(root, "elsewhere"), VolumeCapability: capability})
	wantCode(t, err, codes.InvalidArgument) // outside the kubelet's directory
	block := &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}, AccessMode: capability.AccessMode}
	_, err = node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "db-1", StagingTargetPath: staging + "2", VolumeCapability: block})
	wantCode(t, err, codes.InvalidArgument)
	multi := &csi.VolumeCapability{AccessType: capability.AccessType, AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER}}
	_, err = node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "db-1", StagingTargetPath: staging + "2", VolumeCapability: multi})
	wantCode(t, err, codes.InvalidArgument)

	// 6. Unpublish and unstage, each twice: mounts gone, target removed, the data stays.
	for _, path := range []string{target, readOnly} {
		for i := 0; i < 2; i++ {
			if _, err := node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: "db-0", TargetPath: path}); err != nil {
				t.Fatalf("NodeUnpublishVolume #%d: %v", i+1, err)
			}
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("target %s still exists: %v", path, err)
		}
	}
	for i := 0; i < 2; i++ {
		if _, err := node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: "db-0", StagingTargetPath: staging}); err != nil {
			t.Fatalf("NodeUnstageVolume #%d: %v", i+1, err)
		}
	}
	if mounted, err := isMountPoint(staging); err != nil || mounted {
		t.Fatalf("staging path still mounted: %v %v", mounted, err)
	}
	if _, err := os.Stat(filepath.Join(cfg.dataDir, "db-0", "written-by-pod")); err != nil {
		t.Fatalf("unstaging lost the volume's data: %v", err)
	}

	// 7. A refused registration stops the plugin with the kubelet's reason, and its socket goes.
	if _, err := reg.NotifyRegistrationStatus(ctx, &registration.RegistrationStatus{PluginRegistered: false, Error: "test refusal"}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		done <- err // for the cleanup
		if err == nil {
			t.Fatal("run returned no error after a refused registration")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the plugin kept running after a refused registration")
	}
	if _, err := os.Stat(cfg.registrationSocket()); !os.IsNotExist(err) {
		t.Fatalf("registration socket left behind: %v", err)
	}
}
