# shellcheck shell=sh
#
# The launcher: one small shell the hub starts once (as root, when it is) with the fixed
# environment, which starts each execution's monitor for it (see launcher.ts). The hub's own
# process is large, and forking it for every launch cost milliseconds of its event loop (the copy
# of its page tables grows with its memory: 14 ms at 200 MiB); a shell forks in a fraction of
# one. The monitor is a fork of the launcher that runs the monitor's program (`$1`, monitor.sh) as
# a function: a shell of its own cost each launch a program's exec, over a millisecond here.
#
# Arguments: the monitor's program, the task's init (`$2`, task-init.sh), the directory of task
# files (`$3`) and the directory of gates (`$4`, root's alone). Environment: PATH and LC_ALL
# fixed, and the absolute paths of sh, setsid and mkfifo ($SH, $SETSID, $MKFIFO).
#
# A request is lines the hub writes, never anything of the job's: the execution's id, directory,
# exit-code file, control groups, the file that lists the launch's processes (empty: its process
# group does, see monitor.sh) and whether it waits at a gate (empty: it does not), then the number
# of arguments of the isolation (unshare, setpriv and theirs), one a line. The monitor is started
# in the execution's working directory, its output appended to the execution's logs, with the
# exit-code file, the control groups, the list of processes and the id; it runs the isolation,
# which runs the task's init with the file that holds the task's environment and command (named
# after the id in the directory of task files), the id, and `gated` when it waits at a gate. The
# launcher answers on descriptor 4, which is its alone (a launch's gate takes its place, so it
# closes when the launcher ends):
# `taken <id>` once it has read a whole request and before it acts on it, then
# `spawned <id> <pid> [<gate>]`, or `failed <id>` when it cannot enter the working directory or
# make gates. The launch says `started <id>` and `ended <id> <exit code>` on descriptor 3.
# `jobs` reaps the monitors that ended since the last request, so that none stays a zombie for
# long; they outlive the launcher.
#
# A gate is a FIFO in a directory that is root's alone (`$4`, the hub's), made with others ahead
# of need (one `mkfifo` for 16: an exec costs a millisecond) and named after the launcher's pid
# and a count, so that no two launches share one. The launch holds it open for reading on
# descriptor 4, down to the task's init: the init waits there, before anything of the job's is
# read, for the hub's `go` (a prepared launch, see LocalDriver.prepare); at any other word, or end
# of file (the hub died), it ends without running the task. Opening it waits for the hub, which
# opens it as soon as the launch is spawned, and removes it once it is heard.
#
# The hub passes this program without its comment lines (see shell-program.ts).

monitor=$1 task_init=$2 tasks=$3 gates=$4 made=0 taken=0
umask 077
# The monitor; run in the background, it is the child whose pid the launcher reports.
eval "run_monitor() {
$monitor
}"
# Sixteen gates a `mkfifo`. Names are never tried twice: after a failure (some may have been made)
# the next try takes new ones.
make_gates() { set --; while [ $# -lt 16 ]; do set -- "$@" "$gates/$$-$((made + $#))"; done; made=$((made + $#)); "$MKFIFO" -m 600 "$@" 4>&- || { taken=$made; return 1; }; }
while IFS= read -r id && IFS= read -r dir && IFS= read -r exit_file && IFS= read -r cgroups && IFS= read -r members && IFS= read -r gated && IFS= read -r count; do
  jobs >/dev/null
  set --
  while [ "$count" -gt 0 ] && IFS= read -r arg; do set -- "$@" "$arg"; count=$((count - 1)); done
  printf 'taken %s\n' "$id" >&4
  # Entered here, not in the child, so that a launch that cannot start is told before anything else of it.
  cd "$dir/work" 2>/dev/null || { printf 'failed %s\n' "$id" >&4; continue; }
  gate=
  if [ -n "$gated" ]; then [ "$taken" -lt "$made" ] || make_gates || { printf 'failed %s\n' "$id" >&4; cd /; continue; }; gate="$gates/$$-$taken" taken=$((taken + 1)); fi
  run_monitor "$exit_file" "$cgroups" "$members" "$id" "$@" "$SH" -c "$task_init" "$tasks/$id" "$id" "${gated:+gated}" </dev/null >>"$dir/logs/stdout" 2>>"$dir/logs/stderr" 4<"${gate:-/dev/null}" &
  printf 'spawned %s %s %s\n' "$id" "$!" "$gate" >&4
  cd /
done
