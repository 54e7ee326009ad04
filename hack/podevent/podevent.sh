#!/usr/bin/env bash
# The path of one pod event through the admission core (pkg/quota), from the event to
# the next ungate: a charged pod ends, which frees room for a gated pod, which Admit
# admits and Done confirms. Every function of pkg/quota is given a first statement that
# records its file and name (in a throwaway worktree), and the program prints what the
# event ran: the files and functions, and how often the path moved from one file to
# another and came back to a file it had left; then the same for the calls of
# AdmissionQueue's own methods alone (the composing layer, the parts' calls left out);
# then each call the event makes into the core (NewPod or BudgetFromAPI, then the
# AdmissionQueue methods the manager calls) on its own. A return across those calls is
# the event's nature (Admit reads the ledger and the queues that UpsertPod wrote); one
# within a call is a path that goes back and forth between parts.
#
# With -e budget it traces the other event the issue of the core's reshape measures: the
# budget's hard raised by one with one pod waiting, up to the same ungate.
#
#   hack/podevent/podevent.sh [-e pod|budget] [commit]   (default: pod, HEAD)
set -euo pipefail
event=pod
if [ "${1:-}" = -e ]; then
	event=${2:?-e takes pod or budget}
	shift 2
fi
case $event in pod | budget) ;; *) echo "unknown event $event: pod or budget" >&2; exit 2 ;; esac
root=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
src=$work/src
cleanup() {
	git -C "$root" worktree remove --force "$src" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
git -C "$root" worktree add --detach "$src" "${1:-HEAD}" >/dev/null 2>&1

for f in "$src"/pkg/quota/*.go; do
	case $f in *_test.go) continue ;; esac
	base=$(basename "$f")
	awk -v file="$base" '
	function name(line,   s, recv) {
		s = line; sub(/^func /, "", s); recv = ""
		if (s ~ /^\(/) {
			recv = s; sub(/\).*/, "", recv); sub(/.* \*?/, "", recv); recv = recv "."
			sub(/^\([^)]*\) /, "", s)
		}
		sub(/[([].*/, "", s); return recv s
	}
	/^func .*\{$/ { print; printf "\tzzTrace(\"%s\", \"%s\")\n", file, name($0); next }
	/^func .*\{ .*\}$/ { sub(/\{ /, "{ zzTrace(\"" file "\", \"" name($0) "\"); ") }
	{ print }' "$f" >"$f.new"
	mv "$f.new" "$f"
done
cat >"$src/pkg/quota/zz_trace.go" <<'GO'
package quota

// ZZCalls records the functions entered while ZZOn is set (hack/podevent).
var (
	ZZCalls []string
	ZZOn    bool
)

func zzTrace(file, fn string) {
	if ZZOn {
		ZZCalls = append(ZZCalls, file+" "+fn)
	}
}
GO
# NewPod takes the gate as its second argument since the core's reshape.
gate='v1alpha1.SchedulingGate, '
if grep -q '^func NewPod(p \*corev1.Pod, now' "$src/pkg/quota/pod.go"; then gate=''; fi
mkdir -p "$src/zz_podevent"
sed "s/GATE/$gate/" "$root/hack/podevent/main.go.tmpl" >"$src/zz_podevent/main.go"
(cd "$src" && go run ./zz_podevent "$event") | awk '
# step follows a path k (all: every call; q: AdmissionQueue methods alone) into file f.
function step(k, f) {
	calls[k]++
	if (f == cur[k]) return
	if (cur[k] != "") { moves[k]++; left[k, cur[k]] = 1 }
	if ((k, f) in left) back[k]++
	if (!((k, f) in seen)) { seen[k, f] = 1; files[k]++ }
	path[k] = path[k] (path[k] == "" ? "" : " > ") f
	cur[k] = f
}
function summary(k) {
	return sprintf("calls: %d, files: %d, moves between files: %d, of them back to a file left before: %d", calls[k], files[k], moves[k] + 0, back[k] + 0)
}
{
	if (!($0 in seenFn)) { seenFn[$0] = 1; funcs++; fnList = fnList sprintf("  %-18s %s\n", $1, $2) }
	step("all", $1)
	if ($2 ~ /^AdmissionQueue\./) step("q", $1)
	# A call the event makes into the core starts a path of its own (c1, c2, ...).
	if ($2 ~ /^(NewPod|BudgetFromAPI|AdmissionQueue\.[A-Z])/) { ncall++; callName[ncall] = $2 }
	if (ncall > 0) step("c" ncall, $1)
}
END {
	printf "every call: %s, functions: %d\n", summary("all"), funcs
	printf "AdmissionQueue methods alone: %s\n", summary("q")
	printf "each call into the core on its own:\n"
	for (i = 1; i <= ncall; i++) printf "  %s: %s\n", callName[i], summary("c" i)
	printf "path: %s\nAdmissionQueue path: %s\nfunctions, in the order first entered:\n%s", path["all"], path["q"], fnList
}'
