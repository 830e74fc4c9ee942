// Package launch starts servers: Local runs a binary on this host (a
// version from the store, or any path the user names), pinned to a CPU
// set; Container runs an official image through a host's command runner,
// as the reference study did. Both implement infra.Launcher.
package launch

import (
	"fmt"
	"os"
	"strings"

	"github.com/linerate/linerate/lab/cpus"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/kernel"
	"github.com/linerate/linerate/lab/resp"
)

// ReportedVersion is the version a server reports in INFO server
// (resp.ServerKind: valkey_version for Valkey, else redis_version).
func ReportedVersion(info map[string]string) string {
	_, v := resp.ServerKind(info)
	return v
}

// KindFromInfo tells the server kind from INFO server (resp.ServerKind),
// for a binary the user named without saying what it is. A kind infra
// does not launch counts as Redis, whose flags it takes.
func KindFromInfo(info map[string]string) infra.Kind {
	switch k, _ := resp.ServerKind(info); infra.Kind(k) {
	case infra.Valkey:
		return infra.Valkey
	case infra.KeyDB:
		return infra.KeyDB
	}
	return infra.Redis
}

// ThreadAffinity reads every thread's name and the CPUs it may run on
// (/proc/<pid>/task/*/status under k).
func ThreadAffinity(k kernel.FS, pid int) ([]infra.ThreadCPUs, error) {
	threads, err := k.ThreadCPUs(pid)
	if err != nil {
		return nil, err
	}
	out := make([]infra.ThreadCPUs, len(threads))
	for i, t := range threads {
		out[i] = infra.ThreadCPUs{TID: t.TID, Name: t.Name, CPUs: t.CPUs.String()}
	}
	return out, nil
}

// CheckPinned says whether every thread may run on exactly the CPUs of want.
func CheckPinned(threads []infra.ThreadCPUs, want cpus.List) error {
	if len(threads) == 0 {
		return fmt.Errorf("pinning: no threads to check")
	}
	var bad []string
	for _, t := range threads {
		got, err := cpus.Parse(t.CPUs)
		if err != nil || !got.Equal(want) {
			bad = append(bad, fmt.Sprintf("%s/%d on %s", t.Name, t.TID, t.CPUs))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("pinning: want every thread on %s, but %s", want.Sorted(), strings.Join(bad, ", "))
	}
	return nil
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return lastLines(string(b), n)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
