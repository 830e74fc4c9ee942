package hdrfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/atomicfile"
)

// WriteFiles writes a record's HdrHistogram files (Files) as
// DIR/BASE.OP.hgrm and DIR/BASE.OP.hlog, atomically, and removes files of
// that base the record no longer has (a redone cell that failed). It
// returns the paths written; a nil record writes nothing.
func WriteFiles(dir, base string, r *lab.Result) ([]string, error) {
	var files []File
	if r != nil {
		var err error
		if files, err = Files(r); err != nil {
			return nil, fmt.Errorf("hdr files of %s: %w", base, err)
		}
	}
	written := map[string]bool{}
	var paths []string
	for _, f := range files {
		p := filepath.Join(dir, base+"."+f.Name)
		if err := atomicfile.Write(p, f.Data); err != nil {
			return paths, err
		}
		written[p] = true
		paths = append(paths, p)
	}
	for _, op := range lab.AllOps {
		for _, ext := range []string{HgrmExt, HlogExt} {
			p := filepath.Join(dir, base+"."+string(op)+ext)
			if written[p] {
				continue
			}
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return paths, fmt.Errorf("remove stale %s: %w", p, err)
			}
		}
	}
	return paths, nil
}
