// Package pace says when each open-loop request is due. It never reads a
// clock and never sleeps: every answer is a function of its arguments and
// of how the schedule was built, so it is tested like arithmetic.
//
// # The contract
//
// A Pacer answers Pace(elapsed, sent): elapsed is the time since the load
// started, sent the number of requests already sent (request numbers
// start at 0, so the next one is number sent). It returns
//
//   - wait == 0, stop == false: request number sent is due (its intended
//     time is at or before elapsed): send it now;
//   - wait > 0, stop == false: it is due in wait;
//   - stop == true: the schedule has no request number sent (it would fall
//     at or after the end): send nothing more.
//
// Only the request number decides stop: a sender still behind at the end
// is told its remaining requests are due (they were meant before the end);
// whether to send them is the engine's call (its deadline, its queue bound).
//
// A sender that falls behind gets wait == 0 until it has caught up: the
// schedule never drifts, because request n's intended time is computed
// from n, not from when the request before it went out. Intended(n) is
// that time; the open loop measures latency from it (coordinated
// omission corrected) and counts a request late when it went out more
// than lab.LateAfter after it.
//
// A Schedule is built from a constant rate (Constant, or FromRate for a
// lab.Rate) or a ramp of steps (Steps, or FromRamp for a lab.Ramp), with constant spacing or poisson arrivals (exponential gaps
// drawn from a seed; request n's gap is a function of (seed, n) alone).
// Share splits one schedule over senders, so that together they send
// exactly what it offers. A Schedule is not safe for concurrent use: give
// each sender its own Share. Pace, Intended and Step do not allocate.
// A Chain runs schedules back to back from a start (the engine's warmup at
// a ramp's first rate, then the ramp; a load that starts after the probe's
// idle half of the warmup); request numbers run on across its parts.
// ClosedLoop is the pacer that never waits: closed-loop load; After is
// closed loop from a moment on.
//
// # The knee
//
// Knee finds where a ramp stopped keeping up. Its latency baseline is the
// floor step (Floor): of the ramp's first third (at least its first two
// steps), the one with the lowest p99, so one noisy step among the
// lightest loads cannot raise it. A step after the floor is the knee when
// its p99 is more than 2x the floor's or its p50 more than 3x; any step
// is the knee when its queue grew within it (lateness slope above
// lab.MaxLatenessSlope: its requests complete late, so its achieved rate
// alone can read 100 %) or its achieved rate is more than 5 % below its
// offered rate. The first step breaking any part is the knee; none means
// the server kept up with the whole ramp. docs/result-schema.md works an
// example.
package pace
