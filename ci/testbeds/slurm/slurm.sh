#!/usr/bin/env bash
# A real Slurm cluster (Debian's slurm-wlm and munge) on the emulated hosts of ci/testbeds/netns.
#
#   slurm.sh up N [--prefix rbs] [--subnet 10.78.0]    prints the environment file (below)
#   slurm.sh down [--prefix rbs]
#
# Brings up N + 1 emulated hosts: hosts 0..N-1 are compute nodes, each with its slurmd (NodeName =
# the host's name, NodeAddr = its address); host N is the login node, running slurmctld and munged,
# where srun / mpirun are started from (through host_exec.sh). Every daemon runs in its host's
# network and UTS namespaces (host_exec.sh), so ranks see their node's name and address; the root
# namespace is left as it is. Configuration, keys, logs and state are in the test bed's private
# folder ($ROCEBENCH_NETNS_STATE/<prefix>/slurm); tear-down stops every daemon and removes it.
#
# The environment file sets SLURM_CONF, ROCEBENCH_TESTBED_HOSTS (for host_exec.sh), SLURM_NODES (a
# hostfile of the compute nodes, one name a line) and SLURM_LOGIN (the login host). Needs root.
# Exit 3 when Slurm cannot start here (the reason on stderr); 2 for bad usage.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
PATH=$PATH:/usr/sbin:/sbin  # the daemons and mungekey live there, outside a user's usual PATH
netns=$here/../netns/netns.sh
host_exec=$here/host_exec.sh
state_root=${ROCEBENCH_NETNS_STATE:-/run/rocebench-netns}
prefix=rbs
subnet=10.78.0

die() { echo "slurm.sh: $*" >&2; exit 2; }
cannot() { local why="$*"; echo "slurm.sh: ${why//$'\n'/; }" >&2; down >/dev/null 2>&1 || true; exit 3; }  # one line: the skip's reason

parse_options() {
  while (($#)); do
    case $1 in
      --prefix) prefix=$2; shift 2 ;;
      --subnet) subnet=$2; shift 2 ;;
      *) die "unknown option $1" ;;
    esac
  done
}

# A zombie is gone too: here pid 1 may be slow to reap the daemons it inherits.
alive() { [ -e "/proc/$1" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }

# Stops the daemon whose pid file is $1: SIGTERM, then SIGKILL after 5 s.
stop_pidfile() {
  local pid
  pid=$(cat "$1" 2>/dev/null) || return 0
  [[ $pid =~ ^[0-9]+$ ]] || return 0
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 50); do alive "$pid" || return 0; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
}

down() {
  local dir=$state_root/$prefix/slurm
  if [ -d "$dir" ]; then
    for f in "$dir"/run/slurmd-*.pid "$dir/run/slurmctld.pid" "$dir/run/munged.pid"; do
      [ -e "$f" ] && stop_pidfile "$f"
    done
  fi
  # Whatever is left in the hosts (slurmstepd, tasks) goes with them; netns.sh removes the folder.
  "$netns" down --prefix "$prefix"
}

up() {
  local n=$1
  [[ $n =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 64)) || die "N must be 1..64"
  for tool in slurmctld slurmd srun sinfo munged mungekey; do
    command -v "$tool" >/dev/null || cannot "$tool is missing (ci/setup.sh installs slurm-wlm and munge)"
  done
  down >/dev/null 2>&1 || true
  local hosts
  hosts=$("$netns" up $((n + 1)) --prefix "$prefix" --subnet "$subnet") || cannot "the emulated hosts did not come up"
  local dir=$state_root/$prefix/slurm
  mkdir -p "$dir/run" "$dir/log" "$dir/ctld" "$dir/spool"
  chmod 700 "$dir"  # munged refuses a key or socket others can reach

  local login login_addr
  login=$(awk 'END {print $1}' "$hosts")
  login_addr=$(awk 'END {print $2}' "$hosts")
  head -n "$n" "$hosts" | awk '{print $1}' >"$dir/nodes"
  export ROCEBENCH_TESTBED_HOSTS=$hosts

  mungekey -c -k "$dir/munge.key" 2>"$dir/log/mungekey.log" || cannot "mungekey failed: $(cat "$dir/log/mungekey.log")"
  chmod 600 "$dir/munge.key"
  "$host_exec" "$login" munged --force --socket="$dir/run/munge.socket" --key-file="$dir/munge.key" \
    --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/run/munged.seed" \
    2>>"$dir/log/munged.log" || cannot "munged did not start: $(tail -n 3 "$dir/log/munged.log")"

  local cpus
  cpus=$(nproc)
  cat >"$dir/slurm.conf" <<EOF
# Written by ci/testbeds/slurm/slurm.sh: a test bed, not a model for production.
ClusterName=$prefix
SlurmctldHost=$login($login_addr)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/run/munge.socket
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
# No cgroups: the hosts share one kernel and one cgroup tree.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
PlugStackConfig=$dir/plugstack.conf
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SlurmdParameters=config_overrides
KillWait=5
MessageTimeout=10
SlurmdTimeout=30
InactiveLimit=0
EOF
  while read -r ns address; do
    [ "$ns" = "$login" ] && continue
    echo "NodeName=$ns NodeAddr=$address CPUs=$cpus RealMemory=100 State=UNKNOWN" >>"$dir/slurm.conf"
  done <"$hosts"
  echo "PartitionName=rb Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >>"$dir/slurm.conf"
  : >"$dir/plugstack.conf"
  export SLURM_CONF=$dir/slurm.conf

  "$host_exec" "$login" slurmctld -c -f "$SLURM_CONF" 2>>"$dir/log/slurmctld.log" ||
    cannot "slurmctld did not start: $(tail -n 3 "$dir/log/slurmctld.log")"
  while read -r ns; do
    "$host_exec" "$ns" slurmd -f "$SLURM_CONF" 2>>"$dir/log/slurmd-start.log" ||
      cannot "slurmd did not start on $ns: $(tail -q -n 3 "$dir/log/slurmd-start.log" "$dir/log/slurmd-$ns.log" 2>/dev/null)"
  done <"$dir/nodes"

  # Every node idle within 30 s, or Slurm cannot run here.
  local state=""
  for _ in $(seq 150); do
    state=$("$host_exec" "$login" sinfo -h -N -o '%N %T' 2>&1 | sort -u) || true
    [ "$(grep -c ' idle$' <<<"$state")" = "$n" ] && break
    sleep 0.2
  done
  [ "$(grep -c ' idle$' <<<"$state")" = "$n" ] ||
    cannot "the nodes did not all become idle within 30 s: $(tr '\n' ';' <<<"$state") $(tail -n 2 "$dir"/log/slurmd-*.log 2>/dev/null | tr '\n' ' ')"

  cat >"$dir/env" <<EOF
export SLURM_CONF=$SLURM_CONF
export ROCEBENCH_TESTBED_HOSTS=$hosts
export SLURM_NODES=$dir/nodes
export SLURM_LOGIN=$login
EOF
  echo "$dir/env"
}

cmd=${1:-}
shift || true
case $cmd in
  up) count=${1:-}; shift || true; parse_options "$@"; up "$count" ;;
  down) parse_options "$@"; down ;;
  *) sed -n '2,16p' "$0"; exit 2 ;;
esac
