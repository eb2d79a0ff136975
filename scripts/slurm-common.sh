# shellcheck shell=bash
# Shared by slurm-up.sh and slurm-down.sh (sourced, not run).

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
