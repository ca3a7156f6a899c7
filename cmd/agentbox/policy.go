package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/internal/grant"
	"github.com/agentbox/agentbox/internal/pin"
	"github.com/agentbox/agentbox/internal/policy"
	"github.com/agentbox/agentbox/internal/tool"
)

func policyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Print and check permission policies and approvals files",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "default",
		Short: "Print the built-in permission policy (a starting point for --permissions)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := stdout.Write(policy.DefaultText())
			return err
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "check FILE",
		Short: "Check a permission policy file (--permissions), naming the rule, line and field of an error",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			b, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			if _, err := policy.Parse(b); err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			fmt.Fprintf(stdout, "%s: ok\n", args[0])
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "check-approvals FILE",
		Short: "Check an approvals file (--approvals)",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			b, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			if _, err := grant.ParseApprovals(b); err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			fmt.Fprintf(stdout, "%s: ok\n", args[0])
			return nil
		},
	})
	var pinsFile string
	pinCmd := &cobra.Command{
		Use:   "pin --pins FILE NAME=COMMAND...",
		Short: "Review the tools of MCP servers and pin them for agent --mcp",
		Long: `Pin starts each MCP server (on the host, speaking MCP on stdio), lists its
tools and checks each against the pins in --pins: a tool never pinned or changed
since (a rug pull, shown as a diff) is pinned now, by the hash of its name,
description, schemas and annotations; a tool whose definition holds instructions
(poisoning), whose name another server or a built-in tool has (shadowing), or
that is not valid is shown and not pinned. agent --mcp mounts only pinned tools
whose definition has not changed.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if pinsFile == "" {
				return errors.New("--pins is required: the file agent --pins reads")
			}
			return pinMCP(cmd.Context(), pinsFile, args)
		},
	}
	pinCmd.Flags().StringVar(&pinsFile, "pins", "", "the pins file to update")
	cmd.AddCommand(pinCmd)
	return cmd
}

func pinMCP(ctx context.Context, path string, specs []string) error {
	servers, err := parseMCP(specs)
	if err != nil {
		return err
	}
	pins, err := loadPins(path)
	if err != nil {
		return err
	}
	var all []pin.Tool
	for _, m := range servers {
		c, tools, err := m.connect(ctx)
		if err != nil {
			return err
		}
		c.Close()
		for _, t := range tools {
			pt, err := t.Pin()
			if err != nil {
				return err
			}
			all = append(all, pt)
		}
	}
	reserved := pin.NewStore(tool.BuiltinNames())
	refused := 0
	for i, c := range pins.CheckAll(all) {
		if rc := reserved.Check(all[i]); rc.Status == pin.Shadowed {
			c = rc
		}
		switch c.Status {
		case pin.Pinned:
			fmt.Fprintf(stdout, "%s/%s: pinned already\n", c.Tool.Server, c.Tool.Name)
		case pin.New, pin.Changed:
			fmt.Fprintf(stdout, "%s/%s: %s; pinning %s\n%s", c.Tool.Server, c.Tool.Name, c.Why, c.Hash, c.Diff)
			if _, err := pins.Grant(c.Tool, "agentbox policy pin"); err != nil {
				return err
			}
		default:
			refused++
			fmt.Fprintf(stdout, "%s/%s: %s: %s; not pinned\n", c.Tool.Server, c.Tool.Name, c.Status, c.Why)
		}
	}
	var b bytes.Buffer
	if err := pins.Save(&b); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if refused > 0 {
		return fmt.Errorf("%d tool(s) not pinned (above)", refused)
	}
	return nil
}
