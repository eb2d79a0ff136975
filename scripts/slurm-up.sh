#!/usr/bin/env bash
# Start a throwaway Slurm 22.05 cluster on this host, for the hub's slurm driver (tests, CI).
# Debian 12, as root; needs no systemd. Two emulated nodes share the host:
#   $(hostname -s)    features linux,prod     slurmd on port 6818
#   $(hostname -s)2   features linux,staging  slurmd on port 6819
# slurmctld listens on 6817. No slurmrestd and no slurmdbd: the driver uses the CLI (sbatch,
# squeue/sinfo --json, scancel) and the completion log /var/log/slurm/jobcomp.log (sacct -c).
# Safe to run again: packages, config and daemons already in place are kept.
# Stop it with scripts/slurm-down.sh.
set -euo pipefail
H=$(hostname -s)
LOGS=/var/log/slurm

# alive NAME PIDFILE: the pid file names a live process called NAME
alive() { local p; p=$(cat "$2" 2>/dev/null) && [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$1" ]; }

# 1. Packages, only if missing. Debian's postinst scripts start nothing here (policy-rc.d).
if ! [ -x /usr/sbin/slurmctld ] || ! [ -x /usr/sbin/slurmd ] || ! [ -x /usr/bin/sbatch ] || ! [ -x /usr/sbin/munged ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
fi

# 2. Directories and the munge key (Debian's postinst usually made the key already).
install -d -o munge -g munge -m 0755 /run/munge
install -d -o munge -g munge -m 0700 /var/lib/munge /var/log/munge
install -d -o slurm -g slurm -m 0755 /var/spool/slurmctld "$LOGS"
install -d -o root -g root -m 0755 /var/spool/slurmd
[ -s /etc/munge/munge.key ] || mungekey -c -f
chown munge:munge /etc/munge/munge.key
chmod 0400 /etc/munge/munge.key

# 3. cgroup.conf and slurm.conf. Everything on loopback. Jobs are tracked by cgroups
# (proctrack/cgroup): a job's processes end with it, setsid and double forks included, and
# task/cgroup keeps a job to its --mem. batch_sched_delay=0 starts a job within a second instead
# of ~3 s; SlurmdTimeout=10 marks a lost node DOWN in about 30 s; finished jobs stay in
# squeue -t all for MinJobAge seconds.
NEW=$(mktemp)
trap 'rm -f "$NEW"' EXIT
if [ -e /sys/fs/cgroup/cgroup.controllers ]; then CGROUP_PLUGIN=cgroup/v2; else CGROUP_PLUGIN=cgroup/v1; fi
cat >"$NEW" <<CONF
CgroupPlugin=$CGROUP_PLUGIN
CgroupMountpoint=/sys/fs/cgroup
ConstrainCores=no
ConstrainRAMSpace=yes
ConstrainSwapSpace=yes
ConstrainDevices=no
CONF
CGROUP_CHANGED=no
if ! cmp -s "$NEW" /etc/slurm/cgroup.conf; then
  install -m 0644 "$NEW" /etc/slurm/cgroup.conf
  CGROUP_CHANGED=yes
fi
cat >"$NEW" <<CONF
ClusterName=hub
SlurmctldHost=${H}(127.0.0.1)
SlurmUser=slurm
AuthType=auth/munge
CredType=cred/munge
SlurmctldPort=6817
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd/%n
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd-%n.pid
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd-%n.log
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup
JobAcctGatherType=jobacct_gather/linux
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SlurmdTimeout=10
MinJobAge=300
KillWait=5
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$LOGS/jobcomp.log
NodeName=${H}  NodeHostname=${H} NodeAddr=127.0.0.1 Port=6818 CPUs=2 RealMemory=2000 Features=linux,prod    State=UNKNOWN
NodeName=${H}2 NodeHostname=${H} NodeAddr=127.0.0.1 Port=6819 CPUs=2 RealMemory=2000 Features=linux,staging State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
# stop NAME PIDFILE: end that process (SIGTERM, SIGKILL after 10 s), drop the pid file
stop() {
  if alive "$1" "$2"; then
    local p
    p=$(cat "$2")
    kill "$p"
    for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$p" 2>/dev/null; then kill -9 "$p"; fi
  fi
  rm -f "$2"
}
if ! cmp -s "$NEW" /etc/slurm/slurm.conf || [ "$CGROUP_CHANGED" = yes ]; then
  PLUGINS_BEFORE=$(grep -E '^(ProctrackType|TaskPlugin)=' /etc/slurm/slurm.conf 2>/dev/null || true)
  install -m 0644 "$NEW" /etc/slurm/slurm.conf
  PLUGINS_AFTER=$(grep -E '^(ProctrackType|TaskPlugin)=' /etc/slurm/slurm.conf)
  if [ "$PLUGINS_BEFORE" != "$PLUGINS_AFTER" ] || [ "$CGROUP_CHANGED" = yes ]; then
    # Plugins are loaded at start only: the daemons start again below (a change to the node
    # list needs slurm-down.sh first).
    for f in /run/slurmd-*.pid; do [ -e "$f" ] && stop slurmd "$f"; done
    stop slurmctld /run/slurmctld.pid
  elif alive slurmctld /run/slurmctld.pid; then
    scontrol reconfigure
  fi
fi

# 4. Daemons: each one daemonises itself and writes its pid file. Only missing ones start.
alive munged /run/munge/munged.pid || runuser -u munge -- /usr/sbin/munged
alive slurmctld /run/slurmctld.pid || /usr/sbin/slurmctld -c # -c: empty job and node state
for n in "$H" "${H}2"; do
  alive slurmd "/run/slurmd-$n.pid" || /usr/sbin/slurmd -N "$n"
done

# 5. Wait until both nodes answer and are not DOWN (a node drained on purpose counts as up).
ready() { [ "$(sinfo -h -N -r -t idle,mixed,allocated,completing -o %N 2>/dev/null | sort -u | wc -l)" -ge 2 ]; }
deadline=$((SECONDS + 60))
until ready; do
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "slurm-up: the nodes ${H} and ${H}2 are not up after 60 s" >&2
    sinfo -N -o '%N %T %E' >&2 || true
    tail -n 15 "$LOGS/slurmctld.log" "$LOGS"/slurmd-*.log /var/log/munge/munged.log >&2 || true
    exit 1
  fi
  sleep 0.2
done
sinfo -N -o '%N %T %c %f'
