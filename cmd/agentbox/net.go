package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/client"
)

func netCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "net",
		Short: "Show and change an environment's network: the hosts its egress proxy lets it reach",
	}
	cmd.AddCommand(netLogCmd(), netSetCmd())
	return cmd
}

func netLogCmd() *cobra.Command {
	var (
		d      daemonFlags
		after  uint64
		asJSON bool
		follow bool
	)
	cmd := &cobra.Command{
		Use:   "log [flags] ID",
		Short: "List the environment's connections, oldest first: time, host, port, address, decision and reason, bytes each way",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := d.client()
			if err != nil {
				return err
			}
			evs, err := c.NetworkLog(cmd.Context(), args[0], after)
			if err != nil {
				return err
			}
			if asJSON && !follow {
				return printJSON(evs)
			}
			var t *netTable
			if !asJSON {
				t = newNetTable(stdout)
			}
			for {
				for _, e := range evs {
					if asJSON {
						// One object a line, as they come.
						b, _ := json.Marshal(e)
						fmt.Fprintf(stdout, "%s\n", b)
					} else {
						t.add(e)
					}
					after = e.Seq
				}
				if t != nil {
					if err := t.tw.Flush(); err != nil {
						return err
					}
				}
				if !follow {
					return nil
				}
				select {
				case <-cmd.Context().Done():
					return nil
				case <-time.After(time.Second):
				}
				if evs, err = c.NetworkLog(cmd.Context(), args[0], after); err != nil {
					return err
				}
			}
		},
	}
	f := cmd.Flags()
	d.add(f)
	f.Uint64Var(&after, "after", 0, "only connections with a greater seq")
	f.BoolVar(&asJSON, "json", false, "print the events as JSON (with --follow, one object a line)")
	f.BoolVarP(&follow, "follow", "f", false, "keep printing connections as they end, until interrupted")
	return cmd
}

// netTable prints net log rows under their header. Each cell is padded to its
// column's usual width, so that rows printed by later flushes (--follow) line up
// with the header; a wider cell widens its column in that flush only.
type netTable struct{ tw *tabwriter.Writer }

var netColumns = []struct {
	name  string
	width int
}{{"SEQ", 5}, {"TIME", len("2006-01-02T15:04:05Z")}, {"PROTO", len("connect")}, {"HOST", 32},
	{"ADDR", len("255.255.255.255:65535")}, {"DECISION", len("allow")}, {"REASON", 16}, {"UP", 8}, {"DOWN", 0}}

func newNetTable(w io.Writer) *netTable {
	t := &netTable{tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	names := make([]string, len(netColumns))
	for i, c := range netColumns {
		names[i] = c.name
	}
	t.row(names...)
	return t
}

func (t *netTable) add(e client.NetworkEvent) {
	host := e.Host
	if e.Port != 0 {
		host += ":" + strconv.Itoa(int(e.Port))
	}
	t.row(strconv.FormatUint(e.Seq, 10), e.Time.Format(time.RFC3339), e.Proto, host, orDash(e.Addr), e.Decision,
		orDash(e.Reason), strconv.FormatInt(e.BytesUp, 10), strconv.FormatInt(e.BytesDown, 10))
}

func (t *netTable) row(cells ...string) {
	for i, c := range cells {
		if i < len(cells)-1 {
			fmt.Fprintf(t.tw, "%-*s\t", max(netColumns[i].width, len(netColumns[i].name)), c)
		} else {
			fmt.Fprintf(t.tw, "%s\n", c)
		}
	}
}

func netSetCmd() *cobra.Command {
	var (
		d       daemonFlags
		net     networkFlags
		denyAll bool
	)
	cmd := &cobra.Command{
		Use:   "set [flags] ID",
		Short: "Replace the environment's network policy; it takes effect at once, and open connections it no longer allows are cut",
		Long: `Replace the environment's network policy. The flags are the whole new policy, as
for env create: --allow-host at least once, or --deny-all. Only an environment
created with a network has one to change.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := net.wire()
			if err != nil {
				return err
			}
			switch {
			case denyAll && n != nil:
				return errors.New("--deny-all and --allow-host: give one")
			case denyAll:
				n = &client.Network{Allow: []string{}}
			case n == nil:
				return errors.New("no policy given: use --allow-host (and --allow-private, --dns-override), or --deny-all")
			}
			c, err := d.client()
			if err != nil {
				return err
			}
			return c.SetNetwork(cmd.Context(), args[0], *n)
		},
	}
	f := cmd.Flags()
	d.add(f)
	net.addHosts(f)
	net.addLimits(f)
	f.BoolVar(&denyAll, "deny-all", false, "allow nothing: every new connection is refused and open ones are cut")
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
