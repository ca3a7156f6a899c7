package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/client"
)

func envCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "env",
		Short: "Create, list, pause, resume, snapshot, fork and destroy environments on the agentbox daemon",
	}
	cmd.AddCommand(envCreateCmd(), envLsCmd(), envRmCmd(), envSnapshotCmd(), envForkCmd(),
		envPauseCmd(),
		envStateCmd("resume", "Resume paused environments: their processes continue where they stopped", (*client.Client).Resume))
	return cmd
}

// labelFlags parses repeated KEY=VALUE flags.
func labelFlags(vs []string) (map[string]string, error) {
	if len(vs) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, v := range vs {
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("label %q: use KEY=VALUE", v)
		}
		m[k] = val
	}
	return m, nil
}

func printJSON(v any) error {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func envCreateCmd() *cobra.Command {
	var (
		d         daemonFlags
		req       client.CreateRequest
		labels    []string
		ttl, idle time.Duration
		idlePause time.Duration
		asJSON    bool
		net       networkFlags
	)
	cmd := &cobra.Command{
		Use:   "create [flags]",
		Short: "Create an environment from a workspace directory or preset, on a template, and print its id",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if req.Labels, err = labelFlags(labels); err != nil {
				return err
			}
			switch {
			case req.Workspace != "" && req.Preset != "":
				return errors.New("give one of --workspace and --preset, not both")
			case req.Workspace == "" && req.Preset == "" && req.Template == "":
				return errors.New("give --workspace DIR or --preset NAME (what /workspace starts from), or --template NAME alone for an empty /workspace")
			}
			if req.Workspace != "" {
				// The daemon takes absolute paths: ./calc is the caller's.
				if req.Workspace, err = filepath.Abs(req.Workspace); err != nil {
					return err
				}
			}
			req.TTLSeconds, req.IdleSeconds, req.IdlePauseSeconds = ttl.Seconds(), idle.Seconds(), idlePause.Seconds()
			if req.Network, err = net.wire(); err != nil {
				return err
			}
			c, err := d.client()
			if err != nil {
				return err
			}
			e, err := c.Create(cmd.Context(), req)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(e)
			}
			fmt.Fprintln(stdout, e.ID)
			return nil
		},
	}
	f := cmd.Flags()
	d.add(f)
	f.StringVar(&req.Workspace, "workspace", "", "host directory to start from (must lie under a root the server allows)")
	f.StringVar(&req.Preset, "preset", "", "workspace preset registered on the server (the config's workspace_presets)")
	f.StringVar(&req.Template, "template", "", "template the environment's root file system comes from (agentbox template ls; default: the host's system directories)")
	f.StringVar(&req.Isolation, "isolation", "", "namespace (default) or gvisor: every command under gVisor's user-space kernel (runsc; no network, rw mounts or template)")
	f.Var(sizeValue{&req.Limits.MemoryBytes}, "memory", "memory limit of the environment, e.g. 1G")
	f.Var(countValue{&req.Limits.Pids}, "pids", "process limit of the environment")
	f.Float64Var(&req.Limits.CPUs, "cpus", 0, "CPU quota in cores")
	f.Var(sizeValue{&req.Limits.WorkspaceBytes}, "workspace-size", "size limit of the private workspace layer")
	f.StringVar(&req.Layer, "layer", "", "where the writable layer lives: memory (default, a tmpfs) or disk (a file system on the host's disk, which env pause --to-disk takes out of RAM)")
	f.DurationVar(&ttl, "ttl", 0, "lifetime (0: server default)")
	f.DurationVar(&idle, "idle", 0, "idle timeout (0: server default)")
	f.DurationVar(&idlePause, "idle-pause", 0, "pause after this long without a request (0: server default)")
	f.StringVar(&req.OnTimeout, "on-timeout", "", "what the TTL does: destroy (default) or pause")
	f.StringArrayVar(&labels, "label", nil, "KEY=VALUE label (repeatable)")
	f.StringVar(&req.Task, "task", "", "task identity to record")
	f.BoolVar(&asJSON, "json", false, "print the environment as JSON")
	net.addHosts(f)
	net.addLimits(f)
	return cmd
}

func envLsCmd() *cobra.Command {
	var (
		d      daemonFlags
		labels []string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "ls [flags]",
		Short: "List your environments",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := labelFlags(labels)
			if err != nil {
				return err
			}
			c, err := d.client()
			if err != nil {
				return err
			}
			envs, err := c.List(cmd.Context(), l)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(envs)
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATE\tISOLATION\tPRESET\tCREATED\tLABELS")
			for _, e := range envs {
				var ls []string
				for k, v := range e.Labels {
					ls = append(ls, k+"="+v)
				}
				sort.Strings(ls)
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.ID, e.State, e.Isolation, e.Preset,
					e.CreatedAt.Local().Format(time.DateTime), strings.Join(ls, ","))
			}
			return tw.Flush()
		},
	}
	f := cmd.Flags()
	d.add(f)
	f.StringArrayVar(&labels, "label", nil, "only environments with this KEY=VALUE label (repeatable)")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func envRmCmd() *cobra.Command {
	var d daemonFlags
	cmd := &cobra.Command{
		Use:   "rm ID...",
		Short: "Destroy environments (killing everything in them)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, ids []string) error {
			c, err := d.client()
			if err != nil {
				return err
			}
			return eachEnv(ids, func(id string) error { return c.Destroy(cmd.Context(), id) })
		},
	}
	d.add(cmd.Flags())
	return cmd
}

// envPauseCmd is `env pause [--to-disk]`.
func envPauseCmd() *cobra.Command {
	var r client.PauseRequest
	cmd := envStateCmd("pause", "Pause environments: freeze every process (no CPU) until resume",
		func(c *client.Client, ctx context.Context, id string) (client.Environment, error) {
			return c.Pause(ctx, id, r)
		})
	cmd.Flags().BoolVar(&r.ToDisk, "to-disk", false, "also take the writable layer out of RAM, back on resume as it is used (an environment created with --layer disk)")
	return cmd
}

// envStateCmd is `env pause` or `env resume`: op on each id, printing its new state.
func envStateCmd(name, short string, op func(*client.Client, context.Context, string) (client.Environment, error)) *cobra.Command {
	var d daemonFlags
	cmd := &cobra.Command{
		Use:   name + " ID...",
		Short: short,
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, ids []string) error {
			c, err := d.client()
			if err != nil {
				return err
			}
			return eachEnv(ids, func(id string) error {
				e, err := op(c, cmd.Context(), id)
				if err == nil && e.PausedToDisk {
					fmt.Fprintf(stdout, "%s\t%s\tto disk\n", e.ID, e.State)
				} else if err == nil {
					fmt.Fprintf(stdout, "%s\t%s\n", e.ID, e.State)
				}
				return err
			})
		},
	}
	d.add(cmd.Flags())
	return cmd
}

// eachEnv applies f to each environment id, going on past an id that fails (each
// error names its id) but not past a daemon that cannot be reached.
func eachEnv(ids []string, f func(id string) error) error {
	var errs []error
	for _, id := range ids {
		if err := f(id); errors.Is(err, client.ErrNoDaemon) {
			return err
		} else if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}
