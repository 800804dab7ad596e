#!/usr/bin/env bash
# lint-scripts.sh: refuse a pipe into a reader that may exit before its
# writer is done (grep -q/-m/-l, head, sed ...q, awk ... exit) in the
# repository's scripts (deploy/, .ci/, the Makefile), make test's first step.
#
# Why: every script here runs under `set -o pipefail`. When the reader leaves
# early, the writer's next write dies of SIGPIPE, the pipeline's status is
# 141, and a true answer reads false: cluster_nodes piped into grep -qx kafka-3
# called kafka-3 "unknown" 227 times in 300, and kcat -L piped into grep -q could
# call a healthy broker down. Test membership with a loop (stack.sh's
# is_one_of), or read the output whole first (out=$(cmd); [[ $out == *x* ]]).
#
# A line that must keep such a pipe (its writer cannot be cut short, or its
# status is not read) says so with a trailing `# lint-scripts: ok (why)`.
#
# Usage: lint-scripts.sh [FILE...]   (default: every tracked script)
set -euo pipefail
cd "$(dirname "$0")/../.."

if (($#)); then
  files=("$@")
else
  mapfile -t files < <(git ls-files -- 'deploy/*.sh' 'deploy/**/*.sh' '.ci/*' Makefile 2>/dev/null || true)
  # A checkout without git metadata (an exported tarball) still gets linted.
  ((${#files[@]})) || mapfile -t files < <(find deploy .ci -type f \( -name '*.sh' -o -path '.ci/*' \); echo Makefile)
fi

# A pipe, then an early-exiting reader.
readers='grep[[:space:]]+([^|;&]*[[:space:]])?(-[[:alnum:]]*[qml][[:alnum:]]*|--quiet|--silent|--max-count|--files-with-matches)'
readers+='|head([[:space:]]|$)'
readers+="|sed[[:space:]]+[^|]*[;{/'[:space:]0-9][qQ]([[:space:];}']|\$)"
readers+="|awk[[:space:]]+[^|]*[^[:alnum:]_]exit[^[:alnum:]_]"
pattern="\|[[:space:]]*($readers)"

bad=0
for f in "${files[@]}"; do
  [[ -f $f ]] || continue
  while IFS= read -r hit; do
    line=${hit#*:}
    # Comments and opted-out lines.
    [[ $line =~ ^[[:space:]]*# ]] && continue
    [[ $line == *"# lint-scripts: ok"* ]] && continue
    echo "$f:${hit%%:*}: a pipe into an early-exiting reader under pipefail: ${line#"${line%%[![:space:]]*}"}" >&2
    bad=1
  done < <(grep -nE -- "$pattern" "$f" || true)
done
if ((bad)); then
  echo "lint-scripts: test membership without a pipe (is_one_of), or read the output whole first" >&2
  exit 1
fi
echo "lint-scripts: ${#files[@]} scripts, no pipe into an early-exiting reader"
