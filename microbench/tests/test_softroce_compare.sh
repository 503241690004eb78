#!/usr/bin/env bash
# The rule that judges rocebench next to perftest (ci/testbeds/softroce/compare.py) on fixture rounds:
# agreement passes; a factor 2 or more fails however noisy (1), and so do a difference beyond the two
# tools' spreads and a missing figure; a difference the spreads explain is too noisy to judge (77);
# TCG's mode jumps are dropped; a malformed line is bad input (2).
set -uo pipefail
compare=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0
expect() {  # expect RC GREP FILE [ARGS...]
  local want=$1 pattern=$2 file=$3
  shift 3
  out=$(python3 "$compare" "$dir/$file" "$@" 2>&1); rc=$?
  if [[ $rc == "$want" ]] && grep -q -- "$pattern" <<<"$out"; then
    echo "PASS $file $*: exit $rc, '$pattern'"
  else
    echo "FAIL $file $*: exit $rc (want $want and '$pattern'):"; echo "$out"; failures=$((failures + 1))
  fi
}
# rounds FILE RB_BW_FACTOR RB_LAT_FACTOR NOISE: 6 rounds; both tools see the same per-round load (NOISE
# scales the round), rocebench off by a small per-round jitter and the given factors.
rounds() {
  python3 - "$dir/$1" "$2" "$3" "$4" <<'PY'
import sys
path, bw_f, lat_f, noise = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
load = [1.0, 1.0 + noise, 1.0 - noise / 2, 1.0 + noise / 3, 1.0 - noise, 1.0 + noise / 2]
jitter = [1.00, 1.01, 0.99, 1.005, 0.995, 1.0]
with open(path, "w") as f:
    for r, (l, j) in enumerate(zip(load, jitter), 1):
        f.write(f"{r} write_lat perftest {14.0 * l:.3f}\n{r} write_lat rocebench {14.0 * l * j * lat_f:.3f}\n")
        f.write(f"{r} write_bw perftest {0.3 / l:.3f}\n{r} write_bw rocebench {0.3 / l / j * bw_f:.3f}\n")
PY
}
rounds agree.txt 1 1 0.05
expect 0 "write_bw .*: agree" agree.txt
expect 0 "write_bw .*within a factor 2: agree" agree.txt --coarse
expect 1 "write_bw .*ratio 0.4[0-9]*: a factor 2.0[0-9] apart: DISAGREE" agree.txt --scale 0.5
rounds halved_bw.txt 0.5 1 0.05
expect 1 "write_bw .*DISAGREE" halved_bw.txt
expect 1 "write_lat .*: agree" halved_bw.txt
rounds slow_lat.txt 1 1.2 0.05
expect 1 "write_lat .*ratio 1.2.*beyond what the spreads explain: DISAGREE" slow_lat.txt
expect 0 "write_lat .*ratio 1.2.*within a factor 2: agree" slow_lat.txt --coarse
# Gross errors in clean rounds: bandwidth in bits read as bytes (1/8), latency counted 5.5 times. The old
# rule dropped every run of the far tool as a "mode jump" and could not judge (77).
rounds eighth_bw.txt 0.125 1 0.05
expect 1 "write_bw .*ratio 0.12[0-9]: a factor 8.* apart: DISAGREE" eighth_bw.txt --coarse
expect 1 "write_bw .*0 mode jump(s) dropped.*DISAGREE" eighth_bw.txt
rounds slow_lat55.txt 1 5.5 0.05
expect 1 "write_lat .*ratio 5.5[0-9]*: a factor 5.5.* apart: DISAGREE" slow_lat55.txt --coarse
# However noisy: both tools jump between two modes, rocebench's runs 2.2x perftest's.
printf '%s\n' "1 write_bw perftest 0.30" "1 write_bw rocebench 0.66" "2 write_bw perftest 0.12" "2 write_bw rocebench 0.264" \
  "3 write_bw perftest 0.30" "3 write_bw rocebench 0.66" "4 write_bw perftest 0.12" "4 write_bw rocebench 0.264" >"$dir/noisy_far.txt"
expect 1 "ratio 2.200: a factor 2.20 apart: DISAGREE" noisy_far.txt
# Two modes, 3 runs of 4 in opposite ones (a guest run's write_bw): MAD alone saw a spread of ~0.05 and
# called 1.40 a disagreement; the range sees both modes, and they explain it.
printf '%s\n' "1 write_bw perftest 0.30" "1 write_bw rocebench 0.459" "2 write_bw perftest 0.28" "2 write_bw rocebench 0.287" \
  "3 write_bw perftest 0.30" "3 write_bw rocebench 0.415" "4 write_bw perftest 0.38" "4 write_bw rocebench 0.424" >"$dir/modes.txt"
