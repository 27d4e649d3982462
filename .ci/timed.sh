# timed NAME COMMAND...: run one step of CI, then print its wall time (also when it fails, and
# with its exit status then); the step's status is the function's.
timed() {
  local name=$1 start rc=0
  shift
  start=$(date +%s.%N)
  "$@" || rc=$?
  awk -v s="$start" -v e="$(date +%s.%N)" -v n="$name" -v rc="$rc" 'BEGIN {
    printf "== step %s: %.1f s wall%s\n", n, e - s, (rc ? " (failed, exit " rc ")" : "") }'
  return "$rc"
}
