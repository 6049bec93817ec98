//go:build linux

// Package clidoc generates the man pages (withlock(1), cron-gate(1),
// cron-gate.toml(5)), the shell completions (bash, zsh, fish) and the
// example config from the code that defines what they describe: kong's
// model of each command line (crongate.Model, withlock.Model) and gate's
// table of config keys (gate.KeyDocs). A flag, subcommand or key added to
// the code is in the next generated page and completion without anyone
// editing them; TestPagesCoverModel fails if one is missing.
//
// TestWriteFiles writes every file when given -write DIR (make doc, which
// dist/deb/build.sh runs, at build time; write_test.go); nothing
// generated is committed.
package clidoc

import (
	"strings"

	"github.com/alecthomas/kong"
)

// Command is one command line, or one subcommand of it, as the man page
// and the completions see it: kong's model with what they need of it.
type Command struct {
	Name   string
	Help   string
	Hidden bool // a hidden subcommand (cron-gate's "run", the default form)
	Apart  bool // a subcommand parsed apart (withlock who): only as the first word, with only its own flags; the program keeps its own form
	Flags  []Flag
	Args   []Arg
	Subs   []*Command
}

// Flag is one flag of a command line.
type Flag struct {
	Long        string // without the dashes
	Short       rune   // 0: none
	Placeholder string // the value's placeholder ("FILE", "local|etcd"); "" for a flag without a value
	Help        string
	Envs        []string // environment variables that set it
	Default     string   // kong's default, "" for none
	Repeatable  bool
}

// Arg is one positional argument.
type Arg struct {
	Name     string // as in the usage: "NAME"
	Help     string
	Optional bool
}

// FromKong returns the command line kong parses with k: every flag
// (hidden ones left out), every positional argument and every subcommand,
// hidden subcommands included and marked.
func FromKong(k *kong.Kong) *Command {
	return fromNode(k.Model.Node)
}

func fromNode(n *kong.Node) *Command {
	c := &Command{Name: n.Name, Help: n.Help, Hidden: n.Hidden}
	for _, f := range n.Flags {
		if f.Hidden {
			continue
		}
		fl := Flag{Long: f.Name, Short: f.Short, Help: f.Help, Envs: f.Envs, Default: f.Default, Repeatable: f.IsSlice() || f.IsCumulative()}
		if !f.IsBool() && !f.IsCounter() {
			// The placeholder as written: kong's FormatPlaceHolder adds
			// ",..." to a slice's even when it says so already.
			fl.Placeholder = f.PlaceHolder
			if fl.Placeholder == "" {
				fl.Placeholder = f.FormatPlaceHolder()
			}
		}
		c.Flags = append(c.Flags, fl)
	}
	for _, p := range n.Positional {
		c.Args = append(c.Args, Arg{Name: strings.ToUpper(p.Name), Help: p.Help, Optional: !p.Required})
	}
	for _, ch := range n.Children {
		if ch.Type == kong.CommandNode {
			c.Subs = append(c.Subs, fromNode(ch))
		}
	}
	return c
}

// Visible returns the subcommands that are not hidden.
func (c *Command) Visible() []*Command {
	var out []*Command
	for _, s := range c.Subs {
		if !s.Hidden {
			out = append(out, s)
		}
	}
	return out
}

// Sub returns the subcommand named name, hidden or not, or nil.
func (c *Command) Sub(name string) *Command {
	for _, s := range c.Subs {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Flag returns the flag spelled --long, or nil.
func (c *Command) Flag(long string) *Flag {
	for i := range c.Flags {
		if c.Flags[i].Long == long {
			return &c.Flags[i]
		}
	}
	return nil
}
