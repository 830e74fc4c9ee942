// Package kernel reads what a Linux host's kernel says about itself, from a
// mountable root (FS): "/" on the machine, a fixture tree in tests. It is
// the one place linerate reads /proc and /sys: tuning, host metrics, the
// server launchers and the environment record all go through it. It
// imports nothing of linerate.
//
// Every reader is a method of FS; what it reads goes to a pure parser, so
// fixtures test the parsing and the real /proc tests the paths.
//
// # gopsutil
//
// github.com/shirou/gopsutil/v4 reads what it reads well, pointed at the
// root through its context (common.EnvMap with the proc, sys and etc keys):
// per-CPU times (its raw-tick reader), per-interface byte counters, and the
// CPU model. Hand-written readers remain where it lacks something, each
// saying why where it lives: per-thread CPU by thread name and the rest of
// /proc/<pid> (proc.go), the host name, kernel release, boot time and
// interface drivers (host.go), which gopsutil takes from the running
// kernel rather than from a root. Host metrics sample every 500 ms during a
// cell, so cost was measured (BenchmarkSnapshot in sweeps/hostmetrics, one
// snapshot with the readers here against the hand-written ones they
// replaced): on the 2-vCPU VM both take about 0.2 ms, within a tenth of
// each other, nearly all of it reading each thread's stat and comm.
//
// # CPU lists
//
// CPUList is the one CPU-list type; ParseCPUList its one parser, for
// --cpu-list, campaign cpu lists, server cpus, tuning profiles and every
// list the kernel writes (online, cpulist, thread_siblings_list,
// smp_affinity_list, Cpus_allowed_list). Its rules:
//
//   - Parts are separated by commas; a part is a CPU ("8") or an ascending
//     range ("4-19", "5-5"). A descending range ("3-1") is refused.
//   - Blanks around the list, a part or a number are ignored ("0 - 3, 8").
//   - An empty or blank string is the empty list; callers that need CPUs
//     say so themselves. An empty part ("0,,2", "0,") is refused.
//   - Strides ("0-7:2", the kernel's "0-7:2/4") and negative numbers are
//     refused: no list linerate reads or takes is written that way.
//   - CPUs are 0-8191 (MaxCPUs): 8192 is the most a kernel can be built
//     for. The bound is checked before a range is expanded, so a hostile
//     list ends at once, whatever it names.
//   - A CPU named twice, alone or inside ranges ("0-3,2"), is refused: a
//     worker mapping that doubled up on a core would skew every figure.
//   - The order written is kept: the bench pins worker i to list[i mod n].
//     The set operations (Contains, Intersect, Minus, Union, Equal, Sorted)
//     ignore order and return ascending lists.
package kernel
