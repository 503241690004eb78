#!/usr/bin/env python3
"""Mutation testing of rocebench's verdict rules: can the tests fail where it matters?

Each mutant is one plausible bug (a rounding, a unit, a bus factor, a comparison) written into the
source, one at a time. The script applies it, rebuilds the module's test binary in the build folder,
runs the module's tests, and puts the file back. A mutant is KILLED when a test fails, SURVIVED when
every test passes (a bug no test catches), STILLBORN when it does not compile. Not part of CI: each
mutant costs a rebuild (about a minute on 2 vCPUs).

    ci/mutate.sh [--build build-ci] [--only TEXT]   (needs a configured and built build folder)

Exit 0 when every mutant that compiled was killed, 1 when one survived, 2 on bad use.
"""
import argparse
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


class Mutant:
    def __init__(self, name, path, old, new, tests, gtest_filter="*"):
        self.name, self.path, self.old, self.new = name, path, old, new
        self.tests, self.gtest_filter = tests, gtest_filter  # test binary (its CMake target) and the tests to run


MUTANTS = [
    # statistics (common)
    Mutant("p99 rank rounded down", "common/src/stats.cpp",
           "std::ceil(static_cast<double>(n) * q)", "std::floor(static_cast<double>(n) * q)", "common_tests", "Stats.*"),
    Mutant("percentiles ignore the dropped tail", "common/src/stats.cpp",
           "return sorted[std::min(i, sorted.size() - 1)];", "return kept[std::min(i, n - 1)];", "common_tests", "Stats.*"),
    Mutant("sample instead of population stdev", "common/src/stats.cpp",
           "std::sqrt(sq / static_cast<double>(n))", "std::sqrt(sq / static_cast<double>(n - 1))", "common_tests", "Stats.*"),
    Mutant("even median takes the upper middle", "common/src/stats.cpp",
           "(sorted[n / 2 - 1] + sorted[n / 2]) / 2.0", "sorted[n / 2]", "common_tests", "Stats.*"),
    # netcheck's checks
    Mutant("PFC accepts a superset of the priorities", "netcheck/src/checks.cpp",
           'e.judge_equal("roce.pfc.enabled_priorities", subject, p.at("/roce/pfc_priorities"), q.pfc, '
           'fix.pfc(p.at("/roce/pfc_priorities")));',
           'e.judge<std::vector<int>>("roce.pfc.enabled_priorities", subject, p.at("/roce/pfc_priorities"), q.pfc, '
           'identity_list, [&](const json& o) { return contains_all(o, p.at("/roce/pfc_priorities")); }, '
           'fix.pfc(p.at("/roce/pfc_priorities")));', "netcheck_tests"),
    Mutant("ECN accepts any priorities", "netcheck/src/checks.cpp",
           "if (std::find(have.begin(), have.end(), w) == have.end()) return false;",
           "if (std::find(have.begin(), have.end(), w) == have.end()) continue;", "netcheck_tests"),
    Mutant("MTU must exceed the minimum", "netcheck/src/checks.cpp",
           "*n->mtu >= min_mtu.get<long long>()", "*n->mtu > min_mtu.get<long long>()", "netcheck_tests"),
    Mutant("link rate must exceed the profile's", "netcheck/src/checks.cpp",
           "*rate >= want_rate.get<double>()", "*rate > want_rate.get<double>()", "netcheck_tests"),
    Mutant("ACS of unknown state counted as disabled", "netcheck/src/checks.cpp",
           "if (it == h.acs.end() || !it->second) unknown.push_back(function);",
           "if (it == h.acs.end() || !it->second) continue;", "netcheck_tests"),
    # reports: thresholds, comparisons, importers' units
    Mutant("threshold >= taken as >", "reports/judge/src/thresholds.cpp",
           'if (op == ">=") return observed >= limit;', 'if (op == ">=") return observed > limit;', "reports_tests"),
    Mutant("threshold <= taken as <", "reports/judge/src/thresholds.cpp",
           'if (op == "<=") return observed <= limit;', 'if (op == "<=") return observed < limit;', "reports_tests"),
    Mutant("Mann-Whitney without the tie correction", "reports/judge/src/compare.cpp",
           "tie_term += t * t * t - t;", "tie_term += 0 * t;", "reports_tests"),
    Mutant("speedup is lower-is-better", "models/shape.json",
           '"speedup": {"unit": "ratio", "better": "higher"', '"speedup": {"unit": "ratio", "better": "lower"', "reports_tests"),
    Mutant("perftest MB/s read as 10^6 bytes", "reports/import/src/import_perftest.cpp",
           "kMiBpsToGbps = 1048576.0 * 8 / 1e9;", "kMiBpsToGbps = 1e6 * 8 / 1e9;", "reports_tests"),
    Mutant("OSU MB/s read as megabits", "reports/import/src/import_osu.cpp",
           "*bandwidth * 8 / 1000", "*bandwidth / 1000", "reports_tests"),
    Mutant("nccl-tests algbw and busbw swapped", "reports/import/src/import_nccl_tests.cpp",
           '{"algbw_GBps", h.algbw.value_or(0)}, {"busbw_GBps", h.busbw.value_or(0)}',
           '{"algbw_GBps", h.busbw.value_or(0)}, {"busbw_GBps", h.algbw.value_or(0)}', "reports_tests"),
    # collectives: bus factors and the element check
    Mutant("allreduce bus factor (n-1)/n", "collectives/src/sweep.cpp",
           "[](int n) { return 2.0 * (n - 1) / n; }", "[](int n) { return 1.0 * (n - 1) / n; }",
           "collectives_tests", "Sweep*:AllreduceCommand.*"),
    Mutant("reduce_scatter bus factor 2(n-1)/n", "collectives/src/sweep.cpp",
           '"reduce_scatter",\n      [](int n) { return static_cast<double>(n - 1) / n; },',
           '"reduce_scatter",\n      [](int n) { return 2.0 * (n - 1) / n; },', "collectives_tests", "Sweep*:AllreduceCommand.*"),
    Mutant("allgather bus factor 1", "collectives/src/sweep.cpp",
           '"allgather",\n      [](int n) { return static_cast<double>(n - 1) / n; },',
           '"allgather",\n      [](int n) { return 1.0 + 0 * n; },', "collectives_tests", "Sweep*:AllreduceCommand.*"),
    Mutant("reduce_scatter checks no element", "collectives/src/sweep.cpp",
           "return owner_of(i, count, ranks) == rank ? reduced(ranks, i, op) : kNotChecked;",
           "return owner_of(i, count, ranks) == rank + ranks ? reduced(ranks, i, op) : kNotChecked;",
           "collectives_tests", "Sweep*:AllreduceCommand.*"),
    Mutant("the element check tolerates 1 in every element", "collectives/src/sweep.cpp",
           "> tolerance * std::fabs(want)", "> 1 + tolerance * std::fabs(want)", "collectives_tests", "Sweep*"),
    # microbench: the probe's figures
    Mutant("bandwidth in bytes per ns", "microbench/src/driver.cpp",
           "const double bits = static_cast<double>(bytes) * 8.0;", "const double bits = static_cast<double>(bytes);",
           "microbench_tests"),
    Mutant("latency keeps perftest's dropped tail", "microbench/src/driver.cpp",
           "{.drop_largest = us.size() > 2 ? std::size_t{2} : std::size_t{0}}", "{.drop_largest = 0}",
           "microbench_tests"),
    # models: the scaling figures
    Mutant("efficiency is the speedup", "models/src/data_parallel.cpp",
           "images_per_s / *state.single_images_per_s / k;", "images_per_s / *state.single_images_per_s;",
           "models_tests", "Scaling.*"),
]


