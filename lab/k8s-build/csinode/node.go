package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// identityServer tells the kubelet the driver's name and that it is ready. It offers no controller
// service: attaching is the attacher stand-in's job, outside the node.
type identityServer struct {
	csi.UnimplementedIdentityServer
}

func (identityServer) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: driverName, VendorVersion: "0.1.0"}, nil
}

func (identityServer) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{}, nil
}

func (identityServer) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}

// nodeServer mounts volumes on this node. A volume is the directory <dataDir>/<volume handle>:
//
//	NodeStage:   <dataDir>/<handle>  --bind-->  staging path (one per volume and node)
//	NodePublish: staging path        --bind-->  target path (one per pod), read-only if asked
//
// Every call is idempotent (the kubelet repeats calls after a timeout or a restart), and the
// calls run one at a time so that a repeated call never races the first.
type nodeServer struct {
	csi.UnimplementedNodeServer
	nodeName   string
	kubeletDir string // every staging and target path is below it
	dataDir    string
	mu         sync.Mutex
}

func (s *nodeServer) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	// The node id is the node's name: the kubelet writes it into CSINode, where an attacher reads it.
	return &csi.NodeGetInfoResponse{NodeId: s.nodeName}, nil
}

func (s *nodeServer) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	stage := &csi.NodeServiceCapability{Type: &csi.NodeServiceCapability_Rpc{
		Rpc: &csi.NodeServiceCapability_RPC{Type: csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME},
	}}
	return &csi.NodeGetCapabilitiesResponse{Capabilities: []*csi.NodeServiceCapability{stage}}, nil
}

func (s *nodeServer) NodeStageVolume(_ context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := checkVolume(req.GetVolumeId(), req.GetVolumeCapability()); err != nil {
		return nil, err
	}
	staging, err := s.checkPath("staging_target_path", req.GetStagingTargetPath())
	if err != nil {
		return nil, err
	}
	source := filepath.Join(s.dataDir, req.GetVolumeId())
	if err := os.MkdirAll(source, 0o755); err != nil {
		return nil, status.Errorf(codes.Internal, "creating the volume's directory %s: %v", source, err)
	}
	if err := bindMount(source, staging, false); err != nil {
		return nil, status.Errorf(codes.Internal, "staging %s: %v", req.GetVolumeId(), err)
	}
	log.Printf("staged %s: %s on %s", req.GetVolumeId(), source, staging)
	return &csi.NodeStageVolumeResponse{}, nil
}

func (s *nodeServer) NodeUnstageVolume(_ context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := validateName(req.GetVolumeId()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "volume_id: %v", err)
	}
	staging, err := s.checkPath("staging_target_path", req.GetStagingTargetPath())
	if err != nil {
		return nil, err
	}
	// The kubelet owns the staging directory and removes it itself.
	if err := unmount(staging); err != nil {
		return nil, status.Errorf(codes.Internal, "unstaging %s: %v", req.GetVolumeId(), err)
	}
	log.Printf("unstaged %s from %s", req.GetVolumeId(), staging)
	return &csi.NodeUnstageVolumeResponse{}, nil
}

func (s *nodeServer) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := checkVolume(req.GetVolumeId(), req.GetVolumeCapability()); err != nil {
		return nil, err
	}
	staging, err := s.checkPath("staging_target_path", req.GetStagingTargetPath())
	if err != nil {
		return nil, err
	}
	target, err := s.checkPath("target_path", req.GetTargetPath())
	if err != nil {
		return nil, err
	}
	staged, err := isMountPoint(staging)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "reading the mounts: %v", err)
	}
	if !staged {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is not staged at %s", req.GetVolumeId(), staging)
	}
	if err := bindMount(staging, target, req.GetReadonly()); err != nil {
		return nil, status.Errorf(codes.Internal, "publishing %s: %v", req.GetVolumeId(), err)
	}
	log.Printf("published %s at %s (read-only: %t)", req.GetVolumeId(), target, req.GetReadonly())
	return &csi.NodePublishVolumeResponse{}, nil
}

func (s *nodeServer) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := validateName(req.GetVolumeId()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "volume_id: %v", err)
	}
	target, err := s.checkPath("target_path", req.GetTargetPath())
	if err != nil {
		return nil, err
	}
	if err := unmount(target); err != nil {
		return nil, status.Errorf(codes.Internal, "unpublishing %s: %v", req.GetVolumeId(), err)
	}
	// The plugin created the target directory in NodePublish; the CSI spec has it remove it too.
	if err := os.Remove(target); err != nil && !os.IsNotExist(err) {
		return nil, status.Errorf(codes.Internal, "removing %s: %v", target, err)
	}
	log.Printf("unpublished %s from %s", req.GetVolumeId(), target)
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// dns1123Subdomain is what Kubernetes accepts as an object name. A volume handle of that form is
// also a safe directory name: no '/', and no '.' or '..' (every label starts with a letter or digit).
var dns1123Subdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

func validateName(name string) error {
	if len(name) == 0 || len(name) > 253 || !dns1123Subdomain.MatchString(name) {
		return fmt.Errorf("%q is not a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', at most 253 characters)", name)
	}
	return nil
}

// checkVolume accepts what this driver can do: a filesystem volume used from one node.
func checkVolume(volumeID string, capability *csi.VolumeCapability) error {
	if err := validateName(volumeID); err != nil {
		return status.Errorf(codes.InvalidArgument, "volume_id: %v", err)
	}
	if capability == nil {
		return status.Error(codes.InvalidArgument, "volume_capability is missing")
	}
	if capability.GetMount() == nil {
		return status.Errorf(codes.InvalidArgument, "volume %s: only filesystem (mount) volumes are supported, not raw block", volumeID)
	}
	switch mode := capability.GetAccessMode().GetMode(); mode {
	case csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER,
		csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY,
		csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER,
		csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER:
		return nil
	default:
		return status.Errorf(codes.InvalidArgument, "volume %s: access mode %s is not supported (one node only)", volumeID, mode)
	}
}

// checkPath accepts a clean absolute path below the kubelet's directory, without white space
// (mountinfo escapes white space; the kubelet's paths never contain any). The plugin never mounts
// anywhere else.
func (s *nodeServer) checkPath(field, path string) (string, error) {
	if path == "" {
		return "", status.Errorf(codes.InvalidArgument, "%s is missing", field)
	}
	if !filepath.IsAbs(path) || filepath.Clean(path) != path || strings.ContainsAny(path, " \t\n\\") {
		return "", status.Errorf(codes.InvalidArgument, "%s %q is not a clean absolute path", field, path)
	}
	if !strings.HasPrefix(path, s.kubeletDir+"/") {
		return "", status.Errorf(codes.InvalidArgument, "%s %q is not below the kubelet's directory %s", field, path, s.kubeletDir)
	}
	return path, nil
}
