# shellcheck shell=sh
#
# The launch's monitor, its first process: a fork of the launcher (as root, when the hub is; its
# fixed environment) that runs this as a function (see launcher.sh). It joins the execution's
# control groups and runs the rest of the launch, from `setsid` (a session and process group of
# its own: what a signal it passes on reaches), waits for it, ends whatever the task left in that
# group, writes the exit code where the hub finds it, even across a hub restart, and then tells
# the hub that it ended, with the code, on descriptor 3, when the hub that started it still
# listens. It runs no program of its own (the hub removes the task's file once it heard the end)
# and is never given anything of the job's but the name of the task's file. The exit code is one
# short write: a monitor killed before it leaves an empty file, which reads as none. The hub
# signals the monitor alone: TERM it passes on to the launch's group (a stop, its grace period),
# USR1 it turns into KILL for it; it keeps waiting either way.
#
# Arguments: the exit-code file, the files by which the launch joins the execution's control
# groups, writing 0 to each (cgroup v1's `tasks`, v2's `cgroup.procs`; separated by spaces; none:
# empty), the execution's id, then the launch: the isolation's program
# and arguments, and the task's init with its own. Environment: the launcher's ($SETSID).
#
# The hub passes this program without its comment lines (see shell-program.ts).

trap 'signalled=1; kill -TERM -"$child" 2>/dev/null' TERM
trap 'signalled=1; kill -KILL -"$child" 2>/dev/null' USR1
exit_file=$1 cgroups=$2 id=$3 child='' signalled=''; shift 3
(for procs in $cgroups; do echo 0 >"$procs" || exit 125; done; exec "$SETSID" "$@") </dev/null & child=$!
wait "$child"; code=$?
# A trapped signal ends a wait at once (128 + its number), before its trap runs: the child's own
# status is asked for again, which the shell keeps even when it has reaped the child by then (127:
# it was already had).
while [ -n "$signalled" ]; do signalled=''; wait "$child"; again=$?; [ "$again" -eq 127 ] || code=$again; done
while kill -0 "$child" 2>/dev/null; do wait "$child"; code=$?; done
# What the task left running in the background ends with it, as a batch system's job does (the
# group's id cannot have been reused while any of it runs).
kill -KILL -"$child" 2>/dev/null
printf %s "$code" > "$exit_file"
trap '' PIPE; printf 'ended %s %s\n' "$id" "$code" >&3
exit "$code"
