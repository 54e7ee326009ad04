// Package estimator answers "when will my pod start?" for the manager: the estimator,
// a runnable of the leader that simulates the queues from the manager's caches every
// few seconds (Estimator), and the what-if, which simulates pods that are not created
// (WhatIfs). Both run package estimate's simulation on a fresh core of their own, never
// the manager's, and take the CPU through package pacing.
//
// The manager connects them to what they read: its caches (Caches, which builds the
// world a simulation starts from), its event recorder and its metrics (Metrics). The
// informer handlers that teach the estimator are the manager's: they hand it what a pod
// teaches (Learn, Arrived) and tell it that something changed (Changed).
package estimator
