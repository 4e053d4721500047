package main

import (
	"context"
	"fmt"
	"log"

	registration "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// registrationServer answers the kubelet's plugin watcher, which finds the registration socket in
// <kubelet-dir>/plugins_registry and asks what kind of plugin it is and where its CSI endpoint is.
type registrationServer struct {
	registration.UnimplementedRegistrationServer
	endpoint string     // the CSI socket's path
	refused  chan error // receives the kubelet's reason when it refuses the plugin
}

func (s *registrationServer) GetInfo(_ context.Context, _ *registration.InfoRequest) (*registration.PluginInfo, error) {
	log.Printf("kubelet asked for the plugin's info; CSI endpoint %s", s.endpoint)
	return &registration.PluginInfo{
		Type:              registration.CSIPlugin,
		Name:              driverName,
		Endpoint:          s.endpoint,
		SupportedVersions: []string{"1.0.0"}, // the CSI spec version the Node service implements
	}, nil
}

// NotifyRegistrationStatus is the kubelet's answer. A refused plugin stops, with the kubelet's reason,
// so that systemd starts it again and the kubelet sees a fresh registration socket.
func (s *registrationServer) NotifyRegistrationStatus(_ context.Context, status *registration.RegistrationStatus) (*registration.RegistrationStatusResponse, error) {
	if status.PluginRegistered {
		log.Printf("kubelet registered %s", driverName)
	} else {
		select {
		case s.refused <- fmt.Errorf("kubelet refused the registration of %s: %s", driverName, status.Error):
		default: // a refusal is already being handled
		}
	}
	return &registration.RegistrationStatusResponse{}, nil
}
