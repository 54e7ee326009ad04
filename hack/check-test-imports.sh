#!/usr/bin/env bash
# Fails when a Go file that is not a _test.go file imports "testing". Such a file is built
# into everything that links its package (hack/localcluster, the demo, the benchmarks),
# and the testing package with it; a helper for tests in a non-test file takes a small
# interface instead (localcluster.TB, testbed.FreePort's fataler).
set -euo pipefail
cd "$(dirname "$0")/.."
# For each package whose non-test files import testing: its directory, then its files.
tmpl='{{range .Imports}}{{if eq . "testing"}}{{$.Dir}}{{range $.GoFiles}} {{.}}{{end}}{{"\n"}}{{end}}{{end}}'
pkgs=$( { go list -tags e2e -f "$tmpl" ./...; cd api && go list -f "$tmpl" ./...; } )
[ -z "$pkgs" ] && exit 0
while read -r dir files; do
  named=0
  for f in $files; do
    if grep -q '^[[:space:]]*\(import[[:space:]]\+\)\?\([[:alnum:]_.]\+[[:space:]]\+\)\?"testing"' "$dir/$f"; then
      echo "non-test file imports \"testing\": ${dir#"$PWD"/}/$f"; named=1
    fi
  done
  [ "$named" -eq 1 ] || echo "non-test file imports \"testing\" in ${dir#"$PWD"/}"
done <<<"$pkgs"
echo "take a small interface of what the helper uses (Helper, Fatalf, Cleanup...) instead, or move it into a _test.go file"
exit 1
