#!/usr/bin/env bash
# A real SLURM cluster on this one machine, for Monsoon's end-to-end tests:
#   tools/slurm_cluster.sh start DIR [NODES [HOSTS]]   munged + slurmctld + NODES slurmd (3)
#   tools/slurm_cluster.sh stop DIR            stops exactly the daemons that `start` started
# Emulated nodes are named mn1..mnN, each with 8 CPUs and its own slurmd port: all at
# 127.0.0.1, or, given HOSTS (a file of `monsoon hosts up` lines: NAME NAMESPACE ADDRESS),
# node mnI on the emulated host named mnI and slurmctld on the host named ctl, each daemon in
# its host's network namespace; SLURM's commands then reach the controller from those hosts
# only (run them on ctl: nsenter --net=/run/netns/NAMESPACE). Needs root and the packages slurmctld slurmd
# slurm-client munge.
# `start` prints the environment to use: export SLURM_CONF=DIR/slurm.conf. munged runs as the
# munge user, so DIR and its parents must be traversable by it (e.g. under /tmp, not /root).
set -euo pipefail

cmd="${1:?usage: slurm_cluster.sh start|stop DIR [NODES]}"
dir="$(mkdir -p "${2:?usage: slurm_cluster.sh start|stop DIR [NODES]}" && cd "$2" && pwd)"
nodes="${3:-3}"
hosts="${4:-}"

# address_of NAME, on NAME COMMAND...: a host's address, and COMMAND run on it (without HOSTS:
# 127.0.0.1, and here).
address_of() { if [ -n "$hosts" ]; then awk -v n="$1" '$1 == n { print $3 }' "$hosts"; else echo 127.0.0.1; fi; }
on() {
  local name=$1
  shift
  if [ -n "$hosts" ]; then
    # nsenter, not `ip netns exec`: that mounts a /sys of its own, without slurmd's cgroups.
    nsenter --net="/run/netns/$(awk -v n="$name" '$1 == n { print $2 }' "$hosts")" -- "$@"
  else
    "$@"
  fi
}

stop() {
  # Only PIDs this script recorded; never by process name.
  for f in "$dir"/pids/*.pid; do
    [ -e "$f" ] || continue
    pid=$(cat "$f")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$f"
  done
}

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
  local limit=$1 what=$2
  shift 2
  for _ in $(seq 1 $((limit * 10))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  echo "slurm_cluster: $what not ready after ${limit}s; logs in $dir/log" >&2
  return 1
}

if [ "$cmd" = stop ]; then
  stop
  exit 0
fi
[ "$cmd" = start ] || { echo "usage: slurm_cluster.sh start|stop DIR [NODES]" >&2; exit 2; }

mkdir -p "$dir"/{pids,log,state,spool,munge}
chmod 0755 "$dir"
host=$(hostname -s)

# munge: its own socket, key and pid in DIR, so no system-wide daemon is touched.
chown munge:munge "$dir/munge"
chmod 0700 "$dir/munge"
if [ ! -s "$dir/munge/munge.key" ]; then
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
fi
chown munge:munge "$dir/munge/munge.key"
chmod 0400 "$dir/munge/munge.key"
socket="$dir/munge/munge.socket"
/usr/sbin/runuser -u munge -- /usr/sbin/munged --key-file="$dir/munge/munge.key" --socket="$socket" \
  --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
  --seed-file="$dir/munge/munged.seed" --force
wait_for 10 munged test -s "$dir/munge/munged.pid"
cp "$dir/munge/munged.pid" "$dir/pids/munged.pid"

# cred_expire: SLURM holds a requeued job back until its old credential has expired (default
# 120 s, plus up to sched_interval = 60 s before the main scheduler looks again); 10 s (SLURM
# takes 5 at least) and a 1 s scheduling loop keep a test's requeue within half a minute.
# Ports from a free range chosen per cluster, so two clusters never collide.
base=$(( 20000 + (RANDOM % 2000) * 10 ))
{
  echo "ClusterName=monsoon-test"
  echo "SlurmctldHost=localhost($(address_of ctl))"
  echo "SlurmctldPort=$base"
  echo "SlurmUser=root"
  echo "AuthType=auth/munge"
  echo "AuthInfo=socket=$socket,cred_expire=10"
  echo "CredType=cred/munge"
  echo "ProctrackType=proctrack/linuxproc"
  echo "TaskPlugin=task/none"
  echo "SelectType=select/cons_tres"
  echo "SelectTypeParameters=CR_CPU"
  echo "SlurmdParameters=config_overrides"
  echo "MpiDefault=none"
  echo "AccountingStorageType=accounting_storage/none"
  echo "JobCompType=jobcomp/none"
  echo "JobAcctGatherType=jobacct_gather/none"
  echo "MinJobAge=5"
  echo "SchedulerParameters=batch_sched_delay=0,bf_interval=1,sched_interval=1"
  echo "ReturnToService=2"
  echo "StateSaveLocation=$dir/state"
  echo "SlurmdSpoolDir=$dir/spool/%n"
  echo "SlurmctldPidFile=$dir/log/slurmctld.pid"
  echo "SlurmdPidFile=$dir/log/slurmd-%n.pid"
  echo "SlurmctldLogFile=$dir/log/slurmctld.log"
  echo "SlurmdLogFile=$dir/log/slurmd-%n.log"
  for i in $(seq 1 "$nodes"); do
    echo "NodeName=mn$i NodeHostname=$host NodeAddr=$(address_of "mn$i") Port=$((base + i)) CPUs=8 State=UNKNOWN"
  done
  echo "PartitionName=debug Nodes=mn[1-$nodes] Default=YES MaxTime=INFINITE State=UP"
} >"$dir/slurm.conf"
export SLURM_CONF="$dir/slurm.conf"

on ctl /usr/sbin/slurmctld -i -f "$SLURM_CONF"
wait_for 10 slurmctld test -s "$dir/log/slurmctld.pid"
cp "$dir/log/slurmctld.pid" "$dir/pids/slurmctld.pid"
for i in $(seq 1 "$nodes"); do
  mkdir -p "$dir/spool/mn$i"
  on "mn$i" /usr/sbin/slurmd -N "mn$i" -f "$SLURM_CONF"
  wait_for 10 "slurmd mn$i" test -s "$dir/log/slurmd-mn$i.pid"
  cp "$dir/log/slurmd-mn$i.pid" "$dir/pids/slurmd-mn$i.pid"
done
wait_for 30 "nodes idle" on ctl bash -c "[ \$(sinfo -h -t idle -o %D) = $nodes ]"
echo "export SLURM_CONF=$SLURM_CONF"
