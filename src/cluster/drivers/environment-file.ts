/** `value` as one shell word that reads back exactly. */
function quoted(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * An execution's environment as `NAME='value'` lines that a shell reads back exactly (`set -a;
 * . file`): the launch reads it as the job's user, so that none of it reaches a privileged step.
 */
export function environmentFile(env: Readonly<Record<string, string>>): string {
  return Object.entries(env)
    .map(([name, value]) => `${name}=${quoted(value)}\n`)
    .join('');
}

/**
 * A task's command and arguments as the line `set -- 'command' 'arg'…` that a shell reads back
 * exactly (`. file`): read, as the environment is, by the job's user, after the launch's
 * privileged steps.
 */
export function commandLine(command: string, args: readonly string[]): string {
  return `set -- ${[command, ...args].map(quoted).join(' ')}\n`;
}