expect 77 "ratio 1.398; .*spread 0.162, n=4.*spread 0.199, n=4), tolerance 0.500 (printed rounding 0.018): the spreads explain the difference: TOO NOISY" modes.txt
expect 0 "ratio 1.398: within a factor 2: agree" modes.txt --coarse
# A CI run's read_lat: ratio 1.25 within a tolerance of 0.9; halved, still within a factor 2 and the spreads.
printf '%s\n' "1 read_lat perftest 31.18" "1 read_lat rocebench 30.74" "2 read_lat perftest 27.54" "2 read_lat rocebench 36.97" \
  "3 read_lat perftest 33.34" "3 read_lat rocebench 43.90" "4 read_lat perftest 55.97" "4 read_lat rocebench 48.68" >"$dir/wide.txt"
expect 77 "ratio 1.253; .*tolerance 0.901 (printed rounding 0.000): .*TOO NOISY" wide.txt
expect 77 "ratio 0.627; .*tolerance 0.901 (printed rounding 0.000): .*TOO NOISY" wide.txt --scale 0.5
expect 1 "ratio 0.157: a factor 6.38 apart: DISAGREE" wide.txt --scale 0.125
# A CI run's write_bw: perftest prints two decimals (0.46 Gb/s can be 0.455-0.465), so a median 4.6% away
# with a 4.3% spread tolerance is within what the printed figures can tell (the old rule said DISAGREE);
# 10% away is beyond it.
printf '%s\n' "1 write_bw perftest 0.45" "1 write_bw rocebench 0.486" "2 write_bw perftest 0.46" "2 write_bw rocebench 0.478" \
  "3 write_bw perftest 0.47" "3 write_bw rocebench 0.481" "4 write_bw perftest 0.46" "4 write_bw rocebench 0.481" >"$dir/rounded.txt"
expect 77 "ratio 1.046; .*tolerance 0.054 (printed rounding 0.012): the spreads explain the difference: TOO NOISY" rounded.txt
expect 1 "ratio 1.103; .*beyond what the spreads explain: DISAGREE" rounded.txt --scale 1.055
# Equal medians agree whatever the spread; the coarse check is what guards a noisy run.
printf '%s\n' "1 write_bw perftest 0.30" "1 write_bw rocebench 0.12" "2 write_bw perftest 0.12" "2 write_bw rocebench 0.30" \
  "3 write_bw perftest 0.30" "3 write_bw rocebench 0.30" "4 write_bw perftest 0.12" "4 write_bw rocebench 0.12" >"$dir/noisy.txt"
expect 0 "ratio 1.000; .*agree" noisy.txt
# A whole run on the 2000 us mode (either tool) is dropped; the rest still agree.
printf '%s\n' "1 send_lat perftest 14.1" "1 send_lat rocebench 3990.2" "2 send_lat perftest 1994.5" "2 send_lat rocebench 14.3" \
  "3 send_lat perftest 14.0" "3 send_lat rocebench 14.2" "4 send_lat perftest 14.3" "4 send_lat rocebench 14.0" >"$dir/jumps.txt"
expect 0 "2 mode jump(s) dropped; ratio 1.00.*agree" jumps.txt
# One run each: no spread, so the fine judgement cannot decide; the coarse one can.
printf '%s\n' "1 write_lat perftest 14.0" "1 write_lat rocebench 15.4" >"$dir/one.txt"
expect 77 "fewer than 2 runs of a tool left, no spread: TOO NOISY" one.txt
expect 0 "ratio 1.100: within a factor 2: agree" one.txt --coarse
printf '%s\n' "1 read_lat perftest 14.2" "1 read_lat rocebench" "2 read_lat perftest 14.0" "2 read_lat rocebench 14.1" >"$dir/missing.txt"
expect 1 "runs without a figure: {'rocebench': 1}" missing.txt
printf '%s\n' "1 read_lat perftest 14.2" "1 read_lat ib_read_lat 14.1" >"$dir/bad.txt"
expect 2 "bad.txt:2: expected" bad.txt
echo "== $failures failure(s)"
[[ $failures == 0 ]]
