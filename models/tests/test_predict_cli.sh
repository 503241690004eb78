#!/usr/bin/env bash
# `rocebench predict` as a user runs it (issue #42): a prediction on a built-in fabric records one
# models.predict record (engine "predicted") per world size and sync mode and prints its table; bad
# input is refused before anything starts, exit 2, naming the flag or the file, line and field.
#   usage: test_predict_cli.sh ROCEBENCH
set -euo pipefail
rb=$1
source "$(dirname "$0")/../../ci/cli_test_lib.sh"

expect_rc 0 "$rb" predict --model resnet50 --timeline cpu-resnet50-fp32-b2 --batch 32 --images-per-s 219 \
  --fabric 25g-roce --sync ring,ps --world-sizes 1,8,16,128 --results-dir "$work/ok"
expect_out "^# predicted: resnet50 on 25g-roce \(8 GPUs a node\), cpu-resnet50-fp32-b2 scaled to 219 images/s at batch 32"
expect_out "^ring +1 +1 +146\.1 +219\.0 +1\.00 +1\.000"
expect_out "^ring +128 +16 "
expect_out "^ps +128 +16 "
expect_out "^# 8 predictions \(4 world sizes x 2 sync modes\) in [0-9.]+ ms"
# Where scaling is lost at the largest world size, and the NIC rate or bucket size for 90% (the default target).
expect_out "^# where scaling is lost at 128 GPUs: exposed allreduce [0-9.]+ ms of a [0-9.]+ ms step \(efficiency 0\.[0-9]+\); ring over 25 Gbit/s"
expect_out "^# where scaling is lost at 128 GPUs: .*; ps over 25 Gbit/s needs [0-9.]+ Gbit/s per node"
python3 - "$work/ok/results.jsonl" <<'PY' || fail "records"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1]) if '"models.predict"' in l]
assert len(records) == 8, len(records)
for r in records:
    assert r["status"] == "ok" and r["params"]["engine"] == "predicted", r
    assert r["world"] == r["params"]["ranks"], r
    assert r["samples"]["predicted_from"]["timeline"] == "cpu-resnet50-fp32-b2 scaled to 219 images/s at batch 32"
    assert r["samples"]["predicted_from"]["fabric"]["inter_node"]["source"], r
ring128 = next(r for r in records if r["params"]["sync"] == "ring" and r["world"] == 128)
ps128 = next(r for r in records if r["params"]["sync"] == "ps" and r["world"] == 128)
assert ring128["metrics"]["efficiency"] > 0.9 > ps128["metrics"]["efficiency"], (ring128["metrics"], ps128["metrics"])
assert ps128["metrics"]["target_efficiency"] == 0.9 and ps128["metrics"]["needed_nic_Gbps_per_node"] > 25, ps128["metrics"]
assert ps128["samples"]["what_if"]["text"].startswith("at 128 GPUs: exposed allreduce "), ps128["samples"]
assert all("target_efficiency" not in r["metrics"] for r in records if r["world"] != 128)
PY

# Bad input: the flag (or file:line:field) is named and nothing starts.
base=(--model resnet50 --timeline cpu-resnet50-fp32-b2 --fabric 25g-roce --results-dir "$work/bad")
expect_rc 2 "$rb" predict "${base[@]}" --world-sizes 8,12
expect_out "^rocebench predict: --world-sizes: 12 ranks are not whole nodes of fabric '25g-roce' \(8 GPUs a node\)"
expect_rc 2 "$rb" predict "${base[@]}" --sync ring,butterfly
expect_out "^rocebench predict: --sync: unknown sync mode 'butterfly'"
expect_rc 2 "$rb" predict "${base[@]}" --images-per-s 0
expect_out "--images-per-s: 0 is out of range"
expect_rc 2 "$rb" predict "${base[@]}" --target-efficiency 0
expect_out "--target-efficiency: 0 is out of range"
expect_rc 2 "$rb" predict "${base[@]}" --target-efficiency 1.5
expect_out "--target-efficiency: 1.5 is out of range"
expect_rc 2 "$rb" predict "${base[@]}" --step-ms -5
expect_out "--step-ms: -5 is out of range"
expect_rc 2 "$rb" predict "${base[@]}" --batch 32
expect_out "^rocebench predict: --batch: 32 images a step, but timeline 'cpu-resnet50-fp32-b2' was measured at batch 2"
expect_rc 2 "$rb" predict --model resnet152 --timeline cpu-resnet50-fp32-b2 --fabric 25g-roce --results-dir "$work/bad"
expect_out "^rocebench predict: --timeline: .*field 'params.model': the timeline is of model 'resnet50', not 'resnet152'"
expect_rc 2 "$rb" predict --model resnet50 --timeline cpu-resnet50-fp32-b2 --results-dir "$work/bad"
expect_out "^rocebench predict: give one of --fabric and --fabric-from"

# --fabric-from: a ring sweep at 2 and 4 ranks made by 50 us a step and 1 Gbit/s (2(n-1) steps of
# S/n) is fitted back exactly; a sweep at one world size is refused, naming the flag and the sweep.
sweep() {  # FOLDER WORLD... : a results.jsonl of ring allreduce records at those world sizes
  mkdir -p "$1" && python3 - "$@" <<'PY'
import json, sys
folder, worlds = sys.argv[1], [int(w) for w in sys.argv[2:]]
with open(folder + "/results.jsonl", "w") as out:
    for n in worlds:
        for size in (1024, 16384, 262144, 1048576):
            us = 2 * (n - 1) * (50 + 8e-3 * size / n)
            out.write(json.dumps({"schema": "rocebench.result/1", "run": "sweep", "kind": "result", "time": "2026-12-04T00:00:00Z",
                                  "step": "collectives.allreduce", "host": "h0", "rank": 0, "world": n, "status": "ok",
                                  "params": {"algorithm": "ring", "transport": "tcp", "bytes": size, "ranks": n},
                                  "metrics": {"time_us": us}, "samples": {"n": 1}}) + "\n")
PY
}
sweep "$work/sweep24" 2 4
expect_rc 0 "$rb" predict --model resnet50 --timeline cpu-resnet50-fp32-b2 --fabric-from "$work/sweep24" --sync ring,ps \
  --world-sizes 1,8 --results-dir "$work/fitted"
