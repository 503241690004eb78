#!/usr/bin/env bash
# CTest: `rocebench run --launcher mpirun` (Open MPI) across 4 emulated hosts, started from a fifth
# (the login host). mpirun reaches the hosts through a remote-start agent, host_exec.sh --rsh, that
# maps a host's name or address to its namespace where ssh would log in. The same checks as under
# Slurm (launcher_checks.sh), and `rocebench accept --launcher mpirun`
# gives every node a verdict. Exit 77 (skipped, the reason on the last line) without root, network
# namespaces or Open MPI; a failure under CI=true (../unavailable.sh).
set -uo pipefail
rocebench=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
bed=$here/../netns/netns.sh
source "$here/../netns/testlib.sh"
netns_test_setup rbm
for tool in mpirun orted; do
  command -v "$tool" >/dev/null || testbed_unavailable "$tool is not installed (ci/setup.sh installs openmpi-bin)"
done
source "$here/launcher_checks.sh"

hosts=$("$bed" up 5 --prefix "$prefix" --subnet 10.78.10) || { echo "FAIL: bring-up"; exit 1; }
export ROCEBENCH_TESTBED_HOSTS=$hosts
head -n 4 "$hosts" | awk '{print $1}' >"$work/nodes"
login=$(awk 'END {print $1}' "$hosts")
# mpirun starts its daemon (orted) on each host through the agent, as it would through ssh.
export OMPI_MCA_plm_rsh_agent="$here/host_exec.sh --rsh"
launch_command() { local command=$1; shift; exec "$here/host_exec.sh" "$login" "$rocebench" "$command" --launcher mpirun --hostfile "$work/nodes" "$@"; }

launcher_checks mpirun
accept_checks mpirun OMPI_COMM_WORLD_* "$login" "$work/nodes"
echo "$((failures == 0 ? 1 : 0)) passed, $failures failed"
exit $((failures > 0))
