package main

import (
	"fmt"
	"io/fs"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

func fsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fs",
		Short: "Read and write files in an environment's workspace",
	}
	var d daemonFlags
	d.add(cmd.PersistentFlags())
	var off, n int64
	cat := &cobra.Command{
		Use:   "cat ID PATH",
		Short: "Print a workspace file (or a range of it)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, a []string) error {
			c, err := d.client()
			if err != nil {
				return err
			}
			b, err := c.ReadFile(cmd.Context(), a[0], a[1], off, n)
			if err != nil {
				return err
			}
			_, err = stdout.Write(b)
			return err
		},
	}
	cat.Flags().Int64Var(&off, "offset", 0, "first byte to read")
	cat.Flags().Int64Var(&n, "length", 0, "bytes to read (0: to the end)")
	put := &cobra.Command{
		Use:   "put ID PATH [FILE]",
		Short: "Write a workspace file from FILE (default: standard input), atomically",
		Args:  cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, a []string) error {
			src := "-"
			if len(a) == 3 {
				src = a[2]
			}
			b, err := readInput(src)
			if err != nil {
				return err
			}
			c, err := d.client()
			if err != nil {
				return err
			}
			return c.WriteFile(cmd.Context(), a[0], a[1], b)
		},
	}
	ls := &cobra.Command{
		Use:   "ls ID [PATH]",
		Short: "List a workspace directory",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, a []string) error {
			p := "."
			if len(a) == 2 {
				p = a[1]
			}
			c, err := d.client()
			if err != nil {
				return err
			}
			ents, err := c.ListDir(cmd.Context(), a[0], p)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 1, ' ', 0)
			for _, e := range ents {
				name := e.Name
				switch e.Type {
				case "dir":
					name += "/"
				case "symlink":
					name += " -> " + e.LinkTarget
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", fs.FileMode(e.Mode), e.Size, e.ModTime.Local().Format(time.DateTime), name)
			}
			return tw.Flush()
		},
	}
	rm := &cobra.Command{
		Use:   "rm ID PATH",
		Short: "Remove a workspace file or directory tree",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, a []string) error {
			c, err := d.client()
			if err != nil {
				return err
			}
			return c.Remove(cmd.Context(), a[0], a[1])
		},
	}
	mkdir := &cobra.Command{
		Use:   "mkdir ID PATH",
		Short: "Create a workspace directory and its parents",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, a []string) error {
			c, err := d.client()
			if err != nil {
				return err
			}
			return c.Mkdir(cmd.Context(), a[0], a[1])
		},
	}
	cmd.AddCommand(cat, put, ls, rm, mkdir)
	return cmd
}