expect_out "^# fitted to 8 ring allreduce records over tcp: alpha 50\.0 us a step, 0\.125 GB/s, relative RMS 0\.0%"
expect_out "^ring +8 +8 "
sweep "$work/sweep4" 4
expect_rc 2 "$rb" predict --model resnet50 --timeline cpu-resnet50-fp32-b2 --fabric-from "$work/sweep4" --results-dir "$work/bad"
expect_out "^rocebench predict: --fabric-from: ring allreduce at one world size only \(4 ranks\)"
expect_rc 2 "$rb" predict --model resnet50 --timeline cpu-resnet50-fp32-b2 --fabric-from "$work/sweep24,$work/ok" --results-dir "$work/bad"
expect_out "^rocebench predict: --fabric-from: run '$work/ok' holds no collectives.allreduce records"
cat >"$work/fabric.json" <<'JSON'
{
  "name": "typo",
  "gpus_per_node": 8,
  "intra_node": {"bandwidth_GBps": 15.75, "latency_us": 5.7, "source": "PCIe 3.0 x16"},
  "inter_node": {"nic_Gbps": 25, "latency_us": 9.6, "source": "IEEE 802.3by",
                 "rail": 2}
}
JSON
expect_rc 2 "$rb" predict --model resnet50 --timeline cpu-resnet50-fp32-b2 --fabric "$work/fabric.json" --results-dir "$work/bad"
expect_out "^rocebench predict: --fabric: $work/fabric.json:6: field 'inter_node.rail': is not a known field"
sed -i 's/"rail": 2/"rails": "two"/' "$work/fabric.json"
expect_rc 2 "$rb" predict --model resnet50 --timeline cpu-resnet50-fp32-b2 --fabric "$work/fabric.json" --results-dir "$work/bad"
expect_out "$work/fabric.json:6: field 'inter_node.rails': expected integer"

# A model with no measured timeline: one derived for --device, recorded and printed as derived; a model
# with one: the measured timeline wins, at the device's derived speed.
expect_rc 0 "$rb" predict --model vgg16 --device h100 --batch 32 --fabric 25g-roce --sync ring --world-sizes 1,8,64 \
  --results-dir "$work/derived"
expect_out "^# predicted: vgg16 on 25g-roce \(8 GPUs a node\), derived for h100 \(bf16\) as derived, batch 32"
expect_out "^# timeline: derived from vgg16's per-layer FLOPs and bytes for h100 \(NVIDIA H100 SXM5 80 GB, bf16: 989\.5 TFLOP/s x 0\.36"
python3 - "$work/derived/results.jsonl" <<'PY' || fail "derived records"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1]) if '"models.predict"' in l]
assert len(records) == 3, len(records)
for r in records:
    assert r["params"]["timeline"] == "derived-h100", r["params"]
    assert r["samples"]["predicted_from"]["timeline_source"]["kind"] == "derived", r["samples"]["predicted_from"]
    assert r["samples"]["predicted_from"]["timeline_source"]["rated_source"].startswith("NVIDIA H100"), r["samples"]
PY
expect_rc 0 "$rb" predict --model resnet50 --device h100 --batch 32 --fabric 25g-roce --sync ring --world-sizes 1,8 \
  --results-dir "$work/measured"
expect_out "^# timeline: measured cpu-resnet50-fp32-b2 \(shipped; a measured timeline wins over one derived for h100\)"
expect_out "cpu-resnet50-fp32-b2 scaled to h100's derived [0-9.]+ ms a step at batch 32"
expect_rc 2 "$rb" predict --model vgg16 --device h900 --batch 32 --fabric 25g-roce --results-dir "$work/bad"
expect_out "^rocebench predict: --device \"h900\": must be one of \[\"h100\",\"h200\",\"a100\",\"p100\",\"epyc-9654\"\]"
expect_rc 2 "$rb" predict --model vgg16 --fabric 25g-roce --results-dir "$work/bad"
expect_out "^rocebench predict: --timeline or --device is required: no measured timeline of vgg16 is shipped"
expect_rc 2 "$rb" predict --model vgg16 --device h100 --fabric 25g-roce --results-dir "$work/bad"
expect_out "^rocebench predict: --batch: a timeline derived for h100 needs the batch a rank trains"

# A published table: every point predicted, its error printed; nothing else may be given beside it.
expect_rc 0 "$rb" predict --published horovod-2018
expect_out "^inception3 +ring +512 +1 +0\.900 +0\.[0-9]+ +[-+][0-9.]+% "
expect_out "^vgg16 +ring +512 +1 +0\.680 "
expect_out "^# assumed for vgg16: "
expect_rc 2 "$rb" predict --published horovod-2018 --model vgg16
expect_out "^rocebench predict: --published: the table states every input; --model is not read beside it"
[[ ! -e "$work/bad" ]] || fail "a refused prediction started a run"
echo "PASS"
