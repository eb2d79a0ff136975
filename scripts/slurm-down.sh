#!/usr/bin/env bash
# Stop the cluster that scripts/slurm-up.sh started. Jobs are cancelled first (a stopped slurmd
# leaves its jobs' processes running), then the daemons are stopped by pid file, newest first,
# and the pid files removed: a stale /run/slurmctld.pid makes `apt-get purge slurmctld` fail.
# Safe to run when nothing is running.
set -euo pipefail

# alive NAME PIDFILE: the pid file names a live process called NAME
alive() { local p; p=$(cat "$2" 2>/dev/null) && [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$1" ]; }

# stop NAME PIDFILE: end that process (SIGTERM, SIGKILL after 10 s), drop the pid file
stop() {
  if alive "$1" "$2"; then
    local p
    p=$(cat "$2")
    kill "$p"
    for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$p" 2>/dev/null; then kill -9 "$p"; fi
    echo "stopped $1 ($p)"
  fi
  rm -f "$2"
}

if alive slurmctld /run/slurmctld.pid; then
  squeue -h -o %i | xargs -r scancel
  for _ in $(seq 150); do [ -z "$(squeue -h -o %i)" ] && break; sleep 0.1; done
fi
mapfile -t slurmds < <(ls -t /run/slurmd-*.pid 2>/dev/null) # newest first
for f in "${slurmds[@]}"; do stop slurmd "$f"; done
stop slurmctld /run/slurmctld.pid
stop munged /run/munge/munged.pid
