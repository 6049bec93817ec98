//go:build linux

package clidoc

import (
	"fmt"
	"slices"
	"strings"

	"github.com/crongate/crongate/gate"
)

// A flag's value is completed by what its placeholder names: a choice
// ("local|etcd"), a file, a directory, or nothing (a number, a duration,
// a text).
const (
	valueNone   = ""
	valueFile   = "file"
	valueDir    = "dir"
	valueChoice = "choice"
)

func valueKind(placeholder string) (kind string, choices []string) {
	if strings.Contains(placeholder, "|") {
		return valueChoice, strings.Split(placeholder, "|")
	}
	switch strings.TrimSuffix(placeholder, ",...") {
	case "FILE", "PATH", "TEMPLATE":
		return valueFile, nil
	case "DIR":
		return valueDir, nil
	}
	return valueNone, nil
}

// gateArg reports whether a positional argument is a gate name: cron-gate's
// NAME arguments.
func gateArg(gates bool, a Arg) bool { return gates && a.Name == "NAME" }

// state is what completes where: the flags allowed (the program's own
// plus the subcommand's, or a subcommand apart's own) and the positional
// arguments, for each subcommand; "" is the program itself (before a
// subcommand).
type state struct {
	name  string // "" or a subcommand
	flags []Flag
	args  []Arg
	dash  bool // takes "--" COMMAND after its arguments (withlock, cron-gate's run form)
	apart bool // a subcommand apart (Command.Apart): flags holds only its own
}

// states returns c's states. For a program with a hidden default
// subcommand (cron-gate's run form), a first word that is not a
// subcommand selects it; its first positional is that word. A program
// whose subcommands are all apart (withlock) keeps its own form.
func states(c *Command) []state {
	out := []state{{name: "", flags: c.Flags}}
	if !slices.ContainsFunc(c.Subs, func(s *Command) bool { return !s.Apart }) {
		out[0].args, out[0].dash = c.Args, true
	}
	for _, s := range c.Subs {
		st := state{name: s.Name, flags: slices.Concat(c.Flags, s.Flags), args: s.Args, dash: s.Name == runForm}
		if s.Apart {
			st.flags, st.apart = s.Flags, true
		}
		out = append(out, st)
	}
	return out
}

// subsByKind returns the names of c's subcommands that take the
// program's flags (the hidden run form left out) and of those apart.
func subsByKind(c *Command) (joined, apart []string) {
	for _, s := range c.Subs {
		switch {
		case s.Apart:
			apart = append(apart, s.Name)
		case s.Name != runForm:
			joined = append(joined, s.Name)
		}
	}
	return joined, apart
}

