#!/usr/bin/python3
"""Checks a `--k8s` manifest as Kubernetes would take it: YAML documents of Node objects whose label
keys and values obey apimachinery's rules, the verdict each node is expected to have, a NoSchedule
taint on exactly the failed nodes, and a validity time after the run's.
   usage: check_k8s_manifest.py FILE NODE=pass|fail...   (exit 1 naming what is wrong)"""
import re
import sys

import yaml  # Debian's python3-yaml: run with /usr/bin/python3

NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def fail(msg):
    sys.exit(f"check_k8s_manifest: {sys.argv[1]}: {msg}")


def check_key(key):
    prefix, _, name = key.rpartition("/")
    if not NAME.match(name) or len(name) > 63:
        fail(f"label key {key!r}: name part is not a valid label name")
    if prefix and (len(prefix) > 253 or not DNS_SUBDOMAIN.match(prefix)):
        fail(f"label key {key!r}: prefix is not a DNS subdomain")


def check_value(key, value):
    if not isinstance(value, str):
        fail(f"label {key}: value {value!r} is not a string")
    if value and (len(value) > 63 or not NAME.match(value)):
        fail(f"label {key}: value {value!r} is not a valid label value")


expected = dict(arg.split("=", 1) for arg in sys.argv[2:])
with open(sys.argv[1], encoding="utf-8") as f:
    docs = [d for d in yaml.safe_load_all(f) if d is not None]
seen = {}
for d in docs:
    if d.get("apiVersion") != "v1" or d.get("kind") != "Node":
        fail(f"a document that is not a v1 Node: {d!r:.200}")
    meta = d["metadata"]
    name, labels = meta["name"], meta["labels"]
    if not DNS_SUBDOMAIN.match(name):
        fail(f"node name {name!r} is not a DNS subdomain")
    for k, v in labels.items():
        check_key(k)
        check_value(k, v)
    for k in meta.get("annotations", {}):
        check_key(k)
    verdict = labels["rocebench.io/accept"]
    taints = d.get("spec", {}).get("taints", [])
    want_taint = [{"key": "rocebench.io/accept", "value": "fail", "effect": "NoSchedule"}] if verdict == "fail" else []
    if taints != want_taint:
        fail(f"node {name}: verdict {verdict} with taints {taints}")
    if verdict == "fail" and labels["rocebench.io/accept-reasons"] in ("", "none"):
        fail(f"node {name}: fails without a reason")
    if not labels["rocebench.io/accept-valid-until"] > labels["rocebench.io/accept-time"]:
        fail(f"node {name}: valid until {labels['rocebench.io/accept-valid-until']}, not after its time")
    seen[name] = verdict
if seen != expected:
    fail(f"verdicts {seen}, expected {expected}")
print(f"ok: {len(docs)} Node(s), labels valid: {seen}")
