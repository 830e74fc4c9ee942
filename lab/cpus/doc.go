// Package cpus is the one CPU-list type and parser of linerate. It imports
// nothing of linerate, so the schema (lab), the kernel readers
// (infra/kernel) and tuning all use it without an arrow up.
//
// List is the one CPU-list type; Parse its one parser, for
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
//   - CPUs are 0-8191 (Max): 8192 is the most a kernel can be built
//     for. The bound is checked before a range is expanded, so a hostile
//     list ends at once, whatever it names.
//   - A CPU named twice, alone or inside ranges ("0-3,2"), is refused: a
//     worker mapping that doubled up on a core would skew every figure.
//   - The order written is kept: the bench pins worker i to list[i mod n].
//     The set operations (Contains, Intersect, Minus, Union, Equal, Sorted)
//     ignore order and return ascending lists.
package cpus
