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

type destroyOut struct {
	ID        string `json:"id"`
	Destroyed bool   `json:"destroyed"`
}

func (t *tools) addEnv(s *mcp.Server) {
	svc := t.d.Service
	add(t, s, &mcp.Tool{Name: "env_create", Description: "Create an environment: a sandbox with a private copy-on-write workspace made from a template or an allowed host directory. Returns its id.",
		Annotations: hints("Create environment", false, false, false)},
		func(client.CreateRequest) string { return "template" },
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
