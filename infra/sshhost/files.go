package sshhost

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/linerate/linerate/infra"
	"github.com/pkg/sftp"
)

// Put uploads a file under a temporary name, then renames it into place.
func (h *Host) Put(ctx context.Context, local, remote string, mode fs.FileMode) error {
	return h.putFrom(ctx, local, remote, mode, func() (io.ReadCloser, error) { return os.Open(local) })
}

// putFrom is Put of what open returns (afresh on every attempt); from names
// the source in errors.
func (h *Host) putFrom(ctx context.Context, from, remote string, mode fs.FileMode, open func() (io.ReadCloser, error)) error {
	return h.sftpDo(ctx, "put "+remote, func(sc *sftp.Client) error {
		in, err := open()
		if err != nil {
			return fmt.Errorf("put %s: %w", from, err)
		}
		defer in.Close()
		tmp := remote + ".tmp-" + strconv.Itoa(os.Getpid())
		out, err := sc.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
		if err != nil {
			return fmt.Errorf("put %s: create %s: %w", from, tmp, err)
		}
		if _, err := out.ReadFrom(in); err != nil {
			out.Close()
			sc.Remove(tmp)
			return fmt.Errorf("put %s to %s: %w", from, remote, err)
		}
		if err := out.Close(); err != nil {
			return fmt.Errorf("put %s to %s: %w", from, remote, err)
		}
		if err := sc.Chmod(tmp, mode); err != nil {
			sc.Remove(tmp)
			return fmt.Errorf("put %s: chmod %s: %w", from, tmp, err)
		}
		if err := sc.PosixRename(tmp, remote); err != nil {
			sc.Remove(tmp)
			return fmt.Errorf("put %s: rename to %s: %w", from, remote, err)
		}
		return nil
	})
}

// Get downloads a file.
func (h *Host) Get(ctx context.Context, remote, local string) error {
	return h.sftpDo(ctx, "get "+remote, func(sc *sftp.Client) error {
		in, err := sc.Open(remote)
		if err != nil {
			return fmt.Errorf("get %s: %w", remote, err)
		}
		defer in.Close()
		tmp, err := os.CreateTemp(filepath.Dir(local), ".get-*")
		if err != nil {
			return fmt.Errorf("get %s: %w", remote, err)
		}
		defer os.Remove(tmp.Name())
		if _, err := in.WriteTo(tmp); err != nil {
			tmp.Close()
			return fmt.Errorf("get %s: %w", remote, err)
		}
		if err := tmp.Close(); err != nil {
			return fmt.Errorf("get %s: %w", remote, err)
		}
		return os.Rename(tmp.Name(), local)
	})
}

// Linerate uploads dist/linerate-linux-<arch> for the host's architecture,
// gzip-compressed and checked by SHA-256 there, named by its content hash
// so a host keeps one copy per build, and returns its absolute path there.
// An identical file already there is reused.
func (h *Host) Linerate(ctx context.Context) (string, error) {
	h.binMu.Lock()
	defer h.binMu.Unlock()
	if h.binPath != "" {
		return h.binPath, nil
	}
	if h.arch == "" {
		out, err := h.Run(ctx, "uname", "-m")
		if err != nil {
			return "", fmt.Errorf("linerate binary for %s: %w", h.Name(), err)
		}
		if h.arch, err = infra.GoArch(strings.TrimSpace(string(out))); err != nil {
			return "", fmt.Errorf("linerate binary for %s: %w", h.Name(), err)
		}
	}
	local := filepath.Join(h.cfg.Dist, "linerate-linux-"+h.arch)
	sum, err := fileSHA256(local)
	if err != nil {
		return "", fmt.Errorf("linerate binary for %s (%s): %w (build it with make dist)", h.Name(), h.arch, err)
	}
	var remote string
	err = h.sftpDo(ctx, "stat linerate binary", func(sc *sftp.Client) error {
		dir := h.cfg.RemoteDir
		if !path.IsAbs(dir) {
			wd, err := sc.Getwd()
			if err != nil {
				return fmt.Errorf("login directory: %w", err)
			}
			dir = path.Join(wd, dir)
		}
		if err := sc.MkdirAll(dir); err != nil {
			return fmt.Errorf("mkdir %s: %w", dir, err)
		}
		remote = path.Join(dir, "linerate-"+sum[:16])
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("linerate binary for %s: %w", h.Name(), err)
	}
	if out, err := h.Run(ctx, "sha256sum", remote); err == nil && strings.HasPrefix(string(out), sum) {
		h.binPath = remote
		return remote, nil
	}
	if err := h.putGzip(ctx, local, remote, sum); err != nil {
		return "", fmt.Errorf("linerate binary for %s: %w", h.Name(), err)
	}
	h.binPath = remote
	return remote, nil
}

// putGzip sends a local file gzip-compressed (a stripped linerate binary
// shrinks to about a quarter) and unpacks it on the host with gzip and
// sha256sum, which every Linux host has: the file lands at remote, mode
// 0755, only when its checksum is sum.
func (h *Host) putGzip(ctx context.Context, local, remote, sum string) error {
	gz, err := gzipFile(local)
	if err != nil {
		return fmt.Errorf("compress %s: %w", local, err)
	}
	packed := remote + ".gz"
	err = h.putFrom(ctx, local+" (gzip)", packed, 0o600, func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(gz)), nil
	})
	if err != nil {
		return err
	}
	h.uploads++
	h.uploadedBytes += int64(len(gz))
	return h.unpack(ctx, packed, remote, sum)
}

// unpackScript decompresses $1 into a temp file beside $2, checks its
// SHA-256 against $3 and renames it to $2 (mode 0755); the compressed file
// and the temp file are removed on every path. A $2 that already has the
// sum is kept, so running it again after a dropped connection is harmless.
const unpackScript = `set -eu
gz=$1 dst=$2 want=$3 tmp=$2.tmp-$$
trap 'rm -f "$tmp" "$gz"' EXIT
sum() { s=$(sha256sum "$1") && echo "${s%% *}"; }
if [ -f "$dst" ] && [ "$(sum "$dst")" = "$want" ]; then exit 0; fi
gzip -dc "$gz" >"$tmp"
got=$(sum "$tmp")
if [ "$got" != "$want" ]; then echo "unpacked $dst has sha256 $got, want $want" >&2; exit 1; fi
chmod 755 "$tmp"
mv -f "$tmp" "$dst"`

func (h *Host) unpack(ctx context.Context, packed, remote, sum string) error {
	if _, err := h.Run(ctx, "sh", "-c", unpackScript, "unpack", packed, remote, sum); err != nil {
		return fmt.Errorf("unpack %s: %w", remote, err)
	}
	return nil
}

// gzipFile compresses a file into memory: the bytes are sent again as they
// are if the connection drops mid-upload.
func gzipFile(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := io.Copy(zw, f); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	d := sha256.New()
	if _, err := io.Copy(d, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(d.Sum(nil)), nil
}
