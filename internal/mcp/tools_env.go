package mcp

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbox/agentbox/client"
)

// envID names an environment.
type envID struct {
	ID string `json:"id" jsonschema:"environment id"`
}

type listIn struct {
	Labels map[string]string `json:"labels,omitempty" jsonschema:"only environments carrying all these labels"`
}

type listOut struct {
	Environments []client.Environment `json:"environments"`
}

type pauseIn struct {
	ID string `json:"id" jsonschema:"environment id"`
	client.PauseRequest
}

type forkIn struct {
	ID string `json:"id" jsonschema:"environment id"`
	client.ForkRequest
}

type destroyOut struct {
	ID        string `json:"id"`
	Destroyed bool   `json:"destroyed"`
}

func (t *tools) addEnv(s *mcp.Server) {
	svc := t.d.Service
	add(t, s, &mcp.Tool{Name: "env_create", Description: "Create an environment: a sandbox with a private copy-on-write workspace made from a workspace preset or an allowed host directory, on a template's root file system (template_list) or the host's. Returns its id.",
		Annotations: hints("Create environment", false, false, false)},
		func(client.CreateRequest) string { return "environment" },
		func(ctx context.Context, in client.CreateRequest) (client.Environment, error) {
			return svc.Create(ctx, in)
		})
	add(t, s, &mcp.Tool{Name: "env_get", Description: "Describe an environment.",
		Annotations: hints("Get environment", true, false, true)},
		func(in envID) string { return envWhat(in.ID) },
		func(ctx context.Context, in envID) (client.Environment, error) {
			return svc.Get(ctx, in.ID)
		})
	add(t, s, &mcp.Tool{Name: "env_list", Description: "List your environments, optionally only those with all the given labels.",
		Annotations: hints("List environments", true, false, true)},
		func(listIn) string { return "environments" },
		func(ctx context.Context, in listIn) (listOut, error) {
			envs, err := svc.List(ctx, in.Labels)
			if envs == nil {
				envs = []client.Environment{}
			}
			return listOut{Environments: envs}, err
		})
	add(t, s, &mcp.Tool{Name: "env_pause", Description: "Pause an environment: freeze every process in it (they use no CPU) until env_resume, after which they continue where they stopped. Files stay readable and writable; exec is refused (EPAUSED) until env_resume. to_disk also takes the writable layer out of RAM (an environment created with layer disk).",
		Annotations: hints("Pause environment", false, false, true)},
		func(in pauseIn) string { return envWhat(in.ID) },
		func(ctx context.Context, in pauseIn) (client.Environment, error) {
			return svc.Pause(ctx, in.ID, in.PauseRequest)
		})
	add(t, s, &mcp.Tool{Name: "env_resume", Description: "Resume a paused environment: its processes continue where they stopped.",
		Annotations: hints("Resume environment", false, false, true)},
		func(in envID) string { return envWhat(in.ID) },
		func(ctx context.Context, in envID) (client.Environment, error) {
			return svc.Resume(ctx, in.ID)
		})
	add(t, s, &mcp.Tool{Name: "env_snapshot", Description: "Snapshot an environment's workspace, read-only and in O(1): the environment continues above it under the same id, in a new sandbox (its running commands end, /tmp starts afresh, /workspace carries on). Returns the snapshot, which env_fork can start from.",
		Annotations: hints("Snapshot environment", false, true, false)},
		func(in envID) string { return envWhat(in.ID) },
		func(ctx context.Context, in envID) (client.Snapshot, error) {
			return svc.Snapshot(ctx, in.ID)
		})
	add(t, s, &mcp.Tool{Name: "env_fork", Description: "Make count environments (1 to 100) from a snapshot of one (a new snapshot unless snapshot names one of its chain), each with a private copy-on-write workspace above it and made as the source was. Your environment quota counts all of them first: past it nothing is made.",
		Annotations: hints("Fork environment", false, true, false)},
		func(in forkIn) string { return envWhat(in.ID) },
		func(ctx context.Context, in forkIn) (listOut, error) {
			envs, err := svc.Fork(ctx, in.ID, in.ForkRequest)
			if envs == nil {
				envs = []client.Environment{}
			}
			return listOut{Environments: envs}, err
		})
	add(t, s, &mcp.Tool{Name: "env_destroy", Description: "Destroy an environment: kill every process in it and delete its workspace and everything not exported as an artifact. Destroying an environment that is already gone succeeds.",
		Annotations: hints("Destroy environment", false, true, true)},
		func(in envID) string { return envWhat(in.ID) },
		func(ctx context.Context, in envID) (destroyOut, error) {
			if err := svc.Destroy(ctx, in.ID); err != nil {
				return destroyOut{}, err
			}
			return destroyOut{ID: in.ID, Destroyed: true}, nil
		})
}

type networkSetIn struct {
	ID      string         `json:"id" jsonschema:"environment id"`
	Network client.Network `json:"network" jsonschema:"the new policy; it replaces the old one and must lie within what the tenant may allow"`
}

type networkLogIn struct {
	ID    string `json:"id" jsonschema:"environment id"`
	After uint64 `json:"after,omitempty" jsonschema:"only connections with a greater seq"`
}

type networkLogOut struct {
	Events []client.NetworkEvent `json:"events"`
}

func (t *tools) addNetwork(s *mcp.Server) {
	svc := t.d.Service
	add(t, s, &mcp.Tool{Name: "env_network_set", Description: "Replace an environment's network policy (the hosts its egress proxy lets it reach). It takes effect at once: open connections it no longer allows are cut. Only for an environment created with a network.",
		Annotations: hints("Set network policy", false, true, true)},
		func(in networkSetIn) string { return envWhat(in.ID) },
		func(ctx context.Context, in networkSetIn) (client.Environment, error) {
			if err := svc.SetNetwork(ctx, in.ID, in.Network); err != nil {
				return client.Environment{}, err
			}
			return svc.Get(ctx, in.ID)
		})
	add(t, s, &mcp.Tool{Name: "env_network_log", Description: "List an environment's connections through its egress proxy, oldest first: host, port, address, allowed or denied and why, bytes each way.",
		Annotations: hints("Network log", true, false, true)},
		func(in networkLogIn) string { return envWhat(in.ID) },
		func(ctx context.Context, in networkLogIn) (networkLogOut, error) {
			evs, err := svc.NetworkLog(ctx, in.ID, in.After)
			return networkLogOut{Events: append([]client.NetworkEvent{}, evs...)}, err
		})
}
