#!/usr/bin/env bash
# progress.sh LABEL COMMAND [ARG...]: runs COMMAND and, while it runs, says every
# PROGRESS_INTERVAL seconds (15 by default) that it is still at LABEL and for how long,
# so that a long build (the local control plane's, `make tools`; the demo's) is never
# silent for more than that. It says when COMMAND started and ended, passes its output
# through and exits with its status. LABEL says which step of how many, e.g.
# "[2/6] kube-scheduler".
set -uo pipefail

label=$1
shift
interval=${PROGRESS_INTERVAL:-15}
start=$(date +%s)

elapsed() {
	local s=$(($(date +%s) - start))
	if ((s >= 60)); then
		printf '%dm%02ds' $((s / 60)) $((s % 60))
	else
		printf '%ds' "$s"
	fi
}

echo "==> $label: started"
"$@" &
pid=$!
# Forward an interrupt to the command, as the shell would for a foreground one.
trap 'kill -TERM "$pid" 2>/dev/null' INT TERM
(
	while sleep "$interval"; do
		echo "==> $label: still running, $(elapsed) so far"
	done
) &
ticker=$!
wait "$pid"
status=$?
kill "$ticker" 2>/dev/null
wait "$ticker" 2>/dev/null
if ((status == 0)); then
	echo "==> $label: done in $(elapsed)"
else
	echo "==> $label: failed after $(elapsed) (exit $status)" >&2
fi
exit "$status"