def run(cmd, timeout):
    try:
        return subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        return "timeout"


def test_binary(build, target):
    found = [p for p in build.rglob(target) if p.is_file() and p.stat().st_mode & 0o111]
    if not found:
        sys.exit(f"ci/mutate.sh: no test binary {target} under {build} (build it first: cmake --build --preset ci)")
    return found[0]


def try_mutant(m, build):
    source = ROOT / m.path
    original = source.read_text()
    if original.count(m.old) != 1:
        return "STALE", f"the text to mutate occurs {original.count(m.old)} times in {m.path}"
    binary = test_binary(build, m.tests)
    try:
        source.write_text(original.replace(m.old, m.new))
        if run(["cmake", "--build", str(build), "--target", m.tests], 1200) != 0:
            return "STILLBORN", "does not compile"
        rc = run([str(binary), f"--gtest_filter={m.gtest_filter}"], 900)
        return ("SURVIVED", "every test passed") if rc == 0 else ("KILLED", f"tests exit {rc}")
    finally:
        source.write_text(original)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build-ci", help="configured build folder (default build-ci)")
    ap.add_argument("--only", default="", help="only mutants whose name or file contains this text")
    a = ap.parse_args()
    build = (ROOT / a.build).resolve()
    if not (build / "CMakeCache.txt").exists():
        print(f"ci/mutate.sh: --build {a.build}: no configured build folder there", file=sys.stderr)
        return 2
    chosen = [m for m in MUTANTS if a.only in m.name or a.only in m.path]
    if not chosen:
        print(f"ci/mutate.sh: --only {a.only!r} matches no mutant", file=sys.stderr)
        return 2
    dirty = subprocess.run(["git", "status", "--porcelain", "--"] + sorted({m.path for m in chosen}), cwd=ROOT,
                           stdout=subprocess.PIPE, text=True).stdout.strip()
    if dirty:
        print(f"ci/mutate.sh: commit or stash these first, they are mutated and put back:\n{dirty}", file=sys.stderr)
        return 2
    outcomes = []
    for m in chosen:
        start = time.monotonic()
        outcome, why = try_mutant(m, build)
        outcomes.append(outcome)
        print(f"{outcome:9} {m.name} ({m.path}, {m.tests} {m.gtest_filter}): {why}, {time.monotonic() - start:.0f} s",
              flush=True)
    # Put the build back in step with the source.
    for target in sorted({m.tests for m in chosen}):
        run(["cmake", "--build", str(build), "--target", target], 1200)
    killed, survived = outcomes.count("KILLED"), outcomes.count("SURVIVED")
    judged = killed + survived
    print(f"== mutants killed: {killed} / {judged} ({100 * killed / max(judged, 1):.0f}%); "
          f"{outcomes.count('STILLBORN')} did not compile, {outcomes.count('STALE')} stale")
    return 1 if survived or outcomes.count("STALE") else 0


if __name__ == "__main__":
    sys.exit(main())
