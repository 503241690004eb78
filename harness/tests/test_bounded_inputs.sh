#!/usr/bin/env bash
# Every reader of a file the user names is bounded, through the binary as a user runs it: /dev/zero
# and a FIFO are refused by their kind, a 1 GiB file (a hole: no disk) by its stated size or its
# first line's, a record field that names a series by its length; each exit 2 naming the file, the
# line or field, and the limit; none hangs (a FIFO) or grows by 100 MB of memory doing it.
# Before: train --timeline /dev/zero grew to 12 GB, import /dev/zero ended in bad_alloc (exit 3),
# report / compare / history add called /dev/zero "empty".
#   usage: test_bounded_inputs.sh ROCEBENCH
set -euo pipefail
rb=$1
source "$(dirname "$0")/../../ci/cli_test_lib.sh"
fixture=$(cd "$(dirname "$0")/../../netcheck/tests/fixtures/mlx5-good" && pwd)
osu=$(cd "$(dirname "$0")/../../reports/tests/data" && pwd)/osu_bw.txt
cd "$work"  # train writes its run's results folder here

mkfifo "$work/fifo"
truncate -s 1G "$work/big"
printf '{"schema":"rocebench.result/1","run":"r1","kind":"result","time":"2026-01-01T00:00:00Z","step":"collectives.allreduce","host":"h","rank":0,"world":2,"params":{"model":"%s"},"metrics":{"time_us":1},"samples":{},"status":"ok"}\n' \
  "$(head -c 2000 /dev/zero | tr '\0' v)" >"$work/long-param.jsonl"

# The binary's own peak RSS (its libraries and start-up), which a refusal should not grow much beyond.
peak_rss_kb() { /usr/bin/time -f "peak_rss_kb %M" "$@" 2>&1 >/dev/null | sed -n 's/^peak_rss_kb //p'; }
[[ -x /usr/bin/time ]] && start_kb=$(peak_rss_kb "$rb" --help)
# RC COMMAND...: as expect_rc, within 60 s, and (where /usr/bin/time is) within 100 MB of the start's RSS.
bounded() {
  local want=$1; shift
  if [[ -x /usr/bin/time ]]; then
    expect_rc "$want" timeout 60 /usr/bin/time -f "peak_rss_kb %M" "$@"
    local kb
    kb=$(sed -n 's/^peak_rss_kb //p' "$work/out")
    [[ -n $kb ]] && ((kb < start_kb + 100000)) || fail "peak RSS ${kb:-?} KB (at start: $start_kb KB): $*"
  else
    expect_rc "$want" timeout 60 "$@"
  fi
}
kind_of_zero="/dev/zero: is a character device, not a file"
results_line="$work/big:1: a line of a results file is at most 8 MiB; this one is longer"

bounded 2 "$rb" import perftest /dev/zero
expect_out "$kind_of_zero"
bounded 2 "$rb" import nccl-tests "$work/fifo"
expect_out "$work/fifo: is a FIFO \(named pipe\), not a file"
bounded 2 "$rb" import perftest "$work/big"
expect_out "$work/big: is 1 GiB; a tool output to import is at most 64 MiB"

bounded 2 "$rb" train --engine replay --timeline /dev/zero --world-sizes 1,2
expect_out "$kind_of_zero"
bounded 2 "$rb" train --engine replay --timeline "$work/big" --world-sizes 1,2
expect_out "$work/big: is 1 GiB; a timeline is at most 64 MiB"

bounded 2 "$rb" report --no-plots -o "$work/report" /dev/zero
expect_out "$kind_of_zero"
bounded 2 "$rb" report --no-plots -o "$work/report" "$work/big"
expect_out "$results_line"
bounded 2 "$rb" compare /dev/zero /dev/zero
expect_out "$kind_of_zero"
bounded 2 "$rb" compare "$work/big" "$work/big"
expect_out "$results_line"
bounded 2 "$rb" history add --db "$work/h.sqlite" /dev/zero
expect_out "$kind_of_zero"
bounded 2 "$rb" accept --netns /dev/zero
expect_out "$kind_of_zero"
bounded 2 "$rb" accept --netns "$work/big"
expect_out "$work/big: is 1 GiB; a netns hosts file is at most 16 MiB"
bounded 2 "$rb" history add --db "$work/h.sqlite" "$work/big"
expect_out "$results_line"
bounded 2 "$rb" history add --db "$work/h.sqlite" "$work/long-param.jsonl"
expect_out "long-param.jsonl:1: field 'params.model': the value is 2.0 KiB long; a field that names a series is at most 1 KiB"
bounded 2 "$rb" report --no-plots -o "$work/report" "$work/long-param.jsonl"
expect_out "long-param.jsonl:1: field 'params.model'"
bounded 2 "$rb" history check --db /dev/zero
expect_out "$kind_of_zero"
bounded 2 "$rb" history add --db "$work/fifo" "$work/long-param.jsonl"
expect_out "$work/fifo: is a FIFO \(named pipe\), not a file"

# The plan, a thresholds file and a baseline.
bounded 2 "$rb" run /dev/zero
expect_out "$kind_of_zero"
bounded 2 "$rb" run "$work/big"
expect_out "$work/big: is 1 GiB; a plan is at most 16 MiB"
"$rb" import osu "$osu" -o "$work/ok.jsonl"
bounded 2 "$rb" report --no-plots -o "$work/report" --thresholds "$work/fifo" "$work/ok.jsonl"
expect_out "$work/fifo: is a FIFO \(named pipe\), not a file"
bounded 2 "$rb" report --no-plots -o "$work/report" --baseline /dev/zero "$work/ok.jsonl"
expect_out "$kind_of_zero"

# A saved host tree and its captures: a file there that is /dev/zero, or 1 GiB.
netcheck() { bounded 2 "$rb" netcheck --root "$work/host/root" --capture "$work/host/capture" --host n1; }
for file in root/proc/cmdline capture/lspci-vvv.txt; do
  rm -rf "$work/host" && cp -a "$fixture" "$work/host"
  ln -sf /dev/zero "$work/host/$file"
  netcheck
  expect_out "$work/host/$file: is a character device, not a file"
  rm "$work/host/$file" && truncate -s 1G "$work/host/$file"
  netcheck
  expect_out "$work/host/$file: is 1 GiB; a (saved host file|tool capture) is at most 16 MiB"
done
echo "PASS"
