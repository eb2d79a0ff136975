#!/usr/bin/env bash
# Stop the cluster that scripts/slurm-up.sh started. Jobs are cancelled first (a stopped slurmd
# leaves its jobs' processes running), then the daemons are stopped by pid file, newest first,
# and the pid files removed: a stale /run/slurmctld.pid makes `apt-get purge slurmctld` fail.
# Safe to run when nothing is running.
set -euo pipefail

# shellcheck source=scripts/slurm-common.sh
. "$(dirname "$0")/slurm-common.sh"


if alive slurmctld /run/slurmctld.pid; then
  squeue -h -o %i | xargs -r scancel
  for _ in $(seq 150); do [ -z "$(squeue -h -o %i)" ] && break; sleep 0.1; done
fi
mapfile -t slurmds < <(ls -t /run/slurmd-*.pid 2>/dev/null) # newest first
for f in "${slurmds[@]}"; do stop slurmd "$f"; done
stop slurmctld /run/slurmctld.pid
stop munged /run/munge/munged.pid
