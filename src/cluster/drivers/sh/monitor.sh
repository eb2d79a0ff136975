# shellcheck shell=sh
#
# The launch's monitor, its first process: a fork of the launcher (as root, when the hub is; its
# fixed environment) that runs this as a function (see launcher.sh). It joins the execution's
# control groups and runs the rest of the launch, waits for it, ends whatever the task left, writes
# the exit code where the hub finds it, even across a hub restart, and then tells the hub that it
# ended, with the code, on descriptor 3, when the hub that started it still listens. It runs no
# program of its own (the hub removes the task's file once it heard the end) and is never given
# anything of the job's but the name of the task's file. The exit code is one short write: a
# monitor killed before it leaves an empty file, which reads as none. The hub signals the monitor
# alone: TERM it passes on to the launch's processes (a stop, its grace period), USR1 it turns
# into KILL for them; it keeps waiting either way.
#
# Which processes are the launch's: when the launch runs in a PID namespace of its own, which
# nothing in it can leave, and in a control group of its own, the processes that group lists
# (`$3`, its `cgroup.procs`): every one of them, those that made sessions of their own included,
# and the namespace ends with its init. Otherwise (`$3` empty) the launch runs from `setsid` (a
# session and process group of its own), and its processes are those of that group; `setsid`'s
# exec costs a launch about 0.8 ms of CPU, which the first way spares.
#
# Arguments: the exit-code file, the files by which the launch joins the execution's control
# groups, writing 0 to each (cgroup v1's `tasks`, v2's `cgroup.procs`; separated by spaces; none:
# empty), the file listing the launch's processes (or empty, see above), the execution's id, then
# the launch: the isolation's program and arguments, and the task's init with its own.
# Environment: the launcher's ($SETSID).
#
# The hub passes this program without its comment lines (see shell-program.ts).

# A signal to every process of the launch; read from its group each time, as it forks.
pass_on() {
  if [ -n "$members" ]; then
    # Its errors are not the task's: none reaches the execution's log (the redirection's own first).
    while IFS= read -r pid; do kill -"$1" "$pid"; done 2>/dev/null <"$members"
  else
    kill -"$1" -"$child" 2>/dev/null
  fi
}
trap 'signalled=1; pass_on TERM' TERM
trap 'signalled=1; pass_on KILL' USR1
exit_file=$1 cgroups=$2 members=$3 id=$4 child='' signalled=''; shift 4
(for procs in $cgroups; do echo 0 >"$procs" || exit 125; done; [ -n "$members" ] || exec "$SETSID" "$@"; exec "$@") </dev/null & child=$!
wait "$child"; code=$?
# A trapped signal ends a wait at once (128 + its number), before its trap runs: the child's own
# status is asked for again, which the shell keeps even when it has reaped the child by then (127:
# it was already had).
while [ -n "$signalled" ]; do signalled=''; wait "$child"; again=$?; [ "$again" -eq 127 ] || code=$again; done
while kill -0 "$child" 2>/dev/null; do wait "$child"; code=$?; done
# What the task left running in the background ends with it, as a batch system's job does (the
# group's id cannot have been reused while any of it runs; a namespace's processes ended with its
# init, and its group lists none by now).
pass_on KILL
printf %s "$code" > "$exit_file"
trap '' PIPE; printf 'ended %s %s\n' "$id" "$code" >&3
exit "$code"
