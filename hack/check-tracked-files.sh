#!/usr/bin/env bash
# Fails when git tracks a build output: a file over 1 MiB or an ELF executable. Binaries
# belong in bin/ and _output/ (both ignored), never in the repository (a 136 MB one got
# in once, and every clone carried it).
set -euo pipefail
cd "$(dirname "$0")/.."
bad=0
while IFS= read -r -d '' f; do
  [ -f "$f" ] && [ ! -L "$f" ] || continue
  size=$(stat -c %s "$f")
  if [ "$size" -gt 1048576 ]; then
    echo "tracked file over 1 MiB: $f ($size bytes)"; bad=1
  elif [ "$(head -c4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ]; then
    echo "tracked ELF binary: $f"; bad=1
  fi
done < <(git ls-files -z)
if [ "$bad" -ne 0 ]; then
  echo "remove them with 'git rm --cached FILE' and add them to .gitignore"
  exit 1
fi
