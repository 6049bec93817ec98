//go:build linux

package main

import (
	"io"

	wc "github.com/crongate/crongate/internal/withlockcmd"
	"github.com/crongate/crongate/internal/withlockkong"
)

// parse parses the command line with kong (withlockkong).
func parse(args []string, stdout io.Writer, exit func(int)) (*wc.Options, error) {
	var o wc.Options
	err := withlockkong.Parse(withlockkong.Program{
		Name:        "withlock",
		Description: wc.Description,
		Usage:       "Usage: withlock [flags] -- COMMAND [ARG...]",
	}, args, &o, stdout, exit, o.Validate)
	if err != nil {
		return nil, err
	}
	return &o, nil
}
