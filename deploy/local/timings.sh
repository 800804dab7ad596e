#!/usr/bin/env bash
# timings.sh FILE: the table make test prints at its end (or where it
# failed): each step's wall time, its share and its exit status, from the
# lines `name<TAB>seconds<TAB>status` the Makefile's `timed` macro wrote.
set -euo pipefail
file=${1:?usage: timings.sh FILE}
[[ -s $file ]] || exit 0
awk -F'\t' '
  { name[NR] = $1; secs[NR] = $2; rc[NR] = $3; total += $2 }
  END {
    printf "\nmake test, step by step (wall time on this machine):\n"
    printf "  %-22s %8s %6s  %s\n", "step", "time", "share", "result"
    for (i = 1; i <= NR; i++)
      printf "  %-22s %5dm%02ds %5.1f%%  %s\n", name[i], secs[i] / 60, secs[i] % 60,
        total ? 100 * secs[i] / total : 0, rc[i] == 0 ? "ok" : "FAILED (exit " rc[i] ")"
    printf "  %-22s %5dm%02ds\n", "total", total / 60, total % 60
  }' "$file"
