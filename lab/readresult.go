package lab

import (
	"encoding/json"
	"fmt"
	"os"
)

// ReadResult reads a bench record (bench --json). It decodes as it reads,
// so a file that is not JSON (say /dev/zero) fails at its first bytes, not
// after filling memory; a FIFO or device is refused before it is opened.
func ReadResult(path string) (*Result, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file; give a JSON record (bench --json)", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r Result
	if err := json.NewDecoder(f).Decode(&r); err != nil {
		return nil, fmt.Errorf("%s: not a bench record: %w", path, err)
	}
	if err := r.CheckNulls(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}
