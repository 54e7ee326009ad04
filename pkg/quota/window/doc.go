// Package window computes what the windows of one budget (BudgetWindows, or
// ClusterBudgetWindows) make of it at an instant: the effective spec the admission core
// is given in place of the written one, which windows are open, and the next instant
// anything changes, so that the caller arms a timer for it. It is pure: no API server,
// no clock of its own; the controller (pkg/quota/controller's budgetWindows) feeds it the
// objects and the time.
//
// A window is open over [start, end) for an absolute one, and over [f, f+duration) for
// each instant f its cron schedule fires, read in its time zone (time/tzdata is embedded,
// so every IANA zone is known in an image without a zone database). Firings that fall in
// a gap of a daylight-saving change, or twice in its repeated hour, are as
// github.com/robfig/cron/v3 computes them: a firing in the gap (02:30 on the night
// clocks go forward in Europe/Berlin) does not happen that day, and one in the repeated
// hour happens once. Firings that come while the window is open (a duration longer than
// the time between them) keep it open until duration after the last.
//
// Among the windows open at once, the higher Priority wins, and between equal
// priorities the name that sorts first. Each field is taken from the winner among the
// open windows that set it: state as a whole, and hard (absolute, or added to the
// written hard), borrowingLimit and lendingLimit resource by resource. A window that
// is not valid (Problem) changes nothing.
package window
