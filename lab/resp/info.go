package resp

import "strings"

// ParseInfo reads INFO text ("# Server\r\nkey:value\r\n…") into key/value
// pairs; comment and blank lines are skipped.
func ParseInfo(s string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = v
		}
	}
	return m
}
