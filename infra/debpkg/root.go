package debpkg

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// archInfo is what a root needs to know about one architecture.
type archInfo struct {
	triplet string
	loader  string
	machine elf.Machine
	class   elf.Class
}

var arches = map[string]archInfo{
	"amd64": {"x86_64-linux-gnu", "ld-linux-x86-64.so.2", elf.EM_X86_64, elf.ELFCLASS64},
	"arm64": {"aarch64-linux-gnu", "ld-linux-aarch64.so.1", elf.EM_AARCH64, elf.ELFCLASS64},
}

func lookupArch(arch string) (archInfo, error) {
	a, ok := arches[arch]
	if !ok {
		return a, fmt.Errorf("%w: %s roots are not supported (accepted: amd64, arm64)", ErrWrongArch, arch)
	}
	return a, nil
}

// LibDirs are the directories of root that binaries search for libraries,
// in order. They are the RPATH of every relocated executable.
func LibDirs(root, arch string) []string {
	t := arches[arch].triplet
	return []string{
		filepath.Join(root, "usr/lib", t), filepath.Join(root, "lib", t),
		filepath.Join(root, "usr/lib"), filepath.Join(root, "lib"),
		filepath.Join(root, "usr/lib64"), filepath.Join(root, "lib64"),
	}
}

// unpack extracts each .deb into root with dpkg-deb -x (no maintainer
// scripts, no dpkg database).
func unpack(ctx context.Context, root string, debs []string) error {
	for _, d := range debs {
		out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", d, root).CombinedOutput()
		if err != nil {
			return fmt.Errorf("unpack %s: %w: %s", filepath.Base(d), ErrBrokenDownload, bytes.TrimSpace(out))
		}
	}
	return nil
}

// inRoot resolves p (a path inside root, given relative to root) following
// symlinks, with absolute targets taken as inside root, so nothing resolves
// to the host's files. It returns the real path or an error.
func inRoot(root, rel string) (string, error) {
	parts := strings.Split(strings.Trim(filepath.ToSlash(rel), "/"), "/")
	cur := ""
	for hops := 0; len(parts) > 0; {
		p := parts[0]
		parts = parts[1:]
		switch p {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			if cur == "." {
				cur = ""
			}
			continue
		}
		next := filepath.Join(cur, p)
		fi, err := os.Lstat(filepath.Join(root, next))
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops++; hops > 40 {
			return "", fmt.Errorf("resolve %s in %s: too many symlinks", rel, root)
		}
		target, err := os.Readlink(filepath.Join(root, next))
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			cur = ""
		}
		parts = append(strings.Split(strings.Trim(target, "/"), "/"), parts...)
	}
	return filepath.Join(root, cur), nil
}

// relativizeSymlinks rewrites absolute symlinks inside root (Debian ships
// e.g. /lib64/ld-linux-x86-64.so.2 -> /lib/x86_64-linux-gnu/…) into
// relative ones, so they point into root and never at the host's files.
func relativizeSymlinks(root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return err
		}
		target, err := os.Readlink(path)
		if err != nil || !filepath.IsAbs(target) {
			return err
		}
		rel, err := filepath.Rel(filepath.Dir(path), filepath.Join(root, target))
		if err != nil {
			return err
		}
		if err := os.Remove(path); err != nil {
			return err
		}
		return os.Symlink(rel, path)
	})
}

