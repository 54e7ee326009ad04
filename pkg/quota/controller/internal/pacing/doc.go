// Package pacing bounds the CPU the manager's simulations take beside admission: the
// estimator's passes yield to admission and take a share of one CPU while they run
// (Yield), and the what-ifs draw together from one bucket of CPU time (Pacer). Both are
// steps a simulation calls between its own (estimate.Options.Pace).
package pacing
