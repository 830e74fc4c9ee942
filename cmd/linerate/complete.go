package main

// Shell completion of what linerate knows (linerate completion bash|zsh|
// fish prints the scripts; cobra's hidden __complete answers them): the
// actions of each command, server selectors from the store, campaign and
// profile files, run directories and their cell IDs, flag values.

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/home"
	"github.com/linerate/linerate/infra/servers"
	"github.com/linerate/linerate/sweeps"
)

const (
	noFiles = cobra.ShellCompDirectiveNoFileComp
	dirs    = cobra.ShellCompDirectiveFilterDirs
)

// yamlFiles completes campaign and profile files.
func yamlFiles() ([]cobra.Completion, cobra.ShellCompDirective) {
	return []cobra.Completion{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
}

// positional completes the argument at each position with its own
// function; past the last, nothing.
func positional(fns ...cobra.CompletionFunc) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) >= len(fns) {
			return nil, noFiles
		}
		return fns[len(args)](cmd, args, toComplete)
	}
}

// words completes one of a fixed set of words.
func words(ws ...string) cobra.CompletionFunc {
	return cobra.FixedCompletions(ws, noFiles)
}

func campaignFile(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return yamlFiles()
}

func runDir(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return nil, dirs
}

// serverSelectors completes NAME@VERSION: the kinds the store installs,
// and the versions it holds (for remove and path, only those), at full
// and at major.minor precision. It reads the store; it installs nothing.
func serverSelectors(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	if args[0] == "install" || args[0] == "available" {
		for _, k := range infra.Kinds {
			if _, err := servers.ParseSelector(string(k)); err == nil {
				out = append(out, string(k))
			}
		}
	}
	if args[0] == "available" {
		return out, noFiles
	}
	dir := cmd.Flags().Lookup("store").Value.String()
	if dir == "" {
		dir, _ = home.Dir()
	}
	installed, _ := (&servers.Store{Dir: dir}).List()
	for _, i := range installed {
		out = append(out, string(i.Kind)+"@"+i.Version)
		if parts := strings.Split(i.Version, "."); len(parts) > 2 {
			out = append(out, string(i.Kind)+"@"+strings.Join(parts[:2], "."))
		}
	}
	return withPrefix(out, toComplete), noFiles
}

// withPrefix is the sorted distinct words of ws that start with prefix.
func withPrefix(ws []cobra.Completion, prefix string) []cobra.Completion {
	ws = slices.DeleteFunc(ws, func(w cobra.Completion) bool { return !strings.HasPrefix(w, prefix) })
	slices.Sort(ws)
	return slices.Compact(ws)
}

// cellIDs completes soak's --cell with the cells of the run directory
// given before it.
func cellIDs(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return nil, noFiles
	}
	run, err := sweeps.ReadRun(filepath.Clean(args[0]))
	if err != nil {
		return nil, noFiles
	}
	var ids []cobra.Completion
	for id := range run.Cells {
		ids = append(ids, id)
	}
	return withPrefix(ids, toComplete), noFiles
}

// completeFlags registers a completion for each named flag of cmd.
func completeFlags(cmd *cobra.Command, fns map[string]cobra.CompletionFunc) *cobra.Command {
	for name, fn := range fns {
		if err := cmd.RegisterFlagCompletionFunc(name, fn); err != nil {
			panic(err) // a flag renamed without its completion
		}
	}
	return cmd
}

// completeArgs sets what completes cmd's arguments.
func completeArgs(cmd *cobra.Command, fn cobra.CompletionFunc) *cobra.Command {
	cmd.ValidArgsFunction = fn
	return cmd
}

// suites are where the store takes builds and libraries from.
var suites = []string{"bookworm", "bookworm-backports", "trixie", "sid"}

// serversArgs completes an action, then server selectors.
func serversArgs(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return words("available", "install", "list", "remove", "path")(cmd, args, toComplete)
	}
	return serverSelectors(cmd, args, toComplete)
}

// infraArgs completes an action, then preflight's campaign or aws policy.
func infraArgs(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	switch {
	case len(args) == 0:
		return words("up", "down", "status", "gc", "preflight", "aws")(cmd, args, toComplete)
	case len(args) == 1 && args[0] == "preflight", len(args) == 2 && args[0] == "aws":
		return yamlFiles()
	case len(args) == 1 && args[0] == "aws":
		return words("policy")(cmd, args, toComplete)
	}
	return nil, noFiles
}

// profileFile completes tune's --profile: YAML or JSON files.
func profileFile(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return []cobra.Completion{"yaml", "yml", "json"}, cobra.ShellCompDirectiveFilterFileExt
}

// awsSection is a section header of AWS's shared config ([profile NAME])
// or credentials ([NAME]) file.
var awsSection = regexp.MustCompile(`^\s*\[\s*(?:profile\s+)?([^\]\s]+)\s*\]`)

// awsProfiles completes --profile and --aws-profile with the profile names
// of AWS's shared config and credentials files (AWS_CONFIG_FILE and
// AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/config and ~/.aws/credentials).
func awsProfiles(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	home, _ := os.UserHomeDir()
	var names []cobra.Completion
	for env, file := range map[string]string{"AWS_CONFIG_FILE": "config", "AWS_SHARED_CREDENTIALS_FILE": "credentials"} {
		path := os.Getenv(env)
		if path == "" {
			path = filepath.Join(home, ".aws", file)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if m := awsSection.FindStringSubmatch(line); m != nil && m[1] != "sso-session" && m[1] != "services" {
				names = append(names, m[1])
			}
		}
	}
	return withPrefix(names, toComplete), noFiles
}
