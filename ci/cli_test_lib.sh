# Sourced by the command-line tests that run rocebench as a user does: a scratch folder removed on
# exit, and checks of a command's exit code and output.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
expect_rc() {  # RC COMMAND...: runs it, output in $work/out
  local want=$1 rc=0; shift
  "$@" >"$work/out" 2>&1 || rc=$?
  cat "$work/out"
  [[ $rc == "$want" ]] || fail "exit $rc, not $want: $*"
}
expect_out() { grep -qE -- "$1" "$work/out" || fail "no line matching: $1"; }
