// Package kernel reads what a Linux host's kernel says about itself, from a
// mountable root (FS): "/" on the machine, a fixture tree in tests. It is
// the one place linerate reads what the kernel says in /proc and /sys:
// tuning, host metrics, the server launchers and the environment record
// all go through it, and the prefill check (lab/fields' CheckPrefillFits,
// below infra) is handed FS.MemAvailable by its caller. It imports nothing
// of linerate but lab/cpus. Left outside: the namespace handles of
// infra/netns and tuning (file descriptors and inode identities, not
// facts).
//
// Every reader is a method of FS, or, where tuning reads through a view of
// the root (a fixture host, a network namespace), a function over Reader
// (ReadTopology, ReadNetDevice, ReadInterrupts, ReadIRQAffinity,
// ReadSysctl); what it reads goes to a pure parser, so fixtures test the
// parsing and the real /proc tests the paths.
//
// # gopsutil
//
// github.com/shirou/gopsutil/v4 reads what it reads well, pointed at the
// root through its context (common.EnvMap with the proc, sys and etc keys):
// per-CPU times (its raw-tick reader), per-interface byte counters, and the
// CPU model. Hand-written readers remain where it lacks something, each
// saying why where it lives: per-thread CPU by thread name and the rest of
// /proc/<pid> (proc.go), the host name, kernel release, architecture, boot
// time and interface drivers (host.go), which gopsutil takes from the
// running kernel rather than from a root. Host metrics sample every 500 ms during a
// cell, so cost was measured (BenchmarkSnapshot in sweeps/hostmetrics, one
// snapshot with the readers here against the hand-written ones they
// replaced): on the 2-vCPU VM both take about 0.2 ms, within a tenth of
// each other, nearly all of it reading each thread's stat and comm.
//
// CPU lists are lab/cpus (one type and parser, a leaf under the
// schema that every package can import without an arrow up).
package kernel
