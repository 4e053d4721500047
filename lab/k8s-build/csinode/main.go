// Command nodeguard-csi-node is the node half of the lab's CSI driver lab.csi.nodeguard.dev, for a
// real kubelet. The controller half is the external-attacher stand-in (lab/storage/csi_attacher.py):
// it marks VolumeAttachments attached; there is no storage behind the driver. On the node a volume
// is a plain directory, <data-dir>/<volume handle>, that this plugin bind-mounts where the kubelet
// asks (NodeStage: to the volume's staging path; NodePublish: from there into the pod's directory).
//
// It serves two unix sockets, as a CSI driver plus node-driver-registrar would:
//   - <kubelet-dir>/plugins_registry/lab.csi.nodeguard.dev-reg.sock: the kubelet's plugin registration
//     API. The kubelet finds the socket, calls GetInfo, learns the CSI endpoint below, calls NodeGetInfo
//     there and writes the driver into the node's CSINode; then it calls NotifyRegistrationStatus.
//   - <kubelet-dir>/plugins/lab.csi.nodeguard.dev/csi.sock: the CSI Identity and Node services.
//
// Run as a systemd unit in the node before kubelet.service (lab/workers/csi-node.service).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	registration "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// driverName is the CSIDriver object's name in lab/storage/csi.yaml and the PVs' spec.csi.driver.
const driverName = "lab.csi.nodeguard.dev"

// config is everything the plugin needs to know about the node it runs on.
type config struct {
	nodeName   string // the Kubernetes node name: also the CSI node id (what CSINode and VolumeAttachments name)
	kubeletDir string // the kubelet's root directory, /var/lib/kubelet
	dataDir    string // where the volumes' directories live on this node
}

func (c config) csiSocket() string {
	return filepath.Join(c.kubeletDir, "plugins", driverName, "csi.sock")
}

func (c config) registrationSocket() string {
	return filepath.Join(c.kubeletDir, "plugins_registry", driverName+"-reg.sock")
}

func main() {
	var cfg config
	flag.StringVar(&cfg.nodeName, "node-name", "", "this node's Kubernetes name (required; the kubelet's node name)")
	flag.StringVar(&cfg.kubeletDir, "kubelet-dir", "/var/lib/kubelet", "the kubelet's root directory")
	flag.StringVar(&cfg.dataDir, "data-dir", "/var/lib/nodeguard-csi/volumes", "directory holding one directory per volume")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.LUTC)
	log.SetPrefix("csi-node: ")
	if err := validateName(cfg.nodeName); err != nil {
		log.Fatalf("--node-name: %v", err)
	}
	if !filepath.IsAbs(cfg.kubeletDir) || !filepath.IsAbs(cfg.dataDir) {
		log.Fatal("--kubelet-dir and --data-dir must be absolute paths")
	}
	cfg.kubeletDir, cfg.dataDir = filepath.Clean(cfg.kubeletDir), filepath.Clean(cfg.dataDir)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		log.Fatal(err)
	}
}

// run serves both sockets until ctx ends (a signal) or the kubelet refuses the registration.
// The CSI socket is up before the registration socket, so the kubelet never learns of an
// endpoint that does not answer yet.
func run(ctx context.Context, cfg config) error {
	csiListener, err := listenUnix(cfg.csiSocket())
	if err != nil {
		return err
	}
	csiServer := grpc.NewServer()
	csi.RegisterIdentityServer(csiServer, identityServer{})
	csi.RegisterNodeServer(csiServer, &nodeServer{nodeName: cfg.nodeName, kubeletDir: cfg.kubeletDir, dataDir: cfg.dataDir})
	go serve(csiServer, csiListener)

	regListener, err := listenUnix(cfg.registrationSocket())
	if err != nil {
		csiServer.GracefulStop()
		return err
	}
	refused := make(chan error, 1)
	regServer := grpc.NewServer()
	registration.RegisterRegistrationServer(regServer, &registrationServer{endpoint: cfg.csiSocket(), refused: refused})
	go serve(regServer, regListener)
	log.Printf("serving %s for node %s: registration %s, CSI %s", driverName, cfg.nodeName,
		cfg.registrationSocket(), cfg.csiSocket())

	var result error
	select {
	case <-ctx.Done():
		log.Print("stopping")
	case result = <-refused:
	}
	// Calls under way finish (the kubelet gets its answer); removing the registration socket
	// tells the kubelet the plugin is gone.
	regServer.GracefulStop()
	_ = os.Remove(cfg.registrationSocket())
	csiServer.GracefulStop()
	return result
}

func serve(server *grpc.Server, listener net.Listener) {
	if err := server.Serve(listener); err != nil {
		log.Printf("gRPC server on %s stopped: %v", listener.Addr(), err)
	}
}

// listenUnix listens on a unix socket at path, replacing a socket left by an earlier run
// (a powered-off node leaves its sockets behind).
func listenUnix(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("removing the old socket %s: %w", path, err)
	}
	return net.Listen("unix", path)
}
