// Package launch starts servers: Local runs a binary on this host (a
// version from the store, or any path the user names), pinned to a CPU
// set; Container runs an official image through a host's command runner,
// as the reference study did. Both implement infra.Launcher.
package launch

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/linerate/linerate/infra"
)

// ReportedVersion is the version a server reports in INFO server: Valkey
// keeps redis_version at 7.2.4 for clients and adds valkey_version.
func ReportedVersion(info map[string]string) string {
	if v := info["valkey_version"]; v != "" {
		return v
	}
	return info["redis_version"]
}

// KindFromInfo tells the server kind from INFO server, for a binary the
// user named without saying what it is.
func KindFromInfo(info map[string]string) infra.Kind {
	switch {
	case info["valkey_version"] != "" || info["server_name"] == "valkey":
		return infra.Valkey
	case info["server_name"] == "keydb" || info["keydb_version"] != "":
		return infra.KeyDB
	}
	return infra.Redis
}

// ThreadAffinity reads every thread's name and Cpus_allowed_list from
// <procRoot>/<pid>/task/*/status.
func ThreadAffinity(procRoot string, pid int) ([]infra.ThreadCPUs, error) {
	dir := filepath.Join(procRoot, strconv.Itoa(pid), "task")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read threads of pid %d: %w", pid, err)
	}
	var out []infra.ThreadCPUs
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "status"))
		if err != nil {
			continue // the thread ended meanwhile
		}
		t := infra.ThreadCPUs{TID: tid}
		for _, line := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(line, ":")
			switch k {
			case "Name":
				t.Name = strings.TrimSpace(v)
			case "Cpus_allowed_list":
				t.CPUs = strings.TrimSpace(v)
			}
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TID < out[j].TID })
	return out, nil
}

// CheckPinned says whether every thread may run exactly on want.
func CheckPinned(threads []infra.ThreadCPUs, want string) error {
	w, err := infra.ParseCPUList(want)
	if err != nil {
		return err
	}
	ws := infra.FormatCPUList(w)
	var bad []string
	for _, t := range threads {
		got, err := infra.ParseCPUList(t.CPUs)
		if err != nil || infra.FormatCPUList(got) != ws {
			bad = append(bad, fmt.Sprintf("%s/%d on %s", t.Name, t.TID, t.CPUs))
		}
	}
	if len(threads) == 0 {
		return fmt.Errorf("pinning: no threads to check")
	}
	if len(bad) > 0 {
		return fmt.Errorf("pinning: want every thread on %s, but %s", ws, strings.Join(bad, ", "))
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
