# shellcheck shell=sh
#
# The task's side of the launch (its init), already running as the job's user and, in its own PID
# namespace, as its PID 1: a prepared launch (`$2` is `gated`) first waits for the hub's word at
# its gate (descriptor 4) and ends without running anything unless it is `go`; it tells the hub
# that the task's process starts (on descriptor 3, which the task does not inherit), takes the
# task's environment and then its command (`set -- …`) from its file (`$0`: written by the hub,
# quoted, see environment-file.ts), runs the task and exits with its code. When it exits the
# kernel kills whatever else the task left in the namespace (`setsid`, double forks). It catches
# TERM (PID 1 receives no signal it does not catch) so that a stop reaches the task, which gets
# its grace period.
#
# Run as `sh -c <this> <task file> <execution id> [gated]` (see launcher.sh); environment: the
# launcher's, until the task's file is read.
#
# The hub passes this program without its comment lines (see shell-program.ts).

trap ':' TERM INT
[ -z "$2" ] || { IFS= read -r word <&4 && [ "$word" = go ]; } || exit 125
exec 4<&-
# Before anything of the job's is read, so that nothing it sets can change what the hub is told.
trap '' PIPE; printf 'started %s\n' "$1" >&3; exec 3>&-; trap - PIPE
set -a
# The task's file is written for each launch by the hub (environment-file.ts): there is nothing to follow here.
# shellcheck disable=SC1090
. "$0"
set +a
umask 077
"$@" & child=$!
wait "$child"; code=$?
while kill -0 "$child" 2>/dev/null; do wait "$child"; code=$?; done
exit "$code"
