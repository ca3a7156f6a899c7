package main

import (
	"errors"
	"fmt"

	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/image"
)

// openImage opens the image a sandbox runs on from the store under stateDir:
// template names an image by name (CheckName), ref by name or id. At most one
// may be set; neither gives nil.
func openImage(stateDir, template, ref string) (*image.Image, error) {
	flag, name := "--image", ref
	switch {
	case template != "" && ref != "":
		return nil, errors.New("--template and --image both name the root file system: give one")
	case template != "":
		if err := image.CheckName(template); err != nil {
			return nil, fmt.Errorf("--template: %w", err)
		}
		flag, name = "--template", template
	case ref == "":
		return nil, nil
	}
	dir := image.StoreDir(stateDir)
	s, err := image.OpenStore(dir, image.Options{})
	if errors.Is(err, image.ErrNotRoot) {
		return nil, fmt.Errorf("%s: images need agentbox to run as root (their layers are mounted idmapped)", flag)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: open image store %s: %w", flag, dir, err)
	}
	im, err := s.Open(name)
	if errors.Is(err, image.ErrNotFound) {
		store := "" // the hints name the store this run looked in
		if stateDir != config.DefaultStateDir() {
			store = " --state-dir " + stateDir
		}
		return nil, fmt.Errorf("%s %s: no such template in %s; `agentbox template ls%s` lists them, `agentbox template build%s --name %s ...` makes one", flag, name, dir, store, store, name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, name, err)
	}
	return im, nil
}