// allValueFlags lists every spelling of every flag that takes a value, in
// every state, for skipping their values when reading a command line.
func allValueFlags(c *Command) []string {
	var out []string
	for _, st := range states(c) {
		for _, f := range st.flags {
			if f.Placeholder == "" {
				continue
			}
			for _, s := range spellings(f) {
				if !slices.Contains(out, s) {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

func spellings(f Flag) []string {
	s := []string{"--" + f.Long}
	if f.Short != 0 {
		s = append(s, "-"+string(f.Short))
	}
	return s
}

// firstSentence shortens a help text for a completion menu.
func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSuffix(s, ".")
}

// shQuote quotes s for sh, bash, zsh and fish alike: single quotes, a
// quote written as '\” (fish reads \' inside single quotes as a quote,
// the others end and restart the string: both give the same).
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// fishQuote quotes s for fish: inside single quotes fish reads \' and \\.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// funcName is a shell function name for program name.
func funcName(prog string) string { return "_" + strings.ReplaceAll(prog, "-", "_") }

// gateSed prints the gate names of a config file: the [gates.NAME] and
// [gates."NAME"] table headers. It does not decode TOML (a completion
// must be cheap); gates declared otherwise are not offered.
const gateSed = `sed -n -e 's/^[[:space:]]*\[[[:space:]]*gates\.\([A-Za-z0-9][A-Za-z0-9_-]*\)[[:space:]]*\].*/\1/p' -e 's/^[[:space:]]*\[[[:space:]]*gates\."\([A-Za-z0-9][A-Za-z0-9._-]*\)"[[:space:]]*\].*/\1/p'`

const generated = "generated from its command line by internal/clidoc (make doc); do not edit"

// Bash returns c's bash completion: flags and their values, subcommands,
// gate names from the config (when gates), and after "--" the command,
// through bash-completion's _command_offset when it is loaded. It needs
// nothing but bash; bash-completion (2.x) loads it by the program's name.
func Bash(c *Command, gates bool) string {
	// Long: it writes the bash script top to bottom, so this reads in the script's own order.
	fn := funcName(c.Name)
	var b strings.Builder
	fmt.Fprintf(&b, "# bash completion for %s: %s.\n\n", c.Name, generated)
	if gates {
		fmt.Fprintf(&b, `# The gates declared in the config: --config on the line, else
# $CRON_GATE_CONFIG, else %[2]s.
%[1]s_gates() {
	local cfg=${CRON_GATE_CONFIG:-%[2]s} i
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		--config)
			cfg=${COMP_WORDS[i + 1]}
			[[ $cfg == = ]] && cfg=${COMP_WORDS[i + 2]}
			;;
		--config=*) cfg=${COMP_WORDS[i]#--config=} ;;
		esac
	done
	cfg=${cfg/#\~/$HOME}
	[[ -f $cfg && -r $cfg ]] || return 0
	%[3]s -- "$cfg" 2>/dev/null
}

`, fn, gate.DefaultConfigPath, gateSed)
	}
	fmt.Fprintf(&b, "%s() {\n", fn)
	b.WriteString(`	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	local i w sub= npos=0 flag=
	COMPREPLY=()
	# bash splits --flag=value at "=".
	if [[ $cur == = ]]; then
		flag=$prev cur=
	elif [[ $prev == = ]]; then
		flag=${COMP_WORDS[COMP_CWORD - 2]}
	fi
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		case $w in
		--)
			if declare -F _command_offset >/dev/null; then
				_command_offset $((i + 1))
			elif ((i + 1 == COMP_CWORD)); then
				COMPREPLY=($(compgen -c -- "$cur"))
			else
				COMPREPLY=($(compgen -f -- "$cur"))
			fi
			return 0
			;;
`)
	if v := allValueFlags(c); len(v) > 0 {
		fmt.Fprintf(&b, "\t\t%s)\n\t\t\t((i + 1 < COMP_CWORD)) || break\n\t\t\t((i++))\n\t\t\t[[ ${COMP_WORDS[i]} == = ]] && ((i++))\n\t\t\t;;\n", strings.Join(v, " | "))
	}
	b.WriteString("\t\t-* | =) ;;\n\t\t*)\n")
	names, apart := subsByKind(c)
	if len(apart) > 0 {
		// A subcommand apart is only ever the first word.
		fmt.Fprintf(&b, "\t\t\tif ((i == 1)); then\n\t\t\t\tcase $w in\n\t\t\t\t%s)\n\t\t\t\t\tsub=$w\n\t\t\t\t\tcontinue\n\t\t\t\t\t;;\n\t\t\t\tesac\n\t\t\tfi\n", strings.Join(apart, " | "))
	}
	if len(names) > 0 {
		b.WriteString("\t\t\tif [[ -z $sub ]]; then\n\t\t\t\tcase $w in\n")
		fmt.Fprintf(&b, "\t\t\t\t%s) sub=$w ;;\n", strings.Join(names, " | "))
		if c.Sub(runForm) != nil {
			fmt.Fprintf(&b, "\t\t\t\t*) sub=%s npos=1 ;;\n", runForm)
		}
		b.WriteString("\t\t\t\tesac\n\t\t\telse\n\t\t\t\t((npos++))\n\t\t\tfi\n")
	} else {
		b.WriteString("\t\t\t((npos++))\n")
	}
	b.WriteString("\t\t\t;;\n\t\tesac\n\tdone\n")
	// The value of a flag, by its kind.
	var kinds = map[string][]string{}
	var choices = map[string]string{}
	var order []string
	for _, st := range states(c) {
		for _, f := range st.flags {
			if f.Placeholder == "" {
				continue
			}
			k, ch := valueKind(f.Placeholder)
			key := k
			if k == valueChoice {
				key = "choice:" + strings.Join(ch, " ")
				choices[key] = strings.Join(ch, " ")
			}
			if !slices.Contains(order, key) {
				order = append(order, key)
			}
			for _, s := range spellings(f) {
				if !slices.Contains(kinds[key], s) {
					kinds[key] = append(kinds[key], s)
				}
			}
		}
	}
	if v := allValueFlags(c); len(v) > 0 {
		fmt.Fprintf(&b, "\tif [[ -z $flag ]]; then\n\t\tcase $prev in\n\t\t%s) flag=$prev ;;\n\t\tesac\n\tfi\n", strings.Join(v, " | "))
	}
	b.WriteString("\tif [[ -n $flag ]]; then\n\t\tcase $flag in\n")
	for _, key := range order {
		fmt.Fprintf(&b, "\t\t%s)\n", strings.Join(kinds[key], " | "))
		switch {
		case key == valueFile:
			b.WriteString("\t\t\tcompopt -o filenames 2>/dev/null\n\t\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n")
		case key == valueDir:
			b.WriteString("\t\t\tcompopt -o filenames 2>/dev/null\n\t\t\tCOMPREPLY=($(compgen -d -- \"$cur\"))\n")
		case strings.HasPrefix(key, "choice:"):
			fmt.Fprintf(&b, "\t\t\tCOMPREPLY=($(compgen -W %s -- \"$cur\"))\n", shQuote(choices[key]))
		default:
			b.WriteString("\t\t\t: # a value to type: nothing to offer\n")
		}
		b.WriteString("\t\t\t;;\n")
	}
	b.WriteString("\t\tesac\n\t\treturn 0\n\tfi\n")
	// Flags, subcommands, arguments per state.
	b.WriteString("\tcase $sub in\n")
	for _, st := range states(c) {
		fmt.Fprintf(&b, "\t%s)\n", shQuote(st.name))
		var words []string
		for _, f := range st.flags {
			words = append(words, spellings(f)...)
		}
		if st.dash {
			words = append(words, "--")
		}
		fmt.Fprintf(&b, "\t\tif [[ $cur == -* ]]; then\n\t\t\tCOMPREPLY=($(compgen -W %s -- \"$cur\"))\n\t\t\treturn 0\n\t\tfi\n", shQuote(strings.Join(words, " ")))
		if st.name == "" && len(names) > 0 {
			var vis []string
			for _, s := range c.Visible() {
				vis = append(vis, s.Name)
			}
			list := shQuote(strings.Join(vis, " "))
			if gates && c.Sub(runForm) != nil {
				list = `"` + strings.Join(vis, " ") + ` $(` + fn + `_gates)"`
			}
			fmt.Fprintf(&b, "\t\tCOMPREPLY=($(compgen -W %s -- \"$cur\"))\n", list)
		}
		for i, a := range st.args {
			if gateArg(gates, a) && st.name != runForm {
				fmt.Fprintf(&b, "\t\t((npos == %d)) && COMPREPLY=($(compgen -W \"$(%s_gates)\" -- \"$cur\"))\n", i, fn)
			}
		}
		if st.dash {
			fmt.Fprintf(&b, "\t\t((npos >= %d)) && COMPREPLY=($(compgen -W -- -- \"$cur\"))\n", len(st.args))
		}
		if st.name == "" && len(apart) > 0 {
			fmt.Fprintf(&b, "\t\t((COMP_CWORD == 1)) && COMPREPLY+=($(compgen -W %s -- \"$cur\"))\n", shQuote(strings.Join(apart, " ")))
		}
		b.WriteString("\t\t;;\n")
	}
	b.WriteString("\tesac\n\treturn 0\n}\n")
	fmt.Fprintf(&b, "complete -F %s %s\n", fn, c.Name)
	return b.String()
}

// zshDesc escapes a help text for an _arguments description.
func zshDesc(s string) string {
	return strings.NewReplacer(`\`, `\\`, "[", `\[`, "]", `\]`, ":", `\:`).Replace(firstSentence(s))
}

// zshSpec is one _arguments spec per flag.
func zshSpec(f Flag, gates bool, fn string) string {
	names := spellings(f)
	excl := ""
	if len(names) > 1 && !f.Repeatable {
		excl = "(" + strings.Join(names, " ") + ")"
	}
	rep := ""
	if f.Repeatable {
		rep = "*"
	}
	arg := ""
	if f.Placeholder != "" {
		k, ch := valueKind(f.Placeholder)
		action := " "
		switch k {
		case valueFile:
			action = "_files"
		case valueDir:
			action = "_files -/"
		case valueChoice:
			action = "(" + strings.Join(ch, " ") + ")"
		}
		if gates && f.Long == "config" {
			action = "_files"
		}
		arg = ":" + strings.ReplaceAll(f.Placeholder, ":", `\:`) + ":" + action
	}
	desc := "[" + zshDesc(f.Help) + "]"
	if len(names) == 1 {
		suffix := ""
		if f.Placeholder != "" {
			suffix = "="
		}
		return shQuote(excl + rep + names[0] + suffix + desc + arg)
	}
	suffixes := []string{"", ""}
	if f.Placeholder != "" {
		suffixes = []string{"+", "="}
	}
	return shQuote(excl+rep) + "{" + names[1] + suffixes[0] + "," + names[0] + suffixes[1] + "}" + shQuote(desc+arg)
}

// Zsh returns c's zsh completion (an autoloaded function for compinit's
// fpath: install it as _NAME).
func Zsh(c *Command, gates bool) string {
	// Long: it writes the zsh function top to bottom, so this reads in the script's own order.
	fn := funcName(c.Name)
	var b strings.Builder
	fmt.Fprintf(&b, "#compdef %s\n# zsh completion for %s: %s.\n\n", c.Name, c.Name, generated)
	if gates {
		fmt.Fprintf(&b, `(( $+functions[%[1]s_gates] )) ||
%[1]s_gates() {
	# --config on the line (before the subcommand: saved from the
	# first _arguments), else $CRON_GATE_CONFIG, else the default.
	local cfg=${_cron_gate_config:-${CRON_GATE_CONFIG:-%[2]s}} i
	i=${words[(I)--config]}
	(( i )) && cfg=${words[i+1]}
	i=${words[(I)--config=*]}
	(( i )) && cfg=${words[i]#--config=}
	cfg=${~cfg}
	local -a gates
	[[ -f $cfg && -r $cfg ]] && gates=(${(f)"$(%[3]s -- $cfg 2>/dev/null)"})
	_wanted gates expl gate compadd -a gates
}

`, fn, gate.DefaultConfigPath, gateSed)
	}
	specs := func(flags []Flag) string {
		var s []string
		for _, f := range flags {
			s = append(s, zshSpec(f, gates, fn))
		}
		return strings.Join(s, " \\\n\t\t")
	}
	fmt.Fprintf(&b, "%s() {\n\tlocal curcontext=$curcontext state state_descr line expl ret=1\n\ttypeset -A opt_args\n", fn)
	// A subcommand's flags and positional arguments.
	subSpecs := func(s *Command) string {
		var pos []string
		for i, a := range s.Args {
			action := " "
			if gateArg(gates, a) {
				action = fn + "_gates"
			}
			opt := ""
			if a.Optional {
				opt = ":"
			}
			pos = append(pos, shQuote(fmt.Sprintf("%d:%s%s:%s", i+1, opt, strings.ToLower(a.Name), action)))
		}
		flags := s.Flags
		if !s.Apart {
			flags = slices.Concat(c.Flags, s.Flags)
		}
		all := specs(flags)
		if len(pos) > 0 {
			if all != "" {
				all += " \\\n\t\t"
			}
			all += strings.Join(pos, " ")
		}
		if all == "" {
			all = "''"
		}
		return all
	}
	if _, apart := subsByKind(c); len(apart) > 0 {
		b.WriteString("\t# A subcommand apart is only ever the first word.\n\tif (( CURRENT > 2 )); then\n\t\tcase $words[2] in\n")
		for _, s := range c.Subs {
			if s.Apart {
				fmt.Fprintf(&b, "\t\t%s)\n\t\t\tshift words\n\t\t\t(( CURRENT-- ))\n\t\t\tcurcontext=${curcontext%%:*:*}:%s-%s:\n\t\t\t_arguments -s \\\n\t\t%s && ret=0\n\t\t\treturn ret\n\t\t\t;;\n", s.Name, c.Name, s.Name, subSpecs(s))
			}
		}
		b.WriteString("\t\tesac\n\telif (( CURRENT == 2 )); then\n\t\tlocal -a cmds=(\n")
		for _, s := range c.Visible() {
			if s.Apart {
				fmt.Fprintf(&b, "\t\t\t%s\n", shQuote(s.Name+":"+strings.ReplaceAll(firstSentence(s.Help), ":", `\:`)))
			}
		}
		b.WriteString("\t\t)\n\t\t_describe -t commands command cmds && ret=0\n\tfi\n")
	}
	if states(c)[0].dash {
		fmt.Fprintf(&b, "\t_arguments -s -S \\\n\t\t%s \\\n\t\t'*::command:_normal' && ret=0\n\treturn ret\n}\n", specs(c.Flags))
	} else {
		fmt.Fprintf(&b, "\t_arguments -C -s \\\n\t\t%s \\\n\t\t'1: :->first' \\\n\t\t'*:: :->rest' && ret=0\n", specs(c.Flags))
		b.WriteString("\tcase $state in\n\tfirst)\n\t\tlocal -a cmds=(\n")
		for _, s := range c.Visible() {
			fmt.Fprintf(&b, "\t\t\t%s\n", shQuote(s.Name+":"+strings.ReplaceAll(firstSentence(s.Help), ":", `\:`)))
		}
		b.WriteString("\t\t)\n\t\t_describe -t commands command cmds && ret=0\n")
		if gates && c.Sub(runForm) != nil {
			fmt.Fprintf(&b, "\t\t%s_gates && ret=0\n", fn)
		}
		b.WriteString("\t\t;;\n\trest)\n\t\tcurcontext=${curcontext%:*:*}:" + c.Name + "-$line[1]:\n")
		if gates {
			b.WriteString("\t\tlocal _cron_gate_config=${opt_args[--config]-}\n")
		}
		b.WriteString("\t\tcase $line[1] in\n")
		for _, s := range c.Subs {
			if s.Name == runForm || s.Apart {
				continue
			}
			fmt.Fprintf(&b, "\t\t%s)\n\t\t\t_arguments -s \\\n\t\t%s && ret=0\n\t\t\t;;\n", s.Name, subSpecs(s))
		}
		if run := c.Sub(runForm); run != nil {
			fmt.Fprintf(&b, "\t\t*)\n\t\t\t# the run form: $line[1] is the gate, then -- COMMAND\n\t\t\t_arguments -s -S \\\n\t\t%s \\\n\t\t'*::command:_normal' && ret=0\n\t\t\t;;\n", specs(slices.Concat(c.Flags, run.Flags)))
		}
		b.WriteString("\t\tesac\n\t\t;;\n\tesac\n\treturn ret\n}\n")
	}
	fmt.Fprintf(&b, "\n%s \"$@\"\n", fn)
	return b.String()
}

// fishApart is the part of Fish's state function that reads a
// subcommand apart: only ever the first word.
func fishApart(apart []string) string {
	if len(apart) == 0 {
		return ""
	}
	return fmt.Sprintf("\tif contains -- \"$toks[1]\" %s\n\t\tset sub $toks[1]\n\t\tset -e toks[1]\n\tend\n", strings.Join(apart, " "))
}

// Fish returns c's fish completion (for vendor_completions.d/NAME.fish).
func Fish(c *Command, gates bool) string {
	// Long: it writes the fish script top to bottom, so this reads in the script's own order.
	fn := strings.TrimPrefix(funcName(c.Name), "_")
	fn = "__" + fn
	var b strings.Builder
	fmt.Fprintf(&b, "# fish completion for %s: %s.\n\n", c.Name, generated)
	subs, apart := subsByKind(c)
	// The state: "SUB N" (N positional arguments given since), or "--"
	// after the separator.
	fmt.Fprintf(&b, `# Prints where the command line is: "SUB N" (the subcommand, "" for none,
# and how many arguments it has), or "--" after the command's separator.
function %[1]s_state
	set -l toks (commandline -opc)
	set -e toks[1]
	set -l sub ''
	set -l n 0
	set -l skip 0
%[2]s	for t in $toks
		if test $skip = 1
			set skip 0
			continue
		end
		switch $t
			case --
				echo -- --
				return
`, fn, fishApart(apart))
	if v := allValueFlags(c); len(v) > 0 {
		fmt.Fprintf(&b, "\t\t\tcase %s\n\t\t\t\tset skip 1\n", strings.Join(v, " "))
	}
	b.WriteString("\t\t\tcase '-*'\n\t\t\tcase '*'\n")
	if len(subs) > 0 {
		fmt.Fprintf(&b, "\t\t\t\tif test -z \"$sub\"; and contains -- $t %s\n\t\t\t\t\tset sub $t\n", strings.Join(subs, " "))
		if c.Sub(runForm) != nil {
			fmt.Fprintf(&b, "\t\t\t\telse if test -z \"$sub\"\n\t\t\t\t\tset sub %s\n\t\t\t\t\tset n 1\n", runForm)
		}
		b.WriteString("\t\t\t\telse\n\t\t\t\t\tset n (math $n + 1)\n\t\t\t\tend\n")
	} else {
		b.WriteString("\t\t\t\tset n (math $n + 1)\n")
	}
	b.WriteString("\t\tend\n\tend\n\techo -- \"$sub\" $n\nend\n\n")
	fmt.Fprintf(&b, `# True when the state's subcommand is one of the arguments ("" for none).
function %[1]s_in
	set -l st (string split ' ' -- (%[1]s_state))
	test "$st[1]" != -- ; and contains -- "$st[1]" $argv
end

# True in subcommand $argv[1] with $argv[2] arguments given.
function %[1]s_at
	test (%[1]s_state) = "$argv[1] $argv[2]"
end

# After "--": complete the command and its arguments.
function %[1]s_command
	set -l toks (commandline -opc)
	set -l i (contains -i -- -- $toks); or return
	set -l rest $toks[(math $i + 1)..-1]
	if test (count $toks) -le $i
		set rest
	end
	__fish_complete_subcommand --commandline $rest (commandline -ct)
end

complete -c %[2]s -f
complete -c %[2]s -n 'test (%[1]s_state) = --' -a '(%[1]s_command)'
`, fn, c.Name)
	if gates {
		fmt.Fprintf(&b, `
# The gates declared in the config: --config on the line, else
# $CRON_GATE_CONFIG, else %[2]s.
function %[1]s_gates
	set -l cfg %[2]s
	set -q CRON_GATE_CONFIG; and set cfg $CRON_GATE_CONFIG
	set -l toks (commandline -opc)
	set -l i (contains -i -- --config $toks)
	and set -q toks[(math $i + 1)]
	and set cfg $toks[(math $i + 1)]
	for t in $toks
		string match -q -- '--config=*' $t; and set cfg (string replace -- --config= '' $t)
	end
	test -f "$cfg" -a -r "$cfg"; or return
	%[3]s -- $cfg 2>/dev/null
end
`, fn, gate.DefaultConfigPath, gateSed)
	}
	b.WriteString("\n")
	for _, st := range states(c) {
		cond := fmt.Sprintf("%s_in %s", fn, fishQuote(st.name))
		if st.name == "" && len(subs) > 0 {
			// The program's own flags are valid in every subcommand
			// but those apart.
			all := []string{"''"}
			for _, s := range c.Subs {
				if !s.Apart {
					all = append(all, s.Name)
				}
			}
			cond = fn + "_in " + strings.Join(all, " ")
		}
		flags := st.flags
		if st.name != "" && !st.apart {
			flags = flags[len(c.Flags):]
		}
		for _, f := range flags {
			line := fmt.Sprintf("complete -c %s -n %s -l %s", c.Name, fishQuote(cond), f.Long)
			if f.Short != 0 {
				line += " -s " + string(f.Short)
			}
			if f.Placeholder != "" {
				k, ch := valueKind(f.Placeholder)
				switch k {
				case valueFile:
					line += " -r -F"
				case valueDir:
					line += " -x -a '(__fish_complete_directories)'"
				case valueChoice:
					line += " -x -a " + fishQuote(strings.Join(ch, " "))
				default:
					line += " -x"
				}
			}
			line += " -d " + fishQuote(firstSentence(f.Help))
			b.WriteString(line + "\n")
		}
		if st.name == "" && len(c.Subs) > 0 {
			for _, s := range c.Visible() {
				cond := fn + "_at '' 0"
				if s.Apart {
					cond = "test (count (commandline -opc)) = 1"
				}
				fmt.Fprintf(&b, "complete -c %s -n %s -a %s -d %s\n", c.Name, fishQuote(cond), s.Name, fishQuote(firstSentence(s.Help)))
			}
			if gates && c.Sub(runForm) != nil {
				fmt.Fprintf(&b, "complete -c %s -n %s -a '(%s_gates)' -d gate\n", c.Name, fishQuote(fn+"_at '' 0"), fn)
			}
		}
		for i, a := range st.args {
			if gateArg(gates, a) && st.name != runForm {
				fmt.Fprintf(&b, "complete -c %s -n %s -a '(%s_gates)' -d gate\n", c.Name, fishQuote(fmt.Sprintf("%s_at %s %d", fn, st.name, i)), fn)
			}
		}
		if st.dash {
			fmt.Fprintf(&b, "complete -c %s -n %s -a -- -d 'then the command'\n", c.Name, fishQuote(fmt.Sprintf("%s_in %s", fn, fishQuote(st.name))))
		}
	}
	return b.String()
}
