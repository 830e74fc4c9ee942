package lab

import (
	"os"
	"runtime"
	"runtime/debug"
)

// Version is set at release time; builds from a checkout carry the commit.
var Version = "0.1.0-dev"

// Build describes this binary for records.
func Build() BuildInfo {
	b := BuildInfo{Version: Version, GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	b.Host, _ = os.Hostname()
	if bi, ok := debug.ReadBuildInfo(); ok {
		dirty := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Commit = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if dirty && b.Commit != "" {
			b.Commit += "-dirty"
		}
	}
	return b
}
