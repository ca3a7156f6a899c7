package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func doctorCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Print which isolation mechanisms this host supports",
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Println("isolation: process (namespace isolation arrives with the sandbox work)")
			return nil
		},
	}
}
