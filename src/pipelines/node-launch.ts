/**
 * What a pipeline node's cluster job runs (api-map §7): its task, or, when the node has git
 * inputs, a POSIX shell that first clones each of them into the working directory with the
 * system `git`, as the job's own user (so on a Slurm node too), then runs the task in its place.
 * The shell notes each fetch in `.hub-inputs` in the working directory, which the engine reads
 * after the job ends for the node's `InputFetched` and `Error` events; a failed fetch ends the job
 * before the task. The task could rewrite that file: it forges only its own node's input events.
 */
import type { PipelineNodeShape } from './pipeline-validation.js';

/** The file the input fetches are noted in, in the node's working directory. */
export const INPUTS_FILE = '.hub-inputs';

/** The exit status of a job whose inputs could not be fetched (its task never ran). */
export const FETCH_FAILED_EXIT = 97;

/** A git input as the node's spec gives it. */
export interface GitInput {
  readonly type?: string;
  readonly repo?: string;
  readonly branchOrTag?: string;
  readonly revision?: string;
  readonly depth?: number;
  readonly relativePath?: string;
}

/** The node's full shape, as the engine reads it (the validation's shape plus what it runs). */
export interface RunNodeSpec extends PipelineNodeShape {
  readonly name: string;
  readonly inputs?: { readonly resources?: Readonly<Record<string, GitInput>> };
  readonly outputs?: { readonly artifacts?: Readonly<Record<string, { readonly path: string; readonly contentType?: string }>> };
  readonly task?: {
    readonly command?: string;
    readonly args?: readonly string[];
    readonly envVars?: readonly { readonly name: string; readonly value: string }[];
    readonly conditionNode?: boolean;
  };
  readonly meta?: Readonly<Record<string, unknown>>;
}

// Arguments: per input its name, repo, branchOrTag, revision, depth and relativePath (empty when
// not given), then `--`, then the task's command and arguments. Each fetch's output goes to the
// job's stderr as well as, last line only, to the note of a failure. \`-c safe.directory='*'\`
// alone is not enough: for a file:// repository git runs upload-pack with GIT_CONFIG_PARAMETERS
// cleared, which then refuses a repository another user owns; a global config of the fetch's own
// (GIT_CONFIG_GLOBAL, removed before the task) says it to every git process.
const FETCH_SCRIPT = `
now() { date +%s%3N 2>/dev/null || echo 0; }
printf '[safe]\\n\\tdirectory = *\\n' > .hub-gitconfig
export GIT_CONFIG_GLOBAL="$PWD/.hub-gitconfig"
git_() { git -c safe.directory='*' -c advice.detachedHead=false "$@"; }
fetch() {
  if [ -n "$3" ]; then set -- "$1" "$2" "$3" "$4" "$5" "$6" --branch "$3"; else set -- "$1" "$2" "$3" "$4" "$5" "$6"; fi
  name=$1 repo=$2 revision=$4 depth=$5 dest=$6; shift 6
  if [ -n "$depth" ]; then set -- "$@" --depth "$depth"; fi
  git_ clone --quiet "$@" -- "$repo" "$dest" || return 1
  [ -z "$revision" ] && return 0
  git_ -C "$dest" checkout --quiet --detach "$revision" 2>/dev/null && return 0
  git_ -C "$dest" fetch --quiet \${depth:+--depth "$depth"} origin "$revision" && git_ -C "$dest" checkout --quiet --detach FETCH_HEAD
}
: > ${INPUTS_FILE}
while [ "$#" -gt 0 ] && [ "$1" != -- ]; do
  if output=$(fetch "$1" "$2" "$3" "$4" "$5" "$6" 2>&1); then
    printf 'fetched\\t%s\\t%s\\n' "$1" "$(now)" >> ${INPUTS_FILE}
  else
    printf '%s\\n' "$output" >&2
    printf 'failed\\t%s\\t%s\\t%s\\n' "$1" "$(now)" "$(printf '%s' "$output" | grep -v '^\\s*$' | head -n 1 | tr '\\t' ' ')" >> ${INPUTS_FILE}
    rm -f .hub-gitconfig
    exit ${FETCH_FAILED_EXIT}
  fi
  shift 6
done
shift
rm -f .hub-gitconfig
unset GIT_CONFIG_GLOBAL
exec "$@"
`;

