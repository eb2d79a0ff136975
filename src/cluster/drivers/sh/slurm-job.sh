#!/bin/sh
#
# The Slurm driver's batch script (see slurm-driver.ts), written into each execution's directory
# as job.sh and run by Slurm on the node as the job's user: takes the execution's environment from
# a file (so that none of it reaches `sbatch` itself), runs the task given as its other arguments,
# then writes its exit code next to its logs (whole, or not at all: through a file renamed into
# place), by absolute path, whatever PATH the job set.
#
# Run as `job.sh <environment file> <exit-code file> <command> [<argument>…]`, with nothing of the
# hub's environment but Slurm's own variables (`sbatch --export=NONE`).
#
# The hub writes this program without its comment lines but the first (see shell-program.ts).

env_file=$1; exit_file=$2; shift 2
set -a
# The environment file is written for each job by the hub (environment-file.ts): there is nothing to follow here.
# shellcheck disable=SC1090
. "$env_file"
set +a
"$@"; code=$?
printf %s "$code" > "$exit_file.tmp" && /bin/mv "$exit_file.tmp" "$exit_file"
exit "$code"