// findLoader returns the real path of the dynamic loader inside root.
func findLoader(root, arch string) (string, error) {
	a, err := lookupArch(arch)
	if err != nil {
		return "", err
	}
	for _, d := range LibDirs("", arch) {
		p, err := inRoot(root, filepath.Join(d, a.loader))
		if err != nil {
			continue
		}
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s has no dynamic loader %s (is libc6 in the closure?)", ErrUnresolvedLib, root, a.loader)
}

// binDirs hold the executables that get relocated.
var binDirs = []string{"usr/bin", "usr/sbin", "bin", "sbin", "usr/libexec"}

// executables lists the regular ELF executables (with an interpreter, not a
// shared library) under root's bin directories, relative to root.
func executables(root string) ([]string, error) {
	var out []string
	for _, d := range binDirs {
		err := filepath.WalkDir(filepath.Join(root, d), func(path string, de fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if !de.Type().IsRegular() {
				return nil
			}
			if f, err := elf.Open(path); err == nil {
				isExe := hasInterp(f) && !hasSoname(f)
				f.Close()
				if isExe {
					rel, _ := filepath.Rel(root, path)
					out = append(out, rel)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(out)
	return out, nil
}

func hasInterp(f *elf.File) bool {
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return true
		}
	}
	return false
}

func hasSoname(f *elf.File) bool {
	s, _ := f.DynString(elf.DT_SONAME)
	return len(s) > 0
}

// patchelf runs a patchelf binary, through its own private loader when it
// came from a private root, so it works whatever the host's libc is.
type patchelf struct {
	argv []string
}

func (p patchelf) run(ctx context.Context, args ...string) error {
	argv := append(append([]string(nil), p.argv...), args...)
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("patchelf %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// relocate points every executable under root at root's own loader and
// library directories. DT_RPATH (not RUNPATH) is used because it also
// applies to the libraries those executables load, so libssl finds root's
// libcrypto, not the host's.
func relocate(ctx context.Context, pe patchelf, root, arch string) ([]string, error) {
	loader, err := findLoader(root, arch)
	if err != nil {
		return nil, err
	}
	exes, err := executables(root)
	if err != nil {
		return nil, fmt.Errorf("list executables in %s: %w", root, err)
	}
	rpath := strings.Join(LibDirs(root, arch), ":")
	for _, e := range exes {
		if err := pe.run(ctx, "--set-interpreter", loader, "--force-rpath", "--set-rpath", rpath, filepath.Join(root, e)); err != nil {
			return nil, fmt.Errorf("relocate %s: %w", e, err)
		}
	}
	return exes, nil
}

// CheckRoot verifies that every ELF file under root is built for arch and
// that each library it needs resolves inside root's library directories.
// It returns one error naming every problem, or nil.
func CheckRoot(root, arch string) error {
	a, err := lookupArch(arch)
	if err != nil {
		return err
	}
	var wrongArch, missing []string
	libDirs := LibDirs("", arch)
	found := map[string]bool{}
	exists := func(rel string) bool {
		if v, ok := found[rel]; ok {
			return v
		}
		ok := false
		if p, err := inRoot(root, rel); err == nil {
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
				ok = true
			}
		}
		found[rel] = ok
		return ok
	}
	// resolves looks where the loader would: the object's own $ORIGIN
	// search path (gconv modules use one), then root's library dirs.
	resolves := func(f *elf.File, rel, soname string) bool {
		var dirs []string
		for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
			paths, _ := f.DynString(tag)
			for _, p := range paths {
				for _, d := range strings.Split(p, ":") {
					if strings.HasPrefix(d, "$ORIGIN") || strings.HasPrefix(d, "${ORIGIN}") {
						d = filepath.Join(filepath.Dir(rel), strings.TrimPrefix(strings.TrimPrefix(d, "${ORIGIN}"), "$ORIGIN"))
						dirs = append(dirs, d)
					}
				}
			}
		}
		for _, d := range append(dirs, libDirs...) {
			if exists(filepath.Join(d, soname)) {
				return true
			}
		}
		return false
	}
	err = filepath.WalkDir(root, func(path string, de fs.DirEntry, err error) error {
		if err != nil || !de.Type().IsRegular() {
			return err
		}
		f, err := elf.Open(path)
		if err != nil {
			return nil // not an ELF file
		}
		defer f.Close()
		rel, _ := filepath.Rel(root, path)
		if f.Machine != a.machine || f.Class != a.class {
			wrongArch = append(wrongArch, fmt.Sprintf("%s is %s", rel, f.Machine))
			return nil
		}
		needed, _ := f.DynString(elf.DT_NEEDED)
		for _, n := range needed {
			if !resolves(f, rel, n) {
				missing = append(missing, rel+" needs "+n)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("check %s: %w", root, err)
	}
	if len(wrongArch) > 0 {
		return fmt.Errorf("check %s: %w: want %s, %s", root, ErrWrongArch, a.machine, strings.Join(first(wrongArch, 5), "; "))
	}
	if len(missing) > 0 {
		return fmt.Errorf("check %s: %w: %s", root, ErrUnresolvedLib, strings.Join(first(missing, 8), "; "))
	}
	return nil
}

func first(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("and %d more", len(s)-n))
	}
	return s
}

// CheckBinary says whether the ELF file at path runs on arch; a file built
// for another machine gives ErrWrongArch naming both.
func CheckBinary(path, arch string) error {
	a, err := lookupArch(arch)
	if err != nil {
		return err
	}
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("check binary %s: not an ELF executable: %w", path, err)
	}
	defer f.Close()
	if f.Machine != a.machine || f.Class != a.class {
		return fmt.Errorf("check binary %s: %w: built for %s, this host runs %s (%s)", path, ErrWrongArch, f.Machine, a.machine, arch)
	}
	return nil
}