/** The command and arguments of a node's job. */
export function nodeCommand(node: RunNodeSpec): { command: string; args: string[] } {
  const command = node.task?.command ?? '';
  const args = [...(node.task?.args ?? [])];
  const inputs = Object.entries(node.inputs?.resources ?? {});
  if (inputs.length === 0) return { command, args };
  const fetches = inputs.flatMap(([name, input]) => [
    name,
    input.repo ?? '',
    input.branchOrTag ?? '',
    input.revision ?? '',
    input.depth === undefined ? '' : String(input.depth),
    input.relativePath || name,
  ]);
  return { command: '/bin/sh', args: ['-c', FETCH_SCRIPT, 'hub-inputs', ...fetches, '--', command, ...args] };
}

/** A repository URL as events show it: without any user or password it carries. */
export function redactedRepo(text: string): string {
  return text.replace(/(\b[a-z][a-z0-9+.-]*:\/\/)[^/\s@]*@/gi, '$1***@');
}

/** One line of `.hub-inputs`, read back. */
export type InputNote =
  | { readonly fetched: true; readonly name: string; readonly time?: string }
  | { readonly fetched: false; readonly name: string; readonly time?: string; readonly error: string };

/** The notes of the inputs file; lines it cannot read are ignored (the task may have written them). */
export function parseInputNotes(text: string): InputNote[] {
  return text.split('\n').flatMap((line): InputNote[] => {
    const [kind, name, millis, ...rest] = line.split('\t');
    if (!name || (kind !== 'fetched' && kind !== 'failed')) return [];
    const at = Number(millis);
    const time = Number.isSafeInteger(at) && at > 0 ? new Date(at).toISOString() : undefined;
    return kind === 'fetched' ? [{ fetched: true, name, time }] : [{ fetched: false, name, time, error: rest.join(' ').slice(0, 500) }];
  });
}

/** Engine settings a node's `meta` may give (beyond the interface; docs/pipelines.md). */
export interface NodeAttempts {
  /** Attempts after the first. */
  readonly retries: number;
  readonly retryDelaySeconds: number;
  readonly timeoutSeconds?: number;
}

const MAX_RETRIES = 100;
const MAX_SECONDS = 7 * 24 * 3600;

/** Problems with a node's engine settings, each naming the node and key. */
export function attemptProblems(node: RunNodeSpec, index: number): string[] {
  const meta = node.meta ?? {};
  const problems: string[] = [];
  const check = (key: string, min: number, max: number) => {
    const value = meta[key];
    if (value !== undefined && (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max))
      problems.push(`spec.nodes[${index}].meta.${key} (node '${node.name}') must be an integer from ${min} to ${max}`);
  };
  check('retries', 0, MAX_RETRIES);
  check('retryDelaySeconds', 0, MAX_SECONDS);
  check('timeoutSeconds', 1, MAX_SECONDS);
  return problems;
}

export function attemptsOf(node: RunNodeSpec): NodeAttempts {
  const meta = node.meta ?? {};
  const timeout = meta.timeoutSeconds;
  return {
    retries: typeof meta.retries === 'number' ? meta.retries : 0,
    retryDelaySeconds: typeof meta.retryDelaySeconds === 'number' ? meta.retryDelaySeconds : 0,
    ...(typeof timeout === 'number' && { timeoutSeconds: timeout }),
  };
}

/** Problems with where a node's inputs and artifacts go: relative paths, inside the working directory. */
export function pathProblems(node: RunNodeSpec, index: number): string[] {
  const outside = (path: string) => path.startsWith('/') || path.split('/').includes('..') || path.includes('\0');
  const problems: string[] = [];
  for (const [key, input] of Object.entries(node.inputs?.resources ?? {}))
    if (input.relativePath && outside(input.relativePath))
      problems.push(`spec.nodes[${index}].inputs.resources.${key}.relativePath (node '${node.name}') must be a relative path inside the working directory`);
  return problems;
}
